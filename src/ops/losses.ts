// Loss functions (torch.nn.functional), as decompositions into primitives: the pointwise part
// and the reduction fuse when compiled. Options follow torch's keywords in camelCase; the
// reduction is validated before anything is computed.

import { ArgumentError, DTypeError, ShapeError, fmtShape } from '../core/errors.js';
import { isFloat } from '../core/dtype.js';
import { shapesEqual } from '../core/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { expectTensor } from './dispatch.js';
import { checkEnum } from '../core/enum-arg.js';
import * as m from './math.js';
import { gather, indexSelect } from './indexing.js';
import { reshape, unsqueeze } from './movement.js';
import { cast } from './pointwise.js';
import { logSoftmax, mean, sum } from './reduce.js';
import { publicOp } from '../core/user-op.js';

export type Reduction = 'mean' | 'sum' | 'none';
const REDUCTIONS: readonly string[] = ['mean', 'sum', 'none'];

/** Throws the typed error for a reduction that is not one of `valid` (before any work). */
export function checkReduction<R extends string>(op: string, reduction: unknown, valid: readonly string[] = REDUCTIONS): R {
  checkEnum(op, 'reduction', reduction, valid);
  return reduction as R;
}

function reduceLoss(l: Tensor, reduction: Reduction): Tensor {
  if (reduction === 'none') return l;
  return reduction === 'sum' ? sum(l) : mean(l);
}

function expectSameShape(op: string, input: Tensor, target: Tensor): void {
  if (!shapesEqual(input.shape, target.shape)) {
    throw new ShapeError(`input ${fmtShape(input.shape)} and target ${fmtShape(target.shape)} must have the same shape`, op, 'reshape the target to the input\'s shape');
  }
}

function checkPositive(op: string, name: string, v: unknown, allowZero: boolean): asserts v is number {
  if (typeof v !== 'number' || !(allowZero ? v >= 0 : v > 0)) {
    throw new ArgumentError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} number, got ${String(v)}`, op);
  }
}

// ---- classification ----

/** Negative log likelihood over log-probabilities [N, C] (or [N, C, ...]) and int32 targets. */
export const nllLoss = publicOp('nllLoss', function nllLoss(logProbs: Tensor, target: Tensor, opts: { reduction?: Reduction; weight?: Tensor | null; ignoreIndex?: number } = {}): Tensor {
  expectTensor('nllLoss', logProbs, 'logProbs');
  expectTensor('nllLoss', target, 'target');
  const reduction = checkReduction<Reduction>('nllLoss', opts.reduction ?? 'mean');
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
  if (reduction === 'mean') return m.div(sum(losses), sum(w));
  return reduceLoss(losses, reduction);
});

function embeddingWeights(weight: Tensor, target: Tensor): Tensor {
  return reshape(indexSelect(weight, 0, reshape(target, [-1])), target.shape);
}

export interface CrossEntropyOptions {
  reduction?: Reduction;
  weight?: Tensor | null;
  /** class-index targets only (torch: not supported for probability targets) */
  ignoreIndex?: number;
  labelSmoothing?: number;
}

/**
 * Cross entropy from logits [N, C] (or [N, C, ...], or [C]) and either int32 class targets or
 * class probabilities of the logits' shape (a float target), with label smoothing and class weights.
 */
export const crossEntropy = publicOp('crossEntropy', function crossEntropy(logits: Tensor, target: Tensor, opts: CrossEntropyOptions = {}): Tensor {
  expectTensor('crossEntropy', logits, 'logits');
  expectTensor('crossEntropy', target, 'target');
  const reduction = checkReduction<Reduction>('crossEntropy', opts.reduction ?? 'mean');
  const ls = opts.labelSmoothing ?? 0;
  if (typeof ls !== 'number' || !(ls >= 0 && ls <= 1)) throw new ArgumentError(`labelSmoothing must be in [0, 1], got ${String(ls)}`, 'crossEntropy');
  if (isFloat(target.dtype)) {
    if (!shapesEqual(logits.shape, target.shape)) {
      throw new DTypeError(
        `a ${target.dtype} target ${fmtShape(target.shape)} is neither int32 class indices nor probabilities of the logits' shape ${fmtShape(logits.shape)}`,
        'crossEntropy', 'cast class indices with .int(), or give one probability per class',
      );
    }
    return crossEntropyProbabilities(logits, target, reduction, ls, opts);
  }
  const classDim = logits.ndim === 1 ? 0 : 1;
  const lsm = logSoftmax(logits, classDim);
  const nll = nllLoss(lsm, target, { reduction, weight: opts.weight, ignoreIndex: opts.ignoreIndex });
  if (ls === 0) return nll;
  // torch: smooth_i = -sum_c w_c lsm[i, c], zero where the target is ignored; 'mean' divides
  // by the total weight of the non-ignored targets (as nll_loss does)
  const nClasses = logits.shape[classDim]!;
  const wShape = lsm.shape.map((s, d) => (d === classDim ? s : 1));
  const weighted = opts.weight ? m.mul(lsm, reshape(opts.weight, wShape)) : lsm;
  const valid = m.ne(target, opts.ignoreIndex ?? -100);
  const smooth = m.where(valid, m.neg(sum(weighted, classDim)), 0);
  let smoothLoss: Tensor;
  if (reduction === 'mean') {
    const w = opts.weight ? m.where(valid, embeddingWeights(opts.weight, m.where(valid, target, 0)), 0) : cast(valid, lsm.dtype);
    smoothLoss = m.div(sum(smooth), sum(w));
  } else smoothLoss = reduceLoss(smooth, reduction);
  return m.add(m.mul(nll, 1 - ls), m.mul(smoothLoss, ls / nClasses));
});

