// kilnjs serve against the real server on 127.0.0.1 (a free port), in this process through the
// library API: JSON and binary requests against eager and float64 references, batching and
// padding without recompiles, 400s that never disturb other requests, 503s under overload
// while every accepted request completes, canary rollback, admin, artifacts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import * as kilnNode from 'kilnjs/node';
import { moduleEngine } from '../src/serve/module-engine.js';
import { fixtureModel, maxAbsDiff, metric, metrics, MODEL_FILE, postJson, reference, rowsOf, tempDir } from './helpers/serve.js';
import type { ServeMlp } from './fixtures/serve/mlp.js';

process.env.KILN_CACHE_DIR = tempDir('serve-cache');
process.env.KILN_CACHE_SOURCES = 'off';

const IN = 16, OUT = 4;
const eagerOf = (m: ServeMlp, x: Float32Array, rows: number) => kiln.noGrad(() => kiln.scope(() => m.forward(kiln.tensor(x, [rows, IN])).dataSync()));
const randomRows = (rows: number) => kiln.randn([rows, IN]).dataSync() as Float32Array;

test('JSON and binary requests equal the eager outputs and the float64 reference; batched sizes never recompile', async () => {
  const dir = tempDir('serve-json');
  const { model, weights } = await fixtureModel(dir);
  const s = await kilnNode.serve({ model: MODEL_FILE, weights, port: 0, maxBatch: 8, maxWaitMs: 20, logLevel: 'silent', canary: { fraction: 0 } });
  try {
    await s.ready;
    const warm = kiln.stats();
    assert.equal(warm.fusionFallbacks, 0);
    assert.equal(warm.eagerFallbacks, 0);
    const info = await (await fetch(`${s.url}/v1/model`)).json() as { buckets: number[]; batching: boolean; signature: string };
    assert.deepEqual(info.buckets, [1, 2, 4, 8]);
    assert.equal(info.batching, true);
    assert.equal(info.signature, 'x: float32[n, 16]');

    // concurrent requests of 1..5 rows: batched together, padded to a bucket
    const sizes = [1, 3, 2, 5, 1, 4, 2, 1];
    const xs = sizes.map(randomRows);
    const replies = await Promise.all(xs.map((x, i) => postJson(s.url, { inputs: { x: rowsOf(x, sizes[i]!, IN) } })));
    replies.forEach((r, i) => {
      assert.equal(r.status, 200, JSON.stringify(r.json));
      const got = Float32Array.from((r.json.outputs as { output: number[][] }).output.flat());
      assert.equal(got.length, sizes[i]! * OUT);
      // JSON numbers carry float32 values exactly: compiled vs eager within float32 rounding of a different summation order
      assert.ok(maxAbsDiff(got, eagerOf(model, xs[i]!, sizes[i]!)) < 1e-5, `request ${i} vs eager`);
      assert.ok(maxAbsDiff(got, reference(model, xs[i]!, sizes[i]!)) < 1e-4, `request ${i} vs float64`);
    });
    const text = await metrics(s.url);
    const batches = metric(text, 'kiln_serve_batch_requests_count')!;
    assert.ok(batches < sizes.length, `${sizes.length} concurrent requests ran in ${batches} batches`);
    const after = kiln.stats();
    assert.equal(after.compiles, warm.compiles, 'no compile after warm-up: every batch size hit a warmed bucket');
    assert.equal(after.eagerFallbacks, 0);
    assert.ok(after.cacheHits > warm.cacheHits, 'the compiled entries replayed');

    // binary: safetensors in, safetensors out, the same numbers as JSON
    const x = randomRows(3);
    const body = kiln.encodeSafetensors({ x: { dtype: 'float32', shape: [3, IN], data: x } });
    const br = await fetch(`${s.url}/v1/predict`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(body) });
    assert.equal(br.status, 200);
    assert.equal(br.headers.get('content-type'), 'application/octet-stream');
    const out = kiln.decodeSafetensors(new Uint8Array(await br.arrayBuffer())).tensors.output!;
    assert.deepEqual(out.shape, [3, OUT]);
    const viaJson = await postJson(s.url, { inputs: rowsOf(x, 3, IN) });
    assert.deepEqual(Array.from(out.data), (viaJson.json.outputs as { output: number[][] }).output.flat(), 'binary and JSON answers are the same float32 values');
    assert.ok(maxAbsDiff(out.data, eagerOf(model, x, 3)) < 1e-5);
  } finally {
    await s.close();
  }
});

