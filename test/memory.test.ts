// Deterministic memory release: kiln.scope, keep(), `using`, views sharing storage, the
// autograd graph's saved tensors, and a 200-step training loop that must keep kiln.memory() flat.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import type { Tensor } from './op-table.js';

type Mem = ReturnType<typeof kiln.memory>;
const live = (m: Mem) => ({ tensors: m.tensors, storages: m.storages, bytes: m.bytes });

function assertSameMemory(actual: Mem, expected: Mem, what: string): void {
  assert.deepEqual(live(actual), live(expected), `${what}: memory ${JSON.stringify(live(actual))}, expected ${JSON.stringify(live(expected))}`);
}

test('scope frees every intermediate and returns memory to the baseline', () => {
  const base = kiln.memory();
  kiln.scope(() => {
    const a = kiln.randn([16, 8]);
    const b = kiln.randn([8, 4]);
    const c = a.matmul(b).relu().add(1).softmax(-1);
    const parts = kiln.split(c, 2, 0); // views
    const t = a.transpose(0, 1).reshape([-1]); // a copy
    assert.ok(kiln.memory().tensors > base.tensors + 5);
    void parts;
    void t;
  });
  assertSameMemory(kiln.memory(), base, 'after scope');
});

test('scope keeps what it returns (also nested in arrays and objects) and frees the rest', () => {
  const base = kiln.memory();
  const { out, list } = kiln.scope(() => {
    const a = kiln.randn([4, 4]);
    const b = a.exp();
    return { out: b.sum(1), list: [a.mul(2), { deep: a.neg() }] as const };
  });
  assert.ok(!out.isDisposed && !list[0].isDisposed && !list[1].deep.isDisposed);
  assert.deepEqual(out.shape, [4]);
  assert.equal(kiln.memory().tensors, base.tensors + 3);
  assert.equal(kiln.memory().bytes, base.bytes + 4 * 4 + 2 * 16 * 4);
  out.dispose();
  list[0].dispose();
  list[1].deep.dispose();
  assertSameMemory(kiln.memory(), base, 'after disposing the returned tensors');
});

test('keep() excludes a tensor from its scope; nested scopes hand results outward', () => {
  const base = kiln.memory();
  let kept: Tensor | undefined;
  let inner: Tensor | undefined;
  kiln.scope(() => {
    kept = kiln.keep(kiln.randn([3]).mul(2));
    inner = kiln.scope(() => kiln.randn([5]).add(1)); // returned to the outer scope
    assert.ok(!inner.isDisposed);
  });
  assert.ok(kept && !kept.isDisposed, 'kept tensor survives');
  assert.ok(inner && inner.isDisposed, 'a result of an inner scope belongs to the outer scope');
  assert.equal(kiln.memory().tensors, base.tensors + 1);
  kept.dispose();
  assertSameMemory(kiln.memory(), base, 'after disposing the kept tensor');
});

test('scope disposes what it made when fn throws', () => {
  const base = kiln.memory();
  assert.throws(() =>
    kiln.scope(() => {
      kiln.randn([100]).exp();
      throw new Error('boom');
    }), /boom/);
  assertSameMemory(kiln.memory(), base, 'after a throwing scope');
});

test('`using` disposes a tensor at the end of its block', () => {
  const base = kiln.memory();
  let escaped: Tensor;
  {
    using t = kiln.randn([10, 10]);
    using u = t.mul(3);
    escaped = t;
    assert.equal(kiln.memory().tensors, base.tensors + 2);
    assert.equal(u.shape[0], 10);
  }
  assert.ok(escaped.isDisposed);
  assertSameMemory(kiln.memory(), base, 'after the using block');
  // [Symbol.dispose] is dispose
  const v = kiln.ones([2]);
  v[Symbol.dispose]();
  assert.ok(v.isDisposed);
  assertSameMemory(kiln.memory(), base, 'after Symbol.dispose');
});

test('views share storage: the storage lives until the last handle is disposed', () => {
  const base = kiln.memory();
  const a = kiln.randn([4, 6]);
  const t = a.transpose(0, 1);
  const v = t.slice(0, 1, 5);
  assert.equal(kiln.memory().storages, base.storages + 1, 'a view allocates no storage');
  assert.equal(kiln.memory().bytes, base.bytes + 24 * 4);
  const expected = kiln.scope(() => Array.from(kiln.contiguous(v).dataSync()));
  a.dispose();
  t.dispose();
  assert.equal(kiln.memory().storages, base.storages + 1, 'the view keeps the storage');
  assert.deepEqual(Array.from(v.dataSync()), expected, 'the view still reads the same values');
  v.dispose();
  assertSameMemory(kiln.memory(), base, 'after disposing the view');
});

