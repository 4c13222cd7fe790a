import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { compiledFunctionOf } from '../src/compiler/compiled-info.js';

/** max |a - b| / max |b|: relative to the tensor's scale (fused kernels round once, eager after every op) */
function maxRelDiff(a: kiln.Tensor, b: kiln.Tensor): number {
  const x = a.dataSync(), y = b.dataSync();
  assert.equal(x.length, y.length);
  let m = 0, scale = 1e-12;
  for (let i = 0; i < x.length; i++) {
    m = Math.max(m, Math.abs(x[i]! - y[i]!));
    scale = Math.max(scale, Math.abs(y[i]!));
  }
  return m / scale;
}

function makeMlp(seed: number) {
  kiln.manualSeed(seed);
  const p = {
    w1: kiln.keep(kiln.randn([16, 8]).mul(0.3)), b1: kiln.keep(kiln.zeros([16])),
    w2: kiln.keep(kiln.randn([4, 16]).mul(0.3)), b2: kiln.keep(kiln.zeros([4])),
  };
  for (const [k, t] of Object.entries(p)) { kiln.keep(t); t.requiresGrad = true; t.name = k; }
  return p;
}
type Mlp = ReturnType<typeof makeMlp>;
const forward = (p: Mlp, x: kiln.Tensor) => kiln.linear(kiln.linear(x, p.w1, p.b1).relu(), p.w2, p.b2);

function sgdStep(p: Mlp, x: kiln.Tensor, y: kiln.Tensor): kiln.Tensor {
  const params = Object.values(p);
  for (const t of params) { t.grad?.dispose(); t.grad = null; }
  const loss = kiln.crossEntropy(forward(p, x), y);
  loss.backward();
  kiln.noGrad(() => { for (const t of params) t.sub_(t.grad!.mul(0.1)); });
  return loss;
}

test('compiled MLP forward equals eager, with fullgraph', () => {
  kiln.compiler.reset();
  const p = makeMlp(1);
  const x = kiln.randn([32, 8]);
  const compiled = kiln.compile((x: kiln.Tensor) => forward(p, x), { fullgraph: true });
  kiln.noGrad(() => {
    const e = forward(p, x);
    const c1 = compiled(x);
    const c2 = compiled(x); // replay
    assert.ok(maxRelDiff(c1, e) < 1e-5);
    assert.ok(maxRelDiff(c2, e) < 1e-5);
  });
  assert.equal(kiln.stats().graphBreaks.length, 0);
  assert.equal(kiln.stats().cacheHits, 1);
});

test('20 compiled SGD training steps follow eager (losses and parameters within 1e-5), zero graph breaks', () => {
  kiln.compiler.reset();
  const pe = makeMlp(7), pc = makeMlp(7);
  const x = kiln.randn([32, 8]);
  const y = kiln.randint(0, 4, [32]);
  const step = kiln.compile((x: kiln.Tensor, y: kiln.Tensor) => sgdStep(pc, x, y), { fullgraph: true });
  for (let i = 0; i < 20; i++) {
    kiln.scope(() => {
      const le = sgdStep(pe, x, y).item();
      const lc = (step(x, y) as kiln.Tensor).item();
      assert.ok(Math.abs(le - lc) <= 1e-5 * Math.abs(le), `step ${i}: eager ${le} vs compiled ${lc}`);
    });
  }
  for (const k of Object.keys(pe) as (keyof Mlp)[]) assert.ok(maxRelDiff(pc[k], pe[k]) < 1e-5, `param ${k}`);
  const s = kiln.stats();
  assert.equal(s.graphBreaks.length, 0);
  assert.equal(s.compiles, 1, 'one compile for 20 steps');
  assert.equal(s.cacheHits, 19);
});

test('a data-dependent branch gives 2 graphs and 1 break; explain names this file and line; fullgraph throws', () => {
  kiln.compiler.reset();
  const f = (x: kiln.Tensor) => {
    if (x.sum().item() > 0) return x.mul(2); // BREAK_LINE
    return x.mul(-1);
  };
  const x = kiln.randn([3, 3]);
  const r = kiln.explain(f, { print: false })(x);
  assert.equal(r.graphCount, 2);
  assert.equal(r.graphBreakCount, 1);
  const line = (new Error().stack!.split('\n')[1]!.match(/compile\.test\.ts:(\d+)/)![1]);
  assert.match(r.breaks[0]!.location, /compile\.test\.ts:\d+:\d+/);
  const breakLine = Number(r.breaks[0]!.location.split(':').at(-2));
  assert.ok(breakLine < Number(line) && breakLine > Number(line) - 12, `break line ${breakLine} near the branch`);
  assert.throws(() => kiln.compile(f, { fullgraph: true })(x), (e: unknown) => e instanceof kiln.GraphBreakError && /compile\.test\.ts:\d+:\d+/.test((e as Error).message));
  // the compiled result still equals eager
  const c = kiln.compile(f)(x) as kiln.Tensor;
  assert.ok(maxRelDiff(c, f(x)) < 1e-6);
});

