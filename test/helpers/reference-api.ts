// Float64 references for the ops of docs/torch-api.md (math, activations, tensor ops, losses):
// plain loops over reference.ts's ND arrays, written from torch's documented definitions.
// Nothing here calls kiln.

import * as R from './reference.js';
import type { ND } from './reference.js';

const { nd, unravel, ravel, numel } = R;

const normDim = (dim: number, ndim: number): number => (dim < 0 ? dim + Math.max(ndim, 1) : dim);
const at = (x: ND, idx: readonly number[]): number => x.data[ravel(idx, x.shape)]!;

/** An array of `shape` whose element at each multi-index is f(index). */
export function build(shape: readonly number[], f: (idx: number[]) => number): ND {
  const out = nd(shape);
  for (let i = 0; i < out.data.length; i++) out.data[i] = f(unravel(i, shape));
  return out;
}

// ---- math ----

export const sign = (v: number): number => (v > 0 ? 1 : v < 0 ? -1 : 0);
export const fmod = (a: number, b: number): number => a % b;
export function remainder(a: number, b: number): number {
  const r = a % b;
  return r !== 0 && r < 0 !== b < 0 ? r + b : r;
}
export const lerp = (s: number, e: number, w: number): number => (Math.abs(w) < 0.5 ? s + w * (e - s) : e - (e - s) * (1 - w));

// ---- activations (torch.nn.functional definitions) ----

const SELU_ALPHA = 1.6732632423543772848170429916717;
const SELU_SCALE = 1.0507009873554804934193349852946;
export const elu = (x: number, alpha = 1): number => (x > 0 ? x : alpha * Math.expm1(x));
export const selu = (x: number): number => SELU_SCALE * (x > 0 ? x : SELU_ALPHA * Math.expm1(x));
export const celu = (x: number, alpha = 1): number => Math.max(0, x) + Math.min(0, alpha * Math.expm1(x / alpha));
export const hardtanh = (x: number, lo = -1, hi = 1): number => Math.min(Math.max(x, lo), hi);
export const relu6 = (x: number): number => hardtanh(x, 0, 6);
export const hardsigmoid = (x: number): number => relu6(x + 3) / 6;
export const hardswish = (x: number): number => (x * relu6(x + 3)) / 6;
export const mish = (x: number): number => x * Math.tanh(Math.log1p(Math.exp(x)));
export const logsigmoid = (x: number): number => Math.min(x, 0) - Math.log1p(Math.exp(-Math.abs(x)));
export const leakyRelu = (x: number, slope = 0.01): number => (x > 0 ? x : slope * x);

export function prelu(x: ND, w: ND): ND {
  return build(x.shape, (idx) => {
    const v = at(x, idx);
    const slope = w.data.length === 1 ? w.data[0]! : w.data[idx[1]!]!;
    return v > 0 ? v : slope * v;
  });
}

export function glu(x: ND, dim = -1): ND {
  const d = normDim(dim, x.shape.length);
  const half = x.shape[d]! / 2;
  const a = R.sliceDim(x, d, 0, half), b = R.sliceDim(x, d, half);
  return R.zip(a, b, (p, q) => p * R.sigmoid(q));
}

// ---- reordering ----

export function flip(x: ND, dims: readonly number[]): ND {
  const ds = dims.map((d) => normDim(d, x.shape.length));
  return build(x.shape, (idx) => at(x, idx.map((i, d) => (ds.includes(d) ? x.shape[d]! - 1 - i : i))));
}

export function roll(x: ND, shifts: readonly number[], dims?: readonly number[]): ND {
  if (!dims) {
    const n = x.data.length;
    return nd(x.shape, Array.from({ length: n }, (_, i) => x.data[(((i - shifts[0]!) % n) + n) % n]!));
  }
  const ds = dims.map((d) => normDim(d, x.shape.length));
  return build(x.shape, (idx) => at(x, idx.map((i, d) => {
    const k = ds.indexOf(d);
    if (k < 0) return i;
    const n = x.shape[d]!;
    return (((i - shifts[k]!) % n) + n) % n;
  })));
}

export function repeat(x: ND, reps: readonly number[]): ND {
  const shape = [...new Array<number>(reps.length - x.shape.length).fill(1), ...x.shape];
  const src = R.reshape(x, shape);
  return build(shape.map((s, d) => s * reps[d]!), (idx) => at(src, idx.map((i, d) => i % shape[d]!)));
}

