// Float64 references for the layers of issue 22 (conv1d, 'same' padding, transposed conv, pooling
// with ceil mode, adaptive pooling, group/RMS norm, interpolate): direct loops over flat arrays,
// written from torch's definitions, independent of kiln (see reference.ts).

import { nd, type ND } from './reference.js';

type Pair = number | readonly [number, number];
const P = (v: Pair | undefined, dflt: number): [number, number] => (v === undefined ? [dflt, dflt] : typeof v === 'number' ? [v, v] : [v[0], v[1]]);

export interface Conv2dRefOpts { stride?: Pair; padding?: Pair | 'same'; dilation?: Pair; groups?: number }

/** conv2d by direct summation; padding 'same' pads d(k-1)/2 before and the rest after (torch). */
export function conv2d(x: ND, w: ND, bias: ND | undefined, opts: Conv2dRefOpts = {}): ND {
  const [N, C, H, W] = x.shape as [number, number, number, number];
  const [CO, CG, KH, KW] = w.shape as [number, number, number, number];
  const [sh, sw] = P(opts.stride, 1), [dh, dw] = P(opts.dilation, 1);
  const G = opts.groups ?? 1;
  let top: number, bottom: number, left: number, right: number;
  if (opts.padding === 'same') {
    const th = dh * (KH - 1), tw = dw * (KW - 1);
    [top, bottom, left, right] = [Math.floor(th / 2), th - Math.floor(th / 2), Math.floor(tw / 2), tw - Math.floor(tw / 2)];
  } else {
    const [ph, pw] = P(opts.padding, 0);
    [top, bottom, left, right] = [ph, ph, pw, pw];
  }
  const OH = Math.floor((H + top + bottom - dh * (KH - 1) - 1) / sh) + 1;
  const OW = Math.floor((W + left + right - dw * (KW - 1) - 1) / sw) + 1;
  const out = nd([N, CO, OH, OW]);
  for (let n = 0; n < N; n++) for (let co = 0; co < CO; co++) {
    const g = Math.floor(co / (CO / G));
    for (let oy = 0; oy < OH; oy++) for (let ox = 0; ox < OW; ox++) {
      let s = bias ? bias.data[co]! : 0;
      for (let ci = 0; ci < CG; ci++) for (let ky = 0; ky < KH; ky++) for (let kx = 0; kx < KW; kx++) {
        const iy = oy * sh - top + ky * dh, ix = ox * sw - left + kx * dw;
        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
        s += x.data[((n * C + g * CG + ci) * H + iy) * W + ix]! * w.data[((co * CG + ci) * KH + ky) * KW + kx]!;
      }
      out.data[((n * CO + co) * OH + oy) * OW + ox] = s;
    }
  }
  return out;
}

/** conv1d as a conv2d over a height of 1. */
export function conv1d(x: ND, w: ND, bias: ND | undefined, opts: { stride?: number; padding?: number | 'same'; dilation?: number; groups?: number } = {}): ND {
  const [N, C, L] = x.shape as [number, number, number];
  const [CO, CG, K] = w.shape as [number, number, number];
  const y = conv2d(nd([N, C, 1, L], x.data), nd([CO, CG, 1, K], w.data), bias, {
    stride: [1, opts.stride ?? 1], padding: opts.padding === 'same' ? 'same' : [0, opts.padding ?? 0], dilation: [1, opts.dilation ?? 1], groups: opts.groups,
  });
  return nd([N, CO, y.shape[3]!], y.data);
}

