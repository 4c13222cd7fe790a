// Autograd semantics: accumulation, detach, noGrad / enableGrad, retainGraph, shared
// subexpressions, branches that receive no gradient, explicit output gradients, views,
// and higher-order gradients with createGraph.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import type { Tensor } from './op-table.js';

const vals = (t: Tensor): number[] => Array.from(t.dataSync());

function close(actual: Tensor | null, expected: readonly number[], what: string, tol = 1e-5): void {
  assert.ok(actual, `${what}: no gradient`);
  const a = vals(actual);
  assert.equal(a.length, expected.length, `${what}: ${a.length} values, expected ${expected.length}`);
  a.forEach((v, i) => assert.ok(Math.abs(v - expected[i]!) <= tol * (1 + Math.abs(expected[i]!)), `${what}[${i}]: got ${v}, expected ${expected[i]}`));
}

/** A float64 leaf with random values, requiring grad. */
const leaf = (shape: number[]) => kiln.randn(shape, { dtype: 'float64', requiresGrad: true });

test('graph bookkeeping: requiresGrad propagates, leaves vs non-leaves, gradFn names the op', () => {
  kiln.scope(() => {
    const x = leaf([3]);
    const c = kiln.randn([3], { dtype: 'float64' });
    assert.ok(x.isLeaf && x.requiresGrad && x.gradFn === null);
    const y = x.mul(c);
    assert.ok(y.requiresGrad && !y.isLeaf);
    assert.equal(y.gradFn?.name, 'mul');
    const z = c.exp();
    assert.ok(!z.requiresGrad && z.isLeaf && z.gradFn === null, 'no input requires grad: no graph');
    assert.throws(() => (y.requiresGrad = false), kiln.AutogradError);
    y.sum().backward();
    assert.equal(y.grad, null, 'non-leaf grads are not retained');
    close(x.grad, vals(c), 'x.grad');
  });
});

test('gradients accumulate over two backward calls (and reset with grad = null)', () => {
  kiln.scope(() => {
    const x = leaf([4]);
    const xv = vals(x);
    x.mul(x).sum().backward();
    close(x.grad, xv.map((v) => 2 * v), 'after first backward');
    x.mul(3).sum().backward();
    close(x.grad, xv.map((v) => 2 * v + 3), 'after second backward');
    x.grad!.dispose();
    x.grad = null;
    x.sin().sum().backward();
    close(x.grad, xv.map(Math.cos), 'after reset');
  });
});

test('broadcast operands get gradients summed back to their shape', () => {
  kiln.scope(() => {
    const a = leaf([3]);
    const b = leaf([2, 1]);
    const w = kiln.randn([4, 2, 3], { dtype: 'float64' });
    a.add(b).mul(w).sum().backward();
    const wv = vals(w);
    const ga = [0, 1, 2].map((j) => wv.filter((_, i) => i % 3 === j).reduce((s, v) => s + v, 0));
    const gb = [0, 1].map((r) => wv.filter((_, i) => Math.floor(i / 3) % 2 === r).reduce((s, v) => s + v, 0));
    close(a.grad, ga, 'a.grad');
    close(b.grad, gb, 'b.grad');
    assert.deepEqual(a.grad!.shape, [3]);
    assert.deepEqual(b.grad!.shape, [2, 1]);
  });
});

test('detach: shares memory, is outside the graph, and stops gradients', () => {
  kiln.scope(() => {
    const x = leaf([3]);
    const xv = vals(x);
    const d = x.detach();
    assert.ok(d.isLeaf && !d.requiresGrad && d.gradFn === null);
    // shares memory with x
    kiln.noGrad(() => x.copy_(kiln.tensor([1, 2, 3], { dtype: 'float64' })));
    assert.deepEqual(vals(d), [1, 2, 3]);
    kiln.noGrad(() => x.copy_(kiln.tensor(xv, { dtype: 'float64' })));
    // d(x * detach(x))/dx = detach(x), not 2x
    x.mul(x.detach()).sum().backward();
    close(x.grad, xv, 'x.grad');
    // a detached intermediate cuts the graph below it
    const y = x.exp();
    const z = y.detach().mul(x);
    x.grad = null;
    z.sum().backward();
    close(x.grad, xv.map(Math.exp), 'grad through detached exp');
  });
});

test('noGrad records nothing, restores the mode (even on throw), and enableGrad re-enables inside it', () => {
  kiln.scope(() => {
    const x = leaf([3]);
    assert.equal(kiln.isGradEnabled(), true);
    const y = kiln.noGrad(() => {
      assert.equal(kiln.isGradEnabled(), false);
      const inner = kiln.enableGrad(() => {
        assert.equal(kiln.isGradEnabled(), true);
        return x.mul(2);
      });
      assert.ok(inner.requiresGrad && inner.gradFn !== null, 'enableGrad records inside noGrad');
      return x.mul(2).add(1);
    });
    assert.equal(kiln.isGradEnabled(), true);
    assert.ok(!y.requiresGrad && y.gradFn === null);
    assert.throws(() => y.sum().backward(), kiln.AutogradError);
    assert.throws(() => kiln.noGrad(() => { throw new Error('boom'); }), /boom/);
    assert.equal(kiln.isGradEnabled(), true, 'mode restored after a throw');
    // the value is still computed under noGrad
    assert.deepEqual(vals(y), vals(x).map((v) => 2 * v + 1));
  });
});

