// Sliding windows: im2col / col2im primitives, and conv2d, maxPool2d, avgPool2d as
// decompositions over them (conv = im2col + matmul; pooling = im2col + reduction).

import { ArgumentError, DTypeError, ShapeError, fmtShape } from '../core/errors.js';
import type { WindowGeometry } from '../ir/kernel-spec.js';
import type { Tensor } from '../tensor/tensor.js';
import { apply, view, type PrimDef, expectTensor } from './dispatch.js';
import { contiguous, pad, reshape, squeeze, transpose, unsqueeze } from './movement.js';
import { matmul } from './linalg.js';
import * as m from './math.js';
import { amax, sum } from './reduce.js';
import { tensor } from './creation.js';
import { checkEnum } from '../core/enum-arg.js';
import { publicOp } from '../core/user-op.js';

type Pair = number | readonly [number, number];
const pair = (op: string, name: string, v: Pair): [number, number] => {
  const p: [number, number] = typeof v === 'number' ? [v, v] : [v[0], v[1]];
  if (!p.every((x) => Number.isInteger(x) && x >= 0)) throw new ArgumentError(`${name} must be a non-negative integer or a pair, got ${JSON.stringify(v)}`, op);
  return p;
};

interface WindowAttrs { readonly geom: WindowGeometry }

function geometry(op: string, x: Tensor, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, padValue: number): WindowGeometry {
  if (x.ndim !== 4) throw new ShapeError(`expects input [N, C, H, W], got ${fmtShape(x.shape)}`, op, 'add a batch dim with unsqueeze(0)');
  const [kh, kw] = pair(op, 'kernel size', kernel);
  const [sh, sw] = pair(op, 'stride', stride);
  const [ph, pw] = pair(op, 'padding', padding);
  const [dh, dw] = pair(op, 'dilation', dilation);
  if (kh === 0 || kw === 0 || sh === 0 || sw === 0 || dh === 0 || dw === 0) throw new ArgumentError('kernel size, stride and dilation must be positive', op);
  const [n, c, h, w] = x.shape as [number, number, number, number];
  const oh = Math.floor((h + 2 * ph - dh * (kh - 1) - 1) / sh) + 1;
  const ow = Math.floor((w + 2 * pw - dw * (kw - 1) - 1) / sw) + 1;
  if (oh <= 0 || ow <= 0) {
    throw new ShapeError(`input ${fmtShape(x.shape)} is smaller than the (dilated) kernel ${kh}x${kw} with padding ${ph},${pw}`, op, 'pad the input or use a smaller kernel');
  }
  return { n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, padValue };
}

export const im2colPrim: PrimDef<WindowAttrs> = {
  name: 'im2col',
  meta(inputs, { geom: g }) {
    return { shape: [g.n, g.c * g.kh * g.kw, g.oh * g.ow], dtype: inputs[0]!.dtype };
  },
  run(inputs, out, a) {
    const x0 = inputs[0]!;
    const x = x0.isContiguous ? x0 : contiguous(x0);
    const backend = out.storage.backend;
    backend.launch(backend.prepare({ kind: 'im2col', dtype: x.dtype }), { kind: 'im2col', image: view(x), cols: view(out), geom: a.geom });
    if (x !== x0) x.dispose();
  },
  backward: (g, ctx) => [col2im(g, ctx.attrs.geom)],
  saveInputs: false,
  formatAttrs: (a) => geomText(a.geom),
};

export const col2imPrim: PrimDef<WindowAttrs> = {
  name: 'col2im',
  meta(inputs, { geom: g }) {
    return { shape: [g.n, g.c, g.h, g.w], dtype: inputs[0]!.dtype };
  },
  run(inputs, out, a) {
    const c0 = inputs[0]!;
    const c = c0.isContiguous ? c0 : contiguous(c0);
    const backend = out.storage.backend;
    backend.launch(backend.prepare({ kind: 'col2im', dtype: c.dtype }), { kind: 'col2im', image: view(out), cols: view(c), geom: a.geom });
    if (c !== c0) c.dispose();
  },
  backward: (g, ctx) => [apply(im2colPrim, [g], { geom: { ...ctx.attrs.geom, padValue: 0 } })],
  saveInputs: false,
  formatAttrs: (a) => geomText(a.geom),
};

