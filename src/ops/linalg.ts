// matmul (batched, broadcasting) as one primitive over [..., M, K] x [..., K, N].

import { ShapeError, DTypeError, fmtShape } from '../core/errors.js';
import { broadcastShapes, numel, viewStrides } from '../core/shape.js';
import { promoteTypes } from '../core/dtype.js';
import type { Tensor } from '../tensor/tensor.js';
import { apply, view, type PrimDef, expectTensor } from './dispatch.js';
import { reshape, squeeze, transpose, unsqueeze, sumToShape } from './movement.js';
import { broadcastStrides } from './broadcast.js';
import { cast } from './pointwise.js';
import { publicOp } from '../core/user-op.js';

export const matmulPrim: PrimDef<Record<string, never>> = {
  name: 'matmul',
  meta(inputs) {
    const [a, b] = inputs as [Tensor, Tensor];
    if (a.ndim < 2 || b.ndim < 2) throw new ShapeError('matmulPrim needs rank >= 2', 'matmul');
    const k = a.shape[a.ndim - 1]!;
    if (b.shape[b.ndim - 2] !== k) {
      throw new ShapeError(
        `inner dims differ: ${fmtShape(a.shape)} @ ${fmtShape(b.shape)} (${k} vs ${b.shape[b.ndim - 2]})`,
        'matmul',
        'the last dim of the first operand must equal the second-to-last dim of the second; transpose one of them?',
      );
    }
    if (a.dtype !== b.dtype) throw new DTypeError(`dtypes differ: ${a.dtype} and ${b.dtype}`, 'matmul', 'cast one operand');
    if (a.dtype === 'bool') throw new DTypeError('not defined for bool', 'matmul', 'cast to float32');
    const batch = broadcastShapes('matmul', a.shape.slice(0, -2), b.shape.slice(0, -2));
    return { shape: [...batch, a.shape[a.ndim - 2]!, b.shape[b.ndim - 1]!], dtype: a.dtype };
  },
  run(inputs, out) {
    const [a, b] = inputs as [Tensor, Tensor];
    const nb = out.ndim - 2;
    const batchShape = out.shape.slice(0, nb);
    const m = out.shape[nb]!, n = out.shape[nb + 1]!, k = a.shape[a.ndim - 1]!;
    const aView = { buf: a.storage.buf, offset: a.offset, strides: [...broadcastStrides(a, [...batchShape, 1, 1]).slice(0, nb), a.strides[a.ndim - 2]!, a.strides[a.ndim - 1]!] };
    const bView = { buf: b.storage.buf, offset: b.offset, strides: [...broadcastStrides(b, [...batchShape, 1, 1]).slice(0, nb), b.strides[b.ndim - 2]!, b.strides[b.ndim - 1]!] };
    const backend = out.storage.backend;
    backend.launch(backend.prepare({ kind: 'matmul', dtype: out.dtype, nBatch: nb }), { kind: 'matmul', a: aView, b: bView, out: view(out), batchShape, m, n, k });
  },
  backward: (g, ctx) => {
    const [a, b] = ctx.inputs as [Tensor, Tensor];
    const ga = ctx.needsGrad[0] ? sumToShape(matmul(g, transpose(b)), ctx.inputShapes[0]!) : null;
    const gb = ctx.needsGrad[1] ? sumToShape(matmul(transpose(a), g), ctx.inputShapes[1]!) : null;
    return [ga, gb];
  },
};

/** torch.matmul semantics, including 1-D operands. */
export const matmul = publicOp('matmul', function matmul(a: Tensor, b: Tensor): Tensor {
  expectTensor('matmul', a, 'a');
  expectTensor('matmul', b, 'b');
  a.assertAlive('matmul');
  b.assertAlive('matmul');
  if (a.ndim === 0 || b.ndim === 0) {
    throw new ShapeError(`both operands need at least 1 dim, got ${fmtShape(a.shape)} and ${fmtShape(b.shape)}`, 'matmul', 'use mul for scalars');
  }
  if (a.dtype !== b.dtype) {
    const t = promoteTypes(a.dtype, b.dtype);
    return matmul(a.dtype === t ? a : cast(a, t), b.dtype === t ? b : cast(b, t));
  }
  if (a.ndim === 1 && b.ndim === 1) {
    if (a.shape[0] !== b.shape[0]) throw new ShapeError(`vectors differ in length: ${fmtShape(a.shape)} and ${fmtShape(b.shape)}`, 'matmul');
    return reshape(apply(matmulPrim, [unsqueeze(a, 0), unsqueeze(b, 1)], {}), []);
  }
  if (a.ndim === 1) return squeeze(apply(matmulPrim, [unsqueeze(a, 0), b], {}), -2);
  if (b.ndim === 1) return squeeze(apply(matmulPrim, [a, unsqueeze(b, 1)], {}), -1);
  if (b.ndim === 2 && a.ndim > 2) {
    // [..., M, K] x [K, N] with a batch of more than one: fold the batch dims into rows, as
    // torch does (when that is a view): one product instead of a batch of small ones, and
    // b's gradient is one [K, N] product instead of a [..., K, N] intermediate summed over the batch
    const k = a.shape[a.ndim - 1]!, rows = numel(a.shape.slice(0, -1));
    if (rows > a.shape[a.ndim - 2]! && viewStrides(a.shape, a.strides, [rows, k])) {
      return reshape(apply(matmulPrim, [reshape(a, [rows, k]), b], {}), [...a.shape.slice(0, -1), b.shape[1]!]);
    }
  }
  return apply(matmulPrim, [a, b], {});
});

/** Batched matmul of [B, M, K] x [B, K, N]. */
export const bmm = publicOp('bmm', function bmm(a: Tensor, b: Tensor): Tensor {
  expectTensor('bmm', a, 'a');
  expectTensor('bmm', b, 'b');
  if (a.ndim !== 3 || b.ndim !== 3) throw new ShapeError(`expects 3-D operands, got ${fmtShape(a.shape)} and ${fmtShape(b.shape)}`, 'bmm');
  return matmul(a, b);
});

