// Sorting and searching: sort, argsort, topk, kthvalue (one argsort primitive, stable, with
// NaN as the largest value as in torch; values are gathered, so their gradient goes to the
// element each came from), bucketize (a comparison and a sum: fusable), and unique, whose output
// size depends on the data: inside kiln.compile it is a reported graph break, as nonzero is.

import { ArgumentError, IndexError, fmtShape } from '../core/errors.js';
import { normalizeDim, numel } from '../core/shape.js';
import { Tensor } from '../tensor/tensor.js';
import { apply, expectTensor, readContiguous, type PrimDef } from './dispatch.js';
import { launchAlongDim } from './along-dim.js';
import * as m from './math.js';
import { gather } from './indexing.js';
import { narrow, reshape, squeeze, unsqueeze } from './movement.js';
import { tensor } from './creation.js';
import { sum, type ValuesIndices } from './reduce.js';
import { asPublicOp, publicOp } from '../core/user-op.js';

interface SortAttrs { readonly dim: number; readonly descending: boolean }

export const argsortPrim: PrimDef<SortAttrs> = {
  name: 'argsort',
  meta: (inputs) => ({ shape: inputs[0]!.shape, dtype: 'int32' }),
  run: (inputs, out, a) => launchAlongDim({ kind: 'sort', dtype: inputs[0]!.dtype, descending: a.descending }, inputs[0]!, out, a.dim),
  saveInputs: false,
  formatAttrs: (a) => `dim=${a.dim}${a.descending ? ', descending' : ''}`,
};

function checkFlag(op: string, name: string, v: unknown): asserts v is boolean {
  if (typeof v !== 'boolean') throw new ArgumentError(`${name} must be true or false, got ${JSON.stringify(v)}`, op);
}

/** Runs `f` along `dim` of x; a 0-d x is treated as [1] (dim 0 or -1) and the results made 0-d again. */
function alongDim<T extends Tensor | ValuesIndices>(op: string, x: Tensor, dim: number, f: (x: Tensor, d: number) => T): T {
  if (x.ndim > 0) return f(x, normalizeDim(op, dim, x.ndim, x.shape));
  normalizeDim(op, dim, 1);
  const r = f(reshape(x, [1]), 0);
  if (r instanceof Tensor) return reshape(r, []) as T;
  return { values: reshape(r.values, []), indices: reshape(r.indices, []) } as T;
}

/** The int32 permutation that sorts x along dim (stable: ties keep their order). */
export const argsort = publicOp('argsort', function argsort(x: Tensor, dim = -1, descending = false, stable = false): Tensor {
  expectTensor('argsort', x, 'x');
  checkFlag('argsort', 'descending', descending);
  checkFlag('argsort', 'stable', stable); // every kiln sort is stable
  return alongDim('argsort', x, dim, (xs, d) => apply(argsortPrim, [xs], { dim: d, descending }));
});

/** x sorted along dim, with the int32 indices of the sorted elements. */
export const sort = publicOp('sort', function sort(x: Tensor, dim = -1, descending = false, stable = false): ValuesIndices {
  expectTensor('sort', x, 'x');
  checkFlag('sort', 'descending', descending);
  checkFlag('sort', 'stable', stable);
  return alongDim('sort', x, dim, (xs, d) => {
    const indices = apply(argsortPrim, [xs], { dim: d, descending });
    return { values: gather(xs, d, indices), indices };
  });
});

function checkK(op: string, k: unknown, lo: number, n: number, x: Tensor, d: number): asserts k is number {
  if (typeof k !== 'number' || !Number.isInteger(k) || k < lo || k > n) {
    throw new IndexError(`k = ${String(k)} is out of range for dim ${d} of size ${n} in ${fmtShape(x.shape)}`, op, `k must be an integer in [${lo}, ${n}]`);
  }
}

/** The k largest (or smallest) elements along dim and their indices, in sorted order. */
export const topk = publicOp('topk', function topk(x: Tensor, k: number, dim = -1, largest = true, sorted = true): ValuesIndices {
  expectTensor('topk', x, 'x');
  checkFlag('topk', 'largest', largest);
  checkFlag('topk', 'sorted', sorted); // always returned sorted (any order is allowed when false)
  return alongDim('topk', x, dim, (xs, d) => {
    checkK('topk', k, 0, xs.shape[d]!, x, d);
    const indices = narrow(apply(argsortPrim, [xs], { dim: d, descending: largest }), d, 0, k);
    return { values: gather(xs, d, indices), indices };
  });
});

/** The k-th smallest element (k from 1) along dim and its index. */
export const kthvalue = publicOp('kthvalue', function kthvalue(x: Tensor, k: number, dim = -1, keepdim = false): ValuesIndices {
  expectTensor('kthvalue', x, 'x');
  checkFlag('kthvalue', 'keepdim', keepdim);
  return alongDim('kthvalue', x, dim, (xs, d) => {
    checkK('kthvalue', k, 1, xs.shape[d]!, x, d);
    const idx = narrow(apply(argsortPrim, [xs], { dim: d, descending: false }), d, k - 1, 1);
    const values = gather(xs, d, idx);
    return keepdim ? { values, indices: idx } : { values: squeeze(values, d), indices: squeeze(idx, d) };
  });
});