function geomText(g: WindowGeometry): string {
  return `k=${g.kh}x${g.kw} s=${g.sh},${g.sw} p=${g.ph},${g.pw} d=${g.dh},${g.dw}`;
}

function col2im(cols: Tensor, geom: WindowGeometry): Tensor {
  return apply(col2imPrim, [cols], { geom });
}

/** Zero padding: a size or pair, 'valid' (none) or 'same' (stride 1: output size = input size). */
export type ConvPadding = Pair | 'valid' | 'same';

export const CONV_PADDING_MODES = ['same', 'valid'] as const;

/**
 * Padding of each spatial dim as [before, after]. 'same' splits d (k - 1) as torch does:
 * before = total / 2 rounded down, the odd element after (even kernels pad one more at the end).
 */
function convPads(op: string, padding: ConvPadding, kernel: readonly number[], dilation: readonly number[], stride: readonly number[]): [number, number][] {
  if (typeof padding === 'string') {
    checkEnum(op, 'padding', padding, CONV_PADDING_MODES);
    if (padding === 'valid') return kernel.map(() => [0, 0]);
    if (stride.some((s) => s !== 1)) throw new ArgumentError(`padding='same' is not supported for strided convolutions (stride ${stride.join(',')})`, op, 'use stride 1, or give the padding as numbers');
    return kernel.map((k, i) => {
      const total = dilation[i]! * (k - 1);
      return [Math.floor(total / 2), total - Math.floor(total / 2)];
    });
  }
  const p = typeof padding === 'number' ? kernel.map(() => padding) : [...padding];
  if (p.length !== kernel.length || !p.every((x) => Number.isInteger(x) && x >= 0)) {
    throw new ArgumentError(`padding must be a non-negative integer or ${kernel.length === 1 ? 'one' : 'a pair'}, got ${JSON.stringify(padding)}`, op);
  }
  return p.map((x) => [x, x]);
}

/** Pads the trailing spatial dims by what their [before, after] pads have beyond the symmetric part. */
function padExtra(x: Tensor, pads: readonly [number, number][], value: number): { x: Tensor; sym: number[] } {
  const sym = pads.map(([b, a]) => Math.min(b, a));
  if (pads.every(([b, a]) => b === a)) return { x, sym };
  const torchPads = [...pads].reverse().flatMap(([b, a], i) => {
    const s = sym[pads.length - 1 - i]!;
    return [b - s, a - s];
  });
  return { x: pad(x, torchPads, value), sym };
}

const checkGroups = (op: string, groups: number, cin: number, cout: number) => {
  if (!Number.isInteger(groups) || groups < 1 || cin % groups !== 0 || cout % groups !== 0) {
    throw new ArgumentError(`groups=${groups} must divide input channels ${cin} and output channels ${cout}`, op);
  }
};

export interface Conv2dOptions {
  stride?: Pair;
  padding?: ConvPadding;
  dilation?: Pair;
  groups?: number;
}

/** torch.nn.functional.conv2d: x [N, Cin, H, W], weight [Cout, Cin/groups, KH, KW]. */
export const conv2d = publicOp('conv2d', function conv2d(x: Tensor, weight: Tensor, bias?: Tensor | null, opts: Conv2dOptions = {}): Tensor {
  return conv2dAs('conv2d', x, weight, bias, opts);
});

