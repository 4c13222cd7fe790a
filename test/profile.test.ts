// kiln.profile (src/compiler/observe/profile.ts): on js, wasm and native, the report's kernels are the
// program's kernels in order, each launched once per profiled call; the Chrome trace is valid
// JSON whose events are well formed and nest as they ran (calls > compile stages > programs >
// kernels; eager ops); bytes and FLOPs are what the kernels move and compute (a matmul's 2MNK,
// its operands and output once); the table names every kernel; profiling leaves results and the
// compiled path unchanged (no fallback); bad options and nested profiles raise typed errors.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import { nativeUnavailableReason } from 'kilnjs/node';
import { compiledFunctionOf } from '../src/compiler/compiled-info.js';

process.env.KILN_CACHE_DIR ??= join(tmpdir(), 'kiln-test-cache');
const nativeWhy = nativeUnavailableReason();
const wasmWhy = kiln.wasmUnavailableReason();
const BACKENDS = [
  { backend: 'js', skip: false },
  { backend: 'wasm', skip: wasmWhy ? `wasm unavailable: ${wasmWhy}` : false },
  { backend: 'native', skip: nativeWhy ? `native unavailable: ${nativeWhy}` : false },
] as const;

type T = kiln.Tensor;

/** The kernel names of a compiled function's (first) program, in launch order. */
function programKernels(c: { compiled: { report: { graphs: { program?: string }[] } | null } }): string[] {
  const text = c.compiled.report!.graphs.map((g) => g.program ?? '').join('\n');
  return [...text.matchAll(/^kernel (\S+):/gm)].map((m) => m[1]!);
}

/** Checks the Chrome trace: JSON, well-formed events, and per thread every event inside its parent or after it. */
function checkTrace(trace: kiln.ChromeTrace): kiln.ChromeTraceEvent[] {
  const parsed = JSON.parse(JSON.stringify(trace)) as { traceEvents: kiln.ChromeTraceEvent[] };
  assert.ok(Array.isArray(parsed.traceEvents) && parsed.traceEvents.length > 0);
  const xs = parsed.traceEvents.filter((e) => e.ph === 'X');
  for (const e of parsed.traceEvents) {
    assert.equal(typeof e.name, 'string');
    assert.ok(e.ph === 'X' || e.ph === 'M', `phase ${e.ph}`);
    assert.ok(Number.isInteger(e.pid) && Number.isInteger(e.tid));
    assert.ok(Number.isFinite(e.ts) && e.ts >= 0, `${e.name}: ts ${e.ts}`);
    if (e.ph === 'X') assert.ok(Number.isFinite(e.dur) && e.dur! >= 0, `${e.name}: dur ${e.dur}`);
  }
  // nesting: sorted by start (longer first at equal starts), a stack of open events per thread
  const eps = 1e-3; // µs
  for (const tid of new Set(xs.map((e) => e.tid))) {
    const stack: kiln.ChromeTraceEvent[] = [];
    for (const e of xs.filter((x) => x.tid === tid).sort((a, b) => a.ts - b.ts || b.dur! - a.dur!)) {
      while (stack.length && e.ts >= stack.at(-1)!.ts + stack.at(-1)!.dur! - eps && !(e.dur === 0 && e.ts <= stack.at(-1)!.ts + stack.at(-1)!.dur!)) stack.pop();
      const top = stack.at(-1);
      if (top) assert.ok(e.ts + e.dur! <= top.ts + top.dur! + eps, `${e.cat}:${e.name} [${e.ts}, ${e.ts + e.dur!}] overlaps ${top.cat}:${top.name} [${top.ts}, ${top.ts + top.dur!}] without nesting`);
      stack.push(e);
    }
  }
  return xs;
}

/** A small decoder block and an MLP head: row kernels, matmuls with epilogues, attention. */
function model(d: number) {
  kiln.manualSeed(7);
  const qkv = new kiln.nn.Linear(d, 3 * d), proj = new kiln.nn.Linear(d, d), fc = new kiln.nn.Linear(d, 2 * d), out = new kiln.nn.Linear(2 * d, d);
  const ln1 = new kiln.nn.LayerNorm(d), ln2 = new kiln.nn.LayerNorm(d);
  return (x: T) => {
    const [b, t] = x.shape as [number, number, number];
    const [q, k, v] = qkv.call(ln1.call(x)).split(d, -1).map((u) => u.reshape([b, t, 2, d / 2]).permute([0, 2, 1, 3])) as [T, T, T];
    const h = x.add(proj.call(kiln.scaledDotProductAttention(q, k, v, { isCausal: true }).permute([0, 2, 1, 3]).reshape([b, t, d])));
    return h.add(out.call(fc.call(ln2.call(h)).gelu('tanh')));
  };
}

