// Stale traces (issue 18): replay does not run a compiled function's JavaScript, so a value the
// trace read from outside must be guarded or checked, never silently frozen: module attributes
// are guarded (as Dynamo guards them), and the first replay of every entry traces once more and
// compares the graphs (`check`, which can also re-check every Nth call).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { assertCompiledRan } from './helpers/compiled-ran.js';

class Scaled extends kiln.nn.Module {
  scale = 1;
  mode: 'tanh' | 'relu' = 'tanh';
  lin = this.registerModule('lin', new kiln.nn.Linear(4, 3));
  forward(x: kiln.Tensor): kiln.Tensor {
    const y = this.lin.call(x).mul(this.scale);
    return this.mode === 'tanh' ? y.tanh() : y.relu();
  }
}

const close = (a: kiln.Tensor, b: kiln.Tensor) => {
  const x = a.dataSync(), y = b.dataSync();
  return x.length === y.length && Array.from(x).every((v, i) => Math.abs(v - y[i]!) <= 1e-6 * Math.max(1, Math.abs(y[i]!)));
};

test('a module attribute changed after compiling recompiles with the attribute named, never replays the old value', () => {
  kiln.compiler.reset();
  kiln.manualSeed(1);
  const m = new Scaled();
  const c = kiln.compile(m);
  const x = kiln.randn([2, 4]);
  kiln.noGrad(() => {
    for (let i = 0; i < 3; i++) assert.ok(close(c(x), m.forward(x)));
    m.scale = 5;
    assert.ok(close(c(x), m.forward(x)), 'the new scale is used');
    m.mode = 'relu';
    assert.ok(close(c(x), m.forward(x)), 'the new mode is used');
  });
  const reasons = kiln.stats().recompiles.map((r) => r.reason);
  assert.match(reasons[0]!, /scale changed: expected 1, got 5/);
  assert.match(reasons[1]!, /mode changed: expected "tanh", got "relu"/);
  assertCompiledRan('module attributes');
});

test('a closure value that changes is caught by the check trace of the first replay, and checked again after each change', () => {
  kiln.compiler.reset();
  let scale = 2;
  const f = kiln.compile((x: kiln.Tensor) => x.mul(scale).add(1));
  const x = kiln.randn([5]);
  const want = () => kiln.noGrad(() => x.mul(scale).add(1));
  assert.ok(close(f(x), want()));
  scale = 3;
  assert.ok(close(f(x), want()), 'the first replay is checked: the changed value is used');
  scale = 4;
  assert.ok(close(f(x), want()), 'after a change the next call is checked again');
  assert.ok(close(f(x), want()), 'the next call confirms the graph');
  assert.ok(close(f(x), want()), 'and once it is confirmed, it replays');
  const s = kiln.stats();
  assert.equal(s.recompiles.length, 2);
  assert.match(s.recompiles[0]!.reason, /traced graph changed although every guard held/);
  assert.equal(s.traceChecks, 3);
  assert.equal(s.cacheHits, 2, 'the confirming check and the last call');
  assertCompiledRan('closure');
});

test('check: N re-checks every Nth call; check: false never checks (the opt-out replays what it traced)', () => {
  kiln.compiler.reset();
  let k = 1;
  const x = kiln.randn([3]);
  const every = kiln.compile((x: kiln.Tensor) => x.mul(k), { check: 3 });
  for (let i = 0; i < 7; i++) every(x); // traced, then replays 1 (the first), 3 and 6 are checks
  assert.equal(kiln.stats().traceChecks, 3);
  assertCompiledRan('check: 3');
  k = 7;
  every(x);
  every(x);
  assert.ok(close(every(x), kiln.noGrad(() => x.mul(7))), 'within N calls the new value is found');
  kiln.compiler.reset();
  let j = 1;
  const never = kiln.compile((x: kiln.Tensor) => x.mul(j), { check: false });
  never(x);
  j = 2;
  assert.ok(close(never(x), kiln.noGrad(() => x.mul(1))), 'check: false replays the trace, as documented');
  assert.equal(kiln.stats().traceChecks, 0);
  assertCompiledRan('check: false');
});