test('retainGraph: backward twice through the same graph accumulates twice', () => {
  kiln.scope(() => {
    const x = leaf([3]);
    const xv = vals(x);
    const loss = x.mul(x).sin().sum();
    loss.backward(undefined, { retainGraph: true });
    const once = xv.map((v) => 2 * v * Math.cos(v * v));
    close(x.grad, once, 'after first');
    loss.backward(undefined, { retainGraph: true });
    close(x.grad, once.map((g) => 2 * g), 'after second');
    loss.backward(); // last one frees the graph
    close(x.grad, once.map((g) => 3 * g), 'after third');
    assert.throws(() => loss.backward(), kiln.AutogradError);
  });
});

test('shared subexpressions: a tensor used several times gets the sum of its gradients', () => {
  kiln.scope(() => {
    const x = leaf([5]);
    const xv = vals(x);
    // x used twice in one op, and again in another
    x.mul(x).add(x.sin()).sum().backward();
    close(x.grad, xv.map((v) => 2 * v + Math.cos(v)), 'x*x + sin x');
    // a shared intermediate (diamond): s = exp(x); loss = sum(s*s + s)
    x.grad = null;
    const s = x.exp();
    s.mul(s).add(s).sum().backward();
    close(x.grad, xv.map((v) => 2 * Math.exp(2 * v) + Math.exp(v)), 'diamond through exp');
    // deeper diamond: a = 2x; b = a + a; c = a * b  => c = 8 x^2, dc/dx = 16 x
    x.grad = null;
    const a = x.mul(2);
    const b = a.add(a);
    a.mul(b).sum().backward();
    close(x.grad, xv.map((v) => 16 * v), 'a * (a + a)');
  });
});

test('a branch that receives no gradient does not block or corrupt the rest of the graph', () => {
  kiln.scope(() => {
    const x = leaf([4]);
    const xv = vals(x);
    // an unused branch hanging off the graph
    const y = x.mul(2);
    y.exp(); // never reaches the loss
    y.sum().backward();
    close(x.grad, [2, 2, 2, 2], 'unused branch');

    // a reachable branch whose backward yields no gradient (floor, sign): its node gets nothing
    x.grad = null;
    const a = x.mul(2).exp();
    const loss = a.floor().sum().add(a.sign().mul(x).sum()).add(x.mul(x).sum());
    loss.backward();
    // d/dx [floor(..) (0) + sign(a) x (sign(a) = 1 since a > 0, its own grad 0) + x^2]
    close(x.grad, xv.map((v) => 1 + 2 * v), 'floor/sign branches');

    // a loss depending only on a no-gradient op: x gets no gradient (null) or zeros
    x.grad = null;
    x.mul(3).round().sum().backward();
    assert.ok(x.grad === null || vals(x.grad).every((v) => v === 0), 'round: zero gradient');

    // integer / bool branches (argmax, comparisons) inside the loss
    x.grad = null;
    const picked = kiln.oneHot(kiln.argmax(x, 0).reshape([1]), 4).reshape([4]);
    x.mul(kiln.cast(picked, 'float64')).sum().add(x.gt(0).sum()).backward();
    const best = xv.indexOf(Math.max(...xv));
    close(x.grad, xv.map((_, i) => (i === best ? 1 : 0)), 'through argmax / gt');
  });
});

test('backward with an explicit output gradient', () => {
  kiln.scope(() => {
    const x = leaf([2, 3]);
    const xv = vals(x);
    const g = kiln.randn([2, 3], { dtype: 'float64' });
    x.tanh().backward(g);
    close(x.grad, xv.map((v, i) => (1 - Math.tanh(v) ** 2) * vals(g)[i]!), 'tanh with gradient');
  });
});

test('gradients through views: transpose, slice, expand, reshape, select', () => {
  kiln.scope(() => {
    const x = leaf([3, 4]);
    const w = kiln.randn([4, 2], { dtype: 'float64' });
    // x.T[:, 1:3] (4x2), expand to [2, 4, 2], times w, sum
    const v = x.transpose(0, 1).slice(1, 1, 3).expand([2, 4, 2]);
    v.mul(w).sum().backward();
    const wv = vals(w);
    // x[i, j] appears as v[., j, i - 1] for i in {1, 2}, twice (expand)
    const expected = Array.from({ length: 12 }, (_, f) => {
      const i = Math.floor(f / 4), j = f % 4;
      return i >= 1 && i <= 2 ? 2 * wv[j * 2 + (i - 1)]! : 0;
    });
    close(x.grad, expected, 'views');
    x.grad = null;
    x.reshape([2, 6]).select(0, 1).sum().backward();
    close(x.grad, Array.from({ length: 12 }, (_, f) => (f >= 6 ? 1 : 0)), 'reshape/select');
  });
});

