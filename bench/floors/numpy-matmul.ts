// The matmul floor: numpy's (OpenBLAS) float32 matmul rate, in a python3 subprocess with the
// given thread count. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are dropped for the command (this
// machine's environment pins the Haswell kernel; unset, OpenBLAS picks its AVX-512 kernel).
// null where python3 or numpy is missing.

import { spawnSync } from 'node:child_process';

export interface NumpyMatmul {
  minMs: number;
  medianMs: number;
  threads: number;
  /** GFLOP/s at the median */
  gflops: number;
}

export function measureNumpyMatmul(n = 1024, threads = 2, iters = 30): NumpyMatmul | null {
  const env: NodeJS.ProcessEnv = { ...process.env, OPENBLAS_NUM_THREADS: String(threads), OMP_NUM_THREADS: String(threads) };
  delete env.OPENBLAS_CORETYPE;
  delete env.OPENBLAS_L2_SIZE;
  const py = `
import time, numpy as np
n, it = ${n}, ${iters}
a = np.random.rand(n, n).astype(np.float32); b = np.random.rand(n, n).astype(np.float32)
for _ in range(5): a @ b
ts = []
for _ in range(it):
    t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)
ts.sort(); print(ts[0] * 1e3, ts[len(ts) // 2] * 1e3)`;
  const r = spawnSync('python3', ['-c', py], { env, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) return null;
  const [minMs, medianMs] = r.stdout.trim().split(/\s+/).map(Number) as [number, number];
  return { minMs, medianMs, threads, gflops: (2 * n ** 3) / (medianMs * 1e-3) / 1e9 };
}
