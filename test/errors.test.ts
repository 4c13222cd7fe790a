// Typed errors: each kind is raised with a message that names the op and the shapes (or
// dtypes) involved; and an op that throws leaves its inputs intact and leaks nothing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import type { Tensor } from './op-table.js';

type ErrorClass = new (...args: never[]) => kiln.KilnError;

/**
 * Asserts fn throws `cls` naming `op` (the op the user called), with every fragment in its
 * message; `primitive`: the inner op that raised it, named in parentheses.
 */
function throwsKiln(fn: () => unknown, cls: ErrorClass, op: string, fragments: readonly string[] = [], primitive?: string): kiln.KilnError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught !== undefined, `expected ${cls.name} from ${op}, nothing was thrown`);
  assert.ok(caught instanceof cls, `expected ${cls.name} from ${op}, got ${(caught as Error)?.name}: ${(caught as Error)?.message}`);
  const e = caught as kiln.KilnError;
  assert.ok(e instanceof kiln.KilnError && e instanceof Error);
  assert.equal(e.name, cls.name);
  assert.equal(e.op, op, `error op: ${e.message}`);
  assert.ok(e.message.startsWith(`${op}: `), `message does not start with the op name '${op}': ${e.message}`);
  for (const f of fragments) assert.ok(e.message.includes(f), `message lacks '${f}': ${e.message}`);
  assert.equal(e.primitive, primitive, `error primitive: ${e.message}`);
  if (primitive) assert.ok(e.message.includes(`(in ${primitive})`), `message does not name the primitive ${primitive}: ${e.message}`);
  return e;
}

test('ShapeError: add of [2,3] and [4] names add and both shapes', () => {
  kiln.scope(() => {
    throwsKiln(() => kiln.add(kiln.zeros([2, 3]), kiln.zeros([4])), kiln.ShapeError, 'add', ['[2, 3]', '[4]']);
    throwsKiln(() => kiln.zeros([2, 3]).mul(kiln.zeros([3, 2])), kiln.ShapeError, 'mul', ['[2, 3]', '[3, 2]']);
    throwsKiln(() => kiln.where(kiln.ones([5], { dtype: 'bool' }), kiln.zeros([2, 3]), 0), kiln.ShapeError, 'where', ['[5]', '[2, 3]']);
  });
});

test('ShapeError: matmul inner-dim mismatch names matmul and both shapes', () => {
  kiln.scope(() => {
    throwsKiln(() => kiln.matmul(kiln.zeros([2, 3]), kiln.zeros([4, 5])), kiln.ShapeError, 'matmul', ['[2, 3]', '[4, 5]']);
    throwsKiln(() => kiln.matmul(kiln.zeros([7, 2, 3]), kiln.zeros([7, 2, 5])), kiln.ShapeError, 'matmul', ['[7, 2, 3]', '[7, 2, 5]']);
    throwsKiln(() => kiln.matmul(kiln.zeros([3]), kiln.zeros([4])), kiln.ShapeError, 'matmul', ['[3]', '[4]']);
    throwsKiln(() => kiln.matmul(kiln.zeros([2, 3, 4]), kiln.zeros([5, 4, 2])), kiln.ShapeError, 'matmul', ['[2]', '[5]']);
    throwsKiln(() => kiln.linear(kiln.zeros([2, 3]), kiln.zeros([4, 5])), kiln.ShapeError, 'linear', ['[2, 3]', '[4, 5]']);
  });
});