test('a changed batch size recompiles once with the reason; the limit falls back eagerly; failOnRecompile throws', () => {
  kiln.compiler.reset();
  const w = kiln.randn([8, 8]);
  // dynamic: false: every new shape recompiles (the default would make dim 0 dynamic, issue 7)
  const f = kiln.compile((x: kiln.Tensor) => x.matmul(w).tanh(), { dynamic: false });
  f(kiln.randn([4, 8]));
  f(kiln.randn([4, 8]));
  f(kiln.randn([6, 8]));
  let s = kiln.stats();
  assert.equal(s.recompiles.length, 1);
  assert.match(s.recompiles[0]!.reason, /dim 0 changed: expected 4, got 6/);
  for (let b = 1; b <= 9; b++) {
    const x = kiln.randn([b + 10, 8]);
    const r = f(x) as kiln.Tensor;
    assert.ok(maxRelDiff(r, x.matmul(w).tanh()) < 1e-6);
  }
  s = kiln.stats();
  assert.equal(s.recompiles.length, 7, 'entries up to the limit of 8');
  assert.ok(s.eagerFallbacks >= 3, `fell back eagerly (${s.eagerFallbacks})`);
  assert.match(s.fallbackReasons[0]!, /recompile limit 8/);
  kiln.compiler.setStance('failOnRecompile');
  try {
    const g = kiln.compile((x: kiln.Tensor) => x.add(1));
    g(kiln.randn([2]));
    assert.throws(() => g(kiln.randn([3])), kiln.RecompileError);
  } finally {
    kiln.compiler.setStance('default');
  }
});

test('replay skips user JavaScript: a counter moves only while tracing (the trace and the first replay\'s check)', () => {
  kiln.compiler.reset();
  let calls = 0;
  const f = kiln.compile((x: kiln.Tensor) => { calls++; return x.exp().sum(); });
  for (let i = 0; i < 5; i++) f(kiln.randn([5]));
  assert.equal(calls, 2);
  assert.equal(kiln.stats().traceChecks, 1);
  calls = 0;
  const g = kiln.compile((x: kiln.Tensor) => { calls++; return x.exp().sum(); }, { check: false });
  for (let i = 0; i < 5; i++) g(kiln.randn([5]));
  assert.equal(calls, 1, 'check: false: only the trace');
});

test('custom ops run as opaque nodes inside a graph, with their gradient', () => {
  kiln.compiler.reset();
  const cube = kiln.customOp({
    name: 'cube',
    forward: (x) => { const d = x.dataSync(); return kiln.tensor(Float32Array.from(d, (v) => v * v * v), [...x.shape]); },
    backward: (g, [x]) => [g.mul(x!.mul(x!).mul(3))],
  });
  const f = kiln.compile((x: kiln.Tensor) => cube(x.add(1)).sum(), { fullgraph: true });
  const x = kiln.randn([4]);
  const want = x.add(1).pow(3).sum().item();
  assert.ok(Math.abs((f(x) as kiln.Tensor).item() - want) < 1e-4 * Math.abs(want) + 1e-5);
  assert.ok(Math.abs((f(x) as kiln.Tensor).item() - want) < 1e-4 * Math.abs(want) + 1e-5);
  assert.equal(kiln.stats().graphBreaks.length, 0);
  const xg = kiln.randn([4], { requiresGrad: true });
  cube(xg).sum().backward();
  assert.ok(maxRelDiff(xg.grad!, xg.detach().pow(2).mul(3)) < 1e-5);
});

test('kiln.compiler.disable makes a graph break and runs eagerly', () => {
  kiln.compiler.reset();
  const helper = kiln.compiler.disable((t: kiln.Tensor) => t.add(1));
  const f = kiln.compile((x: kiln.Tensor) => helper(x.mul(2)).mul(3));
  const x = kiln.randn([3]);
  assert.ok(maxRelDiff(f(x) as kiln.Tensor, x.mul(2).add(1).mul(3)) < 1e-6);
  assert.equal(kiln.stats().graphBreaks.length, 1);
  assert.match(kiln.stats().graphBreaks[0]!.reason, /disable/);
});