/**
 * The bucket of each input value among sorted 1-D `boundaries`: i with b[i-1] < x <= b[i]
 * (right: b[i-1] <= x < b[i]), as int32; NaN falls past the last boundary, as in torch.
 */
export const bucketize = publicOp('bucketize', function bucketize(input: Tensor | number, boundaries: Tensor, opts: { right?: boolean } = {}): Tensor {
  expectTensor('bucketize', boundaries, 'boundaries');
  if (typeof input !== 'number') expectTensor('bucketize', input, 'input');
  if (boundaries.ndim !== 1) throw new ArgumentError(`boundaries must be 1-D, got ${fmtShape(boundaries.shape)}`, 'bucketize');
  const right = opts.right ?? false;
  checkFlag('bucketize', 'right', right);
  const x = typeof input === 'number' ? tensor(input, { dtype: boundaries.dtype }) : input;
  // counts the boundaries b < x (right: b <= x), and every one for a NaN x (an explicit test:
  // comparisons with NaN are not reliable in fast-math C)
  const xs = unsqueeze(x, -1);
  return sum(m.logicalOr(right ? m.le(boundaries, xs) : m.lt(boundaries, xs), m.isnan(xs)), -1);
});

export interface UniqueOptions {
  /** ignored: the values are always sorted (torch leaves the order unspecified when false) */
  sorted?: boolean;
  returnInverse?: boolean;
  returnCounts?: boolean;
  /** unique slices along this dim (default: unique elements of the flattened input) */
  dim?: number;
}

export interface UniqueResult {
  readonly values: Tensor;
  /** int32, for each element (or slice along dim) of the input, its position in values */
  readonly inverse?: Tensor;
  /** int32, how often each value occurs */
  readonly counts?: Tensor;
}

/**
 * The distinct elements (or slices along `dim`) of x in ascending order (NaNs last, each
 * distinct). Reads the data: inside kiln.compile it is a graph break, reported with its location.
 */
export function unique(x: Tensor, opts?: UniqueOptions & { returnInverse?: false; returnCounts?: false }): Tensor;
export function unique(x: Tensor, opts: UniqueOptions): UniqueResult;
export function unique(x: Tensor, opts: UniqueOptions = {}): Tensor | UniqueResult {
  return asPublicOp('unique', () => uniqueOf(x, opts));
}

function uniqueOf(x: Tensor, opts: UniqueOptions): Tensor | UniqueResult {
  expectTensor('unique', x, 'x');
  for (const k of ['sorted', 'returnInverse', 'returnCounts'] as const) if (opts[k] !== undefined) checkFlag('unique', k, opts[k]);
  const dim = opts.dim === undefined ? null : normalizeDim('unique', opts.dim, x.ndim, x.shape);
  const data = readContiguous(x, 'unique (its output size depends on the data)');
  // slices along dim as rows: [before, len, after] -> row j holds x[.., j, ..] in row-major order
  const shape = dim === null ? [numel(x.shape)] : x.shape;
  const d = dim ?? 0;
  const len = shape[d]!, before = numel(shape.slice(0, d)), after = numel(shape.slice(d + 1));
  const row = (j: number): number[] => {
    const r: number[] = [];
    for (let b = 0; b < before; b++) for (let a = 0; a < after; a++) r.push(data[(b * len + j) * after + a]!);
    return r;
  };
  const rows = Array.from({ length: len }, (_, j) => row(j));
  const order = rows.map((_, j) => j).sort((i, j) => compareRows(rows[i]!, rows[j]!));
  const firstOf: number[] = []; // the row standing for each unique value
  const inverse = new Int32Array(len);
  const counts: number[] = [];
  for (const j of order) {
    const last = firstOf[firstOf.length - 1];
    if (last === undefined || !sameRow(rows[last]!, rows[j]!)) {
      firstOf.push(j);
      counts.push(0);
    }
    inverse[j] = firstOf.length - 1;
    counts[counts.length - 1]!++;
  }
  const n = firstOf.length;
  const outShape = [...shape];
  outShape[d] = n;
  const out = new Array<number>(numel(outShape));
  firstOf.forEach((j, u) => rows[j]!.forEach((v, k) => (out[(Math.floor(k / after) * n + u) * after + (k % after)] = v)));
  const values = tensor(out, outShape, { dtype: x.dtype });
  if (!opts.returnInverse && !opts.returnCounts) return values;
  const result: { values: Tensor; inverse?: Tensor; counts?: Tensor } = { values };
  if (opts.returnInverse) result.inverse = tensor(inverse, dim === null ? x.shape : [len], { dtype: 'int32' });
  if (opts.returnCounts) result.counts = tensor(Int32Array.from(counts), [n], { dtype: 'int32' });
  return result;
}

/** Lexicographic order of two rows, NaN after every number. */
function compareRows(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!, y = b[i]!;
    if (x < y) return -1;
    if (x > y) return 1;
    const xn = x !== x, yn = y !== y;
    if (xn !== yn) return xn ? 1 : -1;
  }
  return 0;
}

/** Equal rows (NaN equals nothing, as in torch: each NaN is its own value). */
function sameRow(a: readonly number[], b: readonly number[]): boolean {
  return a.every((v, i) => v === b[i]);
}