test('ShapeError: reshape to a different element count names reshape and both shapes', () => {
  kiln.scope(() => {
    throwsKiln(() => kiln.zeros([2, 3]).reshape([4, 2]), kiln.ShapeError, 'reshape', ['[2, 3]', '[4, 2]']);
    throwsKiln(() => kiln.zeros([2, 3]).reshape([4, -1]), kiln.ShapeError, 'reshape', ['[2, 3]', '[4, -1]']);
    throwsKiln(() => kiln.zeros([2, 3]).view(7), kiln.ShapeError, 'view', ['[2, 3]', '[7]']);
    throwsKiln(() => kiln.cat([kiln.zeros([2, 3]), kiln.zeros([2, 4])], 0), kiln.ShapeError, 'cat', ['[2, 3]', '[2, 4]']);
    throwsKiln(() => kiln.expand(kiln.zeros([2, 3]), [4, 3]), kiln.ShapeError, 'expand', ['[2, 3]', '[4, 3]']);
    throwsKiln(() => kiln.conv2d(kiln.zeros([1, 3, 5, 5]), kiln.zeros([2, 4, 3, 3])), kiln.ShapeError, 'conv2d', ['[1, 3, 5, 5]', '[2, 4, 3, 3]']);
  });
});

test('IndexError: dim out of range names the op, the dim and the shape', () => {
  kiln.scope(() => {
    const x = kiln.zeros([2, 3]);
    throwsKiln(() => kiln.sum(x, 2), kiln.IndexError, 'sum', ['dim 2', '[2, 3]']);
    throwsKiln(() => x.softmax(-3), kiln.IndexError, 'softmax', ['dim -3', '[2, 3]']);
    throwsKiln(() => kiln.logSoftmax(x, 2), kiln.IndexError, 'logSoftmax', ['dim 2', '[2, 3]']);
    throwsKiln(() => kiln.mean(x, [0, 4]), kiln.IndexError, 'mean', ['dim 4', '[2, 3]']);
    throwsKiln(() => kiln.std(x, 3), kiln.IndexError, 'std', ['dim 3', '[2, 3]']);
    throwsKiln(() => kiln.var(x, -4), kiln.IndexError, 'var', ['dim -4', '[2, 3]']);
    throwsKiln(() => kiln.logsumexp(x, 2), kiln.IndexError, 'logsumexp', ['dim 2', '[2, 3]']);
    throwsKiln(() => kiln.argmax(x, 2), kiln.IndexError, 'argmax', ['dim 2', '[2, 3]']);
    throwsKiln(() => kiln.cumsum(x, 2), kiln.IndexError, 'cumsum', ['dim 2', '[2, 3]']);
    throwsKiln(() => kiln.transpose(x, 0, 5), kiln.IndexError, 'transpose', ['dim 5', '[2, 3]']);
    throwsKiln(() => kiln.cat([x, x], 2), kiln.IndexError, 'cat', ['dim 2', '[2, 3]']);
    throwsKiln(() => kiln.gather(x, -3, kiln.zeros([2, 3], { dtype: 'int32' })), kiln.IndexError, 'gather', ['dim -3', '[2, 3]']);
    throwsKiln(() => kiln.select(x, 0, 2), kiln.IndexError, 'select', ['index 2', '[2, 3]']);
  });
});

test('IndexError: gather / indexSelect / scatterAdd / embedding with out-of-bounds indices name op, index and shapes', () => {
  kiln.scope(() => {
    const x = kiln.randn([3, 5]);
    throwsKiln(() => kiln.gather(x, 1, kiln.tensor([[0, 7], [1, 2], [3, 4]])), kiln.IndexError, 'gather', ['index 7', '[3, 5]', '[3, 2]']);
    throwsKiln(() => kiln.gather(x, 0, kiln.tensor([[0, -1]])), kiln.IndexError, 'gather', ['index -1', '[3, 5]', '[1, 2]']);
    throwsKiln(() => kiln.indexSelect(x, 0, kiln.tensor([0, 3])), kiln.IndexError, 'indexSelect', ['index 3', '[3, 5]', '[2]']);
    throwsKiln(() => kiln.scatterAdd(x, 1, kiln.tensor([[5]]), kiln.ones([1, 1])), kiln.IndexError, 'scatterAdd', ['index 5', '[3, 5]', '[1, 1]']);
    throwsKiln(() => kiln.embedding(kiln.tensor([1, 9]), x), kiln.IndexError, 'embedding', ['index 9', '[3, 5]'], 'indexSelect');
  });
});

