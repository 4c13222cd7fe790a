// Reordering and repeating elements: flip (a reversed view, copied as torch copies), roll (two
// slices concatenated), repeat / tile / repeatInterleave (expanded views copied: fusable).
// Gradients come from the views, the copies and cat.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import { normalizeDim, numel } from '../core/shape.js';
import { Tensor } from '../tensor/tensor.js';
import { apply, expectTensor, readContiguous } from './dispatch.js';
import { cat, expand, reshape, slicePrim, slice } from './movement.js';
import { copy } from './pointwise.js';
import { tensor } from './creation.js';
import { indexSelect } from './indexing.js';
import { publicOp } from '../core/user-op.js';

function intList(op: string, name: string, v: unknown): number[] {
  const list = typeof v === 'number' ? [v] : v;
  if (!Array.isArray(list) || !list.every((d) => Number.isInteger(d))) throw new ArgumentError(`${name} must be an integer or an array of integers, got ${JSON.stringify(v)}`, op);
  return list as number[];
}

/** x with the order of elements reversed along each of `dims` (a copy, as torch.flip). */
export const flip = publicOp('flip', function flip(x: Tensor, dims: number | readonly number[]): Tensor {
  expectTensor('flip', x, 'x');
  const ds = intList('flip', 'dims', dims).map((d) => normalizeDim('flip', d, x.ndim, x.shape));
  if (new Set(ds).size !== ds.length) throw new ArgumentError(`dims ${JSON.stringify(dims)} repeat a dim`, 'flip');
  let v = x;
  for (const d of ds) {
    const n = x.shape[d]!;
    // a slice with step -1: a view with a negative stride, which every backend indexes affinely
    if (n > 1) v = apply(slicePrim, [v], { dim: d, start: n - 1, end: -1, step: -1 });
  }
  return copy(v);
});

/** x shifted by `shifts` along `dims`, elements wrapping around (no dims: over the flattened x). */
export const roll = publicOp('roll', function roll(x: Tensor, shifts: number | readonly number[], dims?: number | readonly number[]): Tensor {
  expectTensor('roll', x, 'x');
  const ss = intList('roll', 'shifts', shifts);
  if (dims === undefined) {
    if (ss.length !== 1) throw new ArgumentError(`${ss.length} shifts need as many dims`, 'roll', 'pass dims, one per shift');
    return reshape(roll(reshape(x, [numel(x.shape)]), ss, [0]), x.shape);
  }
  const ds = intList('roll', 'dims', dims).map((d) => normalizeDim('roll', d, x.ndim, x.shape));
  if (ds.length !== ss.length) throw new ArgumentError(`shifts ${JSON.stringify(shifts)} and dims ${JSON.stringify(dims)} must have the same length`, 'roll');
  let r = x;
  ds.forEach((d, i) => {
    const n = x.shape[d]!;
    const s = n === 0 ? 0 : ((ss[i]! % n) + n) % n;
    if (s !== 0) r = cat([slice(r, d, n - s, n), slice(r, d, 0, n - s)], d);
  });
  return r === x ? copy(x) : r;
});

/** x repeated sizes[d] times along each dim (sizes may add leading dims), as torch's Tensor.repeat. */
export const repeat = publicOp('repeat', function repeat(x: Tensor, sizes: readonly number[]): Tensor {
  expectTensor('repeat', x, 'x');
  const reps = intList('repeat', 'sizes', sizes);
  if (reps.some((r) => r < 0)) throw new ArgumentError(`sizes ${JSON.stringify(sizes)} must be non-negative`, 'repeat');
  if (reps.length < x.ndim) {
    throw new ShapeError(`${reps.length} repeat sizes for a tensor of ${x.ndim} dims ${fmtShape(x.shape)}`, 'repeat', 'give one size per dim (leading extra sizes add dims); kiln.tile pads with 1s');
  }
  const shape = [...new Array<number>(reps.length - x.ndim).fill(1), ...x.shape];
  // [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...], then merged pairwise
  const spread = reshape(x, shape.flatMap((s) => [1, s]));
  const expanded = expand(spread, shape.flatMap((s, i) => [reps[i]!, s]));
  const r = reshape(expanded, shape.map((s, i) => s * reps[i]!));
  return reps.every((k) => k === 1) ? copy(r) : r; // a copy, never a view of x (as torch)
});

/** torch.tile: repeat, with missing leading sizes taken as 1. */
export const tile = publicOp('tile', function tile(x: Tensor, dims: readonly number[]): Tensor {
  expectTensor('tile', x, 'x');
  const reps = intList('tile', 'dims', dims);
  return repeat(x, [...new Array<number>(Math.max(x.ndim - reps.length, 0)).fill(1), ...reps]);
});

/**
 * Each element (slice along dim) repeated `repeats` times, in place (no dim: of the flattened x).
 * repeats: a number, a list of counts, or a 1-D int32 tensor of counts (whose values set the
 * output size: inside kiln.compile that read is a graph break).
 */
export const repeatInterleave = publicOp('repeatInterleave', function repeatInterleave(x: Tensor, repeats: number | readonly number[] | Tensor, dim?: number): Tensor {
  expectTensor('repeatInterleave', x, 'x');
  const src = dim === undefined ? reshape(x, [numel(x.shape)]) : x;
  const d = dim === undefined ? 0 : normalizeDim('repeatInterleave', dim, x.ndim, x.shape);
  const n = src.shape[d]!;
  if (typeof repeats === 'number') {
    if (!Number.isInteger(repeats) || repeats < 0) throw new ArgumentError(`repeats must be a non-negative integer, got ${repeats}`, 'repeatInterleave');
    const spread = reshape(src, [...src.shape.slice(0, d + 1), 1, ...src.shape.slice(d + 1)]);
    const expanded = expand(spread, [...src.shape.slice(0, d + 1), repeats, ...src.shape.slice(d + 1)]);
    const r = reshape(expanded, src.shape.map((s, i) => (i === d ? s * repeats : s)));
    return repeats === 1 ? copy(r) : r;
  }
  let counts: number[];
  if (repeats instanceof Tensor) {
    if (repeats.dtype !== 'int32' || repeats.ndim > 1) throw new ArgumentError(`repeats must be an int32 tensor of at most 1 dim, got ${repeats.dtype}${fmtShape(repeats.shape)}`, 'repeatInterleave', 'cast with .int()');
    counts = Array.from(readContiguous(repeats, 'repeatInterleave (its output size depends on the repeats tensor)'));
  } else counts = intList('repeatInterleave', 'repeats', repeats);
  if (counts.length === 1) counts = new Array<number>(n).fill(counts[0]!);
  if (counts.length !== n) throw new ShapeError(`${counts.length} repeat counts for dim ${d} of size ${n}`, 'repeatInterleave', 'give one count per element along dim (or a single count)');
  if (counts.some((c) => c < 0)) throw new ArgumentError(`repeat counts must be non-negative, got ${JSON.stringify(counts)}`, 'repeatInterleave');
  const index = counts.flatMap((c, i) => new Array<number>(c).fill(i));
  return indexSelect(src, d, tensor(Int32Array.from(index), [index.length], { dtype: 'int32' }));
});
