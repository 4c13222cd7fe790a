// A pool of worker threads for the JS backend's compiled kernels (Node: worker_threads over
// SharedArrayBuffer). A kernel's outermost loop is cut into chunks (a few per thread) that the
// threads, the caller included, claim from a shared Atomics counter until none is left; the
// caller then blocks until every claimed chunk is done. Fixed 1/T shares made every call wait
// for the slowest thread, and on a shared machine a thread descheduled for a while made 2
// threads match or lose to 1; with chunks, the threads that run take the work of one that
// does not. Each launch is still one message per worker. The control both pools share (this
// one and the wasm pool's) and its launch protocol are chunk-protocol.ts.
// Eager kernels stay on the calling thread: eager mode is the simple, debuggable baseline.
//
// Workers rebuild kernels from their generated source; the helpers kernels call (erf, fast
// math, the matmul engine) are shipped as the source text of self-contained factories.

import type { TypedArray } from '../../core/dtype.js';
import { splitsBatch, type LoopKernel } from '../../ir/loop-ir.js';
import { ChunkControl, claimChunksSource, CTL_SLOTS, MAX_CHUNKS } from './chunk-protocol.js';
import { createFastMath } from './fast-math.js';
import { createMatmul } from './matmul.js';
import { erf, relu32, roundHalfEven } from './render-scalar.js';

interface WorkerLike {
  postMessage(m: unknown): void;
  unref?(): void;
  on?(ev: string, f: (...a: unknown[]) => void): void;
}
type WorkerThreads = { Worker: new (src: string, o: { eval: boolean; workerData: unknown; execArgv?: string[] }) => WorkerLike };