/** conv_transpose2d by scattering every input element through the kernel. */
export function convTranspose2d(x: ND, w: ND, bias: ND | undefined, opts: { stride?: Pair; padding?: Pair; outputPadding?: Pair; dilation?: Pair; groups?: number } = {}): ND {
  const [N, C, H, W] = x.shape as [number, number, number, number];
  const [, COG, KH, KW] = w.shape as [number, number, number, number];
  const [sh, sw] = P(opts.stride, 1), [ph, pw] = P(opts.padding, 0), [oph, opw] = P(opts.outputPadding, 0), [dh, dw] = P(opts.dilation, 1);
  const G = opts.groups ?? 1, CIG = C / G, CO = COG * G;
  const OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1, OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1;
  const out = nd([N, CO, OH, OW]);
  for (let n = 0; n < N; n++) for (let ci = 0; ci < C; ci++) {
    const g = Math.floor(ci / CIG);
    for (let iy = 0; iy < H; iy++) for (let ix = 0; ix < W; ix++) {
      const v = x.data[((n * C + ci) * H + iy) * W + ix]!;
      for (let co = 0; co < COG; co++) for (let ky = 0; ky < KH; ky++) for (let kx = 0; kx < KW; kx++) {
        const oy = iy * sh - ph + ky * dh, ox = ix * sw - pw + kx * dw;
        if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
        out.data[((n * CO + g * COG + co) * OH + oy) * OW + ox] += v * w.data[((ci * COG + co) * KH + ky) * KW + kx]!;
      }
    }
  }
  if (bias) for (let i = 0; i < out.data.length; i++) out.data[i] += bias.data[Math.floor(i / (OH * OW)) % CO]!;
  return out;
}

export interface PoolRefOpts { stride?: Pair; padding?: Pair; dilation?: Pair; ceilMode?: boolean; countIncludePad?: boolean; divisorOverride?: number }

function pooled(size: number, k: number, s: number, p: number, d: number, ceil: boolean): number {
  const span = size + 2 * p - d * (k - 1) - 1;
  let o = (ceil ? Math.ceil(span / s) : Math.floor(span / s)) + 1;
  if (ceil && (o - 1) * s >= size + p) o--;
  return o;
}

/** torch's max_pool2d / avg_pool2d CPU loops, including ceil mode and the avg divisor rules. */
export function pool2d(kind: 'max' | 'avg', x: ND, kernel: Pair, opts: PoolRefOpts = {}): ND {
  const [N, C, H, W] = x.shape as [number, number, number, number];
  const [kh, kw] = P(kernel, 0);
  const [sh, sw] = opts.stride === undefined ? [kh, kw] : P(opts.stride, 1);
  const [ph, pw] = P(opts.padding, 0), [dh, dw] = kind === 'max' ? P(opts.dilation, 1) : [1, 1];
  const ceil = opts.ceilMode ?? false;
  const OH = pooled(H, kh, sh, ph, dh, ceil), OW = pooled(W, kw, sw, pw, dw, ceil);
  const out = nd([N, C, OH, OW]);
  for (let nc = 0; nc < N * C; nc++) for (let oy = 0; oy < OH; oy++) for (let ox = 0; ox < OW; ox++) {
    let acc = kind === 'max' ? -Infinity : 0;
    for (let ky = 0; ky < kh; ky++) for (let kx = 0; kx < kw; kx++) {
      const iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
      if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
      const v = x.data[(nc * H + iy) * W + ix]!;
      acc = kind === 'max' ? Math.max(acc, v) : acc + v;
    }
    if (kind === 'avg') {
      const hs = oy * sh - ph, ws = ox * sw - pw;
      const he = Math.min(hs + kh, H + ph), we = Math.min(ws + kw, W + pw);
      const inPad = (he - hs) * (we - ws);
      const inside = (Math.min(he, H) - Math.max(hs, 0)) * (Math.min(we, W) - Math.max(ws, 0));
      acc /= opts.divisorOverride ?? ((opts.countIncludePad ?? true) ? inPad : inside);
    }
    out.data[(nc * OH + oy) * OW + ox] = acc;
  }
  return out;
}