test('mode eager answers exactly what the module computes eagerly', async () => {
  const dir = tempDir('serve-eager');
  const { model, weights } = await fixtureModel(dir, 11);
  const s = await kilnNode.serve({ model: MODEL_FILE, weights, port: 0, maxBatch: 4, mode: 'eager', logLevel: 'silent', canary: { fraction: 0 } });
  try {
    await s.ready;
    const x = randomRows(4);
    const r = await postJson(s.url, { inputs: { x: rowsOf(x, 4, IN) } });
    assert.equal(r.status, 200);
    assert.deepEqual((r.json.outputs as { output: number[][] }).output.flat(), Array.from(eagerOf(model, x, 4)));
    assert.equal(s.state().mode, 'eager');
  } finally {
    await s.close();
  }
});

test('bad requests get 400s with what was expected, and never disturb the requests beside them', async () => {
  const dir = tempDir('serve-bad');
  const { model, weights } = await fixtureModel(dir, 3);
  const s = await kilnNode.serve({ model: MODEL_FILE, weights, port: 0, maxBatch: 8, maxWaitMs: 10, logLevel: 'silent', canary: { fraction: 0 } });
  try {
    await s.ready;
    const row = Array.from({ length: IN }, (_, i) => i / IN);
    const bin = (t: Record<string, kiln.TypedArray>, shape: number[]) => kiln.encodeSafetensors(Object.fromEntries(Object.entries(t).map(([k, d]) => [k, { dtype: d instanceof Int32Array ? 'int32' : 'float32', shape, data: d }])) as never);
    const bad: { what: string; send: () => Promise<Response>; message: RegExp }[] = [
      { what: 'wrong row shape', send: () => post({ inputs: { x: [[1, 2, 3]] } }), message: /x\[0\] has 3 elements, expected 16 \(x: float32\[n, 16\]\)/ },
      { what: 'one row without a batch', send: () => post({ inputs: { x: row } }), message: /x\[0\] is number, expected an array of 16/ },
      { what: 'a string', send: () => post({ inputs: { x: [[...row.slice(1), 'a']] } }), message: /x\[0\]\[15\] is "a", expected a number/ },
      { what: 'ragged rows', send: () => post({ inputs: { x: [row, row.slice(1)] } }), message: /x\[1\] has 15 elements, expected 16/ },
      { what: 'too many rows', send: () => post({ inputs: { x: Array.from({ length: 9 }, () => row) } }), message: /x has 9 rows, this server takes 1 to 8 per request/ },
      { what: 'no rows', send: () => post({ inputs: { x: [] } }), message: /x has 0 rows/ },
      { what: 'unknown input', send: () => post({ inputs: { x: [row], y: [row] } }), message: /unknown input "y"/ },
      { what: 'missing input', send: () => post({ inputs: {} }), message: /input x is missing/ },
      { what: 'no inputs', send: () => post({ x: [row] }), message: /the JSON body has no "inputs"/ },
      { what: 'invalid JSON', send: () => post('{"inputs": [[1, 2'), message: /JSON/ },
      { what: 'binary int32 for a float32 input', send: () => postBin(bin({ x: new Int32Array(IN) }, [1, IN])), message: /input x is int32, the model takes x: float32\[n, 16\]/ },
      { what: 'binary wrong shape', send: () => postBin(bin({ x: new Float32Array(2 * 8) }, [2, 8])), message: /input x has shape \[2, 8\], the model takes x: float32\[n, 16\]/ },
      { what: 'binary garbage', send: () => postBin(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9])), message: /not a valid safetensors file/ },
    ];
    function post(body: unknown) {
      return fetch(`${s.url}/v1/predict`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    }
    function postBin(body: Uint8Array) {
      return fetch(`${s.url}/v1/predict`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(body) });
    }
    // good requests interleaved with the bad ones, all at once
    const goods = Array.from({ length: 12 }, () => randomRows(2));
    const [badReplies, goodReplies] = await Promise.all([
      Promise.all(bad.map(async (b) => ({ b, r: await b.send() }))),
      Promise.all(goods.map((x) => postJson(s.url, { inputs: { x: rowsOf(x, 2, IN) } }))),
    ]);
    for (const { b, r } of badReplies) {
      assert.equal(r.status, 400, b.what);
      const j = (await r.json()) as { message: string };
      assert.match(j.message, b.message, b.what);
    }
    goodReplies.forEach((r, i) => {
      assert.equal(r.status, 200);
      assert.ok(maxAbsDiff((r.json.outputs as { output: number[][] }).output.flat(), eagerOf(model, goods[i]!, 2)) < 1e-5, `good request ${i}`);
    });
    const text = await metrics(s.url);
    assert.equal(metric(text, 'kiln_serve_rejected_total{reason="bad_request"}'), bad.length);
    const unsupported = await fetch(`${s.url}/v1/predict`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    assert.equal(unsupported.status, 415);
  } finally {
    await s.close();
  }
});

