// Float64 reference implementations for the op tests: plain loops over flat row-major
// arrays with shapes. Nothing here calls kiln, so a bug in kiln cannot hide in its own
// reference. Semantics follow PyTorch (torch.* / torch.nn.functional.*).

/** A dense row-major float64 array with a shape. Integer and bool data are held as numbers too. */
export interface ND {
  readonly shape: readonly number[];
  readonly data: Float64Array;
}

// ---- basics -----------------------------------------------------------------------------

export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function nd(shape: readonly number[], data?: ArrayLike<number>): ND {
  const n = numel(shape);
  const out = new Float64Array(n);
  if (data) {
    if (data.length !== n) throw new Error(`reference: shape [${shape.join(', ')}] needs ${n} values, got ${data.length}`);
    for (let i = 0; i < n; i++) out[i] = Number(data[i]);
  }
  return { shape: [...shape], data: out };
}

export function stridesOf(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i]!;
  }
  return s;
}

/** Multi-index of flat index i. */
export function unravel(i: number, shape: readonly number[]): number[] {
  const idx = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    idx[d] = i % shape[d]!;
    i = Math.floor(i / shape[d]!);
  }
  return idx;
}

export function ravel(idx: readonly number[], shape: readonly number[]): number {
  let f = 0;
  for (let d = 0; d < shape.length; d++) f = f * shape[d]! + idx[d]!;
  return f;
}

function normDim(dim: number, ndim: number): number {
  const n = Math.max(ndim, 1);
  if (dim < -n || dim >= n) throw new Error(`reference: dim ${dim} out of range for rank ${ndim}`);
  return dim < 0 ? dim + n : dim;
}

function normDims(dims: number | readonly number[] | undefined, ndim: number): number[] {
  if (dims === undefined) return Array.from({ length: ndim }, (_, i) => i);
  return (typeof dims === 'number' ? [dims] : [...dims]).map((d) => normDim(d, ndim)).sort((a, b) => a - b);
}

// ---- broadcasting -----------------------------------------------------------------------

/** NumPy broadcasting of any number of shapes; null when they do not broadcast. */
export function broadcastShape(...shapes: (readonly number[])[]): number[] | null {
  const n = Math.max(0, ...shapes.map((s) => s.length));
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    let size = 1;
    for (const s of shapes) {
      const d = s[s.length - n + i] ?? 1;
      if (d === 1) continue;
      if (size !== 1 && size !== d) return null;
      size = d;
    }
    out.push(size);
  }
  return out;
}

/** Reads x at the multi-index `idx` of a broadcast result of rank idx.length. */
function atBroadcast(x: ND, idx: readonly number[]): number {
  const lead = idx.length - x.shape.length;
  let f = 0;
  for (let d = 0; d < x.shape.length; d++) {
    const s = x.shape[d]!;
    f = f * s + (s === 1 ? 0 : idx[lead + d]!);
  }
  return x.data[f]!;
}

/** Elementwise function of any number of broadcastable arrays. */
export function zipN(xs: readonly ND[], f: (...v: number[]) => number): ND {
  const shape = broadcastShape(...xs.map((x) => x.shape));
  if (!shape) throw new Error(`reference: shapes ${xs.map((x) => `[${x.shape.join(', ')}]`).join(' ')} do not broadcast`);
  const out = nd(shape);
  for (let i = 0; i < out.data.length; i++) {
    const idx = unravel(i, shape);
    out.data[i] = f(...xs.map((x) => atBroadcast(x, idx)));
  }
  return out;
}

export const map = (x: ND, f: (v: number) => number): ND => zipN([x], f);
export const zip = (a: ND, b: ND, f: (x: number, y: number) => number): ND => zipN([a, b], f);
export const scalar = (v: number): ND => nd([], [v]);

/** Expands x to shape (materialized). */
export function expandTo(x: ND, shape: readonly number[]): ND {
  const out = nd(shape);
  for (let i = 0; i < out.data.length; i++) out.data[i] = atBroadcast(x, unravel(i, shape));
  return out;
}