/** torch's soft-label form: -sum_c w_c t_c lsm_c per sample; 'mean' divides by the sample count. */
function crossEntropyProbabilities(logits: Tensor, target: Tensor, reduction: Reduction, ls: number, opts: CrossEntropyOptions): Tensor {
  if (opts.ignoreIndex !== undefined && opts.ignoreIndex !== -100) {
    throw new ArgumentError('ignoreIndex is not supported for probability (float) targets', 'crossEntropy', 'pass int32 class indices to ignore samples, or give them zero probability mass');
  }
  const classDim = logits.ndim === 1 ? 0 : 1;
  const nClasses = logits.shape[classDim]!;
  const lsm = logSoftmax(logits, classDim);
  const t = ls > 0 ? m.add(m.mul(target, 1 - ls), ls / nClasses) : target;
  let terms = m.mul(lsm, t);
  if (opts.weight) terms = m.mul(terms, reshape(opts.weight, lsm.shape.map((s, d) => (d === classDim ? s : 1))));
  const perSample = m.neg(sum(terms, classDim));
  if (reduction === 'mean') return m.div(sum(perSample), Math.max(perSample.size, 1));
  return reduceLoss(perSample, reduction);
}

// ---- regression ----

export const mseLoss = publicOp('mseLoss', function mseLoss(input: Tensor, target: Tensor, opts: { reduction?: Reduction } = {}): Tensor {
  expectTensor('mseLoss', input, 'input');
  expectTensor('mseLoss', target, 'target');
  const reduction = checkReduction<Reduction>('mseLoss', opts.reduction ?? 'mean');
  const d = m.sub(input, target);
  return reduceLoss(m.mul(d, d), reduction);
});

/** Mean absolute error |input - target|. */
export const l1Loss = publicOp('l1Loss', function l1Loss(input: Tensor, target: Tensor, opts: { reduction?: Reduction } = {}): Tensor {
  expectTensor('l1Loss', input, 'input');
  expectTensor('l1Loss', target, 'target');
  const reduction = checkReduction<Reduction>('l1Loss', opts.reduction ?? 'mean');
  return reduceLoss(m.abs(m.sub(input, target)), reduction);
});

/** 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta 0: the L1 loss). */
export const smoothL1Loss = publicOp('smoothL1Loss', function smoothL1Loss(input: Tensor, target: Tensor, opts: { reduction?: Reduction; beta?: number } = {}): Tensor {
  expectTensor('smoothL1Loss', input, 'input');
  expectTensor('smoothL1Loss', target, 'target');
  const reduction = checkReduction<Reduction>('smoothL1Loss', opts.reduction ?? 'mean');
  const beta = opts.beta ?? 1;
  checkPositive('smoothL1Loss', 'beta', beta, true);
  const ad = m.abs(m.sub(input, target));
  if (beta === 0) return reduceLoss(ad, reduction);
  return reduceLoss(quadraticThenLinear(ad, beta, 1 / beta, 1), reduction);
});