test('overload: a full queue answers 503 with Retry-After, and every accepted request completes correctly', async () => {
  kiln.manualSeed(5);
  const { ServeMlp } = await import('./fixtures/serve/mlp.js');
  const model = new ServeMlp();
  model.requiresGrad_(false);
  const engine = moduleEngine({ name: 'overload', model, inputs: [{ name: 'x', dtype: 'float32', row: [IN] }], buckets: [1, 2, 4, 8, 16, 32, 64] });
  // requests wait 300 ms for others (64 rows would start the batch at once): the queue fills first
  const s = await kilnNode.serve({ model: engine, port: 0, maxQueue: 6, maxWaitMs: 300, logLevel: 'silent', canary: { fraction: 0 } });
  try {
    await s.ready;
    const xs = Array.from({ length: 40 }, () => randomRows(1));
    const replies = await Promise.all(xs.map((x) => postJson(s.url, { inputs: { x: rowsOf(x, 1, IN) } })));
    const ok = replies.filter((r) => r.status === 200).length;
    const busy = replies.filter((r) => r.status === 503);
    assert.equal(ok + busy.length, xs.length, `only 200s and 503s: ${replies.map((r) => r.status).join(' ')}`);
    assert.ok(busy.length > 0, 'some requests were refused');
    assert.ok(ok >= 6, `at least the queue's 6 were accepted (${ok})`);
    for (const b of busy) {
      assert.ok(Number(b.headers.get('retry-after')) >= 1, 'Retry-After in whole seconds');
      assert.match(String(b.json.message), /the queue is full \(6 requests waiting, limit 6\)/);
    }
    replies.forEach((r, i) => {
      if (r.status === 200) assert.ok(maxAbsDiff((r.json.outputs as { output: number[][] }).output.flat(), eagerOf(model, xs[i]!, 1)) < 1e-5, `accepted request ${i}`);
    });
    const text = await metrics(s.url);
    assert.equal(metric(text, 'kiln_serve_rejected_total{reason="overload"}'), busy.length);
    assert.equal(metric(text, 'kiln_serve_in_flight'), 0);
  } finally {
    await s.close();
  }
});

