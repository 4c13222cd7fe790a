// Resampling: interpolate (torch.nn.functional.interpolate: nearest, nearest-exact, linear,
// bilinear, area) and adaptive pooling. Each is separable, so it runs one spatial dim at a
// time as an index gather (indexSelect, whose gradient is indexAdd) and a weighted sum; the
// source indices and weights are computed here in JS exactly as torch's CPU kernels compute
// them (nearest in float32; linear weights in the input's precision, torch's opmath_t), and
// enter the graph as constants.

import { ArgumentError, DTypeError, ShapeError, fmtShape } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { checkEnum } from '../core/enum-arg.js';
import { publicOp } from '../core/user-op.js';
import { expectTensor } from './dispatch.js';
import { tensor } from './creation.js';
import { indexSelect } from './indexing.js';
import * as m from './math.js';
import { reshape } from './movement.js';
import { amax, sum } from './reduce.js';

const f32 = Math.fround;

export const INTERPOLATE_MODES = ['nearest', 'nearest-exact', 'linear', 'bilinear', 'area'] as const;
export type InterpolateMode = (typeof INTERPOLATE_MODES)[number];

export interface InterpolateOptions {
  /** output spatial size (a number for every dim, or one per dim) */
  size?: number | readonly number[] | null;
  /** multiplier of the spatial size (output size = floor(input size * scaleFactor)) */
  scaleFactor?: number | readonly number[] | null;
  mode?: InterpolateMode;
  /** linear modes: align the corner pixels' centers (default false) */
  alignCorners?: boolean | null;
  /** compute the source scale from the sizes instead of using scaleFactor (torch's recompute_scale_factor) */
  recomputeScaleFactor?: boolean | null;
}

const SPATIAL: Record<InterpolateMode, readonly number[]> = {
  nearest: [1, 2, 3], 'nearest-exact': [1, 2, 3], linear: [1], bilinear: [2], area: [1, 2],
};

/** torch.nn.functional.interpolate over [N, C, L] or [N, C, H, W]. */
export const interpolate = publicOp('interpolate', function interpolate(x: Tensor, opts: InterpolateOptions = {}): Tensor {
  const op = 'interpolate';
  expectTensor(op, x, 'input');
  const mode = opts.mode ?? 'nearest';
  checkEnum(op, 'mode', mode, INTERPOLATE_MODES);
  const dims = x.ndim - 2;
  if (!SPATIAL[mode].includes(dims)) {
    throw new ShapeError(`mode '${mode}' expects ${SPATIAL[mode].map((d) => `${d + 2}-D`).join(' or ')} input [N, C, ...], got ${fmtShape(x.shape)}`, op, mode === 'linear' ? "use 'bilinear' for 4-D input" : mode === 'bilinear' ? "use 'linear' for 3-D input" : undefined);
  }
  const align = opts.alignCorners ?? null;
  if (align !== null && !mode.includes('linear')) {
    throw new ArgumentError(`alignCorners only applies to the linear modes, not '${mode}'`, op, 'leave alignCorners unset');
  }
  if (mode !== 'nearest' && mode !== 'nearest-exact' && x.dtype !== 'float32' && x.dtype !== 'float64') {
    throw new DTypeError(`mode '${mode}' needs a float input, got ${x.dtype}`, op, "cast with .float(), or use mode 'nearest'");
  }
  const inSizes = x.shape.slice(2);
  const { outSizes, scales } = outputSizes(op, inSizes, opts);
  const useScales = opts.recomputeScaleFactor ? inSizes.map(() => null) : scales;
  if (mode === 'area') return adaptivePool(x, outSizes, 'avg');
  let y = x;
  for (let i = 0; i < dims; i++) {
    const dim = 2 + i, n = inSizes[i]!, out = outSizes[i]!;
    if (mode === 'nearest' || mode === 'nearest-exact') {
      y = indexSelect(y, dim, int32(nearestIndices(n, out, useScales[i] ?? null, mode === 'nearest-exact')));
    } else {
      y = linearAlong(y, dim, n, out, align ?? false, useScales[i] ?? null);
    }
  }
  return y;
});

