// Neural-network functions as decompositions into primitives (torch.nn.functional); the losses
// are in losses.ts, the activations in activations.ts.

import { ArgumentError, DTypeError, ShapeError, fmtShape } from '../core/errors.js';

import { expectTensor } from './dispatch.js';
import type { Tensor } from '../tensor/tensor.js';
import { noGrad } from '../autograd/grad-mode.js';
import * as m from './math.js';
import { arange, rand } from './creation.js';
import { indexSelect } from './indexing.js';
import { matmul } from './linalg.js';
import { reshape, transpose, unsqueeze } from './movement.js';
import { mean, softmax } from './reduce.js';
import { publicOp } from '../core/user-op.js';

/** y = x W^T + b, with W [out, in] as in torch. */
export const linear = publicOp('linear', function linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor {
  expectTensor('linear', x, 'x');
  expectTensor('linear', weight, 'weight');
  if (weight.ndim !== 2) throw new ShapeError(`weight must be [out, in], got ${fmtShape(weight.shape)}`, 'linear');
  if (x.shape[x.ndim - 1] !== weight.shape[1]) {
    throw new ShapeError(`input ${fmtShape(x.shape)} has ${x.shape[x.ndim - 1]} features, weight ${fmtShape(weight.shape)} expects ${weight.shape[1]}`, 'linear', 'the last dim of the input must equal in_features');
  }
  const y = matmul(x, transpose(weight));
  return bias ? m.add(y, bias) : y;
});

/** Upper triangle (elements with col - row >= diagonal), zeros elsewhere. */
export const triu = publicOp('triu', function triu(x: Tensor, diagonal = 0): Tensor {
  expectTensor('triu', x, 'x');
  return m.where(triangleMask(x, diagonal, true), x, 0);
});

export const tril = publicOp('tril', function tril(x: Tensor, diagonal = 0): Tensor {
  expectTensor('tril', x, 'x');
  return m.where(triangleMask(x, diagonal, false), x, 0);
});

function triangleMask(x: Tensor, diagonal: number, upper: boolean): Tensor {
  if (x.ndim < 2) throw new ShapeError(`needs at least 2 dims, got ${fmtShape(x.shape)}`, upper ? 'triu' : 'tril');
  const rows = x.shape[x.ndim - 2]!, cols = x.shape[x.ndim - 1]!;
  const diff = m.sub(reshape(arange(cols), [1, cols]), reshape(arange(rows), [rows, 1]));
  return upper ? m.ge(diff, diagonal) : m.le(diff, diagonal);
}

export const dropout = publicOp('dropout', function dropout(x: Tensor, p = 0.5, training = true): Tensor {
  expectTensor('dropout', x, 'x');
  if (!(p >= 0 && p <= 1)) throw new ArgumentError(`p must be in [0, 1], got ${p}`, 'dropout');
  if (!training || p === 0) return x;
  if (p === 1) return m.mul(x, 0);
  const keep = noGrad(() => m.ge(rand(x.shape), p));
  return m.mul(m.mul(x, keep), 1 / (1 - p));
});

/** Layer norm over the trailing `normalizedShape` dims (biased variance, as torch). */
export const layerNorm = publicOp('layerNorm', function layerNorm(x: Tensor, normalizedShape: readonly number[], weight?: Tensor | null, bias?: Tensor | null, eps = 1e-5): Tensor {
  expectTensor('layerNorm', x, 'x');
  const k = normalizedShape.length;
  if (k === 0 || k > x.ndim || normalizedShape.some((s, i) => s !== x.shape[x.ndim - k + i])) {
    throw new ShapeError(`normalized shape ${fmtShape(normalizedShape)} is not the trailing shape of input ${fmtShape(x.shape)}`, 'layerNorm');
  }
  const dims = normalizedShape.map((_, i) => x.ndim - k + i);
  const mu = mean(x, dims, true);
  const d = m.sub(x, mu);
  const varr = mean(m.mul(d, d), dims, true);
  let y = m.mul(d, m.rsqrt(m.add(varr, eps)));
  if (weight) y = m.mul(y, weight);
  if (bias) y = m.add(y, bias);
  return y;
});

export interface BatchNormOptions {
  runningMean?: Tensor | null;
  runningVar?: Tensor | null;
  weight?: Tensor | null;
  bias?: Tensor | null;
  training?: boolean;
  momentum?: number;
  eps?: number;
}

/**
 * Batch norm over [N, C, ...]: per-channel statistics over every dim but 1. In training
 * it returns the new running statistics for the caller to store (functional style).
 */
