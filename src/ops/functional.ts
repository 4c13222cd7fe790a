// Neural-network functions as decompositions into primitives (torch.nn.functional).

import { ArgumentError, DTypeError, ShapeError, fmtShape } from '../core/errors.js';

import { expectTensor } from './dispatch.js';
import type { Tensor } from '../tensor/tensor.js';
import { noGrad } from '../autograd/grad-mode.js';
import * as m from './math.js';
import { arange, rand } from './creation.js';
import { gather, indexSelect } from './indexing.js';
import { matmul } from './linalg.js';
import { reshape, transpose, unsqueeze } from './movement.js';
import { cast } from './pointwise.js';
import { logSoftmax, mean, softmax, sum } from './reduce.js';

/** y = x W^T + b, with W [out, in] as in torch. */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor {
  expectTensor('linear', x, 'x');
  expectTensor('linear', weight, 'weight');
  if (weight.ndim !== 2) throw new ShapeError(`weight must be [out, in], got ${fmtShape(weight.shape)}`, 'linear');
  if (x.shape[x.ndim - 1] !== weight.shape[1]) {
    throw new ShapeError(`input ${fmtShape(x.shape)} has ${x.shape[x.ndim - 1]} features, weight ${fmtShape(weight.shape)} expects ${weight.shape[1]}`, 'linear', 'the last dim of the input must equal in_features');
  }
  const y = matmul(x, transpose(weight));
  return bias ? m.add(y, bias) : y;
}

/** Upper triangle (elements with col - row >= diagonal), zeros elsewhere. */
export function triu(x: Tensor, diagonal = 0): Tensor {
  expectTensor('triu', x, 'x');
  return m.where(triangleMask(x, diagonal, true), x, 0);
}

export function tril(x: Tensor, diagonal = 0): Tensor {
  expectTensor('tril', x, 'x');
  return m.where(triangleMask(x, diagonal, false), x, 0);
}

function triangleMask(x: Tensor, diagonal: number, upper: boolean): Tensor {
  if (x.ndim < 2) throw new ShapeError(`needs at least 2 dims, got ${fmtShape(x.shape)}`, upper ? 'triu' : 'tril');
  const rows = x.shape[x.ndim - 2]!, cols = x.shape[x.ndim - 1]!;
  const diff = m.sub(reshape(arange(cols), [1, cols]), reshape(arange(rows), [rows, 1]));
  return upper ? m.ge(diff, diagonal) : m.le(diff, diagonal);
}

export function dropout(x: Tensor, p = 0.5, training = true): Tensor {
  expectTensor('dropout', x, 'x');
  if (!(p >= 0 && p <= 1)) throw new ArgumentError(`p must be in [0, 1], got ${p}`, 'dropout');
  if (!training || p === 0) return x;
  if (p === 1) return m.mul(x, 0);
  const keep = noGrad(() => m.ge(rand(x.shape), p));
  return m.mul(m.mul(x, keep), 1 / (1 - p));
}

/** Layer norm over the trailing `normalizedShape` dims (biased variance, as torch). */
export function layerNorm(x: Tensor, normalizedShape: readonly number[], weight?: Tensor | null, bias?: Tensor | null, eps = 1e-5): Tensor {
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
}

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
export function batchNorm(x: Tensor, opts: BatchNormOptions): { output: Tensor; runningMean?: Tensor; runningVar?: Tensor } {
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
}

/** Rows of `weight` picked by int32 indices of any shape. */
export function embedding(indices: Tensor, weight: Tensor): Tensor {
  expectTensor('embedding', indices, 'indices');
  expectTensor('embedding', weight, 'weight');
  if (indices.dtype !== 'int32') throw new DTypeError(`indices must be int32, got ${indices.dtype}`, 'embedding', 'cast with .int()');
  if (weight.ndim !== 2) throw new ShapeError(`weight must be [num, dim], got ${fmtShape(weight.shape)}`, 'embedding');
  const flat = indexSelect(weight, 0, reshape(indices, [-1]));
  return reshape(flat, [...indices.shape, weight.shape[1]!]);
}

export type Reduction = 'mean' | 'sum' | 'none';

function reduceLoss(l: Tensor, reduction: Reduction, op: string): Tensor {
  if (reduction === 'none') return l;
  if (reduction === 'sum') return sum(l);
  if (reduction === 'mean') return mean(l);
  throw new ArgumentError(`reduction must be 'mean', 'sum' or 'none', got ${JSON.stringify(reduction)}`, op);
}

