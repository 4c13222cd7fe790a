// Explicit asynchronous reads in compiled code: a compiled generator reads tensor values with
// `yield* kiln.read(t)` (a graph break), and the compiled function returns a Promise. Checked
// here on the CPU against eager code reading with item(); test/webgpu.test.ts runs it on WebGPU.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { runtime } from '../src/ops/dispatch.js';

const seed = Date.now() % 100_000;
console.log(`# async-read inputs: seed ${seed}`);
kiln.manualSeed(seed);
const randn = (shape: number[]) => kiln.randn(shape);

/** A data-dependent step: the branch taken depends on a value read in the middle. */
function* branchy(x: kiln.Tensor) {
  const s = x.sum();
  const v = yield* kiln.read(s);
  const y = v[0]! > 0 ? x.relu().mul(2) : x.neg().exp();
  // a value read and used in arithmetic would be a constant of the next graph (one graph per
  // value): the arithmetic stays on tensors, the read only decides
  const [lo, hi] = yield* kiln.read(y.min(), y.max());
  const scaled = y.sub(y.min()).div(y.max().sub(y.min()).add(1));
  return hi![0]! - lo![0]! > 1e30 ? kiln.zerosLike(y) : scaled;
}
function branchyEager(x: kiln.Tensor): kiln.Tensor {
  const y = x.sum().item() > 0 ? x.relu().mul(2) : x.neg().exp();
  const lo = y.min().item(), hi = y.max().item();
  return hi - lo > 1e30 ? kiln.zerosLike(y) : y.sub(lo).div(hi - lo + 1);
}

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what: string) => {
  assert.equal(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i]! - b[i]!) <= tol * Math.max(1, Math.abs(b[i]!)), `${what}[${i}]: ${a[i]} vs ${b[i]}`);
};

test('a compiled generator reads at explicit breaks: Promise result equal to eager, both branches, segments reused, breaks counted with the user line', async () => {
  kiln.compiler.reset();
  const f = kiln.compile(branchy);
  const inputs = [randn([7, 5]).abs(), randn([7, 5]).abs().neg(), randn([7, 5]).abs(), randn([7, 5]).abs().neg()].map(kiln.keep);
  for (const x of inputs) {
    const pending = f(x);
    assert.ok(pending instanceof Promise, 'a compiled generator returns a Promise');
    const got = await pending;
    close(got.dataSync(), branchyEager(x).dataSync(), 1e-6, 'result');
  }
  const s = kiln.stats();
  assert.equal(s.asyncReads, 8, 'two reads per call');
  assert.equal(s.graphsCompiled, 4, 'three segments: the middle one per branch, the others shared: 1 + 2 + 1');
  assert.ok(s.segmentHits >= 6, `later calls find their segments by structure (${s.segmentHits})`);
  assert.equal(s.compiles, 1, 'one entry (re-run each call); no recompiles');
  assert.equal(s.recompiles.length, 0);
  assert.equal(s.graphBreaks.length, 2, 'two break sites, counted once each');
  for (const b of s.graphBreaks) {
    assert.match(b.reason, /asynchronous read of \d tensors? \(kiln\.read\)/);
    assert.match(b.location, /async-read\.test\.ts:\d+:\d+/, 'the location is the kiln.read line in the user code');
  }
  assert.equal(runtime.tracer, null, 'no tracer left installed');
  inputs.forEach((t) => t.dispose());
});

