// Vector norms and what is built on them: norm, normalize, cosineSimilarity, cdist. Each is a
// pointwise part feeding a reduction (fused when compiled). At zero the gradient is torch's 0:
// roots and powers read a stand-in value there, so no 0 * inf becomes a NaN.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import { isFloat } from '../core/dtype.js';
import { broadcastShapes, normalizeDim } from '../core/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { noGrad } from '../autograd/grad-mode.js';
import { expectTensor } from './dispatch.js';
import * as m from './math.js';
import { expand, unsqueeze } from './movement.js';
import { cast } from './pointwise.js';
import { amax, amin, sum } from './reduce.js';
import { publicOp } from '../core/user-op.js';

type Dims = number | readonly number[] | undefined;
export type NormOrder = number | 'fro';

/** sqrt(s) whose gradient is 0 where s = 0 (torch's norm backward), not infinite. */
function sqrtZeroGrad(s: Tensor): Tensor {
  const zero = m.eq(s, 0);
  return m.where(zero, 0, m.sqrt(m.where(zero, 1, s)));
}

function checkOrder(op: string, p: unknown): asserts p is NormOrder {
  if (p === 'fro' || (typeof p === 'number' && !Number.isNaN(p))) return;
  const hint = p === 'nuc' ? "the nuclear norm needs singular values, which kiln does not compute yet" : "p is a number (Infinity and -Infinity included) or 'fro'";
  throw new ArgumentError(`p must be a number or 'fro', got ${JSON.stringify(p)}`, op, hint);
}

/** The vector p-norm over dims (all elements when dim is undefined); 'fro' is the 2-norm. */
export const norm = publicOp('norm', function norm(x: Tensor, p: NormOrder = 'fro', dim?: Dims, keepdim = false): Tensor {
  expectTensor('norm', x, 'x');
  checkOrder('norm', p);
  return vectorNorm(x, p === 'fro' ? 2 : p, dim, keepdim);
});

function vectorNorm(x0: Tensor, p: number, dim: Dims, keepdim: boolean): Tensor {
  const x = isFloat(x0.dtype) ? x0 : cast(x0, 'float32');
  if (p === 2) return sqrtZeroGrad(sum(m.mul(x, x), dim, keepdim));
  if (p === 1) return sum(m.abs(x), dim, keepdim);
  if (p === Infinity) return amax(m.abs(x), dim, keepdim);
  if (p === -Infinity) return amin(m.abs(x), dim, keepdim);
  if (p === 0) return sum(cast(m.ne(x, 0), x.dtype), dim, keepdim);
  const ax = m.abs(x);
  // |x|^p with p > 0 is 0 at 0 and so is its gradient (p < 0 gives inf there, as in torch)
  let powered: Tensor;
  if (p > 0) {
    const zero = m.eq(ax, 0);
    powered = m.where(zero, 0, m.pow(m.where(zero, 1, ax), p));
  } else powered = m.pow(ax, p);
  const s = sum(powered, dim, keepdim);
  if (p < 0) return m.pow(s, 1 / p);
  const zero = m.eq(s, 0);
  return m.where(zero, 0, m.pow(m.where(zero, 1, s), 1 / p));
}

/** x / max(||x||_p, eps) along dim (torch.nn.functional.normalize). */
export const normalize = publicOp('normalize', function normalize(x: Tensor, p: number = 2, dim = 1, eps = 1e-12): Tensor {
  expectTensor('normalize', x, 'x');
  checkOrder('normalize', p);
  const d = normalizeDim('normalize', dim, Math.max(x.ndim, 1), x.shape);
  const n = vectorNorm(x, p, x.ndim === 0 ? undefined : d, true);
  return m.div(x, m.where(m.lt(n, eps), eps, n));
});

/**
 * Cosine similarity along dim of x1 and x2 (broadcast together): sum((x1 / n1) (x2 / n2)), each
 * squared norm raised to at least eps^2. As in torch 1.13 the raise is invisible to autograd:
 * the gradient flows through the squared norm as computed (and is finite at a zero vector).
 */
export const cosineSimilarity = publicOp('cosineSimilarity', function cosineSimilarity(x1: Tensor, x2: Tensor, dim = 1, eps = 1e-8): Tensor {
  expectTensor('cosineSimilarity', x1, 'x1');
  expectTensor('cosineSimilarity', x2, 'x2');
  const shape = broadcastShapes('cosineSimilarity', x1.shape, x2.shape);
  const d = normalizeDim('cosineSimilarity', dim, shape.length, shape);
  const a = expand(x1, shape), b = expand(x2, shape);
  const eps2 = eps * eps;
  const unit = (v: Tensor) => {
    const sq = sum(m.mul(v, v), d, true);
    const raise = noGrad(() => m.sub(m.where(m.lt(sq, eps2), eps2, sq), sq));
    return m.div(v, m.sqrt(m.add(sq, raise)));
  };
  return sum(m.mul(unit(a), unit(b)), d);
});

/** Pairwise p-norm distances between the rows of x1 [..., P, M] and x2 [..., R, M]: [..., P, R]. */
export const cdist = publicOp('cdist', function cdist(x1: Tensor, x2: Tensor, p = 2): Tensor {
  expectTensor('cdist', x1, 'x1');
  expectTensor('cdist', x2, 'x2');
  if (typeof p !== 'number' || !(p >= 0)) throw new ArgumentError(`p must be a non-negative number, got ${String(p)}`, 'cdist');
  if (x1.ndim < 2 || x2.ndim < 2 || x1.shape[x1.ndim - 1] !== x2.shape[x2.ndim - 1]) {
    throw new ShapeError(`x1 ${fmtShape(x1.shape)} and x2 ${fmtShape(x2.shape)} must be [..., P, M] and [..., R, M] with the same M`, 'cdist');
  }
  const diff = m.sub(unsqueeze(x1, -2), unsqueeze(x2, -3)); // [..., P, R, M]
  return vectorNorm(diff, p, -1, false);
});