// ---- scalar functions (independent of kiln's kernels) ----------------------------------

/** erf to ~1e-15: Maclaurin series for |x| < 2.5, Lentz continued fraction for erfc above. */
export function erf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const ax = Math.abs(x);
  if (ax < 2.5) {
    // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))
    let term = ax;
    let sum = ax;
    for (let n = 1; n < 200; n++) {
      term *= (-ax * ax) / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    const r = (2 / Math.sqrt(Math.PI)) * sum;
    return x < 0 ? -r : r;
  }
  // erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...)))))
  let f = ax;
  for (let k = 120; k >= 1; k--) f = ax + k / 2 / f;
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f;
  const r = 1 - erfc;
  return x < 0 ? -r : r;
}

export const sigmoid = (x: number): number => (x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x)));
export const softplus = (x: number, beta = 1, threshold = 20): number =>
  beta * x > threshold ? x : Math.log1p(Math.exp(beta * x)) / beta;
export const gelu = (x: number): number => 0.5 * x * (1 + erf(x / Math.SQRT2));
export const geluTanh = (x: number): number => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
export const silu = (x: number): number => x * sigmoid(x);
export const relu = (x: number): number => (x > 0 ? x : 0);
export const rsqrt = (x: number): number => 1 / Math.sqrt(x);
export const truthy = (v: number): boolean => v !== 0;
export const b2n = (b: boolean): number => (b ? 1 : 0);

// ---- reductions -------------------------------------------------------------------------

/** Groups the elements of x by their index outside `dims`; f reduces each group (row-major order inside). */
export function reduceDims(x: ND, dims: number | readonly number[] | undefined, keepdim: boolean, f: (vals: number[]) => number): ND {
  const ds = normDims(dims, x.shape.length);
  const outShape: number[] = [];
  x.shape.forEach((s, d) => {
    if (!ds.includes(d)) outShape.push(s);
    else if (keepdim) outShape.push(1);
  });
  const keptShape = x.shape.filter((_, d) => !ds.includes(d));
  const groups: number[][] = Array.from({ length: numel(keptShape) }, () => []);
  for (let i = 0; i < x.data.length; i++) {
    const idx = unravel(i, x.shape);
    const kept = idx.filter((_, d) => !ds.includes(d));
    groups[ravel(kept, keptShape)]!.push(x.data[i]!);
  }
  return nd(outShape, groups.map(f));
}

const sumOf = (v: number[]): number => v.reduce((a, b) => a + b, 0);

export const sum = (x: ND, dims?: number | readonly number[], keepdim = false): ND => reduceDims(x, dims, keepdim, sumOf);
export const prod = (x: ND, dims?: number | readonly number[], keepdim = false): ND => reduceDims(x, dims, keepdim, (v) => v.reduce((a, b) => a * b, 1));
export const mean = (x: ND, dims?: number | readonly number[], keepdim = false): ND => reduceDims(x, dims, keepdim, (v) => sumOf(v) / v.length);
export const amax = (x: ND, dims?: number | readonly number[], keepdim = false): ND => reduceDims(x, dims, keepdim, (v) => Math.max(...v));
export const amin = (x: ND, dims?: number | readonly number[], keepdim = false): ND => reduceDims(x, dims, keepdim, (v) => Math.min(...v));

export function variance(x: ND, dims?: number | readonly number[], keepdim = false, correction = 1): ND {
  return reduceDims(x, dims, keepdim, (v) => {
    const mu = sumOf(v) / v.length;
    return sumOf(v.map((a) => (a - mu) ** 2)) / Math.max(v.length - correction, 0);
  });
}

export const std = (x: ND, dims?: number | readonly number[], keepdim = false, correction = 1): ND =>
  map(variance(x, dims, keepdim, correction), Math.sqrt);

export function logsumexp(x: ND, dims?: number | readonly number[], keepdim = false): ND {
  return reduceDims(x, dims, keepdim, (v) => {
    const m = Math.max(...v);
    if (!Number.isFinite(m)) return m;
    return m + Math.log(sumOf(v.map((a) => Math.exp(a - m))));
  });
}