test('in-place updates under noGrad do not disturb an existing grad, and the next backward sees new values', () => {
  kiln.scope(() => {
    const x = leaf([3]);
    x.mul(x).sum().backward();
    const g1 = vals(x.grad!);
    kiln.noGrad(() => x.sub_(x.grad!.mul(0.1)));
    assert.deepEqual(vals(x.grad!), g1);
    const xv = vals(x);
    x.grad = null;
    x.mul(x).sum().backward();
    close(x.grad, xv.map((v) => 2 * v), 'grad at updated values');
  });
});

test('leaf grads are dense, contiguous and private: in-place updates of one grad never touch another', () => {
  kiln.scope(() => {
    // sum's gradient is an expanded (stride-0) view of the seed
    const x = leaf([3]);
    x.sum().backward();
    assert.ok(x.grad!.isContiguous, 'grad of a sum is contiguous');
    kiln.noGrad(() => x.grad!.add_(kiln.tensor([1, 2, 3], { dtype: 'float64' })));
    close(x.grad, [2, 3, 4], 'in-place add into the grad of a sum');

    // add hands one gradient to both operands: their grads must not share memory
    const a = leaf([2, 3]);
    const b = leaf([2, 3]);
    a.add(b).sum().backward();
    kiln.noGrad(() => a.grad!.mul_(5));
    close(a.grad, new Array(6).fill(5), 'a.grad after mul_');
    close(b.grad, new Array(6).fill(1), 'b.grad is untouched by a.grad.mul_');

    // cat's gradients are slices of one buffer
    const p = leaf([2, 2]);
    const q = leaf([3, 2]);
    const w = kiln.randn([5, 2], { dtype: 'float64' });
    kiln.cat([p, q], 0).mul(w).sum().backward();
    assert.ok(p.grad!.isContiguous && q.grad!.isContiguous);
    kiln.noGrad(() => p.grad!.zero_());
    close(q.grad, Array.from(w.dataSync()).slice(4), 'q.grad after p.grad.zero_()');

    // a gradient passed by the caller is copied, not aliased
    const r = leaf([3]);
    const g = kiln.tensor([1, 2, 3], { dtype: 'float64' });
    r.backward(g);
    kiln.noGrad(() => g.fill_(0));
    close(r.grad, [1, 2, 3], 'grad after the caller reuses its gradient tensor');
  });
});

test(
  'an in-place write to a tensor saved for backward is detected',
  () => {
    kiln.scope(() => {
      const y = leaf([3]);
      const s = y.sin();
      kiln.noGrad(() => y.detach().mul_(2));
      assert.throws(() => s.sum().backward(), kiln.AutogradError);
    });
  },
);

test('createGraph: first-order gradients are unchanged', () => {
  kiln.scope(() => {
    const x = leaf([4]);
    const xv = vals(x);
    x.pow(3).sum().backward(undefined, { createGraph: true });
    close(x.grad, xv.map((v) => 3 * v * v), 'first order');
  });
});

test('createGraph: second-order gradients are not supported yet and say so (no silent zero)', () => {
  // saved tensors are detached aliases, so the gradient is not itself differentiable; a second
  // backward through it raises instead of returning a wrong (zero) second derivative
  kiln.scope(() => {
    const x = leaf([4]);
    x.pow(3).sum().backward(undefined, { createGraph: true });
    const g = x.grad!;
    assert.equal(g.requiresGrad, false);
    assert.throws(() => g.sum().backward(), kiln.AutogradError);
  });
});

test("t(): dims 0 and 1 of a matrix swapped as a view (gradient flows back), 0-/1-D unchanged, more dims a ShapeError naming t", () => {
  const w = kiln.tensor([[1, 2, 3], [4, 5, 6]], { dtype: 'float32', requiresGrad: true });
  const wt = w.t();
  assert.deepEqual(wt.shape, [3, 2]);
  assert.deepEqual(Array.from(wt.contiguous().dataSync()), [1, 4, 2, 5, 3, 6]);
  kiln.sum(kiln.mul(wt, kiln.tensor([[1, 10], [2, 20], [3, 30]]))).backward();
  assert.deepEqual(Array.from(w.grad!.dataSync()), [1, 2, 3, 10, 20, 30]);
  assert.deepEqual(kiln.tensor([1, 2, 3]).t().shape, [3]);
  assert.throws(() => kiln.zeros([2, 3, 4]).t(), (e: unknown) => e instanceof kiln.ShapeError && /^t: t\(\) expects a tensor of at most 2 dims, got \[2, 3, 4\]/.test((e as Error).message));
});
