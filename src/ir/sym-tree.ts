// Symbolic trees: an IR structure (graph, lowered program, loop kernel) whose size-dependent
// numbers carry their symbolic form in sibling fields, and its specialization at concrete sizes.
//
// Convention (kept by the loop IR's optional fields): a plain object's number field `k` that
// varies gets a sibling `kSym` (a Sym); an array of numbers `k` gets `kSym`, an array of
// (Sym | null); a typed array that varies as an arithmetic sequence (arange data) gets `kIota`.
// The number left in `k` is the value at the hint sizes. Templates are made by unification
// (src/compiler/dynamic/dynamic-unify.ts).

import { symEval, type Sym } from './symbolic.js';

/** A typed array's contents as an arithmetic sequence: start + i * step for i < length. */
export interface Iota {
  readonly start: number;
  readonly step: number;
  readonly length: Sym;
}

/** The name of a sibling field (`kSym`, `kIota`). */
export const SYM_SUFFIX = /(Sym|Iota)$/;

export const isPlain = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x) && !ArrayBuffer.isView(x) && Object.getPrototypeOf(x) === Object.prototype;

/** The template at concrete sizes: sibling fields evaluated and dropped (static structure again). */
export function specializeTree<T>(x: T, values: readonly number[]): T {
  return spec(x, values) as T;
}

function spec(x: unknown, values: readonly number[]): unknown {
  if (Array.isArray(x)) return x.map((e) => spec(e, values));
  if (!isPlain(x)) return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) {
    if (SYM_SUFFIX.test(k) && k.replace(SYM_SUFFIX, '') in x) continue;
    const s = x[`${k}Sym`];
    const iota = x[`${k}Iota`] as Iota | undefined;
    if (iota) {
      const n = symEval(iota.length, values);
      const T = (v as { constructor: new (n: number) => { [i: number]: number } }).constructor;
      const d = new T(n);
      for (let i = 0; i < n; i++) d[i] = iota.start + i * iota.step;
      out[k] = d;
    } else if (s !== undefined && s !== null) {
      out[k] = Array.isArray(s) ? (v as number[]).map((e, i) => (s[i] ? symEval(s[i] as Sym, values) : e)) : symEval(s as Sym, values);
    } else out[k] = spec(v, values);
  }
  return out;
}
