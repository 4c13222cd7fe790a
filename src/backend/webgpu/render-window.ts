// im2col / col2im in WGSL: the sliding windows of conv2d and pooling (src/ops/window.ts) as a
// matrix [N, C*KH*KW, OH*OW], and its adjoint. Same layouts and semantics as the JS backend
// (src/backend/js/window.ts): image contiguous [N, C, H, W] at its offset, columns contiguous.
//
// im2col is one invocation per column entry (a pure gather). col2im is written as a gather
// too, one invocation per image element summing the column entries that land on it: WGSL has
// no float atomics, and gathering keeps the result deterministic and adds in the JS backend's
// order (kernel row, then kernel column), so both backends round alike.

import type { BackendBuffer } from '../backend.js';
import type { KernelArgs, WindowGeometry } from '../../ir/kernel-spec.js';
import type { DType } from '../../core/dtype.js';
import { indexKernel } from './render-indexing.js';
import { HelperSet, literal, wtype } from './wgsl-expr.js';
import type { WgslKernel } from './wgsl-common.js';

type WindowArgs = Extract<KernelArgs, { kind: 'im2col' | 'col2im' }>;

export function renderWindow(dtype: DType, args: WindowArgs): { w: WgslKernel; buffers: BackendBuffer[] } {
  const T = wtype(dtype, args.kind);
  const g: WindowGeometry = args.geom;
  const { n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow } = g;
  const io = args.image.offset, co = args.cols.offset;
  if (args.kind === 'im2col') {
    const helpers = new HelperSet();
    const pad = literal(g.padValue, T, helpers);
    const total = n * c * kh * kw * oh * ow;
    return {
      w: indexKernel('im2col', total, [`cols: array<${T}>`, `img: array<${T}>`], [
        `let x = rem % ${ow}; rem = rem / ${ow};`,
        `let y = rem % ${oh}; rem = rem / ${oh};`,
        `let kj = rem % ${kw}; rem = rem / ${kw};`,
        `let ki = rem % ${kh}; let plane = rem / ${kh};`, // plane = b * C + ch
        `let iy = y * ${sh} - ${ph} + ki * ${dh};`,
        `let ix = x * ${sw} - ${pw} + kj * ${dw};`,
        `var v = ${pad};`,
        `if (iy >= 0 && iy < ${h} && ix >= 0 && ix < ${w}) { v = img[${io} + (plane * ${h} + iy) * ${w} + ix]; }`,
        `cols[${co} + i32(flat)] = v;`,
      ], [true, false], helpers.source()),
      buffers: [args.cols.buf, args.image.buf],
    };
  }
  const zero = T === 'f32' ? '0.0' : T === 'i32' ? '0' : '0u';
  const total = n * c * h * w;
  // a position iy is hit by kernel row ki at output row y = (iy + ph - ki*dh) / sh when that
  // divides exactly and lands in [0, oh); likewise for columns
  return {
    w: indexKernel('col2im', total, [`img: array<${T}>`, `cols: array<${T}>`], [
      `let ix = rem % ${w}; rem = rem / ${w};`,
      `let iy = rem % ${h}; let plane = rem / ${h};`,
      `var acc = ${zero};`,
      `for (var ki = 0; ki < ${kh}; ki++) {`,
      `  let ty = iy + ${ph} - ki * ${dh};`,
      `  if (ty < 0 || ty % ${sh} != 0 || ty / ${sh} >= ${oh}) { continue; }`,
      `  let y = ty / ${sh};`,
      `  for (var kj = 0; kj < ${kw}; kj++) {`,
      `    let tx = ix + ${pw} - kj * ${dw};`,
      `    if (tx < 0 || tx % ${sw} != 0 || tx / ${sw} >= ${ow}) { continue; }`,
      `    acc += cols[${co} + ((plane * ${kh} + ki) * ${kw} + kj) * ${oh * ow} + y * ${ow} + tx / ${sw}];`,
      '  }',
      '}',
      `img[${io} + i32(flat)] = acc;`,
    ], [true, false]),
    buffers: [args.image.buf, args.cols.buf],
  };
}