export function repeatInterleave(x: ND, counts: number | readonly number[], dim?: number): ND {
  const src = dim === undefined ? R.reshape(x, [x.data.length]) : x;
  const d = dim === undefined ? 0 : normDim(dim, x.shape.length);
  const n = src.shape[d]!;
  const cs = typeof counts === 'number' ? new Array<number>(n).fill(counts) : counts;
  const pick = cs.flatMap((c, i) => new Array<number>(c).fill(i));
  return R.takeAlong(src, d, pick);
}

// ---- sorting, scans ----

/** Ascending, NaN last, stable (the index order of ties is kept). */
function orderOf(line: readonly number[], descending: boolean): number[] {
  const key = (v: number) => (Number.isNaN(v) ? Infinity : v);
  const cmp = (i: number, j: number) => {
    const a = line[i]!, b = line[j]!;
    const an = Number.isNaN(a), bn = Number.isNaN(b);
    if (an || bn) return an === bn ? i - j : (an ? 1 : -1) * (descending ? -1 : 1);
    return (descending ? key(b) - key(a) : key(a) - key(b)) || i - j;
  };
  return line.map((_, i) => i).sort(cmp);
}

export function sort(x: ND, dim = -1, descending = false): { values: ND; indices: ND } {
  const values = R.alongDim(x, dim, (v) => orderOf(v, descending).map((i) => v[i]!));
  const indices = R.alongDim(x, dim, (v) => orderOf(v, descending));
  return { values, indices };
}

/** The first k of each sorted line along dim. */
export function topk(x: ND, k: number, dim = -1, largest = true): { values: ND; indices: ND } {
  const s = sort(x, dim, largest);
  const d = normDim(dim, x.shape.length);
  return { values: R.sliceDim(s.values, d, 0, k), indices: R.sliceDim(s.indices, d, 0, k) };
}

export function kthvalue(x: ND, k: number, dim = -1, keepdim = false): { values: ND; indices: ND } {
  const d = normDim(dim, x.shape.length);
  const s = sort(x, d, false);
  const pick = (t: ND) => {
    const r = R.sliceDim(t, d, k - 1, k);
    return keepdim ? r : R.reshape(r, x.shape.filter((_, i) => i !== d));
  };
  return { values: pick(s.values), indices: pick(s.indices) };
}

/** torch.max(x, dim): the first maximum's value and index. */
export function maxDim(x: ND, dim: number, keepdim = false, min = false): { values: ND; indices: ND } {
  const better = (a: number, b: number) => (Number.isNaN(a) && !Number.isNaN(b)) || (min ? a < b : a > b);
  const indices = R.argExtreme(x, dim, keepdim, better);
  const values = min ? R.amin(x, dim, keepdim) : R.amax(x, dim, keepdim);
  return { values, indices };
}

export const cumprod = (x: ND, dim: number): ND =>
  R.alongDim(x, dim, (v) => {
    let acc = 1;
    return v.map((a) => (acc *= a));
  });

/** cummax / cummin: values and the index of the latest element equal to the running extreme. */
export function cumExtreme(x: ND, dim: number, min = false): { values: ND; indices: ND } {
  const run = (v: number[]) => {
    let best = NaN, at = 0;
    return v.map((a, i) => {
      if (i === 0 || Number.isNaN(a) || (!Number.isNaN(best) && (min ? a <= best : a >= best))) {
        best = a;
        at = i;
      }
      return [best, at] as const;
    });
  };
  return { values: R.alongDim(x, dim, (v) => run(v).map((p) => p[0])), indices: R.alongDim(x, dim, (v) => run(v).map((p) => p[1])) };
}

export function bucketize(x: ND, boundaries: ND, right = false): ND {
  const b = [...boundaries.data];
  return R.map(x, (v) => (Number.isNaN(v) ? b.length : b.filter((e) => (right ? e <= v : e < v)).length));
}

/** Sorted distinct values (NaNs last, each its own), inverse indices and counts. */
export function unique(x: ND): { values: ND; inverse: ND; counts: ND } {
  const vals = [...x.data];
  const distinct = [...new Set(vals.filter((v) => !Number.isNaN(v)))].sort((a, b) => a - b);
  const nans = vals.filter((v) => Number.isNaN(v)).length;
  const all = [...distinct, ...new Array<number>(nans).fill(NaN)];
  let nanSeen = 0;
  const inverse = vals.map((v) => (Number.isNaN(v) ? distinct.length + nanSeen++ : distinct.indexOf(v)));
  const counts = all.map((v, i) => (Number.isNaN(v) ? 1 : vals.filter((u) => u === distinct[i]).length));
  return { values: nd([all.length], all), inverse: nd(x.shape, inverse), counts: nd([all.length], counts) };
}