/** Index of the first extreme along one dim (dim undefined: over the flattened array). */
export function argExtreme(x: ND, dim: number | undefined, keepdim: boolean, better: (a: number, b: number) => boolean): ND {
  const pick = (v: number[]): number => {
    let best = 0;
    for (let i = 1; i < v.length; i++) if (better(v[i]!, v[best]!)) best = i;
    return best;
  };
  if (dim === undefined) return nd([], [pick([...x.data])]);
  return reduceDims(x, dim, keepdim, pick);
}
export const argmax = (x: ND, dim?: number, keepdim = false): ND => argExtreme(x, dim, keepdim, (a, b) => a > b);
export const argmin = (x: ND, dim?: number, keepdim = false): ND => argExtreme(x, dim, keepdim, (a, b) => a < b);

/** Applies f to every 1-D line of x along dim (same length in and out). */
export function alongDim(x: ND, dim: number, f: (line: number[]) => number[]): ND {
  const d = normDim(dim, x.shape.length);
  const out = nd(x.shape);
  if (x.shape.length === 0) {
    out.data[0] = f([x.data[0]!])[0]!;
    return out;
  }
  const st = stridesOf(x.shape);
  const len = x.shape[d]!;
  for (let i = 0; i < x.data.length; i++) {
    const idx = unravel(i, x.shape);
    if (idx[d] !== 0) continue;
    const line = Array.from({ length: len }, (_, j) => x.data[i + j * st[d]!]!);
    const r = f(line);
    for (let j = 0; j < len; j++) out.data[i + j * st[d]!] = r[j]!;
  }
  return out;
}

export const softmax = (x: ND, dim = -1): ND =>
  alongDim(x, dim, (v) => {
    const m = Math.max(...v);
    const e = v.map((a) => Math.exp(a - m));
    const s = sumOf(e);
    return e.map((a) => a / s);
  });

export const logSoftmax = (x: ND, dim = -1): ND =>
  alongDim(x, dim, (v) => {
    const m = Math.max(...v);
    const lse = m + Math.log(sumOf(v.map((a) => Math.exp(a - m))));
    return v.map((a) => a - lse);
  });

export const cumsum = (x: ND, dim: number): ND =>
  alongDim(x, dim, (v) => {
    let acc = 0;
    return v.map((a) => (acc += a));
  });

// ---- movement ---------------------------------------------------------------------------

export const reshape = (x: ND, shape: readonly number[]): ND => {
  const neg = shape.indexOf(-1);
  const s = [...shape];
  if (neg >= 0) s[neg] = x.data.length / numel(shape.filter((d) => d !== -1));
  return nd(s, x.data);
};

export function permute(x: ND, dims: readonly number[]): ND {
  const ds = dims.map((d) => normDim(d, x.shape.length));
  const shape = ds.map((d) => x.shape[d]!);
  const out = nd(shape);
  for (let i = 0; i < out.data.length; i++) {
    const oi = unravel(i, shape);
    const ii = new Array<number>(x.shape.length);
    ds.forEach((d, k) => (ii[d] = oi[k]!));
    out.data[i] = x.data[ravel(ii, x.shape)]!;
  }
  return out;
}

export function transpose(x: ND, a = -2, b = -1): ND {
  const dims = x.shape.map((_, i) => i);
  const da = normDim(a, x.shape.length), db = normDim(b, x.shape.length);
  dims[da] = db;
  dims[db] = da;
  return permute(x, dims);
}

/** x[..., start:end:step, ...] along dim, with Python clamping of start/end. */
export function sliceDim(x: ND, dim: number, start = 0, end?: number, step = 1): ND {
  const d = normDim(dim, x.shape.length);
  const size = x.shape[d]!;
  const clampI = (i: number) => Math.min(Math.max(i < 0 ? i + size : i, 0), size);
  const s = clampI(start);
  const e = clampI(end ?? size);
  const picks: number[] = [];
  for (let i = s; i < e; i += step) picks.push(i);
  return takeAlong(x, d, picks);
}

