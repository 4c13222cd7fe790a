// Group norm and RMS norm as decompositions (mean, variance, rsqrt), so they fuse like layer norm.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { publicOp } from '../core/user-op.js';
import { expectTensor } from './dispatch.js';
import * as m from './math.js';
import { reshape } from './movement.js';
import { mean } from './reduce.js';

/** torch.nn.functional.group_norm: x [N, C, ...], statistics per sample over each group of C / numGroups channels. */
export const groupNorm = publicOp('groupNorm', function groupNorm(x: Tensor, numGroups: number, weight?: Tensor | null, bias?: Tensor | null, eps = 1e-5): Tensor {
  const op = 'groupNorm';
  expectTensor(op, x, 'input');
  if (x.ndim < 2) throw new ShapeError(`expects input [N, C, ...], got ${fmtShape(x.shape)}`, op);
  const [n, c] = x.shape as [number, number];
  if (!Number.isInteger(numGroups) || numGroups < 1 || c % numGroups !== 0) {
    throw new ArgumentError(`numGroups=${numGroups} must be a positive integer dividing the ${c} channels of ${fmtShape(x.shape)}`, op);
  }
  for (const [name, t] of [['weight', weight], ['bias', bias]] as const) {
    if (t && (t.ndim !== 1 || t.shape[0] !== c)) throw new ShapeError(`${name} ${fmtShape(t.shape)} must be [${c}]`, op);
  }
  const g = reshape(x, [n, numGroups, -1]);
  const mu = mean(g, 2, true);
  const d = m.sub(g, mu);
  const varr = mean(m.mul(d, d), 2, true);
  let y = reshape(m.mul(d, m.rsqrt(m.add(varr, eps))), x.shape);
  const channelShape = x.shape.map((s, i) => (i === 1 ? s : 1));
  if (weight) y = m.mul(y, reshape(weight, channelShape));
  if (bias) y = m.add(y, reshape(bias, channelShape));
  return y;
});

/** The machine epsilon torch uses when RMSNorm's eps is not given (torch.finfo(dtype).eps). */
export const machineEpsilon = (dtype: Tensor['dtype']): number => (dtype === 'float64' ? 2 ** -52 : 2 ** -23);

/** torch.nn.functional.rms_norm: x / sqrt(mean(x^2) + eps) over the trailing normalizedShape dims, times weight. */
export const rmsNorm = publicOp('rmsNorm', function rmsNorm(x: Tensor, normalizedShape: readonly number[], weight?: Tensor | null, eps?: number | null): Tensor {
  const op = 'rmsNorm';
  expectTensor(op, x, 'input');
  const k = normalizedShape.length;
  if (k === 0 || k > x.ndim || normalizedShape.some((s, i) => s !== x.shape[x.ndim - k + i])) {
    throw new ShapeError(`normalized shape ${fmtShape(normalizedShape)} is not the trailing shape of input ${fmtShape(x.shape)}`, op);
  }
  if (weight && (weight.ndim !== k || weight.shape.some((s, i) => s !== normalizedShape[i]))) {
    throw new ShapeError(`weight ${fmtShape(weight.shape)} must be ${fmtShape(normalizedShape)}`, op);
  }
  const dims = normalizedShape.map((_, i) => x.ndim - k + i);
  const y = m.mul(x, m.rsqrt(m.add(mean(m.mul(x, x), dims, true), eps ?? machineEpsilon(x.dtype))));
  return weight ? m.mul(y, weight) : y;
});