// ---- norms and distances ----

export function vectorNorm(x: ND, p: number, dims?: number | readonly number[], keepdim = false): ND {
  return R.reduceDims(x, dims, keepdim, (v) => {
    const a = v.map(Math.abs);
    if (p === Infinity) return Math.max(...a);
    if (p === -Infinity) return Math.min(...a);
    if (p === 0) return a.filter((e) => e !== 0).length;
    return a.reduce((s, e) => s + e ** p, 0) ** (1 / p);
  });
}

export function normalize(x: ND, p = 2, dim = 1, eps = 1e-12): ND {
  const n = vectorNorm(x, p, dim, true);
  return R.zip(x, n, (v, q) => v / Math.max(q, eps));
}

export function cosineSimilarity(a0: ND, b0: ND, dim = 1, eps = 1e-8): ND {
  const shape = R.broadcastShape(a0.shape, b0.shape)!;
  const a = R.expandTo(a0, shape), b = R.expandTo(b0, shape);
  const na = vectorNorm(a, 2, dim, true), nb = vectorNorm(b, 2, dim, true);
  const prod = R.zipN([a, na, b, nb], (x, p, y, q) => (x / Math.max(p, eps)) * (y / Math.max(q, eps)));
  return R.sum(prod, dim);
}

export function cdist(x1: ND, x2: ND, p = 2): ND {
  const P = x1.shape[x1.shape.length - 2]!, M = x1.shape[x1.shape.length - 1]!, Q = x2.shape[x2.shape.length - 2]!;
  const batch = R.broadcastShape(x1.shape.slice(0, -2), x2.shape.slice(0, -2))!;
  const a = R.expandTo(x1, [...batch, P, M]), b = R.expandTo(x2, [...batch, Q, M]);
  return build([...batch, P, Q], (idx) => {
    const bi = idx.slice(0, -2), i = idx[idx.length - 2]!, j = idx[idx.length - 1]!;
    const diff = Array.from({ length: M }, (_, k) => at(a, [...bi, i, k]) - at(b, [...bi, j, k]));
    return vectorNorm(nd([M], diff), p).data[0]!;
  });
}

// ---- matrices ----

export function diag(x: ND, k = 0): ND {
  if (x.shape.length === 1) {
    const n = x.shape[0]! + Math.abs(k);
    return build([n, n], ([i, j]) => (j! - i! === k ? x.data[Math.min(i!, j!)]! : 0));
  }
  const [rows, cols] = x.shape as [number, number];
  const out: number[] = [];
  for (let i = 0; i < rows; i++) if (i + k >= 0 && i + k < cols) out.push(at(x, [i, i + k]));
  return nd([out.length], out);
}

export const trace = (x: ND): ND => R.sum(diag(x, 0));

export function meshgrid(xs: readonly ND[], indexing: 'ij' | 'xy' = 'ij'): ND[] {
  const sizes = xs.map((t) => t.data.length);
  const dimOf = xs.map((_, i) => (indexing === 'xy' && xs.length >= 2 && i < 2 ? 1 - i : i));
  const shape = new Array<number>(xs.length);
  sizes.forEach((s, i) => (shape[dimOf[i]!] = s));
  return xs.map((t, i) => build(shape, (idx) => t.data[idx[dimOf[i]!]!]!));
}