/** The slices of x at positions `picks` along dim (index_select). */
export function takeAlong(x: ND, dim: number, picks: readonly number[]): ND {
  const d = normDim(dim, x.shape.length);
  const shape = [...x.shape];
  shape[d] = picks.length;
  const out = nd(shape);
  for (let i = 0; i < out.data.length; i++) {
    const idx = unravel(i, shape);
    const p = picks[idx[d]!]!;
    if (p < 0 || p >= x.shape[d]!) throw new Error(`reference: index ${p} out of range`);
    idx[d] = p;
    out.data[i] = x.data[ravel(idx, x.shape)]!;
  }
  return out;
}

/** Constant pad: pads lists (left, right) pairs from the last dim backwards (negative crops). */
export function pad(x: ND, pads: readonly number[], value = 0): ND {
  const shape = [...x.shape];
  const left = new Array<number>(x.shape.length).fill(0);
  for (let k = 0; 2 * k < pads.length; k++) {
    const d = x.shape.length - 1 - k;
    left[d] = pads[2 * k]!;
    shape[d] = shape[d]! + pads[2 * k]! + pads[2 * k + 1]!;
  }
  const out = nd(shape);
  for (let i = 0; i < out.data.length; i++) {
    const idx = unravel(i, shape);
    const src = idx.map((v, d) => v - left[d]!);
    out.data[i] = src.every((v, d) => v >= 0 && v < x.shape[d]!) ? x.data[ravel(src, x.shape)]! : value;
  }
  return out;
}

export function cat(xs: readonly ND[], dim = 0): ND {
  const d = normDim(dim, xs[0]!.shape.length);
  const shape = [...xs[0]!.shape];
  shape[d] = xs.reduce((a, x) => a + x.shape[d]!, 0);
  const out = nd(shape);
  for (let i = 0; i < out.data.length; i++) {
    const idx = unravel(i, shape);
    let j = idx[d]!;
    let k = 0;
    while (j >= xs[k]!.shape[d]!) j -= xs[k++]!.shape[d]!;
    idx[d] = j;
    out.data[i] = xs[k]!.data[ravel(idx, xs[k]!.shape)]!;
  }
  return out;
}

export function unsqueeze(x: ND, dim: number): ND {
  const d = normDim(dim, x.shape.length + 1);
  const shape = [...x.shape];
  shape.splice(d, 0, 1);
  return nd(shape, x.data);
}

export const stack = (xs: readonly ND[], dim = 0): ND => {
  const d = normDim(dim, xs[0]!.shape.length + 1);
  return cat(xs.map((x) => unsqueeze(x, d)), d);
};

export function split(x: ND, sizeOrSections: number | readonly number[], dim = 0): ND[] {
  const d = normDim(dim, x.shape.length);
  const total = x.shape[d]!;
  const sizes: number[] = [];
  if (typeof sizeOrSections === 'number') for (let at = 0; at < total; at += sizeOrSections) sizes.push(Math.min(sizeOrSections, total - at));
  else sizes.push(...sizeOrSections);
  let at = 0;
  return sizes.map((s) => {
    const r = sliceDim(x, d, at, at + s);
    at += s;
    return r;
  });
}

export const chunk = (x: ND, chunks: number, dim = 0): ND[] => split(x, Math.ceil(x.shape[normDim(dim, x.shape.length)]! / chunks), dim);

// ---- linear algebra ---------------------------------------------------------------------

