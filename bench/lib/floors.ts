// This machine's floors for bench/cpu.ts: memory-copy bandwidth (JS and libc memcpy),
// numpy/OpenBLAS's float32 matmul rate at a given thread count, and the hand-written C W4
// loop (bench/floors/w4-floor.ts, written separately: loaded only if it exists).

import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { measureW4Floor } from '../floors/w4-floor.js';
import { summarize } from './timing.js';

export interface Floor {
  what: string;
  /** the figure: GB/s, GFLOP/s or ms, see unit */
  value: number | null;
  unit: 'GB/s' | 'GFLOP/s' | 'ms';
  threads?: number;
  /** why value is null */
  missing?: string;
  detail?: Record<string, unknown>;
}

const COPY_BYTES = 64 << 20;

/** Median over `iters` calls of fn, in ms. */
function medianMs(fn: () => void, iters: number, warmup = 3): number {
  for (let i = 0; i < warmup; i++) fn();
  const s: number[] = [];
  for (let i = 0; i < iters; i++) {
    const t0 = performance.now();
    fn();
    s.push(performance.now() - t0);
  }
  return summarize(s).medianMs;
}

/** Float32Array.set of 64 MiB; bandwidth counts read + write (2 × 64 MiB per copy). */
export function jsCopyBandwidth(iters = 20): Floor {
  const src = new Float32Array(COPY_BYTES / 4).fill(1.5);
  const dst = new Float32Array(COPY_BYTES / 4);
  const ms = medianMs(() => dst.set(src), iters);
  return { what: 'Float32Array.prototype.set, 64 MiB, one thread (read + write counted)', value: (2 * COPY_BYTES) / (ms * 1e6), unit: 'GB/s', threads: 1, detail: { medianMs: ms } };
}

/** libc memcpy of 64 MiB through koffi (kiln's FFI), one thread. */
export function nativeCopyBandwidth(iters = 20): Floor {
  const what = 'libc memcpy via koffi, 64 MiB, one thread (read + write counted)';
  try {
    const koffi = createRequire(import.meta.url)('koffi') as { load(p: string): { func(sig: string): (...a: unknown[]) => unknown } };
    const libc = koffi.load(process.platform === 'darwin' ? 'libc.dylib' : 'libc.so.6');
    const memcpy = libc.func('void *memcpy(void *dst, const void *src, size_t n)');
    const src = new Uint8Array(COPY_BYTES).fill(7);
    const dst = new Uint8Array(COPY_BYTES);
    const ms = medianMs(() => memcpy(dst, src, COPY_BYTES), iters);
    if (dst[COPY_BYTES - 1] !== 7) throw new Error('memcpy did not copy');
    return { what, value: (2 * COPY_BYTES) / (ms * 1e6), unit: 'GB/s', threads: 1, detail: { medianMs: ms } };
  } catch (e) {
    return { what, value: null, unit: 'GB/s', missing: (e as Error).message.split('\n')[0] };
  }
}

/**
 * GFLOP/s of a numpy (OpenBLAS) float32 n³ matmul, median of 10 calls after 3 warm-up
 * calls, with OPENBLAS_NUM_THREADS = threads, and numpy's version. OPENBLAS_CORETYPE /
 * OPENBLAS_L2_SIZE are dropped for this command only, so OpenBLAS picks its native kernel
 * (../shared/WORKLOADS.md). Throws when python3 or numpy fail; callers word the error.
 */
/**
 * numpy's (OpenBLAS) float32 n^3 matmul in a python3 subprocess at `threads` threads: the fastest
 * and the median of `iters` calls after `warmup`. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are dropped
 * for the command (this machine's environment pins the Haswell kernel; unset, OpenBLAS picks its
 * AVX-512 one). Throws where python3 or numpy is missing.
 */
export function numpyMatmulTimes(n: number, threads: number, opts: { iters?: number; warmup?: number; timeoutMs?: number } = {}): { minMs: number; medianMs: number; numpyVersion: string } {
  const script = [
    'import numpy as np, time',
    `n, it, warm = ${n}, ${opts.iters ?? 10}, ${opts.warmup ?? 3}`,
    'rng = np.random.default_rng(0)',
    'a = rng.standard_normal((n, n), dtype=np.float32); b = rng.standard_normal((n, n), dtype=np.float32)',
    'for _ in range(warm): a @ b',
    'ts = []',
    'for _ in range(it):',
    '    t0 = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t0)',
    'ts.sort(); k = len(ts) // 2',
    'med = ts[k] if len(ts) % 2 else (ts[k - 1] + ts[k]) / 2',
    'print(ts[0] * 1e3, med * 1e3, np.__version__)',
  ].join('\n');
  const env: NodeJS.ProcessEnv = { ...process.env, OPENBLAS_NUM_THREADS: String(threads), OMP_NUM_THREADS: String(threads) };
  delete env.OPENBLAS_CORETYPE;
  delete env.OPENBLAS_L2_SIZE;
  const out = execFileSync('python3', ['-c', script], { env, encoding: 'utf8', timeout: opts.timeoutMs ?? 120_000, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  const [minMs, medianMs, numpyVersion] = out.split(/\s+/);
  if (!Number.isFinite(Number(minMs)) || !Number.isFinite(Number(medianMs))) throw new Error(`unexpected output: ${out}`);
  return { minMs: Number(minMs), medianMs: Number(medianMs), numpyVersion: numpyVersion! };
}

/** The numpy matmul rate (GFLOP/s) at the median of 10 calls. */
export function numpyMatmulGflops(n: number, threads: number, timeoutMs: number): { gflops: number; numpyVersion: string } {
  const t = numpyMatmulTimes(n, threads, { timeoutMs });
  return { gflops: (2 * n ** 3) / (t.medianMs * 1e-3) / 1e9, numpyVersion: t.numpyVersion };
}

/** numpyMatmulGflops as a floor at `threads` threads. */
export function blasMatmulRate(threads: number, n = 1024, timeoutMs = 120_000): Floor {
  const what = `numpy/OpenBLAS float32 matmul ${n}^3, median of 10 calls, OPENBLAS_NUM_THREADS=${threads}`;
  try {
    const r = numpyMatmulGflops(n, threads, timeoutMs);
    return { what, value: r.gflops, unit: 'GFLOP/s', threads, detail: { numpy: r.numpyVersion } };
  } catch (e) {
    const msg = (e as { stderr?: string }).stderr?.trim().split('\n').pop() ?? (e as Error).message.split('\n')[0];
    return { what, value: null, unit: 'GFLOP/s', threads, missing: `python3/numpy unavailable: ${msg}` };
  }
}

/** The hand-written C W4 loop (bench/floors/w4-floor.ts). */
export async function w4Floor(): Promise<Floor> {
  const what = 'W4 as one hand-written C loop (bench/floors/w4.c), -O3 -march=native -ffast-math, OpenMP';
  try {
    const r = measureW4Floor();
    return { what, value: r.ms, unit: 'ms', threads: r.threads, detail: { minMs: r.minMs } };
  } catch (e) {
    return { what, value: null, unit: 'ms', missing: `measureW4Floor failed: ${(e as Error).message.split('\n')[0]}` };
  }
}
