// Values that do not fit a dtype are right or a typed error, as in torch: tensor() infers
// int32 only for integers int32 holds; an explicit int32 dtype refuses values it cannot hold;
// an in-place op whose result would need a wider dtype refuses (torch: "result type Float
// can't be cast to the desired output type Int"); oneHot refuses classes outside [0, n).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { assertCompiledRan } from './helpers/compiled-ran.js';

test('tensor() infers int32 only for integers int32 holds; 3e9 and 1e10 stay exact as float32', () => {
  const big = kiln.tensor([3e9, 1e10]);
  assert.equal(big.dtype, 'float32');
  assert.deepEqual(Array.from(big.dataSync()), [3e9, 1e10]);
  assert.equal(kiln.tensor([3, -2147483648, 2147483647]).dtype, 'int32');
  assert.equal(kiln.tensor([1, 2147483648]).dtype, 'float32');
  assert.equal(kiln.tensor([1, 2.5]).dtype, 'float32');
});

test('an explicit int32 dtype truncates (as torch) but refuses values int32 cannot hold, from arrays and typed arrays', () => {
  assert.deepEqual(Array.from(kiln.tensor([1.5, -2.7], { dtype: 'int32' }).dataSync()), [1, -2]);
  for (const data of [[1.5, 3e9], [Infinity], [NaN], [-2147483649]]) {
    assert.throws(() => kiln.tensor(data, { dtype: 'int32' }), (e: unknown) => e instanceof kiln.DTypeError && /cannot be converted to int32 without overflow/.test((e as Error).message), JSON.stringify(data));
  }
  assert.throws(() => kiln.tensor(Float64Array.of(1, 3e9), { dtype: 'int32' }), kiln.DTypeError);
  assert.deepEqual(Array.from(kiln.tensor(Float32Array.of(7.9), { dtype: 'int32' }).dataSync()), [7]);
});

test("an int32 tensor's mul_(1.5) is a typed error (its result is float32); mul_(2) and float mul_(1.5) work", () => {
  const t = kiln.tensor([1, 2, 3], { dtype: 'int32' });
  assert.throws(() => t.mul_(1.5), (e: unknown) => e instanceof kiln.DTypeError && /result type float32 can't be cast to the desired output type int32/.test((e as Error).message));
  assert.deepEqual(Array.from(t.dataSync()), [1, 2, 3], 'the tensor is unchanged');
  assert.throws(() => t.div_(2), kiln.DTypeError);
  assert.throws(() => kiln.tensor([true, false]).add_(1), kiln.DTypeError);
  assert.deepEqual(Array.from(t.mul_(2).dataSync()), [2, 4, 6]);
  const f = kiln.tensor([1, 2], { dtype: 'float32' });
  assert.deepEqual(Array.from(f.mul_(1.5).dataSync()), [1.5, 3]);
  assert.deepEqual(Array.from(f.add_(kiln.tensor([1, 1], { dtype: 'int32' })).dataSync()), [2.5, 4]);
});

test('oneHot refuses a class index >= numClasses or negative (IndexError), eager and compiled', () => {
  for (const bad of [[0, 3], [-1, 1]]) {
    const idx = kiln.tensor(bad, { dtype: 'int32' });
    assert.throws(() => kiln.oneHot(idx, 3), kiln.IndexError, `eager ${bad}`);
    kiln.compiler.reset();
    assert.throws(() => kiln.compile((i: kiln.Tensor) => kiln.oneHot(i, 3))(idx), kiln.IndexError, `compiled ${bad}`);
  }
  const good = kiln.tensor([2, 0], { dtype: 'int32' });
  assert.deepEqual(kiln.oneHot(good, 3).toArray(), [[0, 0, 1], [1, 0, 0]]);
  kiln.compiler.reset();
  const compiled = kiln.compile((i: kiln.Tensor) => kiln.oneHot(i, 3));
  for (let k = 0; k < 3; k++) assert.deepEqual((compiled(good) as kiln.Tensor).toArray(), [[0, 0, 1], [1, 0, 0]], `compiled call ${k}`);
  assert.ok(kiln.stats().cacheHits >= 1, 'replayed');
  assertCompiledRan('oneHot');
});

test("nn.Embedding's paddingIdx row is returned as stored (a loaded checkpoint's row), and gets no gradient, eager and compiled", () => {
  for (const compiled of [false, true]) {
    kiln.compiler.reset();
    const e = new kiln.nn.Embedding(4, 3, { paddingIdx: 1 });
    kiln.noGrad(() => e.weight.select(0, 1).fill_(0.5)); // as a checkpoint with a non-zero padding row
    const idx = kiln.tensor([1, 2, 1], { dtype: 'int32' });
    const step = (i: kiln.Tensor) => {
      e.weight.grad = null;
      const out = e.call(i);
      out.sum().backward();
      return out;
    };
    const out = (compiled ? kiln.compile(step) : step)(idx) as kiln.Tensor;
    assert.deepEqual((out.toArray() as number[][])[0], [0.5, 0.5, 0.5], `${compiled ? 'compiled' : 'eager'}: the stored row`);
    assert.deepEqual(Array.from(e.weight.grad!.dataSync()), [0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0]);
    if (compiled) assertCompiledRan('embedding paddingIdx');
  }
});