test('a training step that reads its loss before deciding to step: compiled generator equals eager over six steps', async () => {
  const run = async (compiled: boolean) => {
    kiln.compiler.reset();
    kiln.manualSeed(11);
    const model = new kiln.nn.Sequential(new kiln.nn.Linear(6, 16), new kiln.nn.Tanh(), new kiln.nn.Linear(16, 3));
    const opt = new kiln.optim.SGD(model.parameters(), { lr: 0.2, momentum: 0.9 });
    const x = kiln.keep(kiln.randn([32, 6]));
    const y = kiln.keep(kiln.randint(0, 3, [32]));
    // skip the update when the loss is not finite (or, here, above a bound that some steps hit)
    function* step(xb: kiln.Tensor, yb: kiln.Tensor) {
      opt.zeroGrad();
      const loss = kiln.crossEntropy(model.call(xb), yb);
      const [l] = yield* kiln.read(loss);
      if (!Number.isFinite(l!) || l! > 5) return loss;
      loss.backward();
      opt.step();
      return loss;
    }
    const eagerStep = (xb: kiln.Tensor, yb: kiln.Tensor) => {
      opt.zeroGrad();
      const loss = kiln.crossEntropy(model.call(xb), yb);
      const l = loss.item();
      if (!Number.isFinite(l) || l > 5) return loss;
      loss.backward();
      opt.step();
      return loss;
    };
    const f = kiln.compile(step);
    const losses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const loss = compiled ? await f(x, y) : eagerStep(x, y);
      losses.push(loss.item());
      loss.dispose();
    }
    return { losses, params: model.parameters().map((p) => Array.from(p.dataSync())) };
  };
  const eager = await run(false);
  const got = await run(true);
  close(got.losses, eager.losses, 1e-5, 'loss');
  got.params.forEach((p, i) => close(p, eager.params[i]!, 1e-5, `param ${i}`));
  assert.ok(got.losses[5]! < got.losses[0]!, 'it trains');
  assert.equal(kiln.stats().asyncReads, 6);
  assert.equal(kiln.stats().graphsCompiled, 3, 'forward; backward + step on the first call (it makes the momentum buffers), then on later calls: each reused');
});

test('explain on a compiled generator resolves to the report: both graphs and the asynchronous break', async () => {
  kiln.compiler.reset();
  const x = kiln.keep(randn([4, 3]).abs());
  const r = await kiln.explain(branchy, { print: false })(x);
  assert.equal(r.graphBreakCount, 2);
  assert.equal(r.graphCount, 3);
  assert.match(r.text, /break 1 at .*async-read\.test\.ts.*asynchronous read of 1 tensor \(kiln\.read\)/);
  assert.match(r.text, /break 2 at .*asynchronous read of 2 tensors/);
  x.dispose();
});

test('compiled generators: fullgraph rejects at the read, bad yields and misuse are typed errors, stances run eagerly, nothing stays traced', async () => {
  const x = kiln.keep(randn([5]));
  kiln.compiler.reset();
  await assert.rejects(kiln.compile(branchy, { fullgraph: true })(x), (e: unknown) => e instanceof kiln.GraphBreakError && /asynchronous read.*fullgraph forbids breaks/s.test((e as Error).message));
  // yielding something that is not a read
  function* yieldsNumber(t: kiln.Tensor) {
    yield 3;
    return t;
  }
  await assert.rejects(kiln.compile(yieldsNumber)(x), (e: unknown) => e instanceof kiln.ArgumentError && /yielded number 3/.test((e as Error).message) && /yield\* kiln\.read\(t\)/.test((e as Error).message));
  // `yield t` directly also reads (location: the yield's ordinal)
  function* bare(t: kiln.Tensor) {
    const v = (yield t.sum()) as Float32Array;
    return t.add(v[0]!);
  }
  kiln.compiler.reset();
  const b = await kiln.compile(bare)(x);
  close(b.dataSync(), x.add(x.sum().item()).dataSync(), 1e-6, 'bare yield');
  assert.equal(kiln.stats().graphBreaks[0]!.location, 'yield #1 in bare');
  // an error thrown after a read: the Promise rejects with it, the generator's finally runs, no tracer stays
  let cleaned = false;
  function* throwsLate(t: kiln.Tensor) {
    try {
      yield* kiln.read(t.sum());
      throw new RangeError('user error after the read');
    } finally {
      cleaned = true;
    }
  }
  await assert.rejects(kiln.compile(throwsLate)(x), RangeError);
  assert.ok(cleaned);
  assert.equal(runtime.tracer, null);
  // forceEager: the same Promise-returning call, run without tracing
  kiln.compiler.reset();
  kiln.compiler.setStance('forceEager');
  try {
    const e = await kiln.compile(branchy)(x);
    close(e.dataSync(), branchyEager(x).dataSync(), 1e-6, 'forceEager');
    assert.equal(kiln.stats().graphsCompiled, 0);
  } finally {
    kiln.compiler.setStance('default');
  }
  // warm-up cannot restore state across awaited reads: a typed error says what to do instead
  await assert.rejects(kiln.compile(branchy).warmup([[x]]), (e: unknown) => e instanceof kiln.ArgumentError && /not supported for the compiled generator/.test((e as Error).message));
  // inside another compiled (synchronous) function there is no Promise to wait on
  const inner = kiln.compile(branchy);
  const outer = kiln.compile((t: kiln.Tensor) => inner(t));
  assert.throws(() => outer(x), (e: unknown) => e instanceof kiln.GraphBreakError && /called inside another compiled function/.test((e as Error).message));
  assert.equal(runtime.tracer, null);
  x.dispose();
});