test('mode reduce-overhead and backend eager compute the same values', () => {
  kiln.compiler.reset();
  const w = kiln.randn([6, 6]);
  const fn = (x: kiln.Tensor) => x.matmul(w).softmax(-1).mul(x).sum(0);
  const x = kiln.randn([5, 6]);
  const want = fn(x);
  for (const opts of [{ mode: 'reduce-overhead' as const }, { backend: 'eager' }]) {
    const f = kiln.compile(fn, opts);
    for (let i = 0; i < 3; i++) assert.ok(maxRelDiff(f(x) as kiln.Tensor, want) < 1e-6, JSON.stringify(opts));
  }
});

test('reduce-overhead recycles the buffers of disposed outputs (no allocation per call)', () => {
  kiln.compiler.reset();
  const f = kiln.compile((x: kiln.Tensor) => x.mul(2).add(1), { mode: 'reduce-overhead' });
  const x = kiln.randn([4096]);
  const first = f(x) as kiln.Tensor;
  const buf = first.storage.buf;
  const want = first.dataSync();
  first.dispose();
  const second = f(x) as kiln.Tensor;
  assert.equal(second.storage.buf, buf, 'the disposed output buffer was reused');
  assert.deepEqual(second.dataSync(), want);
  const third = f(x) as kiln.Tensor; // second is still alive: a fresh buffer
  assert.notEqual(third.storage.buf, buf);
  const g = kiln.compile((x: kiln.Tensor) => x.mul(2).add(1));
  const a = g(x) as kiln.Tensor, ab = a.storage.buf;
  a.dispose();
  assert.notEqual((g(x) as kiln.Tensor).storage.buf, ab, 'default mode allocates fresh outputs');
});