function conv2dAs(op: string, x: Tensor, weight: Tensor, bias: Tensor | null | undefined, opts: Conv2dOptions): Tensor {
  expectTensor(op, x, 'x');
  expectTensor(op, weight, 'weight');
  const groups = opts.groups ?? 1;
  if (weight.ndim !== 4) throw new ShapeError(`weight must be [Cout, Cin/groups, KH, KW], got ${fmtShape(weight.shape)}`, op);
  if (x.dtype !== weight.dtype) throw new DTypeError(`input ${x.dtype} and weight ${weight.dtype} differ`, op);
  const [cout, cinG, kh, kw] = weight.shape as [number, number, number, number];
  checkGroups(op, groups, x.shape[1]!, cout);
  if (x.ndim === 4 && x.shape[1]! / groups !== cinG) {
    throw new ShapeError(`input ${fmtShape(x.shape)} has ${x.shape[1]} channels, weight ${fmtShape(weight.shape)} expects ${cinG * groups} (groups=${groups})`, op);
  }
  const stride = pair(op, 'stride', opts.stride ?? 1);
  const dilation = pair(op, 'dilation', opts.dilation ?? 1);
  const { x: xp, sym } = padExtra(x, convPads(op, opts.padding ?? 0, [kh, kw], dilation, stride), 0);
  const geom = geometry(op, xp, [kh, kw], stride, sym as [number, number], dilation, 0);
  const cols = apply(im2colPrim, [xp], { geom }); // [N, Cin*KH*KW, L]
  const L = geom.oh * geom.ow;
  let out: Tensor;
  if (groups === 1) {
    out = matmul(reshape(weight, [cout, cinG * kh * kw]), cols); // [N, Cout, L]
  } else {
    const colsG = reshape(cols, [geom.n, groups, cinG * kh * kw, L]);
    const wG = reshape(weight, [groups, cout / groups, cinG * kh * kw]);
    out = reshape(matmul(wG, colsG), [geom.n, cout, L]); // [N, G, Cout/G, L]
  }
  if (bias) out = m.add(out, reshape(bias, [cout, 1]));
  return reshape(out, [geom.n, cout, geom.oh, geom.ow]);
}

export interface Conv1dOptions {
  stride?: number;
  padding?: number | 'valid' | 'same';
  dilation?: number;
  groups?: number;
}

/** torch.nn.functional.conv1d: x [N, Cin, L] (or [Cin, L]), weight [Cout, Cin/groups, K]; a conv2d over a height of 1. */
export const conv1d = publicOp('conv1d', function conv1d(x: Tensor, weight: Tensor, bias?: Tensor | null, opts: Conv1dOptions = {}): Tensor {
  expectTensor('conv1d', x, 'x');
  expectTensor('conv1d', weight, 'weight');
  if (x.ndim === 2) return squeeze(conv1d(unsqueeze(x, 0), weight, bias, opts), 0);
  if (x.ndim !== 3) throw new ShapeError(`expects input [N, C, L] or [C, L], got ${fmtShape(x.shape)}`, 'conv1d');
  if (weight.ndim !== 3) throw new ShapeError(`weight must be [Cout, Cin/groups, K], got ${fmtShape(weight.shape)}`, 'conv1d');
  const one = (name: string, v: unknown) => {
    if (typeof v !== 'number') throw new ArgumentError(`${name} must be a number, got ${JSON.stringify(v)}`, 'conv1d');
    return [1, v] as [number, number];
  };
  const padding = opts.padding ?? 0;
  const y = conv2dAs('conv1d', unsqueeze(x, 2), unsqueeze(weight, 2), bias, {
    stride: one('stride', opts.stride ?? 1),
    padding: typeof padding === 'string' ? padding : ([0, padding] as [number, number]),
    dilation: one('dilation', opts.dilation ?? 1),
    groups: opts.groups,
  });
  return squeeze(y, 2);
});

export interface ConvTranspose2dOptions {
  stride?: Pair;
  padding?: Pair;
  outputPadding?: Pair;
  groups?: number;
  dilation?: Pair;
}

/**
 * torch.nn.functional.conv_transpose2d: x [N, Cin, H, W] (or [Cin, H, W]), weight [Cin, Cout/groups,
 * KH, KW]; the adjoint of conv2d, so it is a matmul into columns and col2im (which sums overlaps).
 * Output size (H - 1) stride - 2 padding + dilation (KH - 1) + outputPadding + 1.
 */