function outputSizes(op: string, inSizes: readonly number[], opts: InterpolateOptions): { outSizes: number[]; scales: (number | null)[] } {
  const dims = inSizes.length;
  const perDim = (name: string, v: number | readonly number[]): number[] => {
    const list = typeof v === 'number' ? inSizes.map(() => v) : [...v];
    if (list.length !== dims) throw new ArgumentError(`${name} has ${list.length} entries, the input has ${dims} spatial dims`, op);
    return list;
  };
  const hasSize = opts.size !== undefined && opts.size !== null;
  const hasScale = opts.scaleFactor !== undefined && opts.scaleFactor !== null;
  if (hasSize === hasScale) throw new ArgumentError('give exactly one of size and scaleFactor', op);
  if (hasSize) {
    const outSizes = perDim('size', opts.size!);
    if (!outSizes.every((s) => Number.isInteger(s) && s > 0)) throw new ArgumentError(`size must hold positive integers, got ${JSON.stringify(opts.size)}`, op);
    return { outSizes, scales: inSizes.map(() => null) };
  }
  const scales = perDim('scaleFactor', opts.scaleFactor!);
  if (!scales.every((s) => Number.isFinite(s) && s > 0)) throw new ArgumentError(`scaleFactor must hold positive numbers, got ${JSON.stringify(opts.scaleFactor)}`, op);
  const outSizes = inSizes.map((n, i) => Math.floor(n * scales[i]!));
  if (outSizes.some((s) => s <= 0)) throw new ShapeError(`scaleFactor ${JSON.stringify(opts.scaleFactor)} makes an empty output from ${fmtShape(inSizes)}`, op);
  return { outSizes, scales };
}

const int32 = (v: readonly number[]) => tensor(Int32Array.from(v), [v.length], { dtype: 'int32' });

/** torch's compute_scales_value in float32: 1 / scaleFactor when given, else in / out. */
const sourceScale = (n: number, out: number, scale: number | null) => (scale !== null && scale > 0 ? f32(1 / scale) : f32(n / out));

/** torch's nearest_idx / nearest_exact_idx. */
function nearestIndices(n: number, out: number, scale: number | null, exact: boolean): number[] {
  if (out === n && !exact) return Array.from({ length: out }, (_, i) => i);
  if (out === 2 * n && !exact) return Array.from({ length: out }, (_, i) => i >> 1);
  const s = sourceScale(n, out, scale);
  return Array.from({ length: out }, (_, i) => Math.min(Math.floor(f32((exact ? i + 0.5 : i) * s)), n - 1));
}

/** Linear interpolation along one dim (torch's compute_source_index_and_lambda, in the input's precision). */
function linearAlong(x: Tensor, dim: number, n: number, out: number, alignCorners: boolean, scale: number | null): Tensor {
  if (out === n) return x;
  const f32 = x.dtype === 'float64' ? (v: number) => v : Math.fround;
  const ratio = alignCorners ? (out > 1 ? f32((n - 1) / (out - 1)) : 0) : scale !== null && scale > 0 ? f32(1 / scale) : f32(n / out);
  const i0 = new Array<number>(out), i1 = new Array<number>(out);
  const l0 = new Float64Array(out), l1 = new Float64Array(out);
  for (let i = 0; i < out; i++) {
    let src = alignCorners ? f32(ratio * i) : f32(f32(ratio * f32(i + 0.5)) - 0.5);
    if (src < 0) src = 0;
    const lo = Math.trunc(src);
    i0[i] = lo;
    i1[i] = lo + (lo < n - 1 ? 1 : 0);
    l1[i] = Math.min(Math.max(f32(src - lo), 0), 1);
    l0[i] = f32(1 - l1[i]!);
  }
  const shape = x.shape.map((_, d) => (d === dim ? out : 1));
  const w = (v: Float64Array) => tensor(v, shape, { dtype: x.dtype });
  return m.add(m.mul(indexSelect(x, dim, int32(i0)), w(l0)), m.mul(indexSelect(x, dim, int32(i1)), w(l1)));
}

// ---- adaptive pooling ----

/** torch.nn.functional.adaptive_avg_pool2d over [N, C, H, W] or [C, H, W]; null keeps a size. */
export const adaptiveAvgPool2d = publicOp('adaptiveAvgPool2d', function adaptiveAvgPool2d(x: Tensor, outputSize: number | readonly (number | null)[]): Tensor {
  return adaptive('adaptiveAvgPool2d', x, outputSize, 2, 'avg');
});

