// Symbolic sizes (issue 7): integer polynomials over size symbols (s0, s1, ...) in one
// canonical form, a sum of integer-weighted products of symbols, so equal expressions print
// and compare equal (`768*s0`, `12*s0^2`, `s0*s1 + 4`). Enough for shapes, strides, numel and
// affine coefficients; sizes never need division here (a value that would is kept static).

/** A monomial: symbol indices in ascending order, with repetition (s0*s0 = [0, 0]). */
type Mono = readonly number[];

export interface Sym {
  /** terms sorted by monomial; coefficients non-zero; the constant term has monomial [] */
  readonly terms: readonly (readonly [coef: number, mono: Mono])[];
}

const monoKey = (m: Mono): string => m.join('.');

function cmpMono(a: Mono, b: Mono): number {
  if (a.length !== b.length) return b.length - a.length; // higher degree first
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

function make(terms: Iterable<readonly [number, Mono]>): Sym {
  const acc = new Map<string, [number, Mono]>();
  for (const [c, m] of terms) {
    if (c === 0) continue;
    const k = monoKey(m);
    const hit = acc.get(k);
    if (hit) hit[0] += c;
    else acc.set(k, [c, m]);
  }
  return { terms: [...acc.values()].filter(([c]) => c !== 0).sort((a, b) => cmpMono(a[1], b[1])) };
}

export const symConst = (c: number): Sym => make([[c, []]]);
export const symVar = (i: number): Sym => make([[1, [i]]]);

export function symAdd(a: Sym, b: Sym): Sym {
  return make([...a.terms, ...b.terms]);
}

export function symMul(a: Sym, b: Sym): Sym {
  const out: [number, Mono][] = [];
  for (const [ca, ma] of a.terms) for (const [cb, mb] of b.terms) out.push([ca * cb, [...ma, ...mb].sort((x, y) => x - y)]);
  return make(out);
}

export const symScale = (a: Sym, k: number): Sym => make(a.terms.map(([c, m]) => [c * k, m] as const));

export function symIsConst(a: Sym): boolean {
  return a.terms.every(([, m]) => m.length === 0);
}

export function symKey(a: Sym): string {
  return a.terms.map(([c, m]) => `${c}:${monoKey(m)}`).join('|') || '0';
}

/** The value at concrete sizes (`values[i]` is symbol i). */
export function symEval(a: Sym, values: readonly number[]): number {
  let r = 0;
  for (const [c, m] of a.terms) {
    let p = c;
    for (const i of m) p *= values[i]!;
    r += p;
  }
  return r;
}

/** Readable form, torch-style: `768*s0`, `s0^2 + 3`. */
export function symToString(a: Sym, names: (i: number) => string = (i) => `s${i}`, pow = true): string {
  if (a.terms.length === 0) return '0';
  const parts = a.terms.map(([c, m]) => {
    const factors: string[] = [];
    for (let i = 0; i < m.length; ) {
      let j = i;
      while (j < m.length && m[j] === m[i]) j++;
      const n = j - i;
      factors.push(n > 1 && pow ? `${names(m[i]!)}^${n}` : Array.from({ length: n }, () => names(m[i]!)).join('*'));
      i = j;
    }
    if (factors.length === 0) return String(c);
    const body = factors.join('*');
    return c === 1 ? body : c === -1 ? `-${body}` : `${c}*${body}`;
  });
  return parts.join(' + ').replace(/\+ -/g, '- ');
}

/** A JavaScript/C expression (products spelled out, no `^`). */
export function symToCode(a: Sym, names: (i: number) => string): string {
  return `(${symToString(a, names, false)})`;
}

// ---- fitting: the polynomial that takes given values at probe points ----

/**
 * Probe points for k symbols: a tensor grid of `deg + 1` values per symbol, so every
 * polynomial of degree <= deg in each symbol is determined by its values there.
 */
export function probeGrid(values: readonly (readonly number[])[]): number[][] {
  let pts: number[][] = [[]];
  for (const vs of values) pts = pts.flatMap((p) => vs.map((v) => [...p, v]));
  return pts;
}

/**
 * The integer polynomial with per-symbol degree <= values[i].length - 1 that takes `ys` on
 * probeGrid(values), or null when there is none with integer coefficients (e.g. 768 / s0).
 */
export function fitSym(values: readonly (readonly number[])[], ys: readonly number[]): Sym | null {
  const k = values.length;
  // coefficients of the tensor-product monomial basis, solved one axis at a time
  let coef: number[] = [...ys];
  const dims = values.map((v) => v.length);
  let stride = 1;
  for (let ax = k - 1; ax >= 0; ax--) {
    const xs = values[ax]!;
    const inv = vandermondeInverse(xs);
    const n = xs.length;
    const next = new Array<number>(coef.length).fill(0);
    const block = stride * n;
    for (let base = 0; base < coef.length; base += block) {
      for (let s = 0; s < stride; s++) {
        for (let p = 0; p < n; p++) {
          let acc = 0;
          for (let q = 0; q < n; q++) acc += inv[p]![q]! * coef[base + q * stride + s]!;
          next[base + p * stride + s] = acc;
        }
      }
    }
    coef = next;
    stride *= n;
  }
  const terms: [number, number[]][] = [];
  for (let idx = 0; idx < coef.length; idx++) {
    const c = Math.round(coef[idx]!);
    if (Math.abs(c - coef[idx]!) > 1e-6 * Math.max(1, Math.abs(c))) return null;
    let rem = idx;
    const mono: number[] = [];
    for (let ax = k - 1; ax >= 0; ax--) {
      const p = rem % dims[ax]!;
      rem = Math.floor(rem / dims[ax]!);
      for (let e = 0; e < p; e++) mono.push(ax);
    }
    terms.push([c, mono.sort((a, b) => a - b)]);
  }
  const s = make(terms);
  // exact on every probe point, or not a fit
  const pts = probeGrid(values);
  return pts.every((pt, i) => symEval(s, pt) === ys[i]) ? s : null;
}

/** inv[p][q]: coefficient of x^p from the value at xs[q]. */
function vandermondeInverse(xs: readonly number[]): number[][] {
  const n = xs.length;
  const a = xs.map((x) => [...Array.from({ length: n }, (_, p) => x ** p), ...Array.from({ length: n }, (_, j) => 0)]);
  xs.forEach((_, i) => (a[i]![n + i] = 1));
  for (let c = 0; c < n; c++) {
    let piv = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(a[r]![c]!) > Math.abs(a[piv]![c]!)) piv = r;
    [a[c], a[piv]] = [a[piv]!, a[c]!];
    const d = a[c]![c]!;
    for (let j = 0; j < 2 * n; j++) a[c]![j]! /= d;
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = a[r]![c]!;
      if (f !== 0) for (let j = 0; j < 2 * n; j++) a[r]![j]! -= f * a[c]![j]!;
    }
  }
  // rows of a's right half map values to coefficients: coef = A^-1 y, A[q][p] = xs[q]^p
  return Array.from({ length: n }, (_, p) => Array.from({ length: n }, (_, q) => a[p]![n + q]!));
}