/** adaptive pooling over the trailing dims (1 or 2), windows [floor(i n / o), ceil((i + 1) n / o)). */
export function adaptivePool(kind: 'max' | 'avg', x: ND, outSize: readonly number[]): ND {
  const dims = outSize.length;
  const lead = x.shape.slice(0, x.shape.length - dims), inSize = x.shape.slice(x.shape.length - dims);
  const [H, W] = dims === 2 ? [inSize[0]!, inSize[1]!] : [1, inSize[0]!];
  const [OH, OW] = dims === 2 ? [outSize[0]!, outSize[1]!] : [1, outSize[0]!];
  const planes = lead.reduce((a, b) => a * b, 1);
  const out = nd([...lead, ...outSize]);
  for (let p = 0; p < planes; p++) for (let i = 0; i < OH; i++) for (let j = 0; j < OW; j++) {
    const h0 = Math.floor((i * H) / OH), h1 = Math.ceil(((i + 1) * H) / OH);
    const w0 = Math.floor((j * W) / OW), w1 = Math.ceil(((j + 1) * W) / OW);
    let acc = kind === 'max' ? -Infinity : 0;
    for (let y = h0; y < h1; y++) for (let z = w0; z < w1; z++) {
      const v = x.data[(p * H + y) * W + z]!;
      acc = kind === 'max' ? Math.max(acc, v) : acc + v;
    }
    out.data[(p * OH + i) * OW + j] = kind === 'max' ? acc : acc / ((h1 - h0) * (w1 - w0));
  }
  return out;
}

export function groupNorm(x: ND, groups: number, weight: ND | undefined, bias: ND | undefined, eps = 1e-5): ND {
  const [N, C] = x.shape as [number, number];
  const inner = x.data.length / (N * C), per = (C / groups) * inner;
  const out = nd(x.shape);
  for (let n = 0; n < N; n++) for (let g = 0; g < groups; g++) {
    const base = (n * groups + g) * per;
    let mu = 0;
    for (let i = 0; i < per; i++) mu += x.data[base + i]!;
    mu /= per;
    let v = 0;
    for (let i = 0; i < per; i++) v += (x.data[base + i]! - mu) ** 2;
    const r = 1 / Math.sqrt(v / per + eps);
    for (let i = 0; i < per; i++) {
      const c = g * (C / groups) + Math.floor(i / inner);
      out.data[base + i] = (x.data[base + i]! - mu) * r * (weight ? weight.data[c]! : 1) + (bias ? bias.data[c]! : 0);
    }
  }
  return out;
}

export function rmsNorm(x: ND, normalized: number, weight: ND | undefined, eps: number): ND {
  const out = nd(x.shape);
  for (let row = 0; row < x.data.length / normalized; row++) {
    let ms = 0;
    for (let i = 0; i < normalized; i++) ms += x.data[row * normalized + i]! ** 2;
    const r = 1 / Math.sqrt(ms / normalized + eps);
    for (let i = 0; i < normalized; i++) out.data[row * normalized + i] = x.data[row * normalized + i]! * r * (weight ? weight.data[i]! : 1);
  }
  return out;
}

/** F.interpolate over [N, C, H, W]: 'nearest' (floor(i in / out)) or 'bilinear' (half-pixel centers unless alignCorners). */
export function interpolate2d(x: ND, size: readonly [number, number], mode: 'nearest' | 'bilinear', alignCorners = false): ND {
  const [N, C, H, W] = x.shape as [number, number, number, number];
  const [OH, OW] = size;
  const out = nd([N, C, OH, OW]);
  const src = (i: number, n: number, o: number) => {
    if (alignCorners) return o > 1 ? (i * (n - 1)) / (o - 1) : 0;
    return Math.max(((i + 0.5) * n) / o - 0.5, 0);
  };
  for (let p = 0; p < N * C; p++) for (let i = 0; i < OH; i++) for (let j = 0; j < OW; j++) {
    let v: number;
    if (mode === 'nearest') v = x.data[(p * H + Math.min(Math.floor((i * H) / OH), H - 1)) * W + Math.min(Math.floor((j * W) / OW), W - 1)]!;
    else {
      const sy = src(i, H, OH), sx = src(j, W, OW);
      const y0 = Math.floor(sy), x0 = Math.floor(sx), y1 = Math.min(y0 + 1, H - 1), x1 = Math.min(x0 + 1, W - 1);
      const ly = sy - y0, lx = sx - x0;
      const at = (y: number, z: number) => x.data[(p * H + y) * W + z]!;
      v = (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x1)) + ly * ((1 - lx) * at(y1, x0) + lx * at(y1, x1));
    }
    out.data[(p * OH + i) * OW + j] = v;
  }
  return out;
}