test('calls of a compiled generator may overlap: each keeps its own trace, and eager code between them is not traced', async () => {
  kiln.compiler.reset();
  const f = kiln.compile(branchy);
  const xs = [randn([6, 4]).abs(), randn([6, 4]).abs().neg(), randn([3, 2])].map(kiln.keep);
  const pending = xs.map((x) => f(x)); // all three start before any read finishes
  // eager work while the calls wait on their reads: real values, no proxies
  const e = kiln.tensor([1, 2, 3]).mul(2);
  assert.deepEqual(Array.from(e.dataSync()), [2, 4, 6]);
  const got = await Promise.all(pending);
  got.forEach((g, i) => close(g.dataSync(), branchyEager(xs[i]!).dataSync(), 1e-6, `call ${i}`));
  [...xs, e, ...got].forEach((t) => t.dispose());
});

test('a compiled generator call is a scope: what it made is released when it settles, except its result; a function returning a generator and a module with a generator forward compile the same way', async () => {
  kiln.compiler.reset();
  const x = kiln.keep(randn([8, 8]).abs());
  const f = kiln.compile(branchy);
  (await f(x)).dispose(); // the first call compiles
  const before = kiln.memory().tensors;
  const r = await f(x);
  assert.equal(kiln.memory().tensors, before + 1, 'only the result is left');
  r.dispose();
  // known only from what the call returns (an arrow function around a generator)
  const wrapped = kiln.compile((t: kiln.Tensor) => branchy(t));
  const w = await wrapped(x);
  close(w.dataSync(), branchyEager(x).dataSync(), 1e-6, 'wrapped');
  w.dispose();
  class Gate extends kiln.nn.Module<[kiln.Tensor], Generator<unknown, kiln.Tensor, unknown>> {
    readonly lin = new kiln.nn.Linear(8, 4);
    *forward(t: kiln.Tensor) {
      const h = this.lin.call(t);
      const [m] = yield* kiln.read(h.abs().max());
      return m! > 100 ? h.div(m!) : h.tanh();
    }
  }
  const gate = new Gate();
  const cm = kiln.compile(gate);
  const got = await (cm(x) as unknown as Promise<kiln.Tensor>);
  const ref = kiln.noGrad(() => gate.lin.call(x).tanh());
  close(got.dataSync(), ref.dataSync(), 1e-6, 'module');
  assert.equal(kiln.stats().asyncReads, 7, 'two calls of f, the wrapped call (two reads each) and the module (one)');
  [x, got, ref].forEach((t) => t.dispose());
});

test('each stretch of a compiled generator runs with the call\'s grad mode and default backend, whatever the caller switched while it waited', async () => {
  kiln.compiler.reset();
  const w = kiln.keep(kiln.randn([4]).requiresGrad_());
  const x = kiln.keep(randn([4]));
  function* scaled(t: kiln.Tensor) {
    yield* kiln.read(t.sum());
    return t.mul(w); // after the read: still under the caller's noGrad
  }
  for (const stance of ['default', 'forceEager'] as const) {
    kiln.compiler.setStance(stance);
    try {
      const r = await kiln.noGrad(() => kiln.compile(scaled)(x));
      assert.equal(r.requiresGrad, false, `${stance}: no autograd history under noGrad`);
      const g = await kiln.compile(scaled)(x);
      assert.equal(g.requiresGrad, true, `${stance}: history with grad enabled`);
      [r, g].forEach((t) => t.dispose());
    } finally {
      kiln.compiler.setStance('default');
    }
  }
  [w, x].forEach((t) => t.dispose());
});