export const KERNEL_HELPER_NAMES = ['erf', 'roundHalfEven', 'relu32', 'fastExp', 'fastTanh', 'matmul2d'];

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
const claimChunks = ${claimChunksSource()};
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
  if (m.src !== undefined && !kernels.has(m.id)) sources.set(m.id, m.src);
  claimChunks(ctl, m, () => build(m.id), (fn, lo, hi) => fn(...m.bufs, lo, hi));
});
// booted: from now on launches post to this worker (see ThreadPool.run)
Atomics.store(ctl, ${BOOTED} + workerData.index, 1);
// the matmul engine's micro-kernels are compiled while this worker waits for its first launch
matmul2d.prepare();
{
  // tier the micro-kernels up before real work arrives (this worker is idle until then)
  const m = 32, n = 64, k = 256, a = new Float32Array(m * k).fill(0.5), b = new Float32Array(k * n).fill(0.25), c = new Float32Array(m * n);
  for (let r = 0; r < 12; r++) matmul2d({ a, aOff: 0, sam: k, sak: 1, b, bOff: 0, sbk: 1, sbn: k, c, cOff: 0, scm: n, scn: 1, m, n, k });
}`;
}

/** Chunks each thread gets on average: enough that the running threads absorb a stalled one's share. */
const CHUNKS_PER_THREAD = 4;
/** Least work (elements or multiply-adds) worth a chunk: claiming one costs a compare-and-swap. */
const MIN_CHUNK_WORK = 1 << 15;
/** the JS pool's own control slots (after the protocol's): [BOOTED + w] worker w has booted */
const BOOTED = CTL_SLOTS;

/**
 * Cuts [0, extent) into chunks: about CHUNKS_PER_THREAD per thread, in multiples of `grain`
 * units (the least a chunk is worth), but never fewer chunks than threads while the loop has
 * that many units (the static split's parallelism).
 */
export function planChunks(extent: number, threads: number, grain = 1): { size: number; chunks: number } {
  const g = Math.max(1, Math.floor(grain));
  let size = Math.ceil(Math.max(Math.ceil(extent / (threads * CHUNKS_PER_THREAD)), g) / g) * g;
  // a large grain never costs parallelism the static split had: at most one chunk per thread then
  size = Math.min(size, Math.ceil(extent / threads));
  size = Math.max(1, size, Math.ceil(extent / MAX_CHUNKS));
  return { size, chunks: Math.ceil(extent / size) };
}

/**
 * The grain (least units of the split loop per chunk) for kernel `k`: MIN_CHUNK_WORK of work,
 * and for a matmul split by rows, 64 rows in whole 8-row tiles, since every chunk packs all
 * of B again. `splitsColumns`: the backend splits a few-row matmul by columns instead (wasm),
 * where each chunk packs all of A: then 64 columns' worth of the range.
 */
export function chunkGrain(k: LoopKernel, extent: number, work: number, splitsColumns = false): number {
  let g = Math.ceil(MIN_CHUNK_WORK / Math.max(1, work / Math.max(1, extent)));
  if (k.kind === 'matmul' && !splitsBatch(k)) {
    const rows = splitsColumns && k.m <= 512 && k.m < k.n ? Math.ceil((64 * k.m) / k.n) : 64;
    g = Math.ceil(Math.max(g, rows) / 8) * 8;
  }
  return g;
}

export class ThreadPool {
  private readonly workers: WorkerLike[] = [];
  private readonly sent: Set<number>[] = [];
  private readonly ids = new Map<string, number>();
  /** the launch protocol's control (chunk-protocol.ts), then [BOOTED + w] worker w has booted */
  private readonly control: ChunkControl;
  /** workers known to have booted (read from the control until they have) */
  private readonly ready: boolean[] = [];
  /** kernels run split across threads so far */
  launches = 0;
  /** chunks run so far, and how many of them the calling thread ran */
  chunks = 0;
  callerChunks = 0;

  constructor(
    wt: WorkerThreads,
    readonly threads: number,
  ) {
    this.control = new ChunkControl(threads);
    for (let i = 0; i < threads - 1; i++) {
      const w = new wt.Worker(workerSource(), { eval: true, workerData: { ctl: this.control.ctl.buffer, index: i }, execArgv: workerExecArgv() });
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
   * Runs `fn` over [0, extent) in chunks the threads claim (see planChunks; `grain`: the least
   * units per chunk, chunkGrain; without it, one chunk per thread as a static split). Buffers
   * the kernel writes must be shared; read-only ones that are not are copied into the message.
   * `used`: the indices of the buffers the kernel touches; only those are posted (a program's
   * buffer list holds every weight of the model, and structured-cloning the ones not yet shared
   * cost seconds per first call in W7; bench/results/coldstart.json). Results do not depend on
   * the chunks: each computes whole rows (panels) of the outermost loop.
   */
  run(source: string, fn: (bufs: readonly TypedArray[], lo: number, hi: number) => void, bufs: readonly TypedArray[], extent: number, used?: readonly number[], grain?: number): void {
    this.launches++;
    const id = this.idOf(source);
    // only booted workers get the message: a worker takes ~60 ms (more on a loaded machine) to
    // start; one that boots later would find the chunks gone anyway
    const workers: number[] = [];
    for (let w = 0; w < this.workers.length; w++) if (this.ready[w] || (this.ready[w] = Atomics.load(this.control.ctl, BOOTED + w) === 1)) workers.push(w);
    const { size, chunks } = planChunks(extent, 1 + workers.length, grain ?? Math.ceil(extent / (1 + workers.length)));
    this.chunks += chunks;
    if (chunks <= 1 || workers.length === 0) {
      this.callerChunks += chunks;
      fn(bufs, 0, extent);
      return;
    }
    let posted: readonly (TypedArray | undefined)[] = bufs;
    if (used) {
      const only: (TypedArray | undefined)[] = new Array(bufs.length);
      for (const i of used) only[i] = bufs[i];
      posted = only;
    }
    const m = this.control.open(chunks, size, extent);
    for (const w of workers) {
      const first = !this.sent[w]!.has(id);
      this.sent[w]!.add(id);
      this.workers[w]!.postMessage({ id, src: first ? source : undefined, bufs: posted, ...m });
    }
    this.callerChunks += this.control.finish(m, (lo, hi) => fn(bufs, lo, hi), true);
  }
}

/**
 * Node options for kernel workers: none. Their source is self-contained CommonJS, and the
 * parent's options change how it runs or slow it down: given explicitly, `-e <script>` and
 * `--input-type=module` made an eval'd worker an ES module (no `require`), and a loader such as
 * `--import tsx` cost each worker ~10 ms of boot while the first call ran. (Left unset, Node
 * would hand workers the parent's options, loaders included.)
 */
export function workerExecArgv(): string[] {
  return [];
}

let pool: ThreadPool | null | undefined;

/** Threads for kernels: KILN_THREADS, else the machine's cores (Node: os, browsers: navigator; 1 = no pool). */
export function threadCount(): number {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined>; getBuiltinModule?: (m: string) => unknown } }).process;
  const env = Number(proc?.env?.KILN_THREADS);
  if (Number.isInteger(env) && env > 0) return env;
  const os = proc?.getBuiltinModule?.('node:os') as { availableParallelism?: () => number } | undefined;
  return os?.availableParallelism?.() ?? (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1;
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