test('DTypeError: gather with a float index, embedding with float indices, name op and dtype', () => {
  kiln.scope(() => {
    const x = kiln.randn([3, 5]);
    throwsKiln(() => kiln.gather(x, 1, kiln.zeros([3, 2])), kiln.DTypeError, 'gather', ['float32', 'int32']);
    throwsKiln(() => kiln.indexSelect(x, 0, kiln.tensor([0.5, 1])), kiln.DTypeError, 'indexSelect', ['float32']);
    throwsKiln(() => kiln.embedding(kiln.tensor([0.0, 1.5]), x), kiln.DTypeError, 'embedding', ['float32']);
    throwsKiln(() => kiln.crossEntropy(x, kiln.zeros([3])), kiln.DTypeError, 'crossEntropy', ['float32', 'int32']);
    throwsKiln(() => kiln.zeros([2]).to('float16' as never), kiln.DTypeError, 'to', ['float16'], 'cast');
  });
});

test('ArgumentError: plain-JS callers passing strings or arrays where a tensor is expected', () => {
  kiln.scope(() => {
    throwsKiln(() => kiln.add('a' as never, 1), kiln.ArgumentError, 'add', ['string']);
    throwsKiln(() => kiln.add(kiln.zeros([2]), [1, 2] as never), kiln.ArgumentError, 'add', ['array']);
    throwsKiln(() => kiln.mul(null as never, kiln.zeros([2])), kiln.ArgumentError, 'mul', ['null']);
    throwsKiln(() => kiln.exp('x' as never), kiln.ArgumentError, 'exp', ['string']);
    throwsKiln(() => kiln.where(kiln.ones([2], { dtype: 'bool' }), {} as never, 0), kiln.ArgumentError, 'where', ['object']);
    throwsKiln(() => kiln.cat(['a'] as never), kiln.ArgumentError, 'cat');
    throwsKiln(() => kiln.zeros([2, 3]).reshape('a' as never), kiln.ArgumentError, 'reshape');
    throwsKiln(() => kiln.zeros('3' as never), kiln.ArgumentError, 'zeros', [], 'full');
    throwsKiln(() => kiln.tensor('abc' as never), kiln.ArgumentError, 'tensor', ['string']);
    throwsKiln(() => kiln.zeros([2]).item(), kiln.ArgumentError, 'item', ['[2]']);
  });
});

test('ArgumentError for non-tensors passed to non-pointwise ops', () => {
  kiln.scope(() => {
    const x = kiln.zeros([2, 2]);
    throwsKiln(() => kiln.sum('a' as never), kiln.ArgumentError, 'sum');
    throwsKiln(() => kiln.matmul([[1]] as never, x), kiln.ArgumentError, 'matmul');
    throwsKiln(() => kiln.reshape('a' as never, [1]), kiln.ArgumentError, 'reshape');
    throwsKiln(() => kiln.softmax([1, 2] as never), kiln.ArgumentError, 'softmax');
    throwsKiln(() => kiln.gather(x, 0, [[0]] as never), kiln.ArgumentError, 'gather');
    throwsKiln(() => kiln.linear([1] as never, x), kiln.ArgumentError, 'linear');
    throwsKiln(() => kiln.stack(['a'] as never), kiln.ArgumentError, 'stack');
  });
});

