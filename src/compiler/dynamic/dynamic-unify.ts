// Unification of the same structure built at several probe sizes (graphs, lowered programs,
// loop kernels) into one template whose varying numbers are symbolic (the inverse,
// specialization at concrete sizes, is the IR's: src/ir/sym-tree.ts).
//
// The sibling fields (`kSym`, `kIota`) follow the convention of src/ir/sym-tree.ts; the number
// left in `k` is the value at the hint sizes (large primes, so that keys built from numbers never
// collide by accident).

import { fitSym, symEval, type Sym } from '../../ir/symbolic.js';
import { isPlain, type Iota } from '../../ir/sym-tree.js';

export class UnifyError extends Error {
  constructor(readonly path: string, readonly why: string) {
    super(`${why} at ${path}`);
  }
}

interface SymLeaf { readonly __sym: Sym }
interface IotaLeaf { readonly __iota: Iota; readonly first: ArrayLike<number> }
const isSymLeaf = (x: unknown): x is SymLeaf => typeof x === 'object' && x !== null && '__sym' in x;
const isIotaLeaf = (x: unknown): x is IotaLeaf => typeof x === 'object' && x !== null && '__iota' in x;

/**
 * One tree from `trees` (the same structure at each probe point of `grid`): numbers that
 * vary become symbolic (sibling fields); anything else that varies throws a UnifyError.
 */
export function unifyTrees<T>(trees: readonly T[], grid: readonly (readonly number[])[], hint: readonly number[], path = '$'): T {
  const raw = unifyRaw(trees as readonly unknown[], grid, path);
  return attach(raw, hint, path) as T;
}

function unifyRaw(xs: readonly unknown[], grid: readonly (readonly number[])[], path: string): unknown {
  const x0 = xs[0];
  if (typeof x0 === 'number') {
    if (xs.every((x) => Object.is(x, x0))) return x0;
    if (!xs.every((x) => typeof x === 'number' && Number.isInteger(x))) throw new UnifyError(path, `value varies with the size but is not an integer (${xs.slice(0, 3).join(', ')}, ...)`);
    const s = fitSym(grid, xs as number[]);
    if (!s) throw new UnifyError(path, `value is not a polynomial in the sizes (${xs.slice(0, 3).join(', ')}, ...)`);
    return { __sym: s } satisfies SymLeaf;
  }
  if (ArrayBuffer.isView(x0)) {
    const arrs = xs as ArrayLike<number>[];
    if (arrs.every((a) => sameData(a, arrs[0]!))) return x0;
    const lens = arrs.map((a) => a.length);
    const length = fitSym(grid, lens);
    const start = arrs[0]![0] ?? 0, step = arrs[0]!.length > 1 ? arrs[0]![1]! - arrs[0]![0]! : 1;
    const iota = length && arrs.every((a) => isIota(a, start, step));
    if (!iota) throw new UnifyError(path, 'constant data depends on the size (not an arange)');
    return { __iota: { start, step, length }, first: arrs[0]! } satisfies IotaLeaf;
  }
  if (Array.isArray(x0)) {
    if (!xs.every((x) => Array.isArray(x) && x.length === x0.length)) throw new UnifyError(path, `array length varies (${xs.map((x) => (x as unknown[]).length).slice(0, 3).join(', ')})`);
    return x0.map((_, i) => unifyRaw(xs.map((x) => (x as unknown[])[i]), grid, `${path}[${i}]`));
  }
  if (isPlain(x0)) {
    const keys = Object.keys(x0);
    for (const x of xs) if (!isPlain(x) || Object.keys(x).length !== keys.length) throw new UnifyError(path, 'object shape varies');
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = unifyRaw(xs.map((x) => (x as Record<string, unknown>)[k]), grid, `${path}.${k}`);
    return out;
  }
  // functions, prims, tensors captured by reference, strings, booleans: must be identical
  if (!xs.every((x) => x === x0)) throw new UnifyError(path, `differs between sizes (${String(x0)} vs ${String(xs.find((x) => x !== x0))})`);
  return x0;
}

function sameData(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

function isIota(a: ArrayLike<number>, start: number, step: number): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== start + i * step) return false;
  return true;
}

/** Replaces leaves by hint numbers plus sibling fields. */
function attach(x: unknown, hint: readonly number[], path: string): unknown {
  if (isSymLeaf(x)) throw new UnifyError(path, 'a size-dependent number outside an object field');
  if (Array.isArray(x)) {
    if (x.some((e) => isSymLeaf(e) || isIotaLeaf(e))) throw new UnifyError(path, 'a size-dependent number in a nested array');
    return x.map((e, i) => attach(e, hint, `${path}[${i}]`));
  }
  if (!isPlain(x) || isIotaLeaf(x)) return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) {
    if (isSymLeaf(v)) {
      out[k] = symEval(v.__sym, hint);
      out[`${k}Sym`] = v.__sym;
    } else if (isIotaLeaf(v)) {
      out[k] = v.first;
      out[`${k}Iota`] = v.__iota;
    } else if (Array.isArray(v) && v.some(isSymLeaf)) {
      out[k] = v.map((e) => (isSymLeaf(e) ? symEval(e.__sym, hint) : attach(e, hint, `${path}.${k}`)));
      out[`${k}Sym`] = v.map((e) => (isSymLeaf(e) ? e.__sym : null));
    } else out[k] = attach(v, hint, `${path}.${k}`);
  }
  return out;
}

/** Deep equality of plain trees (typed arrays by content, other objects by identity). */
export function treesEqual(a: unknown, b: unknown, depth = 0): boolean {
  if (typeof a === 'number' || typeof b === 'number') return Object.is(a, b);
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) return ArrayBuffer.isView(a) && ArrayBuffer.isView(b) && sameData(a as unknown as ArrayLike<number>, b as unknown as ArrayLike<number>);
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => treesEqual(x, b[i], depth + 1));
  if (isPlain(a) && isPlain(b) && depth < 60) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined), kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => treesEqual(a[k], b[k], depth + 1));
  }
  return a === b;
}