test('the check trace of a training step is a replay: the step, its grads and its counters as before', () => {
  kiln.compiler.reset();
  kiln.manualSeed(3);
  const m = new kiln.nn.Linear(6, 2), opt = new kiln.optim.SGD(m.parameters(), { lr: 0.1 });
  kiln.manualSeed(3);
  const e = new kiln.nn.Linear(6, 2), oe = new kiln.optim.SGD(e.parameters(), { lr: 0.1 });
  const step = (mod: kiln.nn.Linear, o: kiln.optim.SGD) => (x: kiln.Tensor) => { o.zeroGrad(); const l = mod.call(x).square().mean(); l.backward(); o.step(); return l; };
  const f = kiln.compile(step(m, opt));
  const x = kiln.randn([4, 6]);
  for (let i = 0; i < 4; i++) kiln.scope(() => assert.ok(Math.abs(f(x).item() - step(e, oe)(x).item()) < 1e-6));
  assert.ok(close(m.weight, e.weight));
  const s = kiln.stats();
  assert.equal(s.traceChecks, 1);
  assert.equal(s.recompiles.length, 0);
  assertCompiledRan('training step');
});

test('setCheckNumerics(true) checks compiled outputs too: a NaN names the compiled function and the output', () => {
  kiln.compiler.reset();
  const f = kiln.compile((x: kiln.Tensor) => x.log().mul(2));
  const bad = kiln.tensor([1, -1, 2], { dtype: 'float32' });
  f(kiln.tensor([1, 2, 3], { dtype: 'float32' })); // traced with finite values
  kiln.setCheckNumerics(true);
  try {
    assert.throws(() => f(bad), (e: Error) => e instanceof kiln.NumericsError && /compiled anonymous: produced NaN at flat index 1 of output 0/.test(e.message));
    const w = kiln.keep(kiln.tensor([1, 2, 3], { dtype: 'float32' }).requiresGrad_());
    const g = kiln.compile((x: kiln.Tensor) => x.mul(w).sqrt());
    kiln.setCheckNumerics(false);
    kiln.scope(() => { g(kiln.tensor([1, 1, 1], { dtype: 'float32' })).sum().backward(); }); // trace and check
    kiln.setCheckNumerics(true);
    // sqrt's backward at 0 divides by zero: the compiled backward's gradient is checked
    assert.throws(() => kiln.scope(() => g(kiln.tensor([0, 1, 1], { dtype: 'float32' })).sum().backward()), (e: Error) => e instanceof kiln.NumericsError && /\(backward\): produced (NaN|-?Infinity) at flat index 0 of gradient 0/.test(e.message));
    assertCompiledRan('checked numerics');
  } finally {
    kiln.setCheckNumerics(false);
  }
});

test('reading a captured tensor\'s values while tracing is a graph break: a data-dependent op on a buffer never returns stale data', () => {
  kiln.compiler.reset();
  const mask = kiln.keep(kiln.tensor([1, 0, 1, 0], { dtype: 'float32' }));
  const f = kiln.compile((x: kiln.Tensor) => kiln.indexSelect(x, 0, kiln.nonzero(mask).reshape([-1])).mul(2));
  const x = kiln.tensor([10, 20, 30, 40], { dtype: 'float32' });
  assert.deepEqual(Array.from(f(x).dataSync()), [20, 60]);
  kiln.noGrad(() => mask.copy_(kiln.tensor([0, 1, 1, 1], { dtype: 'float32' })));
  assert.deepEqual(Array.from(f(x).dataSync()), [40, 60, 80], 'the new mask is read');
  const s = kiln.stats();
  assert.ok(s.graphBreaks.some((b) => /read the values of a captured tensor/.test(b.reason)), JSON.stringify(s.graphBreaks));
  assertCompiledRan('captured read');
  // a value the trace computed itself, read twice, is one break
  kiln.compiler.reset();
  const g = kiln.compile((x: kiln.Tensor) => { const m = x.sum(); const a = m.item(); const b = m.item(); return x.mul(a + b); });
  assert.deepEqual(Array.from(g(x).dataSync()), [2000, 4000, 6000, 8000]);
  assert.equal(kiln.stats().graphBreaks.length, 1);
  assertCompiledRan('computed read');
});