/** torch.matmul, including 1-D operands and batch broadcasting. */
export function matmul(a: ND, b: ND): ND {
  const a2 = a.shape.length === 1 ? nd([1, a.shape[0]!], a.data) : a;
  const b2 = b.shape.length === 1 ? nd([b.shape[0]!, 1], b.data) : b;
  const m = a2.shape[a2.shape.length - 2]!, k = a2.shape[a2.shape.length - 1]!;
  const k2 = b2.shape[b2.shape.length - 2]!, n = b2.shape[b2.shape.length - 1]!;
  if (k !== k2) throw new Error('reference matmul: inner dims differ');
  const batch = broadcastShape(a2.shape.slice(0, -2), b2.shape.slice(0, -2));
  if (!batch) throw new Error('reference matmul: batch dims do not broadcast');
  const out = nd([...batch, m, n]);
  const nb = numel(batch);
  const aBatch = nd(a2.shape.slice(0, -2));
  const bBatch = nd(b2.shape.slice(0, -2));
  for (let t = 0; t < nb; t++) {
    const bi = unravel(t, batch);
    // flat batch offsets of a and b (broadcast dims read index 0)
    const ao = batchIndex(bi, aBatch.shape) * m * k;
    const bo = batchIndex(bi, bBatch.shape) * k * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let p = 0; p < k; p++) s += a2.data[ao + i * k + p]! * b2.data[bo + p * n + j]!;
        out.data[(t * m + i) * n + j] = s;
      }
    }
  }
  let shape = [...batch, m, n];
  if (b.shape.length === 1) shape = shape.slice(0, -1);
  if (a.shape.length === 1) shape = b.shape.length === 1 ? [] : [...shape.slice(0, -2), shape[shape.length - 1]!];
  return nd(shape, out.data);
}

function batchIndex(bi: readonly number[], shape: readonly number[]): number {
  const lead = bi.length - shape.length;
  let f = 0;
  for (let d = 0; d < shape.length; d++) f = f * shape[d]! + (shape[d] === 1 ? 0 : bi[lead + d]!);
  return f;
}

export function linear(x: ND, w: ND, b?: ND): ND {
  const y = matmul(x, transpose(w));
  return b ? zip(y, b, (p, q) => p + q) : y;
}

// ---- sliding windows --------------------------------------------------------------------

type Pair = number | readonly [number, number];
const P = (v: Pair | undefined, dflt: number): [number, number] => (v === undefined ? [dflt, dflt] : typeof v === 'number' ? [v, v] : [v[0], v[1]]);

export interface ConvOpts { stride?: Pair; padding?: Pair; dilation?: Pair; groups?: number }

/** torch.nn.functional.conv2d by direct summation. */
export function conv2d(x: ND, w: ND, bias: ND | undefined, opts: ConvOpts = {}): ND {
  const [N, C, H, W] = x.shape as [number, number, number, number];
  const [CO, CG, KH, KW] = w.shape as [number, number, number, number];
  const [sh, sw] = P(opts.stride, 1), [ph, pw] = P(opts.padding, 0), [dh, dw] = P(opts.dilation, 1);
  const G = opts.groups ?? 1;
  if (CG * G !== C) throw new Error('reference conv2d: channels do not match');
  const OH = Math.floor((H + 2 * ph - dh * (KH - 1) - 1) / sh) + 1;
  const OW = Math.floor((W + 2 * pw - dw * (KW - 1) - 1) / sw) + 1;
  const out = nd([N, CO, OH, OW]);
  const coPerG = CO / G;
  for (let n = 0; n < N; n++) {
    for (let co = 0; co < CO; co++) {
      const g = Math.floor(co / coPerG);
      for (let oy = 0; oy < OH; oy++) {
        for (let ox = 0; ox < OW; ox++) {
          let s = bias ? bias.data[co]! : 0;
          for (let ci = 0; ci < CG; ci++) {
            const c = g * CG + ci;
            for (let ky = 0; ky < KH; ky++) {
              const iy = oy * sh - ph + ky * dh;
              if (iy < 0 || iy >= H) continue;
              for (let kx = 0; kx < KW; kx++) {
                const ix = ox * sw - pw + kx * dw;
                if (ix < 0 || ix >= W) continue;
                s += x.data[((n * C + c) * H + iy) * W + ix]! * w.data[((co * CG + ci) * KH + ky) * KW + kx]!;
              }
            }
          }
          out.data[((n * CO + co) * OH + oy) * OW + ox] = s;
        }
      }
    }
  }
  return out;
}