test('DisposedError: use after dispose names the op and the tensor shape', () => {
  kiln.scope(() => {
    const x = kiln.randn([2, 3]);
    const v = x.transpose(0, 1);
    x.dispose();
    assert.ok(x.isDisposed);
    throwsKiln(() => kiln.add(x, 1), kiln.DisposedError, 'add', ['[2, 3]', 'dispose']);
    throwsKiln(() => x.sum(), kiln.DisposedError, 'sum', ['[2, 3]']);
    throwsKiln(() => kiln.matmul(x, kiln.zeros([3, 1])), kiln.DisposedError, 'matmul', ['[2, 3]']);
    throwsKiln(() => x.reshape([6]), kiln.DisposedError, 'reshape', ['[2, 3]']);
    throwsKiln(() => x.dataSync(), kiln.DisposedError, 'read', ['[2, 3]']);
    throwsKiln(() => x.item(), kiln.ArgumentError, 'item'); // size check first: 6 elements
    // a view keeps the storage alive: it is still usable
    assert.deepEqual(v.shape, [3, 2]);
    assert.equal(v.sum().dataSync().length, 1);
    const s = kiln.randn([1]);
    s.dispose();
    throwsKiln(() => s.item(), kiln.DisposedError, 'item', ['[1]'], 'read');
    throwsKiln(() => s.backward(), kiln.DisposedError, 'backward', ['[1]']);
    x.dispose(); // idempotent
  });
});

test('AutogradError: backward on a non-scalar, on a tensor without grad, and in-place on a leaf that requires grad', () => {
  kiln.scope(() => {
    const x = kiln.randn([2, 3], { requiresGrad: true });
    const y = x.mul(2);
    throwsKiln(() => y.backward(), kiln.AutogradError, 'backward', ['[2, 3]', 'scalar']);
    throwsKiln(() => kiln.zeros([1]).backward(), kiln.AutogradError, 'backward', ['[1]']);
    throwsKiln(() => y.backward(kiln.ones([3, 2])), kiln.AutogradError, 'backward', ['[3, 2]', '[2, 3]']);
    throwsKiln(() => x.add_(1), kiln.AutogradError, 'add_', ['[2, 3]', 'requires grad']);
    throwsKiln(() => x.copy_(kiln.zeros([2, 3])), kiln.AutogradError, 'copy_', ['[2, 3]']);
    throwsKiln(() => x.zero_(), kiln.AutogradError, 'zero_', ['[2, 3]']);
    throwsKiln(() => y.mul_(3), kiln.AutogradError, 'mul_', ['[2, 3]']); // non-leaf in the graph
    throwsKiln(() => kiln.zeros([2], { dtype: 'int32' }).requiresGrad_(), kiln.AutogradError, 'requiresGrad_', ['int32'], 'requiresGrad');
    // after a plain backward, the graph is freed: a second one through it fails clearly
    const z = x.exp().sum();
    z.backward();
    throwsKiln(() => z.backward(), kiln.AutogradError, 'backward', ['already freed', 'retainGraph'], 'sum.backward');
    // under noGrad the in-place write is allowed
    kiln.noGrad(() => x.add_(1));
  });
});

test('NumericsError with setCheckNumerics(true): log(-1) names log and the shapes', () => {
  kiln.setCheckNumerics(true);
  try {
    kiln.scope(() => {
      throwsKiln(() => kiln.log(kiln.tensor([1, -1, 2])), kiln.NumericsError, 'log', ['NaN', 'float32[3]']);
      throwsKiln(() => kiln.div(kiln.ones([2, 2]), kiln.zeros([2])), kiln.NumericsError, 'div', ['Infinity', 'float32[2, 2]', 'float32[2]']);
      // finite results pass
      assert.equal(kiln.log(kiln.tensor([1, 2])).dataSync().length, 2);
    });
  } finally {
    kiln.setCheckNumerics(false);
  }
  kiln.scope(() => assert.ok(Number.isNaN(kiln.log(kiln.tensor([-1.0])).item()), 'check off: NaN passes through'));
});

// ---- a throwing op leaves its inputs intact ------------------------------------------------

interface Snapshot { values: number[]; grad: number[] | null; shape: readonly number[] }
const snap = (t: Tensor): Snapshot => ({ values: Array.from(t.dataSync()), grad: t.grad ? Array.from(t.grad.dataSync()) : null, shape: [...t.shape] });