for (const { backend, skip } of BACKENDS) {
  test(`profile on ${backend}: the kernels of the program, a nested Chrome trace, eager ops and compile stages`, { skip }, () => {
    kiln.compiler.reset();
    const f = model(16);
    const x = kiln.keep(kiln.randn([1, 9, 16]));
    const c = kiln.compile(f, { backend, fullgraph: true });
    const want = kiln.noGrad(() => kiln.scope(() => Array.from(f(x).dataSync())));
    // the first call compiles inside the profile (warmup 0): compile stages show
    const r = kiln.noGrad(() => kiln.profile(() => c(x.mul(1)), { runs: 3 })()) as kiln.ProfileReport;
    const kernels = programKernels(c);
    assert.ok(kernels.length >= 5, kernels.join(', '));
    assert.deepEqual(r.kernels.map((k) => k.name), kernels, 'the report lists the program kernels, in order');
    for (const k of r.kernels) {
      assert.equal(k.backend, backend);
      assert.equal(k.calls, 3, `${k.name}: launched once per call`);
      assert.ok(k.totalMs > 0 && Number.isFinite(k.msPerCall), `${k.name}: ${k.totalMs} ms`);
      assert.ok(k.bytes > 0 && k.flops >= 0 && Number.isFinite(k.gbps) && Number.isFinite(k.gflops), JSON.stringify(k));
      assert.ok(k.fused.length > 0, `${k.name}: what it fused`);
    }
    assert.ok(Math.abs(r.kernels.reduce((a, k) => a + k.share, 0) - 1) < 1e-9, 'shares add up');
    if (backend === 'js' || backend === 'native') assert.ok(r.kernels.some((k) => k.kind === 'attention' && /matmul %\d+.*max %\d+.*matmul %\d+/.test(k.fused)), 'the attention kernel names what it fused');
    assert.equal(r.runs, 3);
    assert.ok(r.eager.some((e) => e.op === 'mul' && e.calls === 3), `the eager x.mul(1) of each call: ${JSON.stringify(r.eager)}`);
    const stages = r.compile.map((s) => s.stage);
    assert.ok(stages.some((s) => s.startsWith('compile ')) && (stages.includes('lower') || stages.includes('cached_program')) && stages.includes('cse') && stages.some((s) => s.startsWith('codegen')), stages.join(', '));
    // the trace
    const xs = checkTrace(r.chromeTrace());
    assert.equal(xs.filter((e) => e.cat === 'kernel').length, 3 * kernels.length);
    assert.equal(xs.filter((e) => e.cat === 'profile').length, 3, 'one span per call');
    assert.ok(xs.some((e) => e.cat === 'eager' && e.name === 'mul'));
    assert.ok(xs.some((e) => e.cat === 'compile' && (e.name === 'lower' || e.name === 'cached_program')));
    assert.ok(xs.filter((e) => e.cat === 'program').length === 3, 'one program span per call');
    // the table names every kernel and the floors
    const table = r.table({ top: 100 });
    for (const k of kernels) assert.ok(table.includes(k), `table lists ${k}`);
    assert.match(table, new RegExp(`floors ${backend}: [\\d.]+ GB/s, [\\d.]+ GFLOP/s \\(measured`));
    // results and the compiled path are unchanged
    const got = kiln.noGrad(() => kiln.scope(() => Array.from(c(x).dataSync())));
    got.forEach((v, i) => assert.ok(Math.abs(v - want[i]!) <= 1e-4 * (1 + Math.abs(want[i]!)), `[${i}] ${v} vs ${want[i]}`));
    assert.equal(kiln.stats().fusionFallbacks, 0);
    assert.equal(kiln.stats().eagerFallbacks, 0);
    x.dispose();
  });

  test(`profile on ${backend}: bytes and FLOPs are what the kernels move and compute`, { skip }, () => {
    kiln.compiler.reset();
    const [m, k, n] = [33, 40, 27];
    const a = kiln.keep(kiln.randn([m, k])), b = kiln.keep(kiln.randn([k, n])), v = kiln.keep(kiln.randn([5000]));
    const mm = kiln.compile((a: T, b: T) => a.matmul(b), { backend, fullgraph: true });
    const pw = kiln.compile((v: T) => v.mul(2).add(1), { backend, fullgraph: true });
    // two warm-up calls: the trace, then the first replay's check trace (compile option `check`)
    const r = kiln.profile(() => (mm(a, b), pw(v)), { warmup: 2, runs: 2, floors: { gbps: 10, gflops: 50 } })() as kiln.ProfileReport;
    assert.equal(r.kernels.length, 2, r.table());
    const [km, kp] = r.kernels as [kiln.KernelProfile, kiln.KernelProfile];
    assert.equal(km.kind, 'matmul');
    assert.equal(km.flops, 2 * m * n * k, 'a matmul is 2MNK');
    assert.equal(km.bytes, 4 * (m * k + k * n + m * n), 'A, B and C once each');
    assert.equal(kp.kind, 'pointwise');
    assert.equal(kp.flops, 2 * 5000, 'a mul and an add per element');
    assert.equal(kp.bytes, 2 * 4 * 5000, 'one read and one write per element');
    for (const x of r.kernels) {
      assert.ok(Math.abs(x.gbps - x.bytes / (x.msPerCall * 1e6)) < 1e-9 * x.gbps + 1e-12);
      assert.ok(Math.abs(x.bandwidthOfFloor! - x.gbps / 10) < 1e-12 && Math.abs(x.computeOfFloor! - x.gflops / 50) < 1e-12, 'against the given floors');
    }
    assert.equal(r.floors[backend]!.source, 'given (kiln.profile options)');
    assert.equal(r.compile.length, 0, 'warm: nothing compiled in the profiled calls');
    for (const t of [a, b, v]) t.dispose();
  });
}