export interface PoolOpts { stride?: Pair; padding?: Pair; dilation?: Pair }

/** Pooling over [N, C, H, W]; f gets the in-bounds window values and the window size. */
function pool2d(x: ND, kernel: Pair, opts: PoolOpts, f: (vals: number[], windowSize: number) => number): ND {
  const [N, C, H, W] = x.shape as [number, number, number, number];
  const [kh, kw] = P(kernel, 0);
  const [sh, sw] = opts.stride === undefined ? [kh, kw] : P(opts.stride, 1);
  const [ph, pw] = P(opts.padding, 0), [dh, dw] = P(opts.dilation, 1);
  const OH = Math.floor((H + 2 * ph - dh * (kh - 1) - 1) / sh) + 1;
  const OW = Math.floor((W + 2 * pw - dw * (kw - 1) - 1) / sw) + 1;
  const out = nd([N, C, OH, OW]);
  for (let nc = 0; nc < N * C; nc++) {
    for (let oy = 0; oy < OH; oy++) {
      for (let ox = 0; ox < OW; ox++) {
        const vals: number[] = [];
        for (let ky = 0; ky < kh; ky++) {
          for (let kx = 0; kx < kw; kx++) {
            const iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
            if (iy >= 0 && iy < H && ix >= 0 && ix < W) vals.push(x.data[(nc * H + iy) * W + ix]!);
          }
        }
        out.data[(nc * OH + oy) * OW + ox] = f(vals, kh * kw);
      }
    }
  }
  return out;
}

export const maxPool2d = (x: ND, kernel: Pair, opts: PoolOpts = {}): ND => pool2d(x, kernel, opts, (v) => Math.max(...v));
/** count_include_pad=True (torch's default): the divisor is the full kernel area. */
export const avgPool2d = (x: ND, kernel: Pair, opts: Omit<PoolOpts, 'dilation'> = {}): ND =>
  pool2d(x, kernel, opts, (v, size) => sumOf(v) / size);

// ---- indexing ---------------------------------------------------------------------------

export function gather(x: ND, dim: number, index: ND): ND {
  const d = normDim(dim, x.shape.length);
  const out = nd(index.shape);
  for (let i = 0; i < out.data.length; i++) {
    const idx = unravel(i, index.shape);
    idx[d] = index.data[i]!;
    out.data[i] = x.data[ravel(idx, x.shape)]!;
  }
  return out;
}

export function scatterAdd(self: ND, dim: number, index: ND, src: ND): ND {
  const d = normDim(dim, self.shape.length);
  const out = nd(self.shape, self.data);
  for (let i = 0; i < index.data.length; i++) {
    const idx = unravel(i, index.shape);
    const s = src.data[ravel(idx, src.shape)]!;
    idx[d] = index.data[i]!;
    out.data[ravel(idx, self.shape)] += s;
  }
  return out;
}

export const indexSelect = (x: ND, dim: number, index: ND): ND => takeAlong(x, dim, [...index.data]);

export function embedding(indices: ND, weight: ND): ND {
  const rows = takeAlong(weight, 0, [...indices.data]);
  return nd([...indices.shape, weight.shape[1]!], rows.data);
}

export function triangle(x: ND, diagonal: number, upper: boolean): ND {
  const out = nd(x.shape, x.data);
  const r = x.shape.length;
  for (let i = 0; i < out.data.length; i++) {
    const idx = unravel(i, x.shape);
    const diff = idx[r - 1]! - idx[r - 2]!;
    if (upper ? diff < diagonal : diff > diagonal) out.data[i] = 0;
  }
  return out;
}

export function oneHot(index: ND, numClasses = -1): ND {
  const n = numClasses >= 0 ? numClasses : Math.max(...index.data) + 1;
  const out = nd([...index.shape, n]);
  index.data.forEach((v, i) => {
    if (v >= 0 && v < n) out.data[i * n + v] = 1;
  });
  return out;
}

// ---- normalization ----------------------------------------------------------------------

