// The pointwise math API (torch names, camelCase).

import type { Tensor } from '../tensor/tensor.js';
import { checkEnum } from '../core/enum-arg.js';
import { pointwise, type Operand } from './pointwise.js';
import { publicOp } from '../core/user-op.js';

export const add = publicOp('add', (a: Operand, b: Operand, alpha?: number): Tensor =>
  alpha === undefined || alpha === 1 ? pointwise('add', [a, b]) : pointwise('add', [a, typeof b === 'number' ? b * alpha : pointwise('mul', [b, alpha])]));
export const sub = (a: Operand, b: Operand): Tensor => pointwise('sub', [a, b]);
export const mul = (a: Operand, b: Operand): Tensor => pointwise('mul', [a, b]);
export const div = (a: Operand, b: Operand): Tensor => pointwise('div', [a, b]);
export const pow = (a: Operand, b: Operand): Tensor => pointwise('pow', [a, b]);
export const maximum = (a: Operand, b: Operand): Tensor => pointwise('maximum', [a, b]);
export const minimum = (a: Operand, b: Operand): Tensor => pointwise('minimum', [a, b]);
export const eq = (a: Operand, b: Operand): Tensor => pointwise('eq', [a, b]);
export const ne = (a: Operand, b: Operand): Tensor => pointwise('ne', [a, b]);
export const lt = (a: Operand, b: Operand): Tensor => pointwise('lt', [a, b]);
export const le = (a: Operand, b: Operand): Tensor => pointwise('le', [a, b]);
export const gt = (a: Operand, b: Operand): Tensor => pointwise('gt', [a, b]);
export const ge = (a: Operand, b: Operand): Tensor => pointwise('ge', [a, b]);
export const logicalAnd = (a: Operand, b: Operand): Tensor => pointwise('logicalAnd', [a, b]);
export const logicalOr = (a: Operand, b: Operand): Tensor => pointwise('logicalOr', [a, b]);
export const logicalXor = (a: Operand, b: Operand): Tensor => pointwise('logicalXor', [a, b]);
export const logicalNot = (a: Tensor): Tensor => pointwise('logicalNot', [a]);
export const where = (cond: Operand, a: Operand, b: Operand): Tensor => pointwise('where', [cond, a, b]);

export const neg = (a: Tensor): Tensor => pointwise('neg', [a]);
export const abs = (a: Tensor): Tensor => pointwise('abs', [a]);
export const exp = (a: Tensor): Tensor => pointwise('exp', [a]);
export const log = (a: Tensor): Tensor => pointwise('log', [a]);
export const log1p = (a: Tensor): Tensor => pointwise('log1p', [a]);
export const expm1 = (a: Tensor): Tensor => pointwise('expm1', [a]);
export const sqrt = (a: Tensor): Tensor => pointwise('sqrt', [a]);
export const rsqrt = (a: Tensor): Tensor => pointwise('rsqrt', [a]);
export const sin = (a: Tensor): Tensor => pointwise('sin', [a]);
export const cos = (a: Tensor): Tensor => pointwise('cos', [a]);
export const tanh = (a: Tensor): Tensor => pointwise('tanh', [a]);
export const sigmoid = (a: Tensor): Tensor => pointwise('sigmoid', [a]);
export const relu = (a: Tensor): Tensor => pointwise('relu', [a]);
export const silu = (a: Tensor): Tensor => pointwise('silu', [a]);
export const erf = (a: Tensor): Tensor => pointwise('erf', [a]);
export const sign = (a: Tensor): Tensor => pointwise('sign', [a]);
export const floor = (a: Tensor): Tensor => pointwise('floor', [a]);
export const ceil = (a: Tensor): Tensor => pointwise('ceil', [a]);
export const round = (a: Tensor): Tensor => pointwise('round', [a]);
export const reciprocal = (a: Tensor): Tensor => pointwise('reciprocal', [a]);
export const isnan = (a: Tensor): Tensor => pointwise('isnan', [a]);
export const isinf = (a: Tensor): Tensor => pointwise('isinf', [a]);
export const square = publicOp('square', (a: Tensor): Tensor => pointwise('mul', [a, a]));
export const tan = (a: Tensor): Tensor => pointwise('tan', [a]);
export const atan = (a: Tensor): Tensor => pointwise('atan', [a]);
export const asin = (a: Tensor): Tensor => pointwise('asin', [a]);
export const acos = (a: Tensor): Tensor => pointwise('acos', [a]);
export const sinh = (a: Tensor): Tensor => pointwise('sinh', [a]);
export const cosh = (a: Tensor): Tensor => pointwise('cosh', [a]);
export const log2 = (a: Tensor): Tensor => pointwise('log2', [a]);
export const log10 = (a: Tensor): Tensor => pointwise('log10', [a]);
export const trunc = (a: Tensor): Tensor => pointwise('trunc', [a]);
/** atan2(a, b): the angle of the point (b, a), in (-pi, pi] */
export const atan2 = (a: Operand, b: Operand): Tensor => pointwise('atan2', [a, b]);
/** C's fmod: a - b trunc(a / b), with the sign of a (torch.fmod) */
export const fmod = (a: Operand, b: Operand): Tensor => pointwise('fmod', [a, b]);
export const hypot = (a: Operand, b: Operand): Tensor => pointwise('hypot', [a, b]);