/** torch.nn.functional.adaptive_avg_pool1d over [N, C, L] or [C, L]. */
export const adaptiveAvgPool1d = publicOp('adaptiveAvgPool1d', function adaptiveAvgPool1d(x: Tensor, outputSize: number): Tensor {
  return adaptive('adaptiveAvgPool1d', x, outputSize, 1, 'avg');
});

/** torch.nn.functional.adaptive_max_pool2d (values only) over [N, C, H, W] or [C, H, W]. */
export const adaptiveMaxPool2d = publicOp('adaptiveMaxPool2d', function adaptiveMaxPool2d(x: Tensor, outputSize: number | readonly (number | null)[]): Tensor {
  return adaptive('adaptiveMaxPool2d', x, outputSize, 2, 'max');
});

function adaptive(op: string, x: Tensor, outputSize: number | readonly (number | null)[], dims: number, kind: 'avg' | 'max'): Tensor {
  expectTensor(op, x, 'input');
  if (x.ndim !== dims + 1 && x.ndim !== dims + 2) {
    throw new ShapeError(`expects input [N, C, ${dims === 2 ? 'H, W' : 'L'}] or [C, ${dims === 2 ? 'H, W' : 'L'}], got ${fmtShape(x.shape)}`, op);
  }
  const spatial = x.shape.slice(x.ndim - dims);
  const list = typeof outputSize === 'number' ? spatial.map(() => outputSize) : [...outputSize];
  if (list.length !== dims) throw new ArgumentError(`outputSize ${JSON.stringify(outputSize)} must have ${dims} entries`, op);
  const sizes = list.map((s, i) => (s === null ? spatial[i]! : s));
  if (!sizes.every((s) => Number.isInteger(s) && s > 0)) throw new ArgumentError(`outputSize must hold positive integers (or null), got ${JSON.stringify(outputSize)}`, op);
  if (x.dtype !== 'float32' && x.dtype !== 'float64') throw new DTypeError(`needs a float input, got ${x.dtype}`, op, 'cast with .float()');
  if (spatial.some((s) => s === 0)) throw new ShapeError(`input ${fmtShape(x.shape)} has an empty spatial dim`, op);
  return adaptivePool(x, sizes, kind);
}

/**
 * Windows [floor(i n / out), ceil((i + 1) n / out)) along each trailing dim. A dim that divides
 * evenly is a reshape and a reduction (fusable); otherwise the windows are gathered padded to the
 * longest one and masked. The mean divides by the window area once, as torch does.
 */
function adaptivePool(x: Tensor, sizes: readonly number[], kind: 'avg' | 'max'): Tensor {
  const first = x.ndim - sizes.length;
  const reduce = (t: Tensor, dim: number) => (kind === 'max' ? amax(t, dim) : sum(t, dim));
  let y = x;
  const counts = sizes.map((out, i) => {
    const dim = first + i, n = x.shape[dim]!;
    const starts = Array.from({ length: out }, (_, j) => Math.floor((j * n) / out));
    const lengths = starts.map((s, j) => Math.ceil(((j + 1) * n) / out) - s);
    const k = Math.max(...lengths);
    if (n % out === 0) {
      y = reduce(reshape(y, [...y.shape.slice(0, dim), out, k, ...y.shape.slice(dim + 1)]), dim + 1);
      return lengths;
    }
    const idx: number[] = [];
    const valid = new Uint8Array(out * k);
    starts.forEach((s, j) => {
      for (let t = 0; t < k; t++) {
        idx.push(Math.min(s + t, n - 1));
        valid[j * k + t] = t < lengths[j]! ? 1 : 0;
      }
    });
    const gathered = reshape(indexSelect(y, dim, int32(idx)), [...y.shape.slice(0, dim), out, k, ...y.shape.slice(dim + 1)]);
    const mask = tensor(valid, gathered.shape.map((s, d) => (d === dim || d === dim + 1 ? s : 1)), { dtype: 'bool' });
    y = reduce(m.where(mask, gathered, kind === 'max' ? -Infinity : 0), dim + 1);
    return lengths;
  });
  if (kind === 'max') return y;
  if (counts.every((c) => c.every((v) => v === c[0]))) return m.div(y, counts.reduce((p, c) => p * c[0]!, 1));
  // the window areas [out_0, out_1, ...] as one constant
  let areas = [1];
  for (const c of counts) areas = areas.flatMap((a) => c.map((v) => a * v));
  return m.div(y, tensor(Float64Array.from(areas), sizes, { dtype: x.dtype }));
}