export function layerNorm(x: ND, normalizedShape: readonly number[], weight?: ND, bias?: ND, eps = 1e-5): ND {
  const inner = numel(normalizedShape);
  const out = nd(x.shape);
  for (let o = 0; o < x.data.length / inner; o++) {
    const v = Array.from(x.data.subarray(o * inner, (o + 1) * inner));
    const mu = sumOf(v) / inner;
    const vr = sumOf(v.map((a) => (a - mu) ** 2)) / inner;
    for (let i = 0; i < inner; i++) {
      let y = (v[i]! - mu) / Math.sqrt(vr + eps);
      if (weight) y *= weight.data[i]!;
      if (bias) y += bias.data[i]!;
      out.data[o * inner + i] = y;
    }
  }
  return out;
}

export interface BatchNormRef { output: ND; runningMean?: ND; runningVar?: ND }

/** Batch norm over [N, C, ...] (per channel over every other dim). */
export function batchNorm(
  x: ND,
  opts: { runningMean?: ND; runningVar?: ND; weight?: ND; bias?: ND; training: boolean; momentum?: number; eps?: number },
): BatchNormRef {
  const C = x.shape[1]!;
  const eps = opts.eps ?? 1e-5;
  const mom = opts.momentum ?? 0.1;
  const chan = (i: number) => unravel(i, x.shape)[1]!;
  const vals: number[][] = Array.from({ length: C }, () => []);
  for (let i = 0; i < x.data.length; i++) vals[chan(i)]!.push(x.data[i]!);
  const mu = vals.map((v) => sumOf(v) / v.length);
  const vb = vals.map((v, c) => sumOf(v.map((a) => (a - mu[c]!) ** 2)) / v.length);
  const useMean = opts.training ? mu : [...opts.runningMean!.data];
  const useVar = opts.training ? vb : [...opts.runningVar!.data];
  const out = nd(x.shape);
  for (let i = 0; i < x.data.length; i++) {
    const c = chan(i);
    let y = (x.data[i]! - useMean[c]!) / Math.sqrt(useVar[c]! + eps);
    if (opts.weight) y *= opts.weight.data[c]!;
    if (opts.bias) y += opts.bias.data[c]!;
    out.data[i] = y;
  }
  const r: BatchNormRef = { output: out };
  if (opts.training && opts.runningMean && opts.runningVar) {
    const n = x.data.length / C;
    r.runningMean = nd([C], mu.map((m, c) => (1 - mom) * opts.runningMean!.data[c]! + mom * m));
    r.runningVar = nd([C], vb.map((v, c) => (1 - mom) * opts.runningVar!.data[c]! + (mom * v * n) / (n - 1)));
  }
  return r;
}

// ---- losses -----------------------------------------------------------------------------

export type Reduction = 'mean' | 'sum' | 'none';

export interface NllOpts { reduction?: Reduction; weight?: ND; ignoreIndex?: number }

/** Per-sample (-logProb[target] * w, w) over [N, C, ...] input and [N, ...] target. */
function nllTerms(lp: ND, target: ND, opts: NllOpts): { loss: number[]; w: number[] } {
  const lp2 = lp.shape.length === 1 ? nd([1, lp.shape[0]!], lp.data) : lp;
  const C = lp2.shape[1]!;
  const ignore = opts.ignoreIndex ?? -100;
  const loss: number[] = [], w: number[] = [];
  const tshape = lp.shape.length === 1 ? [1] : target.shape;
  for (let i = 0; i < target.data.length; i++) {
    const t = target.data[i]!;
    if (t === ignore) {
      loss.push(0);
      w.push(0);
      continue;
    }
    if (t < 0 || t >= C) throw new Error(`reference nll: target ${t} out of range`);
    const idx = unravel(i, tshape);
    const full = [idx[0]!, t, ...idx.slice(1)];
    const wt = opts.weight ? opts.weight.data[t]! : 1;
    loss.push(-lp2.data[ravel(full, lp2.shape)]! * wt);
    w.push(wt);
  }
  return { loss, w };
}

