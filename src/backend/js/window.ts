// im2col / col2im: the sliding windows of convolution and pooling as a matrix
// [N, C*KH*KW, OH*OW], so that conv is a matmul and pooling a reduction.

import type { TypedArray } from '../../core/dtype.js';
import type { WindowGeometry } from '../../ir/kernel-spec.js';

/** image: contiguous [N,C,H,W] at imgOff; cols: contiguous [N, C*KH*KW, OH*OW] at colOff. */
export function im2col(img: TypedArray, imgOff: number, cols: TypedArray, colOff: number, g: WindowGeometry): void {
  const { n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, padValue } = g;
  let q = colOff;
  for (let b = 0; b < n; b++) {
    for (let ch = 0; ch < c; ch++) {
      const plane = imgOff + (b * c + ch) * h * w;
      for (let ki = 0; ki < kh; ki++) {
        for (let kj = 0; kj < kw; kj++) {
          for (let y = 0; y < oh; y++) {
            const iy = y * sh - ph + ki * dh;
            if (iy < 0 || iy >= h) {
              for (let x = 0; x < ow; x++) cols[q++] = padValue;
              continue;
            }
            const row = plane + iy * w;
            for (let x = 0; x < ow; x++) {
              const ix = x * sw - pw + kj * dw;
              cols[q++] = ix >= 0 && ix < w ? img[row + ix]! : padValue;
            }
          }
        }
      }
    }
  }
}

/** The adjoint of im2col: adds every column entry back into its image position. */
export function col2im(cols: TypedArray, colOff: number, img: TypedArray, imgOff: number, g: WindowGeometry): void {
  const { n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow } = g;
  img.fill(0, imgOff, imgOff + n * c * h * w);
  let q = colOff;
  for (let b = 0; b < n; b++) {
    for (let ch = 0; ch < c; ch++) {
      const plane = imgOff + (b * c + ch) * h * w;
      for (let ki = 0; ki < kh; ki++) {
        for (let kj = 0; kj < kw; kj++) {
          for (let y = 0; y < oh; y++) {
            const iy = y * sh - ph + ki * dh;
            if (iy < 0 || iy >= h) {
              q += ow;
              continue;
            }
            const row = plane + iy * w;
            for (let x = 0; x < ow; x++, q++) {
              const ix = x * sw - pw + kj * dw;
              if (ix >= 0 && ix < w) img[row + ix] += cols[q]!;
            }
          }
        }
      }
    }
  }
}
