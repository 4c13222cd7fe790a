import { ArgumentError, IndexError, ShapeError, fmtShape } from './errors.js';

export type Shape = readonly number[];

export function numel(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function contiguousStrides(shape: Shape): number[] {
  const strides = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i]!;
  }
  return strides;
}

export function isContiguous(shape: Shape, strides: readonly number[]): boolean {
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] !== 1 && strides[i] !== s) return false;
    s *= shape[i]!;
  }
  return true;
}

export function shapesEqual(a: Shape, b: Shape): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** NumPy broadcasting of two shapes; throws a ShapeError naming the op. */
export function broadcastShapes(op: string, a: Shape, b: Shape): number[] {
  const n = Math.max(a.length, b.length);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const da = a[a.length - n + i] ?? 1;
    const db = b[b.length - n + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) {
      throw new ShapeError(
        `shapes ${fmtShape(a)} and ${fmtShape(b)} cannot be broadcast (dim ${i - n}: ${da} vs ${db})`,
        op,
        'sizes must match or be 1 in each trailing dim; reshape or unsqueeze one operand',
      );
    }
    out[i] = da === 1 ? db : da;
  }
  return out;
}

/** Normalizes a possibly negative dim for a tensor of rank `ndim`. */
export function normalizeDim(op: string, dim: number, ndim: number, shape?: Shape): number {
  if (!Number.isInteger(dim)) throw new ArgumentError(`dim must be an integer, got ${String(dim)}`, op);
  const lo = -Math.max(ndim, 1);
  const hi = Math.max(ndim, 1) - 1;
  if (dim < lo || dim > hi) {
    throw new IndexError(
      `dim ${dim} is out of range for a tensor of rank ${ndim}${shape ? ` (shape ${fmtShape(shape)})` : ''}`,
      op,
      `use a dim in [${lo}, ${hi}]`,
    );
  }
  return dim < 0 ? dim + Math.max(ndim, 1) : dim;
}

/** Normalizes an optional dim list; undefined means all dims. */
export function normalizeDims(op: string, dims: number | readonly number[] | undefined, ndim: number, shape?: Shape): number[] {
  if (dims === undefined) return Array.from({ length: ndim }, (_, i) => i);
  const list = typeof dims === 'number' ? [dims] : dims;
  const out = list.map((d) => normalizeDim(op, d, ndim, shape));
  if (new Set(out).size !== out.length) throw new ArgumentError(`dims ${JSON.stringify(list)} repeat a dim`, op);
  return out.sort((x, y) => x - y);
}

/** Resolves a single -1 in a reshape target. */
export function inferReshape(op: string, from: Shape, to: readonly number[]): number[] {
  const total = numel(from);
  let neg = -1;
  let known = 1;
  for (let i = 0; i < to.length; i++) {
    const d = to[i]!;
    if (d === -1) {
      if (neg >= 0) throw new ShapeError(`only one dim may be -1, got ${fmtShape(to)}`, op);
      neg = i;
    } else if (!Number.isInteger(d) || d < 0) {
      throw new ShapeError(`invalid size ${d} in ${fmtShape(to)}`, op, 'sizes are non-negative integers, or -1 once');
    } else known *= d;
  }
  const out = [...to];
  if (neg >= 0) {
    if (known === 0 || total % known !== 0) {
      throw new ShapeError(`cannot reshape ${fmtShape(from)} (${total} elements) to ${fmtShape(to)}`, op);
    }
    out[neg] = total / known;
  }
  if (numel(out) !== total) {
    throw new ShapeError(
      `cannot reshape ${fmtShape(from)} (${total} elements) to ${fmtShape(to)} (${numel(out)} elements)`,
      op,
      'the number of elements must stay the same',
    );
  }
  return out;
}

/**
 * Strides for viewing (shape, strides) as `to` without a copy, or undefined when
 * the memory layout does not allow it (torch's computeStride).
 */
export function viewStrides(shape: Shape, strides: readonly number[], to: Shape): number[] | undefined {
  if (numel(shape) === 0) return contiguousStrides(to);
  const newStrides = new Array<number>(to.length);
  let viewD = to.length - 1;
  let chunkBase = strides[strides.length - 1] ?? 1;
  let tensorNumel = 1;
  let viewNumel = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    tensorNumel *= shape[d]!;
    if (d === 0 || (shape[d - 1] !== 1 && strides[d - 1] !== tensorNumel * chunkBase)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || to[viewD] === 1)) {
        newStrides[viewD] = viewNumel * chunkBase;
        viewNumel *= to[viewD]!;
        viewD--;
      }
      if (viewNumel !== tensorNumel) return undefined;
      if (d > 0) {
        chunkBase = strides[d - 1]!;
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  if (viewD !== -1) {
    // leading size-1 dims of the target
    while (viewD >= 0) {
      if (to[viewD] !== 1) return undefined;
      newStrides[viewD] = 1;
      viewD--;
    }
  }
  return newStrides;
}