function reduceLoss(v: number[], shape: readonly number[], reduction: Reduction, denom?: number): ND {
  if (reduction === 'none') return nd(shape, v);
  if (reduction === 'sum') return scalar(sumOf(v));
  return scalar(sumOf(v) / (denom ?? v.length));
}

export function nllLoss(lp: ND, target: ND, opts: NllOpts = {}): ND {
  const { loss, w } = nllTerms(lp, target, opts);
  return reduceLoss(loss, target.shape, opts.reduction ?? 'mean', sumOf(w));
}

/** torch's cross_entropy with class-index targets, including label smoothing with weight/ignore_index. */
export function crossEntropy(logits: ND, target: ND, opts: NllOpts & { labelSmoothing?: number } = {}): ND {
  const classDim = logits.shape.length === 1 ? 0 : 1;
  const lsm = logSoftmax(logits, classDim);
  const reduction = opts.reduction ?? 'mean';
  const ls = opts.labelSmoothing ?? 0;
  const nll = nllLoss(lsm, target, opts);
  if (ls === 0) return nll;
  const C = logits.shape[classDim]!;
  const ignore = opts.ignoreIndex ?? -100;
  // smooth_i = -sum_c w_c lsm[i, c], zero where the target is ignored
  const lsm2 = logits.shape.length === 1 ? nd([1, C], lsm.data) : lsm;
  const tshape = logits.shape.length === 1 ? [1] : target.shape;
  const smooth: number[] = [];
  let wsum = 0;
  for (let i = 0; i < target.data.length; i++) {
    const t = target.data[i]!;
    if (t === ignore) {
      smooth.push(0);
      continue;
    }
    wsum += opts.weight ? opts.weight.data[t]! : 1;
    const idx = unravel(i, tshape);
    let s = 0;
    for (let c = 0; c < C; c++) s -= lsm2.data[ravel([idx[0]!, c, ...idx.slice(1)], lsm2.shape)]! * (opts.weight ? opts.weight.data[c]! : 1);
    smooth.push(s);
  }
  const sm = reduceLoss(smooth, target.shape, reduction, wsum);
  return zip(nll, sm, (a, b) => (1 - ls) * a + (ls / C) * b);
}

export function mseLoss(input: ND, target: ND, reduction: Reduction = 'mean'): ND {
  const d = zip(input, target, (a, b) => (a - b) ** 2);
  return reduceLoss([...d.data], d.shape, reduction);
}

/** -[pw y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))], computed stably. */
export function bceWithLogits(x: ND, y: ND, reduction: Reduction = 'mean', posWeight?: ND): ND {
  const logSig = (v: number) => -softplus(-v); // log sigmoid(v)
  const parts = posWeight ? zipN([x, y, posWeight], (a, t, pw) => -(pw * t * logSig(a) + (1 - t) * logSig(-a))) : zip(x, y, (a, t) => -(t * logSig(a) + (1 - t) * logSig(-a)));
  return reduceLoss([...parts.data], parts.shape, reduction);
}

// ---- attention --------------------------------------------------------------------------

/** softmax(q k^T * scale + mask) v; causal masks key j > query i (top-left aligned, as torch). */
export function sdpa(q: ND, k: ND, v: ND, opts: { mask?: ND; boolMask?: boolean; causal?: boolean; scale?: number } = {}): ND {
  const D = q.shape[q.shape.length - 1]!;
  const scale = opts.scale ?? 1 / Math.sqrt(D);
  let scores = map(matmul(q, transpose(k)), (a) => a * scale);
  if (opts.causal) {
    const out = nd(scores.shape, scores.data);
    for (let i = 0; i < out.data.length; i++) {
      const idx = unravel(i, out.shape);
      if (idx[idx.length - 1]! > idx[idx.length - 2]!) out.data[i] = -Infinity;
    }
    scores = out;
  }
  if (opts.mask) {
    scores = opts.boolMask ? zip(scores, opts.mask, (s, m) => (m !== 0 ? s : -Infinity)) : zip(scores, opts.mask, (s, m) => s + m);
  }
  return matmul(softmax(scores, -1), v);
}