test('max-autotune times matmul blockings on the real shapes, records the choice, and stays correct', () => {
  kiln.compiler.reset();
  kiln.manualSeed(2);
  const w = kiln.randn([96, 64]), b = kiln.randn([96]);
  const fn = (x: kiln.Tensor) => kiln.linear(x, w, b).relu();
  const f = kiln.compile(fn, { mode: 'max-autotune' });
  const x = kiln.randn([200, 64]);
  assert.ok(maxRelDiff(f(x) as kiln.Tensor, fn(x)) < 1e-5);
  assert.ok(maxRelDiff(f(x) as kiln.Tensor, fn(x)) < 1e-5);
  const g = f.compiled.report!.graphs[0]!;
  assert.match(g.fusion!, /autotuned .*k\d+_matmul \[200x64\]@\[64x96\]: kc=\d+ mc=\d+ nc=\d+ \(.*ms/);
  assert.match(g.program!, /tiles kc=\d+ mc=\d+ nc=\d+ \(autotuned\)/);
});

test('implicit number conversion (if (t > 0)) is a located graph break, and works eagerly', () => {
  kiln.compiler.reset();
  const f = (x: kiln.Tensor) => ((x.sum() as unknown as number) > 0 ? x.mul(2) : x.mul(-1));
  const x = kiln.tensor([1, 2, -0.5]);
  assert.ok(maxRelDiff(f(x), x.mul(2)) < 1e-7);
  const r = kiln.explain(f, { print: false })(x);
  assert.equal(r.graphBreakCount, 1);
  assert.match(r.breaks[0]!.reason, /implicit number conversion/);
  assert.match(r.breaks[0]!.location, /compile\.test\.ts:\d+:\d+/);
  assert.throws(() => +kiln.ones([2]), kiln.ArgumentError);
  assert.equal(`${kiln.tensor([1.5])}`, 'tensor([1.5000])');
});

test('a compiled module shares its parameters, and replacing one recompiles with the reason', () => {
  kiln.compiler.reset();
  kiln.manualSeed(5);
  const m = new kiln.nn.Linear(4, 3);
  const c = kiln.compile(m);
  const x = kiln.randn([2, 4]);
  kiln.noGrad(() => {
    assert.ok(maxRelDiff(c(x) as kiln.Tensor, m.forward(x)) < 1e-6);
    kiln.noGrad(() => m.weight.mul_(2)); // an in-place update is seen without recompiling
    assert.ok(maxRelDiff(c(x) as kiln.Tensor, m.forward(x)) < 1e-6);
    assert.equal(kiln.stats().recompiles.length, 0);
    m.weight = kiln.nn.Parameter(kiln.randn([3, 4]));
    assert.ok(maxRelDiff(c(x) as kiln.Tensor, m.forward(x)) < 1e-6);
  });
  assert.match(kiln.stats().recompiles[0]!.reason, /parameter weight was replaced/);
});

// regressions found by bench/compile.ts (W2, W6)
test('a captured tensor saved for backward is one graph input: no recompile per call', () => {
  kiln.compiler.reset();
  const w = kiln.keep(kiln.randn([6]).requiresGrad_());
  const x = kiln.randn([4, 6]);
  const f = kiln.compile((x: kiln.Tensor) => { w.grad?.dispose(); w.grad = null; const l = x.mul(w).sum(); l.backward(); return l; });
  for (let i = 0; i < 3; i++) kiln.scope(() => { f(x); });
  assert.equal(kiln.stats().recompiles.length, 0, JSON.stringify(kiln.stats().recompiles));
  assert.equal(kiln.stats().cacheHits, 2);
  assert.ok(maxRelDiff(w.grad!, x.sum(0)) < 1e-6);
});

test('a compiled training step that returns its loss replays the fused program (no autograd history)', () => {
  kiln.compiler.reset();
  const m = new kiln.nn.Linear(8, 4), opt = new kiln.optim.SGD(m.parameters(), { lr: 0.1 });
  const step = kiln.compile((x: kiln.Tensor) => { opt.zeroGrad(); const loss = m.call(x).square().mean(); loss.backward(); opt.step(); return loss; });
  const x = kiln.randn([16, 8]);
  kiln.scope(() => { step(x); });
  kiln.scope(() => { step(x); }); // the first replay is a check trace
  const loss = step(x) as kiln.Tensor;
  assert.equal(loss.requiresGrad, false);
  assert.ok(step.compiled.report!.graphs[0]!.kernels! > 0);
  const entry = compiledFunctionOf(step).compiledEntries[0]!;
  assert.equal(entry.interpreted, null);
  assert.equal(kiln.stats().interpretedReplays, 0);
  assert.equal(kiln.stats().aotCompiles, 0, 'a step that runs backward itself gets no compiled backward');
});

test('backward into an existing .grad accumulates on replay as in eager', () => {
  kiln.compiler.reset();
  const w = kiln.keep(kiln.randn([4, 6]).requiresGrad_());
  const x = kiln.randn([4, 6]);
  const f = kiln.compile((x: kiln.Tensor) => { const l = x.mul(w).sum(); l.backward(); return l; });
  for (let i = 0; i < 3; i++) kiln.scope(() => { f(x); });
  assert.ok(maxRelDiff(w.grad!, x.mul(3)) < 1e-6, 'three backward calls accumulate 3x');
  assert.match(kiln.stats().recompiles[0]!.reason, /grad is no longer null/);
});

test('retracing a function that calls backward while a .grad exists works', () => {
  kiln.compiler.reset();
  const w = kiln.keep(kiln.randn([6]).requiresGrad_());
  const f = kiln.compile((x: kiln.Tensor) => { const l = x.mul(w).sum(); l.backward(); return l; });
  const a = kiln.randn([4, 6]), b = kiln.randn([5, 6]);
  kiln.scope(() => { f(a); });
  kiln.scope(() => { f(b); });
  assert.ok(maxRelDiff(w.grad!, a.sum(0).add(b.sum(0))) < 1e-6);
});

test('random ops (dropout) draw fresh numbers on every compiled call, in every replay mode', () => {
  for (const opts of [{}, { backend: 'eager' }, { fuse: false }]) {
    kiln.compiler.reset();
    const f = kiln.compile((x: kiln.Tensor) => kiln.dropout(x, 0.5), opts);
    const x = kiln.ones([256]);
    const a = (f(x) as kiln.Tensor).dataSync(), b = (f(x) as kiln.Tensor).dataSync(), c = (f(x) as kiln.Tensor).dataSync();
    const differs = (p: ArrayLike<number>, q: ArrayLike<number>) => Array.from(p).some((v, i) => v !== q[i]);
    assert.ok(differs(a, b) && differs(b, c), `masks repeat with ${JSON.stringify(opts)}`);
    const kept = Array.from(c).filter((v) => v !== 0);
    assert.ok(kept.every((v) => v === 2) && kept.length > 80 && kept.length < 176, 'kept values scaled by 1/(1-p), about half kept');
  }
});

test('a compiled callable shows a read-only view of itself (name, report, entry count), not the compiler state behind it', () => {
  kiln.compiler.reset();
  const f = kiln.compile((x: kiln.Tensor) => x.mul(2).add(1), { name: 'affine' });
  kiln.scope(() => { f(kiln.ones([4])); });
  const info: kiln.CompiledInfo = f.compiled;
  assert.deepEqual(Object.keys(info).sort(), ['entryCount', 'name', 'report']);
  assert.ok(Object.isFrozen(info));
  assert.equal(info.name, 'affine');
  assert.equal(info.entryCount, 1);
  assert.equal(info.report!.name, 'affine');
  // @ts-expect-error the compiled entries are internal (kiln reaches them through compiledFunctionOf)
  assert.equal(f.compiled.compiledEntries, undefined);
  assert.equal(compiledFunctionOf(f).compiledEntries.length, 1);
});
