// Activation functions (torch.nn.functional), as compositions of pointwise primitives, so they
// fuse into one kernel when compiled. Branches are `where`s on the input: the unselected
// branch gets a zero gradient, and its argument is kept finite (exp of a clamped input) so that
// zero times its derivative never makes a NaN. Gradients at the kinks are torch's.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import { normalizeDim } from '../core/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { expectTensor } from './dispatch.js';
import * as m from './math.js';
import { reshape, slice } from './movement.js';
import { publicOp } from '../core/user-op.js';

const SELU_ALPHA = 1.6732632423543772848170429916717;
const SELU_SCALE = 1.0507009873554804934193349852946;

function checkNumber(op: string, name: string, v: unknown): asserts v is number {
  if (typeof v !== 'number' || Number.isNaN(v)) throw new ArgumentError(`${name} must be a number, got ${String(v)}`, op);
}

/** The input where it is <= 0, else 0: the argument of the exponential branch, never large. */
const nonPositive = (x: Tensor): Tensor => m.where(m.gt(x, 0), 0, x);

/** x for x > 0, alpha (exp(x) - 1) otherwise. */
export const elu = publicOp('elu', function elu(x: Tensor, alpha = 1): Tensor {
  expectTensor('elu', x, 'x');
  checkNumber('elu', 'alpha', alpha);
  return m.where(m.gt(x, 0), x, m.mul(m.expm1(nonPositive(x)), alpha));
});

/** scale * elu(x, alpha) with the self-normalizing constants of Klambauer et al. */
export const selu = publicOp('selu', function selu(x: Tensor): Tensor {
  expectTensor('selu', x, 'x');
  return m.where(m.gt(x, 0), m.mul(x, SELU_SCALE), m.mul(m.expm1(nonPositive(x)), SELU_SCALE * SELU_ALPHA));
});

/** x for x > 0, alpha (exp(x / alpha) - 1) otherwise. */
export const celu = publicOp('celu', function celu(x: Tensor, alpha = 1): Tensor {
  expectTensor('celu', x, 'x');
  checkNumber('celu', 'alpha', alpha);
  if (alpha === 0) throw new ArgumentError('alpha cannot be 0 (it divides the input)', 'celu', 'use a non-zero alpha (torch defaults to 1)');
  return m.where(m.gt(x, 0), x, m.mul(m.expm1(m.div(nonPositive(x), alpha)), alpha));
});

/** x clamped to [minVal, maxVal]; the gradient is 0 at and beyond the bounds (torch). */
export const hardtanh = publicOp('hardtanh', function hardtanh(x: Tensor, minVal = -1, maxVal = 1): Tensor {
  expectTensor('hardtanh', x, 'x');
  return clampHard('hardtanh', x, minVal, maxVal);
});

function clampHard(op: string, x: Tensor, lo: number, hi: number): Tensor {
  checkNumber(op, 'minVal', lo);
  checkNumber(op, 'maxVal', hi);
  if (lo > hi) throw new ArgumentError(`minVal ${lo} is greater than maxVal ${hi}`, op, 'pass the bounds in order (minVal, maxVal)');
  return m.where(m.le(x, lo), lo, m.where(m.ge(x, hi), hi, x));
}

/** min(max(x, 0), 6). */
export const relu6 = publicOp('relu6', function relu6(x: Tensor): Tensor {
  expectTensor('relu6', x, 'x');
  return clampHard('relu6', x, 0, 6);
});

/** relu6(x + 3) / 6. */
export const hardsigmoid = publicOp('hardsigmoid', function hardsigmoid(x: Tensor): Tensor {
  expectTensor('hardsigmoid', x, 'x');
  return m.where(m.le(x, -3), 0, m.where(m.ge(x, 3), 1, m.div(m.add(x, 3), 6)));
});

/**
 * x relu6(x + 3) / 6; gradient x / 3 + 1/2 on [-3, 3), 1 from 3 on (torch's vectorized CPU
 * kernel, which every tensor of 16+ elements takes; its scalar path gives 1.5 at exactly 3).
 */
export const hardswish = publicOp('hardswish', function hardswish(x: Tensor): Tensor {
  expectTensor('hardswish', x, 'x');
  return m.where(m.lt(x, -3), 0, m.where(m.lt(x, 3), m.div(m.mul(x, m.add(x, 3)), 6), x));
});

/** x tanh(softplus(x)). */
export const mish = publicOp('mish', function mish(x: Tensor): Tensor {
  expectTensor('mish', x, 'x');
  return m.mul(x, m.tanh(m.softplus(x)));
});

/** log(sigmoid(x)) = -softplus(-x), stable for large |x|. */
export const logsigmoid = publicOp('logsigmoid', function logsigmoid(x: Tensor): Tensor {
  expectTensor('logsigmoid', x, 'x');
  return m.neg(m.softplus(m.neg(x)));
});

/** x for x >= 0, negativeSlope x otherwise. */
export const leakyRelu = publicOp('leakyRelu', function leakyRelu(x: Tensor, negativeSlope = 0.01): Tensor {
  expectTensor('leakyRelu', x, 'x');
  checkNumber('leakyRelu', 'negativeSlope', negativeSlope);
  return m.where(m.gt(x, 0), x, m.mul(x, negativeSlope));
});

/**
 * x for x > 0, weight x otherwise, with one learned slope per channel (dim 1; inputs of rank < 2
 * have one channel) or one shared slope (weight of one element).
 */
export const prelu = publicOp('prelu', function prelu(x: Tensor, weight: Tensor): Tensor {
  expectTensor('prelu', x, 'x');
  expectTensor('prelu', weight, 'weight');
  const channels = x.ndim >= 2 ? x.shape[1]! : 1;
  if (weight.ndim > 1 || (weight.size !== 1 && weight.size !== channels)) {
    throw new ShapeError(`weight ${fmtShape(weight.shape)} must hold 1 or ${channels} slopes (the channels of input ${fmtShape(x.shape)}, dim 1)`, 'prelu', 'nn.PReLU(numParameters) must match the channel count');
  }
  const w = weight.size === 1 || x.ndim < 2 ? reshape(weight, []) : reshape(weight, x.shape.map((s, d) => (d === 1 ? s : 1)));
  return m.where(m.gt(x, 0), x, m.mul(x, w));
});

/** The gated linear unit: a * sigmoid(b) with a, b the two halves of x along dim. */
export const glu = publicOp('glu', function glu(x: Tensor, dim = -1): Tensor {
  expectTensor('glu', x, 'x');
  if (x.ndim === 0) throw new ShapeError('needs at least one dim, got a 0-d tensor', 'glu');
  const d = normalizeDim('glu', dim, x.ndim, x.shape);
  const n = x.shape[d]!;
  if (n % 2 !== 0) throw new ShapeError(`dim ${d} of ${fmtShape(x.shape)} has odd size ${n}: it must split into two halves`, 'glu');
  return m.mul(slice(x, d, 0, n / 2), m.sigmoid(slice(x, d, n / 2, n)));
});