test('disposing a leaf disposes its grad', () => {
  const base = kiln.memory();
  const x = kiln.randn([8], { requiresGrad: true });
  kiln.scope(() => x.mul(x).sum().backward());
  assert.ok(x.grad && !x.grad.isDisposed);
  assert.equal(kiln.memory().tensors, base.tensors + 2);
  const g = x.grad;
  x.dispose();
  assert.ok(g.isDisposed);
  assertSameMemory(kiln.memory(), base, 'after disposing the leaf');
});

test('saved tensors of the graph are released by backward, and by disposing the graph without backward', () => {
  const w = kiln.randn([6, 6], { requiresGrad: true });
  const base = kiln.memory();
  // backward frees the saved tensors
  kiln.scope(() => {
    const x = kiln.randn([3, 6]);
    x.matmul(w).tanh().mul(x.sum()).sum().backward();
  });
  const withGrad = kiln.memory();
  assert.equal(withGrad.tensors, base.tensors + 1, 'only w.grad remains');
  w.grad!.dispose();
  w.grad = null;
  assertSameMemory(kiln.memory(), base, 'after backward and dropping the grad');
  // no backward: disposing the outputs releases the nodes and their saved inputs
  const x = kiln.randn([3, 6]);
  const h = x.matmul(w);
  const y = h.sigmoid();
  const yy = y.mul(y);
  const z = yy.sum();
  for (const t of [x, h, y, yy, z]) t.dispose();
  assertSameMemory(kiln.memory(), base, 'after disposing an unused graph');
  // a graph that is still referenced keeps its saved tensors (then frees them on dispose)
  const x2 = kiln.randn([3, 6]);
  const h2 = x2.matmul(w);
  const e2 = h2.exp();
  const loss = e2.sum();
  for (const t of [x2, h2, e2]) t.dispose();
  assert.ok(kiln.memory().bytes > base.bytes + 4, 'saved tensors are held by the live graph');
  loss.dispose();
  assertSameMemory(kiln.memory(), base, 'after disposing the loss');
  w.dispose();
});

test('a 200-step training loop inside scopes keeps kiln.memory() flat and learns', () => {
  kiln.manualSeed(1234);
  const nIn = 8, nHidden = 16, nClasses = 3, batch = 24;
  const w1 = kiln.randn([nIn, nHidden]).mul(0.3).requiresGrad_();
  const b1 = kiln.zeros([nHidden], { requiresGrad: true });
  const w2 = kiln.randn([nHidden, nClasses]).mul(0.3).requiresGrad_();
  const params = [w1, b1, w2];
  // a fixed, learnable problem: labels from a random linear teacher
  const x = kiln.randn([batch, nIn]);
  const teacher = kiln.randn([nIn, nClasses]);
  const y = kiln.scope(() => kiln.argmax(x.matmul(teacher), 1));
  teacher.dispose();
  const lr = 0.5;

  const base = kiln.memory();
  kiln.resetPeakMemory();
  const losses: number[] = [];
  let peakAt10 = 0;
  for (let step = 0; step < 200; step++) {
    const loss = kiln.scope(() => {
      const h = x.matmul(w1).add(b1).relu();
      const l = kiln.crossEntropy(h.matmul(w2), y);
      l.backward();
      kiln.noGrad(() => {
        for (const p of params) {
          p.sub_(p.grad!.mul(lr));
          p.grad!.dispose();
          p.grad = null;
        }
      });
      return l.item();
    });
    losses.push(loss);
    assertSameMemory(kiln.memory(), base, `after step ${step}`);
    for (const p of params) assert.equal(p.grad, null);
    if (step === 10) peakAt10 = kiln.memory().peakBytes;
  }
  assert.equal(kiln.memory().peakBytes, peakAt10, 'peak memory does not grow after the first steps');
  assert.ok(losses.every(Number.isFinite));
  assert.ok(losses[199]! < 0.5 * losses[0]!, `loss did not decrease: ${losses[0]} -> ${losses[199]}`);
  for (const t of [...params, x, y]) t.dispose();
});
