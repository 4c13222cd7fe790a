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
const sources = new Map();
const build = (id) => {
  let fn = kernels.get(id);
  if (!fn) {
    // parenthesized: V8 compiles a function expression in parentheses eagerly (not at its
    // first call), so a prepared kernel is compiled while this worker is idle
    fn = new Function(${KERNEL_HELPER_NAMES.map((n) => `'${n}'`).join(', ')}, 'return (' + sources.get(id) + ');')(${KERNEL_HELPER_NAMES.join(', ')});
    kernels.set(id, fn);
    sources.delete(id);
  }
  return fn;
};
parentPort.on('message', (m) => {
  if (m.prepare) {
    // ahead of the first launch: compile now, while this worker is idle (errors surface at launch)
    for (const p of m.prepare) sources.set(p.id, p.src);
    for (const p of m.prepare) try { build(p.id); } catch {}
    return;
  }
  try {
    if (m.src !== undefined && !kernels.has(m.id)) sources.set(m.id, m.src);
    build(m.id)(...m.bufs, m.lo, m.hi);
  } catch (e) {
    Atomics.store(ctl, 1, 1);
  }
  Atomics.sub(ctl, 0, 1);
  Atomics.notify(ctl, 0);
});
// booted: from now on launches give this worker a part (see ThreadPool.run)
Atomics.store(ctl, 2 + workerData.index, 1);`;
}

export class ThreadPool {
  private readonly workers: WorkerLike[] = [];
  private readonly sent: Set<number>[] = [];
  private readonly ids = new Map<string, number>();
  /** [0] parts still running, [1] error flag, [2 + w] worker w has booted */
  private readonly ctl: Int32Array;
  /** workers known to have booted (read from ctl until they have) */
  private readonly ready: boolean[] = [];
  /** kernels run split across threads so far */
  launches = 0;

  constructor(
    wt: WorkerThreads,
    readonly threads: number,
  ) {
    this.ctl = new Int32Array(new SharedArrayBuffer(4 * (2 + threads)));
    for (let i = 0; i < threads - 1; i++) {
      const w = new wt.Worker(workerSource(), { eval: true, workerData: { ctl: this.ctl.buffer, index: i } });
      this.ready.push(false);
      w.unref?.(); // an idle pool never keeps the process alive
      this.workers.push(w);
      this.sent.push(new Set());
    }
  }

  private idOf(source: string): number {
    let id = this.ids.get(source);
    if (id === undefined) this.ids.set(source, (id = this.ids.size));
    return id;
  }

  /**
   * Ships kernel sources to every worker ahead of their first launch (at program build), so
   * the workers compile them while idle instead of on the critical path of the first call.
   */
  prepare(sources: Iterable<string>): void {
    const fresh: { id: number; src: string }[] = [];
    for (const src of sources) {
      const id = this.idOf(src);
      if (!this.sent[0] || this.sent[0].has(id)) continue;
      fresh.push({ id, src });
    }
    if (fresh.length === 0) return;
    for (let w = 0; w < this.workers.length; w++) {
      for (const f of fresh) this.sent[w]!.add(f.id);
      this.workers[w]!.postMessage({ prepare: fresh });
    }
  }

  /**
   * Runs `fn` over [0, extent) split across the threads. Buffers the kernel writes must be
   * shared; read-only ones that are not are copied into the message. `used`: the indices of
   * the buffers the kernel touches; only those are posted (a program's buffer list holds every
   * weight of the model, and structured-cloning the ones not yet shared cost seconds per first
   * call in W7; bench/results/coldstart.json).
   */
  run(source: string, fn: (bufs: readonly TypedArray[], lo: number, hi: number) => void, bufs: readonly TypedArray[], extent: number, used?: readonly number[]): void {
    this.launches++;
    const id = this.idOf(source);
    // only booted workers get a part: a worker takes ~60 ms (more on a loaded machine) to start,
    // and a first call would otherwise wait for it; results do not depend on the split (each
    // part computes whole rows of the outermost loop)
    const workers: number[] = [];
    for (let w = 0; w < this.workers.length; w++) if (this.ready[w] || (this.ready[w] = Atomics.load(this.ctl, 2 + w) === 1)) workers.push(w);
    const parts = Math.min(1 + workers.length, extent);
    const bounds = Array.from({ length: parts + 1 }, (_, i) => Math.round((i * extent) / parts));
    let posted: readonly (TypedArray | undefined)[] = bufs;
    if (used) {
      const only: (TypedArray | undefined)[] = new Array(bufs.length);
      for (const i of used) only[i] = bufs[i];
      posted = only;
    }
    Atomics.store(this.ctl, 0, parts - 1);
    Atomics.store(this.ctl, 1, 0);
    for (let p = 0; p < parts - 1; p++) {
      const w = workers[p]!;
      const first = !this.sent[w]!.has(id);
      this.sent[w]!.add(id);
      this.workers[w]!.postMessage({ id, src: first ? source : undefined, bufs: posted, lo: bounds[p + 1], hi: bounds[p + 2] });
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
