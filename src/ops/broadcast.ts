import type { Tensor } from '../tensor/tensor.js';

/** Strides that read `t` as if expanded to `shape` (broadcast dims get stride 0). */
export function broadcastStrides(t: Tensor, shape: readonly number[]): number[] {
  const n = shape.length;
  const lead = n - t.ndim;
  const out = new Array<number>(n);
  for (let d = 0; d < n; d++) {
    const sd = d - lead;
    out[d] = sd < 0 || t.shape[sd] === 1 ? 0 : t.strides[sd]!;
  }
  return out;
}
