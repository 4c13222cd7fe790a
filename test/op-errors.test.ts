// Errors name the op the user called (not the primitive it decomposes into, which the message
// gives in parentheses), allocations that cannot fit are typed out-of-memory errors naming the
// op and the size, and the mixed-backend hint says what moves a tensor.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';

/** The error fn throws, checked to be `cls` naming `op` (and `primitive` in parentheses). */
function raised(fn: () => unknown, cls: new (...a: never[]) => kiln.KilnError, op: string, primitive?: string): kiln.KilnError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${String(e)}`);
    assert.equal(e.op, op, e.message);
    assert.ok(e.message.startsWith(`${op}: `), e.message);
    assert.equal(e.primitive, primitive, e.message);
    if (primitive) assert.ok(e.message.includes(`(in ${primitive})`), e.message);
    return e;
  }
  assert.fail(`expected ${cls.name} from ${op}`);
}

test('errors name the op the user called: crossEntropy, embedding, zeros, oneHot, softmax, conv1d, convTranspose2d, methods, nn modules', () => {
  const logits = kiln.randn([4, 3]);
  raised(() => kiln.crossEntropy(logits, kiln.tensor([0, 5, 1, 2])), kiln.IndexError, 'crossEntropy', 'gather');
  raised(() => kiln.nn.functional.crossEntropy(logits, kiln.tensor([0, 1, 2, 1]), { weight: kiln.ones([2]) }), kiln.IndexError, 'crossEntropy', 'indexSelect');
  raised(() => kiln.embedding(kiln.tensor([1, 9]), kiln.randn([3, 2])), kiln.IndexError, 'embedding', 'indexSelect');
  raised(() => new kiln.nn.Embedding(3, 2).call(kiln.tensor([1, 9])), kiln.IndexError, 'embedding', 'indexSelect');
  raised(() => kiln.zeros([2, -1]), kiln.ArgumentError, 'zeros', 'full');
  raised(() => kiln.oneHot(kiln.tensor([0, 4]), 3), kiln.IndexError, 'oneHot', 'scatterAdd');
  raised(() => kiln.softmax(logits, 2), kiln.IndexError, 'softmax');
  raised(() => logits.softmax(2), kiln.IndexError, 'softmax');
  raised(() => kiln.layerNorm(logits, [4]), kiln.ShapeError, 'layerNorm');
  raised(() => logits.maskedFill(kiln.ones([5], { dtype: 'bool' }), 0), kiln.ShapeError, 'maskedFill', 'where');
  raised(() => kiln.conv1d(kiln.randn([1, 2, 5]), kiln.randn([3, 2, 2]), kiln.randn([4])), kiln.ShapeError, 'conv1d', 'reshape');
  raised(() => kiln.convTranspose2d(kiln.randn([1, 2, 4, 4]), kiln.randn([2, 3, 3, 3]), kiln.randn([4])), kiln.ShapeError, 'convTranspose2d', 'reshape');
  // a primitive called directly names itself, with nothing in parentheses
  raised(() => kiln.add(kiln.zeros([2]), kiln.zeros([3])), kiln.ShapeError, 'add');
  // errors of backward's gradients name backward
  const w = kiln.randn([3]).requiresGrad_();
  const y = w.mul(2).sum();
  y.backward();
  raised(() => y.backward(), kiln.AutogradError, 'backward', 'sum.backward');
});

test('allocations that cannot fit are OutOfMemoryErrors naming the op and the size (eager, wasm heap)', () => {
  const e = raised(() => kiln.zeros([2 ** 20, 2 ** 20]), kiln.OutOfMemoryError, 'zeros', 'full');
  assert.match(e.message, /float32\[1048576, 1048576\]/);
  assert.match(e.message, /4\.0 TiB/);
  raised(() => kiln.randn([2 ** 20, 2 ** 20]), kiln.OutOfMemoryError, 'randn', 'random');
  const heap = raised(() => new kiln.WasmBackend().alloc('float32', 2 ** 31), kiln.OutOfMemoryError, 'wasm heap');
  assert.match(heap.message, /8\.0 GiB/);
  assert.throws(() => kiln.compile((x: kiln.Tensor) => x.expand([65536, 32768]).add(1), { backend: 'wasm' })(kiln.ones([1, 2 ** 15])), kiln.OutOfMemoryError);
  assert.ok(kiln.WebGpuOutOfMemoryError.prototype instanceof kiln.OutOfMemoryError, 'the GPU one is an OutOfMemoryError too');
});

test('the mixed-backend hint names what moves a tensor (toBackend), not .to(), which takes a dtype', async () => {
  const other = new kiln.JsBackend();
  const a = kiln.toBackend(kiln.ones([2]), other);
  const e = raised(() => kiln.add(a, kiln.ones([2])), kiln.ArgumentError, 'add');
  assert.match(e.hint ?? '', /kiln\.toBackend\(t, backend\)/);
  assert.doesNotMatch(e.hint ?? '', /\.to\(name\)/);
});