export const batchNorm = publicOp('batchNorm', function batchNorm(x: Tensor, opts: BatchNormOptions): { output: Tensor; runningMean?: Tensor; runningVar?: Tensor } {
  if (x.ndim < 2) throw new ShapeError(`expects [N, C, ...], got ${fmtShape(x.shape)}`, 'batchNorm');
  const c = x.shape[1]!;
  const eps = opts.eps ?? 1e-5;
  const dims = x.shape.map((_, i) => i).filter((i) => i !== 1);
  const bshape = x.shape.map((_, i) => (i === 1 ? c : 1));
  let mu: Tensor, varr: Tensor;
  let newMean: Tensor | undefined, newVar: Tensor | undefined;
  if (opts.training ?? true) {
    mu = mean(x, dims, true);
    const d = m.sub(x, mu);
    varr = mean(m.mul(d, d), dims, true);
    if (opts.runningMean && opts.runningVar) {
      const momentum = opts.momentum ?? 0.1;
      const n = x.size / c;
      noGrad(() => {
        newMean = m.add(m.mul(opts.runningMean!, 1 - momentum), m.mul(reshape(mu, [c]), momentum));
        newVar = m.add(m.mul(opts.runningVar!, 1 - momentum), m.mul(reshape(varr, [c]), (momentum * n) / Math.max(n - 1, 1)));
      });
    }
  } else {
    if (!opts.runningMean || !opts.runningVar) throw new ArgumentError('eval mode needs runningMean and runningVar', 'batchNorm');
    mu = reshape(opts.runningMean, bshape);
    varr = reshape(opts.runningVar, bshape);
  }
  let y = m.mul(m.sub(x, mu), m.rsqrt(m.add(varr, eps)));
  if (opts.weight) y = m.mul(y, reshape(opts.weight, bshape));
  if (opts.bias) y = m.add(y, reshape(opts.bias, bshape));
  return { output: y, runningMean: newMean, runningVar: newVar };
});

/** Rows of `weight` picked by int32 indices of any shape. */
/**
 * Rows of `weight` picked by int32 indices. `paddingIdx` (torch's padding_idx): that row is
 * returned as stored, but receives no gradient.
 */
export const embedding = publicOp('embedding', function embedding(indices: Tensor, weight: Tensor, opts: { paddingIdx?: number } = {}): Tensor {
  expectTensor('embedding', indices, 'indices');
  expectTensor('embedding', weight, 'weight');
  if (indices.dtype !== 'int32') throw new DTypeError(`indices must be int32, got ${indices.dtype}`, 'embedding', 'cast with .int()');
  if (weight.ndim !== 2) throw new ShapeError(`weight must be [num, dim], got ${fmtShape(weight.shape)}`, 'embedding');
  const p = opts.paddingIdx;
  if (p !== undefined && (!Number.isInteger(p) || p < -weight.shape[0]! || p >= weight.shape[0]!)) {
    throw new ArgumentError(`paddingIdx ${p} is out of range for ${weight.shape[0]} embeddings`, 'embedding', `use an index in [${-weight.shape[0]!}, ${weight.shape[0]! - 1}]`);
  }
  const rows = reshape(indexSelect(weight, 0, reshape(indices, [-1])), [...indices.shape, weight.shape[1]!]);
  if (p === undefined || !rows.requiresGrad) return rows;
  // the padding positions take the same values without autograd history: no gradient reaches that row
  return m.where(unsqueeze(m.eq(indices, p < 0 ? p + weight.shape[0]! : p), -1), rows.detach(), rows);
});

/** softmax(q k^T / sqrt(d) + mask) v over [..., L, D]; isCausal masks future positions. */
export const scaledDotProductAttention = publicOp('scaledDotProductAttention', function scaledDotProductAttention(q: Tensor, k: Tensor, v: Tensor, opts: { attnMask?: Tensor | null; isCausal?: boolean; dropoutP?: number; scale?: number; training?: boolean } = {}): Tensor {
  expectTensor('scaledDotProductAttention', q, 'q');
  expectTensor('scaledDotProductAttention', k, 'k');
  expectTensor('scaledDotProductAttention', v, 'v');
  if (q.ndim < 2 || k.ndim !== q.ndim || v.ndim !== q.ndim) {
    throw new ShapeError(`q ${fmtShape(q.shape)}, k ${fmtShape(k.shape)}, v ${fmtShape(v.shape)} must have the same rank >= 2`, 'scaledDotProductAttention');
  }
  const d = q.shape[q.ndim - 1]!;
  if (k.shape[k.ndim - 1] !== d) throw new ShapeError(`q and k differ in head dim: ${fmtShape(q.shape)} vs ${fmtShape(k.shape)}`, 'scaledDotProductAttention');
  const scale = opts.scale ?? 1 / Math.sqrt(d);
  let scores = m.mul(matmul(q, transpose(k)), scale);
  if (opts.isCausal) {
    const lq = q.shape[q.ndim - 2]!, lk = k.shape[k.ndim - 2]!;
    const diff = m.sub(reshape(arange(lk), [1, lk]), reshape(arange(lq), [lq, 1]));
    scores = m.where(m.gt(diff, 0), -Infinity, scores);
  }
  if (opts.attnMask) {
    scores = opts.attnMask.dtype === 'bool' ? m.where(opts.attnMask, scores, -Infinity) : m.add(scores, opts.attnMask);
  }
  let p = softmax(scores, -1);
  if (opts.dropoutP && opts.training !== false) p = dropout(p, opts.dropoutP, true);
  return matmul(p, v);
});