test('profile: eager code alone, typed errors for bad options and nested profiles', () => {
  const x = kiln.randn([64, 64]);
  const r = kiln.profile(() => x.matmul(x).relu().sum())() as kiln.ProfileReport;
  assert.equal(r.kernels.length, 0);
  assert.deepEqual(new Set(r.eager.map((e) => e.op)), new Set(['matmul', 'relu', 'sum']));
  checkTrace(r.chromeTrace());
  // the nesting check itself: two events that overlap without one inside the other fail it
  const bad = { displayTimeUnit: 'ms' as const, traceEvents: [{ name: 'a', ph: 'X' as const, ts: 0, dur: 10, pid: 1, tid: 1 }, { name: 'b', ph: 'X' as const, ts: 5, dur: 10, pid: 1, tid: 1 }] };
  assert.throws(() => checkTrace(bad), /:b \[5, 15\] overlaps .*:a \[0, 10\]/);
  assert.throws(() => kiln.profile(() => 0, { runs: 0 }), (e: Error) => e instanceof kiln.ArgumentError && /runs must be an integer >= 1/.test(e.message));
  assert.throws(() => kiln.profile(() => 0, { warmup: 1.5 }), (e: Error) => e instanceof kiln.ArgumentError && /warmup/.test(e.message));
  assert.throws(() => kiln.profile(42 as unknown as () => void), (e: Error) => e instanceof kiln.ArgumentError && /expected a function/.test(e.message));
  assert.throws(() => kiln.profile(() => kiln.profile(() => 0)())(), (e: Error) => e instanceof kiln.ArgumentError && /already running/.test(e.message));
  // a failed profile leaves nothing installed: the next one works
  assert.equal((kiln.profile(() => x.add(1))() as kiln.ProfileReport).eager.length, 1);
  x.dispose();
});

test('profile: a compiled generator (reads between graphs) returns a Promise of the report, every call recorded', async () => {
  kiln.compiler.reset();
  const x = kiln.keep(kiln.randn([16, 16]));
  const g = kiln.compile(function* (x: T) {
    const y = x.matmul(x).relu();
    const [s] = yield* kiln.read(y.sum());
    return y.mul(s! > 0 ? 2 : 3).softmax(-1);
  });
  await g(x); // traced: each later call runs the two segments' programs
  const p = kiln.profile(() => g(x), { runs: 3 })();
  assert.ok(p instanceof Promise);
  const r = await p;
  assert.equal(r.runs, 3);
  assert.ok(r.kernels.length >= 2, r.table());
  for (const k of r.kernels) assert.equal(k.calls, 3, `${k.name}: recorded in every call, both sides of the read`);
  checkTrace(r.chromeTrace());
  x.dispose();
});

test('profile: normal replay does not time kernels one by one (the per-step path runs only while profiling)', () => {
  kiln.compiler.reset();
  const x = kiln.keep(kiln.randn([32, 32]));
  const c = kiln.compile((x: T) => x.matmul(x).relu().add(1).softmax(-1), { fullgraph: true });
  c(x).dispose();
  const program = compiledFunctionOf(c).compiledEntries[0]!.program as unknown as { runProfiled: (...a: unknown[]) => void };
  let profiled = 0;
  const orig = program.runProfiled;
  program.runProfiled = function (this: unknown, ...a: unknown[]) {
    profiled++;
    return orig.apply(this, a);
  };
  for (let i = 0; i < 3; i++) c(x).dispose();
  assert.equal(profiled, 0, 'plain calls take the plain loop');
  kiln.profile(() => c(x))();
  assert.equal(profiled, 1, 'a profiled call takes the timed loop');
  x.dispose();
});