/** einsum by brute force: every assignment of the labels, summed over those not in the output. */
export function einsum(equation: string, ...xs: ND[]): ND {
  const [lhs, rhs] = equation.replace(/\s+/g, '').split('->') as [string, string | undefined];
  const terms = lhs.split(',');
  const ellRank = Math.max(0, ...terms.map((t, i) => (t.includes('...') ? xs[i]!.shape.length - t.replace('...', '').length : 0)));
  const ell = Array.from({ length: ellRank }, (_, i) => String(i));
  const expandTerm = (t: string, rank: number) => {
    const [pre, post] = t.includes('...') ? (t.split('...') as [string, string]) : [t, ''];
    const own = t.includes('...') ? rank - pre.length - post.length : 0;
    return [...pre, ...ell.slice(ellRank - own), ...post];
  };
  const labelsOf = terms.map((t, i) => expandTerm(t, xs[i]!.shape.length));
  const size = new Map<string, number>();
  labelsOf.forEach((ls, i) => ls.forEach((l, d) => size.set(l, Math.max(size.get(l) ?? 1, xs[i]!.shape[d]!))));
  let out: string[];
  if (rhs !== undefined) out = expandTerm(rhs, ellRank + rhs.replace('...', '').length);
  else {
    const count = new Map<string, number>();
    labelsOf.flat().forEach((l) => count.set(l, (count.get(l) ?? 0) + 1));
    out = [...ell, ...[...count].filter(([l, c]) => c === 1 && /[a-zA-Z]/.test(l)).map(([l]) => l).sort()];
  }
  const all = [...size.keys()];
  const inner = all.filter((l) => !out.includes(l));
  const innerShape = inner.map((l) => size.get(l)!);
  return build(out.map((l) => size.get(l)!), (oi) => {
    let s = 0;
    for (let f = 0; f < numel(innerShape); f++) {
      const ii = unravel(f, innerShape);
      const val = (l: string) => (out.includes(l) ? oi[out.indexOf(l)]! : ii[inner.indexOf(l)]!);
      let prod = 1;
      xs.forEach((x, k) => (prod *= at(x, labelsOf[k]!.map((l, d) => (x.shape[d] === 1 ? 0 : val(l))))));
      s += prod;
    }
    return s;
  });
}

// ---- losses (torch.nn.functional definitions) ----

type Reduction = 'mean' | 'sum' | 'none';
const reduce = (l: ND, r: Reduction): ND => (r === 'none' ? l : r === 'sum' ? R.sum(l) : R.mean(l));

export const l1Loss = (a: ND, b: ND, r: Reduction = 'mean'): ND => reduce(R.zip(a, b, (x, y) => Math.abs(x - y)), r);

export function smoothL1Loss(a: ND, b: ND, r: Reduction = 'mean', beta = 1): ND {
  return reduce(R.zip(a, b, (x, y) => {
    const d = Math.abs(x - y);
    return beta === 0 ? d : d < beta ? (0.5 * d * d) / beta : d - 0.5 * beta;
  }), r);
}

export function huberLoss(a: ND, b: ND, r: Reduction = 'mean', delta = 1): ND {
  return reduce(R.zip(a, b, (x, y) => {
    const d = Math.abs(x - y);
    return d < delta ? 0.5 * d * d : delta * (d - 0.5 * delta);
  }), r);
}

export function klDiv(input: ND, target: ND, r: Reduction | 'batchmean' = 'mean', logTarget = false): ND {
  const l = R.zip(input, target, (x, t) => (logTarget ? Math.exp(t) * (t - x) : (t === 0 ? 0 : t * Math.log(t)) - t * x));
  if (r === 'batchmean') return R.scalar(R.sum(l).data[0]! / (input.shape[0] ?? 1));
  return reduce(l, r);
}

export function binaryCrossEntropy(x: ND, t: ND, r: Reduction = 'mean', weight?: ND): ND {
  const l = R.zip(x, t, (p, y) => -(y * Math.max(Math.log(p), -100) + (1 - y) * Math.max(Math.log(1 - p), -100)));
  return reduce(weight ? R.zip(l, weight, (a, w) => a * w) : l, r);
}

export function bceWithLogitsWeighted(x: ND, t: ND, weight: ND, r: Reduction = 'mean'): ND {
  const l = R.zip(x, t, (z, y) => Math.max(z, 0) - z * y + Math.log1p(Math.exp(-Math.abs(z))));
  return reduce(R.zip(l, weight, (a, w) => a * w), r);
}

/** Cross entropy with class-probability targets of the logits' shape (class dim 1, or 0 for 1-D). */
export function crossEntropyProbs(logits: ND, target: ND, opts: { reduction?: Reduction; weight?: ND; labelSmoothing?: number } = {}): ND {
  const classDim = logits.shape.length === 1 ? 0 : 1;
  const c = logits.shape[classDim]!;
  const ls = opts.labelSmoothing ?? 0;
  const lsm = R.logSoftmax(logits, classDim);
  const terms = build(logits.shape, (idx) => {
    const w = opts.weight ? opts.weight.data[idx[classDim]!]! : 1;
    return -w * at(lsm, idx) * (at(target, idx) * (1 - ls) + ls / c);
  });
  const per = R.sum(terms, classDim);
  const red = opts.reduction ?? 'mean';
  if (red === 'mean') return R.scalar(R.sum(per).data[0]! / Math.max(per.data.length, 1));
  return reduce(per, red);
}