export const convTranspose2d = publicOp('convTranspose2d', function convTranspose2d(x: Tensor, weight: Tensor, bias?: Tensor | null, opts: ConvTranspose2dOptions = {}): Tensor {
  const op = 'convTranspose2d';
  expectTensor(op, x, 'x');
  expectTensor(op, weight, 'weight');
  if (x.ndim === 3) return squeeze(convTranspose2d(unsqueeze(x, 0), weight, bias, opts), 0);
  if (x.ndim !== 4) throw new ShapeError(`expects input [N, C, H, W] or [C, H, W], got ${fmtShape(x.shape)}`, op);
  if (weight.ndim !== 4) throw new ShapeError(`weight must be [Cin, Cout/groups, KH, KW], got ${fmtShape(weight.shape)}`, op);
  if (x.dtype !== weight.dtype) throw new DTypeError(`input ${x.dtype} and weight ${weight.dtype} differ`, op);
  const groups = opts.groups ?? 1;
  const [cin, coutG, kh, kw] = weight.shape as [number, number, number, number];
  const [n, c, h, w] = x.shape as [number, number, number, number];
  if (c !== cin) throw new ShapeError(`input ${fmtShape(x.shape)} has ${c} channels, weight ${fmtShape(weight.shape)} expects ${cin}`, op);
  checkGroups(op, groups, cin, coutG * groups);
  const [sh, sw] = pair(op, 'stride', opts.stride ?? 1);
  const [ph, pw] = pair(op, 'padding', opts.padding ?? 0);
  const [dh, dw] = pair(op, 'dilation', opts.dilation ?? 1);
  const [oph, opw] = pair(op, 'outputPadding', opts.outputPadding ?? 0);
  if (sh === 0 || sw === 0 || dh === 0 || dw === 0) throw new ArgumentError('stride and dilation must be positive', op);
  if (oph >= Math.max(sh, dh) || opw >= Math.max(sw, dw)) {
    throw new ArgumentError(`outputPadding ${oph},${opw} must be smaller than stride or dilation (${sh},${sw} / ${dh},${dw})`, op);
  }
  const hOut = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1;
  const wOut = (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1;
  if (hOut <= 0 || wOut <= 0) throw new ShapeError(`input ${fmtShape(x.shape)} with padding ${ph},${pw} gives an empty output ${hOut}x${wOut}`, op, 'use less padding');
  const cout = coutG * groups;
  const k = coutG * kh * kw;
  const xs = reshape(x, [n, groups, cin / groups, h * w]);
  const wg = transpose(reshape(weight, [groups, cin / groups, k]), 1, 2); // [G, Cout/G*KH*KW, Cin/G]
  const cols = reshape(matmul(wg, xs), [n, cout * kh * kw, h * w]);
  const geom: WindowGeometry = { n, c: cout, h: hOut, w: wOut, kh, kw, sh, sw, ph, pw, dh, dw, oh: h, ow: w, padValue: 0 };
  let out = col2im(cols, geom);
  if (bias) out = m.add(out, reshape(bias, [cout, 1, 1]));
  return out;
});

export interface Pool2dOptions {
  /** default: the kernel size */
  stride?: Pair;
  padding?: Pair;
  dilation?: Pair;
  /** round the output size up (windows may start in the right padding), as torch's ceil_mode */
  ceilMode?: boolean;
}

export interface AvgPool2dOptions extends Omit<Pool2dOptions, 'dilation'> {
  /** padded positions count in the divisor (default true, torch's count_include_pad) */
  countIncludePad?: boolean;
  /** divide every window by this instead */
  divisorOverride?: number | null;
}

interface PoolPlan {
  cols: Tensor;
  geom: WindowGeometry;
  /** per output row/column: where the window starts and ends, before clipping to the input (torch's hstart/hend) */
  rows: { start: number; end: number }[];
  colsAt: { start: number; end: number }[];
}

/** torch's pooling output size along one dim, with ceil mode's rule that the last window starts inside. */
function pooledSize(size: number, k: number, s: number, p: number, d: number, ceil: boolean): number {
  const span = size + 2 * p - d * (k - 1) - 1;
  let out = (ceil ? Math.ceil(span / s) : Math.floor(span / s)) + 1;
  if (ceil && (out - 1) * s >= size + p) out--;
  return out;
}

function poolWindows(op: string, x: Tensor, kernel: Pair, opts: Pool2dOptions, padValue: number): PoolPlan {
  if (x.ndim !== 4) throw new ShapeError(`expects input [N, C, H, W] or [C, H, W], got ${fmtShape(x.shape)}`, op);
  const [kh, kw] = pair(op, 'kernel size', kernel);
  const [sh, sw] = pair(op, 'stride', opts.stride ?? kernel);
  const [ph, pw] = pair(op, 'padding', opts.padding ?? 0);
  const [dh, dw] = pair(op, 'dilation', opts.dilation ?? 1);
  if (kh === 0 || kw === 0 || sh === 0 || sw === 0 || dh === 0 || dw === 0) throw new ArgumentError('kernel size, stride and dilation must be positive', op);
  if (ph > kh / 2 || pw > kw / 2) throw new ArgumentError(`padding ${ph},${pw} must be at most half the kernel ${kh}x${kw}`, op);
  const [, , h, w] = x.shape as [number, number, number, number];
  const ceil = opts.ceilMode ?? false;
  const oh = pooledSize(h, kh, sh, ph, dh, ceil), ow = pooledSize(w, kw, sw, pw, dw, ceil);
  if (oh <= 0 || ow <= 0) throw new ShapeError(`input ${fmtShape(x.shape)} is smaller than the (dilated) kernel ${kh}x${kw} with padding ${ph},${pw}`, op, 'pad the input or use a smaller kernel');
  // ceil mode: the last windows may reach past the padded input; pad the end so im2col sees them
  const extraH = Math.max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + 2 * ph));
  const extraW = Math.max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + 2 * pw));
  const { x: xp } = padExtra(x, [[ph, ph + extraH], [pw, pw + extraW]], padValue);
  const geom = geometry(op, xp, [kh, kw], [sh, sw], [ph, pw], [dh, dw], padValue);
  const cols = apply(im2colPrim, [xp], { geom }); // [N, C*KH*KW, L]
  const windows = (n: number, k: number, s: number, p: number, size: number) =>
    Array.from({ length: n }, (_, i) => ({ start: i * s - p, end: Math.min(i * s - p + k, size + p) }));
  return {
    cols: reshape(cols, [geom.n, geom.c, geom.kh * geom.kw, geom.oh * geom.ow]),
    geom,
    rows: windows(oh, kh, sh, ph, h),
    colsAt: windows(ow, kw, sw, pw, w),
  };
}