test('an op that throws leaves its inputs intact (values, usability, grads) and leaks no memory', () => {
  const a = kiln.randn([2, 3], { requiresGrad: true });
  const b = kiln.randn([4], { requiresGrad: true });
  kiln.scope(() => a.sum().add(b.sum()).backward()); // both get a grad of ones
  const plain = kiln.randn([3, 3]);
  const badIndex = kiln.tensor([[0, 9]]);
  const badIndex1d = kiln.tensor([1, 3]);
  const badScatter = kiln.tensor([[0, 3, 1]]);
  const ones13 = kiln.ones([1, 3]);
  const floatIndex = kiln.zeros([1, 3]);
  const big = kiln.ones([2, 3, 3]);
  const four = kiln.ones([4]);
  const shifted = kiln.noGrad(() => a.sub(10)); // all negative: log gives NaN
  const plainT = plain.transpose(0, 1); // non-contiguous: indexSelect makes a contiguous copy first
  const nonScalar = a.mul(2); // in the graph, not a scalar
  const inputs = [a, b, plain, plainT, nonScalar, badIndex, badIndex1d, badScatter, ones13, floatIndex, big, four, shifted];
  const before = inputs.map(snap);

  const failing: [string, () => unknown][] = [
    ['add shape', () => kiln.add(a, b)],
    ['matmul inner', () => kiln.matmul(a, a)],
    ['reshape count', () => a.reshape([5])],
    ['gather out of bounds', () => kiln.gather(plain, 1, badIndex)],
    ['indexSelect out of bounds', () => kiln.indexSelect(plain, 0, badIndex1d)],
    ['indexSelect out of bounds, non-contiguous input', () => kiln.indexSelect(plainT, 0, badIndex1d)],
    ['scatterAdd out of bounds', () => kiln.scatterAdd(plain, 0, badScatter, ones13)],
    ['gather float index', () => kiln.gather(a, 0, floatIndex)],
    ['in-place on leaf requiring grad', () => a.add_(1)],
    ['in-place shape mismatch', () => kiln.noGrad(() => plain.add_(big))],
    ['copy_ shape mismatch', () => kiln.noGrad(() => plain.copy_(four))],
    ['backward non-scalar', () => nonScalar.backward()],
    ['numerics', () => {
      kiln.setCheckNumerics(true);
      try {
        return kiln.log(shifted);
      } finally {
        kiln.setCheckNumerics(false);
      }
    }],
    ['string operand', () => kiln.add(a, 'x' as never)],
  ];
  for (const [label, fn] of failing) {
    for (const where of ['inside a scope', 'outside any scope']) {
      const m0 = kiln.memory();
      assert.throws(where === 'inside a scope' ? () => kiln.scope(fn) : fn, kiln.KilnError, `${label}: expected a KilnError`);
      const m1 = kiln.memory();
      // a failing op releases what it allocated, even with no scope to clean up after it
      assert.equal(m1.tensors, m0.tensors, `${label} (${where}): leaked ${m1.tensors - m0.tensors} tensors`);
      assert.equal(m1.bytes, m0.bytes, `${label} (${where}): leaked ${m1.bytes - m0.bytes} bytes`);
      inputs.forEach((t, i) => {
        assert.ok(!t.isDisposed, `${label}: input ${i} was disposed`);
        assert.deepEqual(snap(t), before[i], `${label}: input ${i} changed (values, grad or shape)`);
      });
      // still usable, and gradients still flow
      kiln.scope(() => {
        assert.equal(kiln.add(a, plain.sum()).sum().dataSync().length, 1);
        const g = kiln.randn([2, 3]);
        const y = a.mul(g).sum();
        const prev = Array.from(a.grad!.dataSync());
        y.backward();
        const now = Array.from(a.grad!.dataSync());
        const gv = g.dataSync();
        now.forEach((v, j) => assert.ok(Math.abs(v - (prev[j]! + gv[j]!)) < 1e-5, `${label}: grad accumulation after the failure`));
        kiln.noGrad(() => a.grad!.copy_(kiln.tensor(prev, [2, 3])));
      });
    }
  }
  for (const t of inputs) t.dispose();
});
