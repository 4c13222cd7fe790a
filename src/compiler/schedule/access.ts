// Index arithmetic of lowering: how an access (one affine per dim, over a kernel's loop vars) of
// a node maps to an access of its input through a broadcast, a view or a reduction, and the
// layout facts that decide whether a buffer can be read by flat index.

import { contiguousStrides } from '../../core/shape.js';
import { isZeroAff, scaleAddAff, addAff, unitAff, zeroAff, type Affine } from '../../ir/affine.js';

/** The identity access of a tensor of this shape, one loop var per dim. */
export function shapeAccess(shape: readonly number[]): Affine[] {
  return shape.map((_, d) => unitAff(shape.length, d));
}

/** Maps an access of a broadcast result back to an operand of shape `from`. */
export function broadcastAccess(acc: readonly Affine[], from: readonly number[], to: readonly number[], nv: number): Affine[] {
  const lead = to.length - from.length;
  return from.map((s, e) => (s === 1 ? zeroAff(nv) : acc[e + lead]!));
}

/** Reshape as index arithmetic when it only splits dims (each parent dim = a run of child dims). */
export function reshapeAccess(acc: readonly Affine[], parent: readonly number[], child: readonly number[], nv: number): Affine[] | null {
  const out: Affine[] = parent.map(() => zeroAff(nv));
  let c = 0;
  for (let p = 0; p < parent.length; p++) {
    if (parent[p] === 1) continue;
    while (c < child.length && child[c] === 1) c++;
    let prod = 1;
    const group: number[] = [];
    while (c < child.length && prod < parent[p]!) {
      if (child[c] !== 1) {
        prod *= child[c]!;
        group.push(c);
      }
      c++;
    }
    if (prod !== parent[p]) return null; // a merge of parent dims: not affine
    let r = zeroAff(nv);
    let stride = 1;
    for (let g = group.length - 1; g >= 0; g--) {
      r = addAff(r, scaleAddAff(acc[group[g]!]!, stride, 0));
      stride *= child[group[g]!]!;
    }
    out[p] = r;
  }
  return out;
}

/** A size-1 dim is always index 0: one canonical access, so equal reads compare equal. */
export function canonical(acc: readonly Affine[], shape: readonly number[], nv: number): readonly Affine[] {
  return shape.some((s, d) => s === 1 && !isZeroAff(acc[d]!)) ? acc.map((a, d) => (shape[d] === 1 ? zeroAff(nv) : a)) : acc;
}

/**
 * The access of a row kernel's outer result (a reduction's value, an epilogue over the kept
 * dims): the kept dims at their loop vars, reduced dims at 0 when kept as size 1.
 */
export function outerAccess(full: readonly number[], reduced: readonly number[], keepdim: boolean, dimsToVar: readonly number[], nv: number): Affine[] {
  if (keepdim) return full.map((_, d) => (reduced.includes(d) ? zeroAff(nv) : unitAff(nv, dimsToVar[d]!)));
  return keptDims(full, reduced).map((d) => unitAff(nv, dimsToVar[d]!));
}

/** The dims of `full` a reduction over `reduced` keeps. */
export function keptDims(full: readonly number[], reduced: readonly number[]): number[] {
  return full.map((_, d) => d).filter((d) => !reduced.includes(d));
}

export function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export function isContiguousLayout(shape: readonly number[], strides: readonly number[]): boolean {
  const cs = contiguousStrides(shape);
  return shape.every((s, d) => s === 1 || strides[d] === cs[d]);
}
