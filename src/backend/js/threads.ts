// A pool of worker threads for the JS backend's compiled kernels (Node: worker_threads over
// SharedArrayBuffer). A kernel splits its outermost loop into one range per thread; the
// caller runs one range itself and blocks on an Atomics counter until the workers finish.
// Eager kernels stay on the calling thread: eager mode is the simple, debuggable baseline.
//
// Workers rebuild kernels from their generated source; the helpers kernels call (erf, fast
// math, the matmul engine) are shipped as the source text of self-contained factories.

import type { TypedArray } from '../../core/dtype.js';
import { createFastMath } from './fast-math.js';
import { createMatmul } from './matmul.js';
import { erf, relu32, roundHalfEven } from './render-scalar.js';

interface WorkerLike {
  postMessage(m: unknown): void;
  unref?(): void;
  on?(ev: string, f: (...a: unknown[]) => void): void;
}
type WorkerThreads = { Worker: new (src: string, o: { eval: boolean; workerData: unknown }) => WorkerLike };

export const KERNEL_HELPER_NAMES = ['erf', 'roundHalfEven', 'relu32', 'fastExp', 'fastTanh', 'matmul2d', 'createMatmul'];

function workerSource(): string {
  return `
const __name = (f) => f;
const { parentPort, workerData } = require('node:worker_threads');
const erf = ${erf.toString()};
const roundHalfEven = ${roundHalfEven.toString()};
const relu32 = ${relu32.toString()};
const { fastExp, fastTanh } = (${createFastMath.toString()})();
const createMatmul = ${createMatmul.toString()};
const matmul2d = createMatmul();
const ctl = new Int32Array(workerData.ctl);
const kernels = new Map();
parentPort.on('message', (m) => {
  try {
    let fn = kernels.get(m.id);
    if (!fn) {
      fn = new Function(${KERNEL_HELPER_NAMES.map((n) => `'${n}'`).join(', ')}, 'return ' + m.src)(${KERNEL_HELPER_NAMES.join(', ')});
      kernels.set(m.id, fn);
    }
    fn(...m.bufs, m.lo, m.hi);
  } catch (e) {
    Atomics.store(ctl, 1, 1);
  }
  Atomics.sub(ctl, 0, 1);
  Atomics.notify(ctl, 0);
});`;
}

export class ThreadPool {
  private readonly workers: WorkerLike[] = [];
  private readonly sent: Set<number>[] = [];
  private readonly ids = new Map<string, number>();
  private readonly ctl: Int32Array;
  /** kernels run split across threads so far */
  launches = 0;

  constructor(
    wt: WorkerThreads,
    readonly threads: number,
  ) {
    this.ctl = new Int32Array(new SharedArrayBuffer(8));
    for (let i = 0; i < threads - 1; i++) {
      const w = new wt.Worker(workerSource(), { eval: true, workerData: { ctl: this.ctl.buffer } });
      w.unref?.(); // an idle pool never keeps the process alive
      this.workers.push(w);
      this.sent.push(new Set());
    }
  }

  /**
   * Runs `fn` over [0, extent) split across the threads. Buffers the kernel writes must be
   * shared; read-only ones that are not are copied into the message.
   */
  run(source: string, fn: (bufs: readonly TypedArray[], lo: number, hi: number) => void, bufs: readonly TypedArray[], extent: number): void {
    this.launches++;
    let id = this.ids.get(source);
    if (id === undefined) this.ids.set(source, (id = this.ids.size));
    const parts = Math.min(this.threads, extent);
    const bounds = Array.from({ length: parts + 1 }, (_, i) => Math.round((i * extent) / parts));
    Atomics.store(this.ctl, 0, parts - 1);
    Atomics.store(this.ctl, 1, 0);
    for (let w = 0; w < parts - 1; w++) {
      const first = !this.sent[w]!.has(id);
      this.sent[w]!.add(id);
      this.workers[w]!.postMessage({ id, src: first ? source : undefined, bufs, lo: bounds[w + 1], hi: bounds[w + 2] });
    }
    fn(bufs, bounds[0]!, bounds[1]!);
    for (let v = Atomics.load(this.ctl, 0); v !== 0; v = Atomics.load(this.ctl, 0)) Atomics.wait(this.ctl, 0, v, 1000);
    if (Atomics.load(this.ctl, 1) !== 0) {
      // rerun on this thread so the real error surfaces with its message
      for (let w = 0; w < parts - 1; w++) fn(bufs, bounds[w + 1]!, bounds[w + 2]!);
    }
  }
}

let pool: ThreadPool | null | undefined;

/** Threads for compiled kernels: KILN_THREADS, else the machine's cores (1 = no pool). */
export function threadCount(): number {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined>; getBuiltinModule?: (m: string) => unknown } }).process;
  const env = Number(proc?.env?.KILN_THREADS);
  if (Number.isInteger(env) && env > 0) return env;
  const os = proc?.getBuiltinModule?.('node:os') as { availableParallelism?: () => number } | undefined;
  return os?.availableParallelism?.() ?? 1;
}

/** The shared pool, or null where threads are unavailable (browsers without isolation, 1 core). */
export function getThreadPool(): ThreadPool | null {
  if (pool !== undefined) return pool;
  pool = null;
  const proc = (globalThis as { process?: { getBuiltinModule?: (m: string) => unknown } }).process;
  const wt = proc?.getBuiltinModule?.('node:worker_threads') as WorkerThreads | undefined;
  const n = threadCount();
  if (wt && n > 1 && typeof SharedArrayBuffer !== 'undefined' && typeof Atomics !== 'undefined') pool = new ThreadPool(wt, n);
  return pool;
}

/** Whether worker threads can write into this array. */
export function isShared(a: TypedArray): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && a.buffer instanceof SharedArrayBuffer;
}
