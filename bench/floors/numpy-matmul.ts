// The matmul floor of bench/native.ts: numpy's (OpenBLAS) float32 matmul rate at a thread count
// (bench/lib/floors.ts numpyMatmulTimes), or null where python3 or numpy is missing.

import { numpyMatmulTimes } from '../lib/floors.js';

export interface NumpyMatmul {
  minMs: number;
  medianMs: number;
  threads: number;
  /** GFLOP/s at the median */
  gflops: number;
}

export function measureNumpyMatmul(n = 1024, threads = 2, iters = 30): NumpyMatmul | null {
  try {
    const t = numpyMatmulTimes(n, threads, { iters, warmup: 5 });
    return { minMs: t.minMs, medianMs: t.medianMs, threads, gflops: (2 * n ** 3) / (t.medianMs * 1e-3) / 1e9 };
  } catch {
    return null;
  }
}
