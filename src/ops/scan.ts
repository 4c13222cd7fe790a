// Scans along a dim beyond cumsum: cumprod (its gradient handles zeros exactly, as torch's does)
// and cummax / cummin (the index of the running extreme is the primitive; values are gathered,
// so the gradient goes to the element each came from).

import type { ScanOp } from '../ir/kernel-spec.js';
import { normalizeDim } from '../core/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { apply, expectTensor, type PrimDef } from './dispatch.js';
import { launchAlongDim } from './along-dim.js';
import * as m from './math.js';
import { cumsum, gather } from './indexing.js';
import { reshape } from './movement.js';
import { cast } from './pointwise.js';
import { flip } from './reorder.js';
import type { ValuesIndices } from './reduce.js';
import { publicOp } from '../core/user-op.js';

interface DimAttrs { readonly dim: number }
interface IndexScanAttrs { readonly dim: number; readonly op: Extract<ScanOp, 'argmax' | 'argmin'> }

export const cumprodPrim: PrimDef<DimAttrs> = {
  name: 'cumprod',
  meta: (inputs) => ({ shape: inputs[0]!.shape, dtype: inputs[0]!.dtype }),
  run: (inputs, out, a) => launchAlongDim({ kind: 'scan', op: 'prod', dtype: out.dtype }, inputs[0]!, out, a.dim),
  backward: (g, ctx) => [cumprodBackward(g, ctx.inputs[0]!, ctx.output!, ctx.attrs.dim)],
  saveOutput: true,
  formatAttrs: (a) => `dim=${a.dim}`,
};

/** The int32 index of the running max / min (no gradient: cummax's values are gathered). */
export const cumIndexPrim: PrimDef<IndexScanAttrs> = {
  name: 'cumIndex',
  meta: (inputs) => ({ shape: inputs[0]!.shape, dtype: 'int32' }),
  run: (inputs, out, a) => launchAlongDim({ kind: 'scan', op: a.op, dtype: inputs[0]!.dtype }, inputs[0]!, out, a.dim),
  saveInputs: false,
  formatAttrs: (a) => `${a.op}, dim=${a.dim}`,
};

/** sum_{i >= j} v_i along dim (a cumsum of the flipped values, flipped back: no cancellation). */
function reverseCumsum(v: Tensor, dim: number): Tensor {
  return flip(cumsum(flip(v, [dim]), dim), [dim]);
}

/**
 * d/dx_j of sum_i g_i y_i, y = cumprod(x): before the first zero of a row, revcumsum(g y)_j / x_j;
 * at the first zero z, revcumsum(g cumprod(x with x_z = 1))_z; after it, 0.
 */
function cumprodBackward(g: Tensor, x: Tensor, y: Tensor, dim: number): Tensor {
  const zero = m.eq(x, 0);
  const firstZero = m.logicalAnd(zero, m.eq(cumsum(zero, dim), 1));
  const nonzeroPart = m.div(reverseCumsum(m.mul(g, y), dim), m.where(zero, 1, x));
  const withoutFirstZero = apply(cumprodPrim, [m.where(firstZero, 1, x)], { dim });
  const atFirstZero = reverseCumsum(m.mul(g, withoutFirstZero), dim);
  return m.where(zero, m.where(firstZero, atFirstZero, 0), nonzeroPart);
}

function scanDim(op: string, x: Tensor, dim: number): { xs: Tensor; d: number } {
  if (x.ndim === 0) return { xs: reshape(x, [1]), d: normalizeDim(op, dim, 1) };
  return { xs: x, d: normalizeDim(op, dim, x.ndim, x.shape) };
}

/** The running product along dim (bool and int32 inputs give int32, wrapping as int32 does). */
export const cumprod = publicOp('cumprod', function cumprod(x: Tensor, dim: number): Tensor {
  expectTensor('cumprod', x, 'x');
  const { xs, d } = scanDim('cumprod', x, dim);
  const input = xs.dtype === 'bool' ? cast(xs, 'int32') : xs;
  return reshape(apply(cumprodPrim, [input], { dim: d }), x.shape);
});

function cumExtreme(op: 'cummax' | 'cummin', x: Tensor, dim: number): ValuesIndices {
  expectTensor(op, x, 'x');
  const { xs, d } = scanDim(op, x, dim);
  // the index prim has no gradient; gather carries it to the selected elements
  const indices = apply(cumIndexPrim, [xs], { dim: d, op: op === 'cummax' ? 'argmax' : 'argmin' });
  return { values: reshape(gather(xs, d, indices), x.shape), indices: reshape(indices, x.shape) };
}

/** The running maximum along dim and the index where it was found (the later one at ties). */
export const cummax = publicOp('cummax', (x: Tensor, dim: number): ValuesIndices => cumExtreme('cummax', x, dim));
/** The running minimum along dim and the index where it was found (the later one at ties). */
export const cummin = publicOp('cummin', (x: Tensor, dim: number): ValuesIndices => cumExtreme('cummin', x, dim));
