// Eager float32 matmul on the wasm backend's packed micro-kernel engine (kernels.ts): the
// kernel is picked by how A and B are laid out (rows or columns contiguous: f32x4 packing, as a
// Linear's x·Wᵀ and its gradients; anything else: the general kernel), batch dims coalesce into
// the kernel's batch loop (the JS loop walks any before the last). Threads split rows, columns
// (few rows) or the batch, never k, so every element sums in the same order on any thread count.
//
// Products accumulate in float32 (f32x4), as BLAS does, except for short reductions (k <
// SHORT_K, e.g. a weight gradient over a batch of 4): there a handful of terms can cancel to a
// tiny gradient whose float32 rounding Adam turns into a visible step, so they accumulate in
// float64 as the JS kernels always did (few multiply-adds per output: the cost is small).

import type { KernelArgs, KernelSpec } from '../../../ir/kernel-spec.js';
import { coalesce } from '../../iteration.js';
import { matmulKey, type Layout } from './kernels.js';
import type { EagerLauncher } from './launcher.js';
import { forOuter } from './pointwise.js';

type MatmulSpec = Extract<KernelSpec, { kind: 'matmul' }>;
type MatmulArgs = Extract<KernelArgs, { kind: 'matmul' }>;

/** Reductions shorter than this accumulate in float64. */
export const SHORT_K = 64;

/** 'r' when the column stride is 1 (or there is one column), 'c' when the row stride is, else 'g'. */
function layout(sRow: number, sCol: number, rows: number, cols: number): Layout {
  if (sCol === 1 || cols === 1) return 'r';
  if (sRow === 1 || rows === 1) return 'c';
  return 'g';
}

export function runMatmul(l: EagerLauncher, spec: MatmulSpec, a: MatmulArgs): boolean {
  if (spec.dtype !== 'float32') return false;
  const { m, n, k, batchShape } = a;
  const nb = batchShape.length;
  if (m === 0 || n === 0 || batchShape.some((s) => s === 0)) return true;
  // k = 0: the JS kernel writes the zeros
  if (k === 0) return false;
  const [aR, aC] = [a.a.strides[nb]!, a.a.strides[nb + 1]!], [bR, bC] = [a.b.strides[nb]!, a.b.strides[nb + 1]!];
  const [cR, cC] = [a.out.strides[nb]!, a.out.strides[nb + 1]!];
  if (cC !== 1 && n !== 1) return false;
  const acc = k < SHORT_K ? 'float64' : 'float32';
  let la = layout(aR, aC, m, k), lb = layout(bR, bC, k, n);
  if (la === 'g' || lb === 'g' || acc === 'float64') la = lb = 'g';
  const batch = coalesce(batchShape, [a.a.strides.slice(0, nb), a.b.strides.slice(0, nb), a.out.strides.slice(0, nb)]);
  const r = batch.shape.length;
  const last = batch.shape[r - 1]!;
  const k2 = l.kernel('matmul', matmulKey(la, lb, last > 1, acc));
  if (!k2 || !l.adopt([a.out.buf, a.a.buf, a.b.buf])) return false;
  const [sa, sb, sc] = batch.strides as [number[], number[], number[]];
  const bufs = [a.out.buf, a.a.buf, a.b.buf];
  forOuter(batch.shape.slice(0, r - 1), [sa, sb, sc], [a.a.offset, a.b.offset, a.out.offset], ([ao, bo, co]) => {
    l.run(k2, bufs, [m, n, k, ao!, bo!, co!, cR, aR, aC, bR, bC, last, sa[r - 1]!, sb[r - 1]!, sc[r - 1]!]);
  });
  return true;
}