/** Max pooling over [N, C, H, W] or [C, H, W] (torch's max_pool2d; a NaN in a window wins). */
export const maxPool2d = publicOp('maxPool2d', function maxPool2d(x: Tensor, kernelSize: Pair, opts: Pool2dOptions = {}): Tensor {
  expectTensor('maxPool2d', x, 'x');
  if (x.ndim === 3) return squeeze(maxPool2d(unsqueeze(x, 0), kernelSize, opts), 0);
  const { cols, geom } = poolWindows('maxPool2d', x, kernelSize, opts, -Infinity);
  return reshape(amax(cols, 2), [geom.n, geom.c, geom.oh, geom.ow]);
});

/** Average pooling (torch's avg_pool2d: countIncludePad true by default, divisorOverride, ceilMode). */
export const avgPool2d = publicOp('avgPool2d', function avgPool2d(x: Tensor, kernelSize: Pair, opts: AvgPool2dOptions = {}): Tensor {
  const op = 'avgPool2d';
  expectTensor(op, x, 'x');
  if (x.ndim === 3) return squeeze(avgPool2d(unsqueeze(x, 0), kernelSize, opts), 0);
  const override = opts.divisorOverride ?? null;
  if (override !== null && !(Number.isInteger(override) && override > 0)) throw new ArgumentError(`divisorOverride must be a positive integer, got ${override}`, op);
  const { cols, geom, rows, colsAt } = poolWindows(op, x, kernelSize, opts, 0);
  const sums = reshape(sum(cols, 2), [geom.n, geom.c, geom.oh, geom.ow]);
  const includePad = opts.countIncludePad ?? true;
  const h = x.shape[2]!, w = x.shape[3]!;
  // the divisor of each window, as torch's kernel computes it (windows clipped at the padded end;
  // without countIncludePad, clipped to the input)
  const count = (r: { start: number; end: number }, size: number) => (includePad ? r.end - r.start : Math.min(r.end, size) - Math.max(r.start, 0));
  const rowCounts = rows.map((r) => count(r, h)), colCounts = colsAt.map((c) => count(c, w));
  const same = (a: number[]) => a.every((c) => c === a[0]);
  if (override !== null) return m.div(sums, override);
  if (same(rowCounts) && same(colCounts)) return m.div(sums, rowCounts[0]! * colCounts[0]!);
  const divisor = new Float64Array(geom.oh * geom.ow);
  rowCounts.forEach((r, i) => colCounts.forEach((c, j) => (divisor[i * geom.ow + j] = r * c)));
  return m.div(sums, tensor(divisor, [geom.oh, geom.ow], { dtype: x.dtype }));
});
