// Sliding windows: im2col / col2im primitives, and conv2d, maxPool2d, avgPool2d as
// decompositions over them (conv = im2col + matmul; pooling = im2col + reduction).

import { ArgumentError, DTypeError, ShapeError, fmtShape } from '../core/errors.js';
import type { WindowGeometry } from '../backend/kernel-spec.js';
import type { Tensor } from '../tensor/tensor.js';
import { apply, view, type PrimDef, expectTensor } from './dispatch.js';
import { contiguous, reshape } from './movement.js';
import { matmul } from './linalg.js';
import * as m from './math.js';
import { amax, mean } from './reduce.js';
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

export interface Conv2dOptions {
  stride?: Pair;
  padding?: Pair;
  dilation?: Pair;
  groups?: number;
}

/** torch.nn.functional.conv2d: x [N, Cin, H, W], weight [Cout, Cin/groups, KH, KW]. */
export const conv2d = publicOp('conv2d', function conv2d(x: Tensor, weight: Tensor, bias?: Tensor | null, opts: Conv2dOptions = {}): Tensor {
  expectTensor('conv2d', x, 'x');
  expectTensor('conv2d', weight, 'weight');
  const groups = opts.groups ?? 1;
  if (weight.ndim !== 4) throw new ShapeError(`weight must be [Cout, Cin/groups, KH, KW], got ${fmtShape(weight.shape)}`, 'conv2d');
  if (x.dtype !== weight.dtype) throw new DTypeError(`input ${x.dtype} and weight ${weight.dtype} differ`, 'conv2d');
  const [cout, cinG, kh, kw] = weight.shape as [number, number, number, number];
  if (!Number.isInteger(groups) || groups < 1 || x.shape[1]! % groups !== 0 || cout % groups !== 0) {
    throw new ArgumentError(`groups=${groups} must divide input channels ${x.shape[1]} and output channels ${cout}`, 'conv2d');
  }
  if (x.ndim === 4 && x.shape[1]! / groups !== cinG) {
    throw new ShapeError(`input ${fmtShape(x.shape)} has ${x.shape[1]} channels, weight ${fmtShape(weight.shape)} expects ${cinG * groups} (groups=${groups})`, 'conv2d');
  }
  const geom = geometry('conv2d', x, [kh, kw], opts.stride ?? 1, opts.padding ?? 0, opts.dilation ?? 1, 0);
  const cols = apply(im2colPrim, [x], { geom }); // [N, Cin*KH*KW, L]
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
});

export interface Pool2dOptions {
  stride?: Pair;
  padding?: Pair;
  dilation?: Pair;
}

function poolWindows(op: string, x: Tensor, kernel: Pair, opts: Pool2dOptions, padValue: number): { cols: Tensor; geom: WindowGeometry } {
  const geom = geometry(op, x, kernel, opts.stride ?? kernel, opts.padding ?? 0, opts.dilation ?? 1, padValue);
  const [kh, kw] = pair(op, 'kernel size', kernel);
  const [ph, pw] = pair(op, 'padding', opts.padding ?? 0);
  if (ph > kh / 2 || pw > kw / 2) throw new ArgumentError(`padding ${ph},${pw} must be at most half the kernel ${kh}x${kw}`, op);
  const cols = apply(im2colPrim, [x], { geom }); // [N, C*KH*KW, L]
  return { cols: reshape(cols, [geom.n, geom.c, geom.kh * geom.kw, geom.oh * geom.ow]), geom };
}

export const maxPool2d = publicOp('maxPool2d', function maxPool2d(x: Tensor, kernelSize: Pair, opts: Pool2dOptions = {}): Tensor {
  expectTensor('maxPool2d', x, 'x');
  const { cols, geom } = poolWindows('maxPool2d', x, kernelSize, opts, -Infinity);
  return reshape(amax(cols, 2), [geom.n, geom.c, geom.oh, geom.ow]);
});

/** Average pooling; padded positions count in the divisor (torch's count_include_pad=True). */
export const avgPool2d = publicOp('avgPool2d', function avgPool2d(x: Tensor, kernelSize: Pair, opts: Omit<Pool2dOptions, 'dilation'> = {}): Tensor {
  expectTensor('avgPool2d', x, 'x');
  const { cols, geom } = poolWindows('avgPool2d', x, kernelSize, opts, 0);
  return reshape(mean(cols, 2), [geom.n, geom.c, geom.oh, geom.ow]);
});