/** 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta). */
export const huberLoss = publicOp('huberLoss', function huberLoss(input: Tensor, target: Tensor, opts: { reduction?: Reduction; delta?: number } = {}): Tensor {
  expectTensor('huberLoss', input, 'input');
  expectTensor('huberLoss', target, 'target');
  const reduction = checkReduction<Reduction>('huberLoss', opts.reduction ?? 'mean');
  const delta = opts.delta ?? 1;
  checkPositive('huberLoss', 'delta', delta, false);
  const ad = m.abs(m.sub(input, target));
  return reduceLoss(quadraticThenLinear(ad, delta, 1, delta), reduction);
});

/** The Huber family: q * d^2 / 2 for d < k, l * (d - k / 2) beyond (smooth L1: q = 1/k, l = 1; Huber: q = 1, l = k). */
function quadraticThenLinear(d: Tensor, k: number, q: number, l: number): Tensor {
  const linear = m.sub(d, 0.5 * k);
  return m.where(m.lt(d, k), m.mul(m.mul(d, d), 0.5 * q), l === 1 ? linear : m.mul(linear, l));
}

// ---- probabilistic ----

export type KlDivReduction = Reduction | 'batchmean';

/**
 * Kullback-Leibler divergence with `input` as log-probabilities: target (log target - input),
 * 0 where target is 0 (torch's xlogy); `logTarget`: the target is given as log-probabilities.
 * 'batchmean' divides the sum by the batch size (dim 0), 'mean' by the element count (torch's default).
 */
export const klDiv = publicOp('klDiv', function klDiv(input: Tensor, target: Tensor, opts: { reduction?: KlDivReduction; logTarget?: boolean } = {}): Tensor {
  expectTensor('klDiv', input, 'input');
  expectTensor('klDiv', target, 'target');
  const reduction = checkReduction<KlDivReduction>('klDiv', opts.reduction ?? 'mean', [...REDUCTIONS, 'batchmean']);
  let l: Tensor;
  if (opts.logTarget) l = m.mul(m.exp(target), m.sub(target, input));
  else {
    // xlogy(t, t) = t log t with 0 at t = 0; log of 1 there keeps the gradient finite
    const tLogT = m.mul(target, m.log(m.where(m.eq(target, 0), 1, target)));
    l = m.sub(tLogT, m.mul(target, input));
  }
  if (reduction === 'batchmean') return m.div(sum(l), l.ndim === 0 ? 1 : Math.max(l.shape[0]!, 1));
  return reduceLoss(l, reduction);
});

/**
 * Binary cross entropy on probabilities: -w (t log x + (1 - t) log(1 - x)) with each log clamped
 * at -100, as torch does. Inputs outside [0, 1] give NaN (torch checks the values and raises).
 */
export const binaryCrossEntropy = publicOp('binaryCrossEntropy', function binaryCrossEntropy(input: Tensor, target: Tensor, opts: { reduction?: Reduction; weight?: Tensor | null } = {}): Tensor {
  expectTensor('binaryCrossEntropy', input, 'input');
  expectTensor('binaryCrossEntropy', target, 'target');
  const reduction = checkReduction<Reduction>('binaryCrossEntropy', opts.reduction ?? 'mean');
  expectSameShape('binaryCrossEntropy', input, target);
  const y = cast(target, input.dtype);
  let l = m.neg(m.add(m.mul(y, clampedLog(input)), m.mul(m.sub(1, y), clampedLog(m.sub(1, input)))));
  if (opts.weight) l = m.mul(l, opts.weight);
  return reduceLoss(l, reduction);
});

/** max(log p, -100), whose gradient is 0 (not NaN) where the clamp holds, p = 0 included. */
function clampedLog(p: Tensor): Tensor {
  const positive = m.gt(p, 0);
  const lp = m.log(m.where(positive, p, 1));
  return m.where(m.logicalAnd(positive, m.ge(lp, -100)), lp, -100);
}

/** Binary cross entropy on logits, in the stable form max(x,0) - x*y + log(1 + exp(-|x|)). */
export const binaryCrossEntropyWithLogits = publicOp('binaryCrossEntropyWithLogits', function binaryCrossEntropyWithLogits(logits: Tensor, target: Tensor, opts: { reduction?: Reduction; weight?: Tensor | null; posWeight?: Tensor | null } = {}): Tensor {
  expectTensor('binaryCrossEntropyWithLogits', logits, 'logits');
  expectTensor('binaryCrossEntropyWithLogits', target, 'target');
  const reduction = checkReduction<Reduction>('binaryCrossEntropyWithLogits', opts.reduction ?? 'mean');
  if (!shapesEqual(logits.shape, target.shape)) {
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
  if (opts.weight) l = m.mul(l, opts.weight);
  return reduceLoss(l, reduction);
});