test('canary: a compiled path that drifts from eager is rolled back to eager by itself, exported, and switched back by an operator', async () => {
  kiln.manualSeed(9);
  const { ServeMlp } = await import('./fixtures/serve/mlp.js');
  const model = new ServeMlp();
  model.requiresGrad_(false);
  const logs: string[] = [];
  const engine = moduleEngine({ name: 'canary', model, inputs: [{ name: 'x', dtype: 'float32', row: [IN] }], buckets: [1, 2, 4] });
  const s = await kilnNode.serve({ model: engine, port: 0, logLevel: 'silent', canary: { fraction: 1, maxFailures: 2, window: 10 }, adminToken: 'let-me-in', onLog: (_l, m) => logs.push(m) });
  const tick = () => new Promise((r) => setTimeout(r, 20)); // shadow runs follow the reply
  try {
    await s.ready;
    const x = randomRows(2);
    const send = async () => {
      const r = await postJson(s.url, { inputs: { x: rowsOf(x, 2, IN) } });
      assert.equal(r.status, 200);
      await tick();
      return Float32Array.from((r.json.outputs as { output: number[][] }).output.flat());
    };
    const before = await send();
    assert.equal(s.state().canary.checks, 1);
    assert.equal(s.state().canary.mismatches, 0, 'compiled matches eager');
    // forward reads a JS number kiln does not guard (a field of a plain object), checked by the
    // first replay above: changing it now makes the two paths disagree, a real mismatch
    model.knobs.scale = 2;
    const drifted = await send();
    assert.deepEqual(drifted, before, 'compiled still answers with the traced value');
    assert.equal(s.state().mode, 'compiled', 'one failure is under the threshold');
    await send();
    const st = s.state();
    assert.equal(st.mode, 'eager', 'rolled back after 2 failures');
    assert.equal(st.canary.mismatches, 2);
    assert.match(st.reason, /rolled back: 2 of the last 3 canary checks failed \(last: canary mismatch: output output\[\d+\]: compiled .*, eager .*\)/);
    assert.ok(logs.some((l) => /mode compiled -> eager: rolled back/.test(l)), 'the rollback is logged with why');
    const afterRollback = await send();
    assert.ok(maxAbsDiff(afterRollback, eagerOf(model, x, 2)) === 0, 'eager answers now (scale 2)');
    let text = await metrics(s.url);
    assert.equal(metric(text, 'kiln_serve_mode{mode="eager"}'), 1);
    assert.equal(metric(text, 'kiln_serve_mode{mode="compiled"}'), 0);
    assert.equal(metric(text, 'kiln_serve_rollbacks_total'), 1);
    assert.equal(metric(text, 'kiln_serve_canary_checks_total{outcome="mismatch"}'), 2);

    // the operator: /admin needs the token
    const forbidden = await fetch(`${s.url}/admin/mode`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"mode":"compiled"}' });
    assert.equal(forbidden.status, 403);
    const badMode = await fetch(`${s.url}/admin/mode`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer let-me-in' }, body: '{"mode":"fast"}' });
    assert.equal(badMode.status, 400);
    model.knobs.scale = 1; // the fix is deployed
    const back = await fetch(`${s.url}/admin/mode`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer let-me-in' }, body: '{"mode":"compiled","reason":"scale fixed"}' });
    assert.equal(back.status, 200);
    assert.equal(((await back.json()) as { mode: string }).mode, 'compiled');
    const again = await send();
    assert.ok(maxAbsDiff(again, eagerOf(model, x, 2)) < 1e-5);
    assert.equal(s.state().mode, 'compiled', 'matches again: stays compiled');
    text = await metrics(s.url);
    assert.equal(metric(text, 'kiln_serve_mode{mode="compiled"}'), 1);
    const state = await (await fetch(`${s.url}/admin/state`, { headers: { authorization: 'Bearer let-me-in' } })).json() as { reason: string };
    assert.match(state.reason, /operator \(POST \/admin\/mode: scale fixed\)/);
  } finally {
    await s.close();
  }
});

test('an artifact serves its batch size; smaller requests are padded into it', async () => {
  const dir = tempDir('serve-artifact');
  kiln.manualSeed(4);
  const { ServeMlp } = await import('./fixtures/serve/mlp.js');
  const model = new ServeMlp();
  model.eval();
  model.requiresGrad_(false);
  const path = join(dir, 'mlp.kiln');
  kiln.noGrad(() => kilnNode.export(model, [kiln.zeros([4, IN])], path));
  const s = await kilnNode.serve({ model: path, port: 0, logLevel: 'silent', canary: { fraction: 1 } });
  try {
    await s.ready;
    assert.deepEqual(s.engine.buckets, [4]);
    assert.ok(s.engine.rows.ok, 'the MLP keeps rows separate');
    const xs = [1, 3, 4, 2].map(randomRows);
    const replies = await Promise.all(xs.map((x) => postJson(s.url, { inputs: { x: rowsOf(x, x.length / IN, IN) } })));
    replies.forEach((r, i) => {
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.ok(maxAbsDiff((r.json.outputs as { output: number[][] }).output.flat(), reference(model, xs[i]!, xs[i]!.length / IN)) < 1e-4);
    });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(s.state().canary.mismatches, 0, 'the artifact matches its graph run eagerly');
    assert.ok(s.state().canary.checks > 0);
    const tooMany = await postJson(s.url, { inputs: rowsOf(randomRows(5), 5, IN) });
    assert.equal(tooMany.status, 400);
    assert.match(String(tooMany.json.message), /5 rows, this server takes 1 to 4/);
  } finally {
    await s.close();
  }
});
