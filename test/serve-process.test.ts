// `kilnjs serve` as a process (src/cli.ts serve), on 127.0.0.1 with a free port: /readyz
// answers 200 only after warm-up (while /healthz answers from the start), and SIGTERM stops
// accepting, answers every request already accepted, and exits 0.

import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { fixtureModel, maxAbsDiff, metric, metrics, MODEL_FILE, postJson, reference, ROOT, rowsOf, spawnServe, tempDir } from './helpers/serve.js';

const IN = 16;

test('readiness: /readyz is 503 while every bucket warms up, 200 after; /healthz is 200 throughout', async () => {
  const dir = tempDir('serve-ready');
  const { weights } = await fixtureModel(dir);
  // 12 buckets, cold cache: warm-up compiles 12 programs, yielding to the event loop between them
  const child = spawnServe([MODEL_FILE, '--weights', weights, '--port', '0', '--buckets', '1,2,3,4,5,6,7,8,9,10,11,12'], { KILN_CACHE_DIR: `${dir}/cache` });
  try {
    const url = await child.url();
    const seen: { status: number; body: { ready: boolean; warmup: unknown[]; reason?: string } }[] = [];
    const health: number[] = [];
    for (;;) {
      const [r, h] = await Promise.all([fetch(`${url}/readyz`), fetch(`${url}/healthz`)]);
      seen.push({ status: r.status, body: (await r.json()) as never });
      health.push(h.status);
      if (r.status === 200) break;
    }
    const before = seen.slice(0, -1);
    assert.ok(before.length > 0, 'at least one /readyz answer came before warm-up finished');
    for (const s of before) {
      assert.equal(s.status, 503);
      assert.equal(s.body.ready, false);
      assert.equal(s.body.reason, 'warming up');
      assert.ok(s.body.warmup.length < 13, `not every bucket warmed yet (${s.body.warmup.length})`);
    }
    const last = seen.at(-1)!.body;
    assert.equal(last.warmup.length, 13, 'ready only with all 12 buckets (and the eager path) warmed up');
    assert.ok(health.every((c) => c === 200), '/healthz answered 200 during warm-up');
    // the log line can reach this process after /readyz has answered 200
    await child.waitFor(/^ready in \d+ ms: warm-up \d+ ms/, 10_000);
    const text = await metrics(url);
    assert.equal(metric(text, 'kiln_serve_ready'), 1);
    assert.ok(metric(text, 'kiln_serve_warmup_seconds')! > 0, 'the warm-up time is exported');
    assert.equal(metric(text, 'kiln_serve_warmup_entry_seconds{bucket="12",source="compiled"}') !== null, true);
  } finally {
    child.proc.kill('SIGKILL');
    await child.exited;
  }
});

test('SIGTERM: stops accepting, answers every accepted request, exits 0', async () => {
  const dir = tempDir('serve-term');
  const { model, weights } = await fixtureModel(dir, 21);
  // requests wait up to 1.5 s for others: they are accepted and queued when SIGTERM comes
  const child = spawnServe([MODEL_FILE, '--weights', weights, '--port', '0', '--max-batch', '64', '--max-wait-ms', '1500'], { KILN_CACHE_DIR: `${dir}/cache` });
  let exited = false;
  try {
    const url = await child.url();
    await child.waitFor(/^ready in/);
    const xs = Array.from({ length: 8 }, () => kiln.randn([1, IN]).dataSync() as Float32Array);
    const pending = xs.map((x) => postJson(url, { inputs: { x: rowsOf(x, 1, IN) } }));
    for (let i = 0; ; i++) {
      if (metric(await metrics(url), 'kiln_serve_in_flight') === xs.length) break;
      assert.ok(i < 200, 'the 8 requests were accepted');
      await new Promise((r) => setTimeout(r, 10));
    }
    child.proc.kill('SIGTERM');
    await child.waitFor(/shutting down: refusing new requests, answering the 8 accepted/);
    const refused = await fetch(`${url}/healthz`).then((r) => r.status, (e: Error) => e.message);
    assert.notEqual(refused, 200, 'a new connection after SIGTERM is not served');
    const replies = await Promise.all(pending);
    replies.forEach((r, i) => {
      assert.equal(r.status, 200, `accepted request ${i} answered`);
      assert.ok(maxAbsDiff((r.json.outputs as { output: number[][] }).output.flat(), reference(model, xs[i]!, 1)) < 1e-4);
    });
    assert.equal(await child.exited, 0, 'exit status 0');
    exited = true;
    assert.ok(child.lines.includes('stopped'), child.lines.join('\n'));
    assert.ok(!child.lines.some((l) => /drain timed out/.test(l)), 'drained, not cut off by the drain timeout');
  } finally {
    if (!exited) {
      child.proc.kill('SIGKILL');
      await child.exited;
    }
  }
});

test("import 'kilnjs' and 'kilnjs/node' load no server packages; starting a server does", () => {
  const probe = `
    import { createRequire } from 'node:module';
    const loaded = () => Object.keys(createRequire(import.meta.url).cache).filter((p) => /node_modules\\/(fastify|prom-client|ioredis)\\//.test(p)).length;
    await import('kilnjs');
    await import('kilnjs/node');
    const before = loaded();
    const { serve } = await import('kilnjs/node');
    const { moduleEngine } = await import('./src/serve/module-engine.ts');
    const kiln = await import('kilnjs');
    const model = new kiln.nn.Linear(2, 2);
    const s = await serve({ model: moduleEngine({ name: 'probe', model, inputs: [{ name: 'x', dtype: 'float32', row: [2] }], buckets: [1] }), port: 0, logLevel: 'silent' });
    await s.ready;
    const after = loaded();
    await s.close();
    process.stdout.write(JSON.stringify({ before, after }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, KILN_CACHE: '0' } });
  assert.equal(r.status, 0, r.stderr);
  const { before, after } = JSON.parse(r.stdout) as { before: number; after: number };
  assert.equal(before, 0, 'no fastify, prom-client or ioredis module after importing kiln');
  assert.ok(after > 0, 'the check sees them once a server runs');
});