/** Python's modulo: a - b floor(a / b), with the sign of b (torch.remainder, computed as torch does from fmod). */
export const remainder = publicOp('remainder', function remainder(a: Operand, b: Operand): Tensor {
  const r = fmod(a, b);
  const bNegative = typeof b === 'number' || typeof b === 'boolean' ? Number(b) < 0 : lt(b, 0);
  return where(logicalAnd(ne(r, 0), ne(lt(r, 0), bNegative)), add(r, b), r);
});

/** start + weight (end - start), in torch's two-sided form (exact at weight 0 and 1). */
export const lerp = publicOp('lerp', function lerp(start: Tensor, end: Tensor, weight: Operand): Tensor {
  const diff = sub(end, start);
  if (typeof weight !== 'object') {
    const w = Number(weight);
    return Math.abs(w) < 0.5 ? add(start, mul(diff, w)) : sub(end, mul(diff, 1 - w));
  }
  return where(lt(abs(weight), 0.5), add(start, mul(diff, weight)), sub(end, mul(diff, sub(1, weight))));
});

export const GELU_APPROXIMATIONS = ['none', 'tanh'] as const;
export type GeluApproximation = (typeof GELU_APPROXIMATIONS)[number];

/** GELU; approximate 'tanh' uses the tanh formula (as torch's approximate='tanh'). */
export const gelu = publicOp('gelu', function gelu(a: Tensor, approximate: GeluApproximation = 'none'): Tensor {
  checkEnum('gelu', 'approximate', approximate, GELU_APPROXIMATIONS);
  return pointwise(approximate === 'tanh' ? 'geluTanh' : 'gelu', [a]);
});

/** softplus(x) = log(1 + exp(beta x)) / beta, linear above threshold (torch defaults). */
export const softplus = publicOp('softplus', function softplus(a: Tensor, beta = 1, threshold = 20): Tensor {
  if (beta === 1 && threshold === 20) return pointwise('softplus', [a]);
  const bx = mul(a, beta);
  return where(gt(bx, threshold), a, div(log1p(exp(bx)), beta));
});

export const clamp = publicOp('clamp', function clamp(a: Tensor, min?: Operand | null, max?: Operand | null): Tensor {
  let r = a;
  if (min !== undefined && min !== null) r = maximum(r, min);
  if (max !== undefined && max !== null) r = minimum(r, max);
  return r === a ? pointwise('identity', [a]) : r;
});