/** Negative log likelihood over log-probabilities [N, C] (or [N, C, ...]) and int32 targets. */
export function nllLoss(logProbs: Tensor, target: Tensor, opts: { reduction?: Reduction; weight?: Tensor | null; ignoreIndex?: number } = {}): Tensor {
  expectTensor('nllLoss', logProbs, 'logProbs');
  expectTensor('nllLoss', target, 'target');
  if (target.dtype !== 'int32') throw new DTypeError(`target must hold int32 class indices, got ${target.dtype}`, 'nllLoss', 'cast with .int()');
  if (logProbs.ndim < 1) throw new ShapeError(`input must be [N, C], got ${fmtShape(logProbs.shape)}`, 'nllLoss');
  const lp = logProbs.ndim === 1 ? unsqueeze(logProbs, 0) : logProbs;
  const tg = logProbs.ndim === 1 ? unsqueeze(target, 0) : target;
  const expected = [lp.shape[0]!, ...lp.shape.slice(2)];
  if (tg.ndim !== expected.length || tg.shape.some((s, i) => s !== expected[i])) {
    throw new ShapeError(`target ${fmtShape(target.shape)} does not match input ${fmtShape(logProbs.shape)} (expected ${fmtShape(expected)})`, 'nllLoss', 'targets are class indices, one per sample');
  }
  const ignore = opts.ignoreIndex ?? -100;
  const valid = m.ne(tg, ignore);
  const safeTarget = m.where(valid, tg, 0);
  const picked = reshape(gather(lp, 1, unsqueeze(safeTarget, 1)), tg.shape);
  let w: Tensor = cast(valid, lp.dtype);
  if (opts.weight) w = m.mul(w, embeddingWeights(opts.weight, safeTarget));
  const losses = m.neg(m.mul(picked, w));
  const reduction = opts.reduction ?? 'mean';
  if (reduction === 'mean') return m.div(sum(losses), sum(w));
  return reduceLoss(losses, reduction, 'nllLoss');
}

function embeddingWeights(weight: Tensor, target: Tensor): Tensor {
  return reshape(indexSelect(weight, 0, reshape(target, [-1])), target.shape);
}

/** Cross entropy from logits [N, C] (or [N, C, ...]) and int32 class targets, with label smoothing. */
export function crossEntropy(logits: Tensor, target: Tensor, opts: { reduction?: Reduction; weight?: Tensor | null; ignoreIndex?: number; labelSmoothing?: number } = {}): Tensor {
  expectTensor('crossEntropy', logits, 'logits');
  expectTensor('crossEntropy', target, 'target');
  const classDim = logits.ndim === 1 ? 0 : 1;
  const lsm = logSoftmax(logits, classDim);
  const ls = opts.labelSmoothing ?? 0;
  const nll = nllLoss(lsm, target, { ...opts, labelSmoothing: undefined } as never);
  if (ls === 0) return nll;
  // torch: smooth_i = -sum_c w_c lsm[i, c], zero where the target is ignored; 'mean' divides
  // by the total weight of the non-ignored targets (as nll_loss does)
  const nClasses = logits.shape[classDim]!;
  const wShape = lsm.shape.map((s, d) => (d === classDim ? s : 1));
  const weighted = opts.weight ? m.mul(lsm, reshape(opts.weight, wShape)) : lsm;
  const valid = m.ne(target, opts.ignoreIndex ?? -100);
  const smooth = m.where(valid, m.neg(sum(weighted, classDim)), 0);
  const reduction = opts.reduction ?? 'mean';
  let smoothLoss: Tensor;
  if (reduction === 'mean') {
    const w = opts.weight ? m.where(valid, embeddingWeights(opts.weight, m.where(valid, target, 0)), 0) : cast(valid, lsm.dtype);
    smoothLoss = m.div(sum(smooth), sum(w));
  } else smoothLoss = reduceLoss(smooth, reduction, 'crossEntropy');
  return m.add(m.mul(nll, 1 - ls), m.mul(smoothLoss, ls / nClasses));
}

export function mseLoss(input: Tensor, target: Tensor, opts: { reduction?: Reduction } = {}): Tensor {
  expectTensor('mseLoss', input, 'input');
  expectTensor('mseLoss', target, 'target');
  const d = m.sub(input, target);
  return reduceLoss(m.mul(d, d), opts.reduction ?? 'mean', 'mseLoss');
}

/** Binary cross entropy on logits, in the stable form max(x,0) - x*y + log(1 + exp(-|x|)). */
export function binaryCrossEntropyWithLogits(logits: Tensor, target: Tensor, opts: { reduction?: Reduction; posWeight?: Tensor | null } = {}): Tensor {
  expectTensor('binaryCrossEntropyWithLogits', logits, 'logits');
  expectTensor('binaryCrossEntropyWithLogits', target, 'target');
  if (logits.shape.length !== target.shape.length || logits.shape.some((s, i) => s !== target.shape[i])) {
    throw new ShapeError(`logits ${fmtShape(logits.shape)} and target ${fmtShape(target.shape)} must have the same shape`, 'binaryCrossEntropyWithLogits');
  }
  const y = cast(target, logits.dtype);
  const softplusNeg = m.add(m.relu(m.neg(logits)), m.log1p(m.exp(m.neg(m.abs(logits))))); // log(1 + e^-x)
  let l: Tensor;
  if (opts.posWeight) {
    // (1 - y) x + (1 + (pw - 1) y) softplus(-x)
    const coef = m.add(m.mul(m.sub(opts.posWeight, 1), y), 1);
    l = m.add(m.mul(m.sub(1, y), logits), m.mul(coef, softplusNeg));
  } else {
    l = m.add(m.mul(m.sub(1, y), logits), softplusNeg);
  }
  return reduceLoss(l, opts.reduction ?? 'mean', 'binaryCrossEntropyWithLogits');
}

/** softmax(q k^T / sqrt(d) + mask) v over [..., L, D]; isCausal masks future positions. */
export function scaledDotProductAttention(q: Tensor, k: Tensor, v: Tensor, opts: { attnMask?: Tensor | null; isCausal?: boolean; dropoutP?: number; scale?: number; training?: boolean } = {}): Tensor {
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
}

