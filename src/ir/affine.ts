// Affine indices of the loop IR: an element offset (or one dim's index) as o + sum_v c[v] * var_v
// over a kernel's loop vars, and the arithmetic lowering and the renderers do on them. An
// "access" is one affine per dim of a tensor (a multi-index); flattening it through a layout's
// strides gives the flat offset a load or store uses.

import type { Sym } from './symbolic.js';

/** o + sum_v c[v] * var_v: a flat element offset (or one dim's index) as a function of the loop vars. */
export interface Affine {
  readonly c: readonly number[];
  readonly o: number;
  /** dynamic kernels: coefficients / offset that depend on sizes */
  readonly cSym?: readonly (Sym | null)[];
  readonly oSym?: Sym;
}

/** var_v over nv loop vars. */
export const unitAff = (nv: number, v: number): Affine => ({ c: Array.from({ length: nv }, (_, i) => (i === v ? 1 : 0)), o: 0 });

/** The constant 0 over nv loop vars. */
export const zeroAff = (nv: number): Affine => ({ c: new Array<number>(nv).fill(0), o: 0 });

/** a * s + o */
export const scaleAddAff = (a: Affine, s: number, o: number): Affine => ({ c: a.c.map((x) => x * s), o: a.o * s + o });

export const addAff = (a: Affine, b: Affine): Affine => ({ c: a.c.map((x, i) => x + b.c[i]!), o: a.o + b.o });

/** The coefficient of var d (0 past the end: a var the index does not mention). */
export const coefAt = (a: Affine, d: number): number => a.c[d] ?? 0;

/** A string equal for equal static affines (the symbolic parts are not part of it). */
export const affKey = (a: Affine): string => `${a.c.join(',')}+${a.o}`;

/** A string equal for equal accesses (multi-indices). */
export const accessKey = (acc: readonly Affine[]): string => acc.map(affKey).join(';');

export const sameAff = (a: Affine, b: Affine): boolean => a.o === b.o && a.c.every((x, i) => x === b.c[i]);

export const isZeroAff = (a: Affine): boolean => a.o === 0 && a.c.every((c) => c === 0);

/** Flat offset into a strided layout for a multi-index access. */
export function flattenAccess(acc: readonly Affine[], strides: readonly number[], offset: number, nv: number): Affine {
  let r: Affine = { c: new Array<number>(nv).fill(0), o: offset };
  acc.forEach((a, d) => (r = addAff(r, scaleAddAff(a, strides[d]!, 0))));
  return r;
}
