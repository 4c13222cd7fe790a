// The W4 floor (see ../../../shared/WORKLOADS.md): w4.c, one hand-written C loop with
// vectorized math, compiled with kiln's native toolchain (same compiler, flags, OpenMP and
// disk cache) and timed from Node through koffi on a preallocated output, 4M float32.
//
//   import { measureW4Floor } from './floors/w4-floor.js';
//   const { ms, threads } = measureW4Floor();   // median ms of `iters` calls
//
// Threads: KILN_THREADS (default: all cores), as the native backend.

import { readFileSync } from 'node:fs';
import { buildLibrary, findCompiler, loadLibrary } from '../../src/backend/native/toolchain.js';
import { threadCount } from '../../src/backend/js/threads.js';
import { summarize } from '../lib/timing.js';

export const W4_FLOOR_SIZE = 4 * 1024 * 1024;

export interface FloorResult {
  /** median of the timed calls */
  ms: number;
  minMs: number;
  threads: number;
  samplesMs: number[];
}

/** The floor loop ready to call (compiled or found in the cache): `run()` computes W4 once into a preallocated output. */
export function w4FloorRunner(size = W4_FLOOR_SIZE): { run: () => void; threads: number; x: Float32Array; y: Float32Array } {
  const cc = findCompiler();
  if (typeof cc === 'string') throw new Error(`W4 floor: ${cc}`);
  // the same OpenMP wait policy as kiln's native backend (whichever loads libgomp first sets it)
  process.env.OMP_WAIT_POLICY ??= 'passive';
  const built = buildLibrary(readFileSync(new URL('./w4.c', import.meta.url), 'utf8'), cc, () => {});
  const lib = loadLibrary(built.path);
  const floor = lib.func('w4_floor', 'void', ['void *', 'void *', 'int64_t']);
  lib.func('w4_set_threads', 'void', ['int'])(threadCount());
  const threads = lib.func('w4_threads', 'int', [])() as number;
  const x = new Float32Array(size);
  for (let i = 0; i < size; i++) x[i] = Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random());
  const y = new Float32Array(size);
  return { run: () => void floor(x, y, size), threads, x, y };
}

/** Times the floor loop: `ms` is the median of `iters` calls after `warmup`. */
export function measureW4Floor(opts: { iters?: number; warmup?: number; size?: number } = {}): FloorResult {
  const { iters = 30, warmup = 5, size = W4_FLOOR_SIZE } = opts;
  const { run, threads } = w4FloorRunner(size);
  for (let i = 0; i < warmup; i++) run();
  const samplesMs: number[] = [];
  for (let i = 0; i < iters; i++) {
    const t0 = performance.now();
    run();
    samplesMs.push(performance.now() - t0);
  }
  const s = summarize(samplesMs);
  return { ms: s.medianMs, minMs: s.minMs, threads, samplesMs };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = measureW4Floor();
  console.log(`W4 floor (hand-written C, ${r.threads} threads): median ${r.ms.toFixed(3)} ms, min ${r.minMs.toFixed(3)} ms`);
}
