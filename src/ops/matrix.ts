// Diagonals and grids: diag (a diagonal out of a matrix by gather, or a vector onto one),
// trace, meshgrid (expanded views, as torch's).

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { expectTensor } from './dispatch.js';
import * as m from './math.js';
import { arange } from './creation.js';
import { gather } from './indexing.js';
import { expand, narrow, pad, reshape } from './movement.js';
import { sum } from './reduce.js';
import { asPublicOp, publicOp } from '../core/user-op.js';
import { checkEnum } from '../core/enum-arg.js';

function checkDiagonal(op: string, k: unknown): asserts k is number {
  if (typeof k !== 'number' || !Number.isInteger(k)) throw new ArgumentError(`diagonal must be an integer, got ${String(k)}`, op);
}

/**
 * torch.diag: of a 2-D x, its k-th diagonal (k > 0 above the main one) as a 1-D tensor; of a
 * 1-D x, the square matrix with x on its k-th diagonal and zeros elsewhere.
 */
export const diag = publicOp('diag', function diag(x: Tensor, diagonal = 0): Tensor {
  expectTensor('diag', x, 'x');
  checkDiagonal('diag', diagonal);
  if (x.ndim === 2) return diagonalOf(x, diagonal);
  if (x.ndim !== 1) throw new ShapeError(`expects a 1-D or 2-D tensor, got ${fmtShape(x.shape)}`, 'diag');
  const n = x.shape[0]!;
  const idx = arange(n);
  const square = m.where(m.eq(reshape(idx, [n, 1]), reshape(idx, [1, n])), reshape(x, [1, n]), 0);
  const k = Math.abs(diagonal);
  if (k === 0) return square;
  // above the main diagonal: k zero columns on the left and k zero rows below; below it, the mirror
  return pad(square, diagonal > 0 ? [k, 0, 0, k] : [0, k, k, 0], 0);
});

/** The k-th diagonal of a matrix: element i is x[i, i + k] (k >= 0) or x[i - k, i]. */
function diagonalOf(x: Tensor, k: number): Tensor {
  const [rows, cols] = x.shape as [number, number];
  const len = Math.max(0, k >= 0 ? Math.min(rows, cols - k) : Math.min(rows + k, cols));
  const firstRow = k >= 0 ? 0 : -k;
  const picked = narrow(x, 0, Math.min(firstRow, rows), len);
  const columns = m.add(arange(len), Math.max(k, 0));
  return reshape(gather(picked, 1, reshape(columns, [len, 1])), [len]);
}

/** The sum of the main diagonal of a 2-D tensor. */
export const trace = publicOp('trace', function trace(x: Tensor): Tensor {
  expectTensor('trace', x, 'x');
  if (x.ndim !== 2) throw new ShapeError(`expects a 2-D tensor, got ${fmtShape(x.shape)}`, 'trace');
  return sum(diagonalOf(x, 0));
});

export interface MeshgridOptions {
  /** 'ij' (matrix indexing, torch's default) or 'xy' (Cartesian: the first two outputs' dims swapped) */
  indexing?: 'ij' | 'xy';
}

/**
 * Coordinate grids from 0-d / 1-D tensors: output i holds tensors[i] along its own dim, broadcast
 * over the others (views). Called as meshgrid(a, b, ...) or meshgrid([a, b], { indexing }).
 */
export function meshgrid(tensors: readonly Tensor[], opts?: MeshgridOptions): Tensor[];
export function meshgrid(...tensors: Tensor[]): Tensor[];
export function meshgrid(...args: unknown[]): Tensor[] {
  return asPublicOp('meshgrid', () => meshgridOf(args));
}

function meshgridOf(args: readonly unknown[]): Tensor[] {
  const list = (Array.isArray(args[0]) ? args[0] : args) as unknown[];
  const opts = (Array.isArray(args[0]) ? args[1] : undefined) as MeshgridOptions | undefined;
  list.forEach((t, i) => expectTensor('meshgrid', t, `tensors[${i}]`));
  const ts = list as Tensor[];
  const indexing = opts?.indexing ?? 'ij';
  checkEnum('meshgrid', 'indexing', indexing, ['ij', 'xy']);
  if (ts.length === 0) throw new ArgumentError('expects at least one tensor', 'meshgrid');
  ts.forEach((t, i) => {
    if (t.ndim > 1) throw new ShapeError(`tensors[${i}] must be 0-d or 1-D, got ${fmtShape(t.shape)}`, 'meshgrid');
  });
  // 'xy' is 'ij' with the first two inputs' dims exchanged
  const dimOf = ts.map((_, i) => (indexing === 'xy' && ts.length >= 2 && i < 2 ? 1 - i : i));
  const shape = new Array<number>(ts.length);
  ts.forEach((t, i) => (shape[dimOf[i]!] = t.size));
  return ts.map((t, i) => expand(reshape(t, shape.map((s, d) => (d === dimOf[i] ? s : 1))), shape));
}
