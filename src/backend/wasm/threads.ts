// A pool of threads running wasm kernels over the shared heap: each worker instantiates a
// program's module against the same WebAssembly.Memory and runs [lo, hi) chunks of a
// kernel's split loop, claimed from a shared Atomics counter by every thread, the caller
// included, which then waits until all are done: the launch protocol of ../js/chunk-protocol.ts
// and the chunk plan of ../js/threads.ts, both shared with the JS pool (a descheduled thread's
// share goes to the threads that run). Node: worker_threads; browsers: Web Workers (module
// workers need cross-origin isolation for shared memory, without which the heap is not shared
// and no pool is made).

import { mathImportsSource } from './imports.js';
import { planChunks, workerExecArgv } from '../js/threads.js';
import { ChunkControl, claimChunksSource } from '../js/chunk-protocol.js';

interface WorkerLike {
  postMessage(m: unknown): void;
  unref?(): void;
  terminate?(): unknown;
}
type NodeWorkers = { Worker: new (src: string, o: { eval: boolean; workerData: unknown; execArgv?: string[] }) => WorkerLike };

function workerBody(): string {
  return `
const __name = (f) => f;
const math = ${mathImportsSource()};
const claimChunks = ${claimChunksSource()};
let memory = null, ctl = null;
const modules = new Map(), instances = new Map();
function instance(m) {
  let inst = instances.get(m.id);
  if (!inst) { inst = new WebAssembly.Instance(modules.get(m.id), { env: { memory }, math }); instances.set(m.id, inst); }
  return inst.exports[m.fn];
}
function handle(m) {
  if (m.init) { memory = m.init.memory; ctl = new Int32Array(m.init.ctl); return; }
  // kept even when this message comes too late to claim a chunk: later ones do not carry it
  if (m.mod && !modules.has(m.id)) modules.set(m.id, m.mod);
  claimChunks(ctl, m, () => instance(m), (f, lo, hi) => f(...m.args, lo, hi, m.scratch, m.aux));
}`;
}

export class WasmPool {
  private readonly workers: WorkerLike[] = [];
  private readonly sent: Set<number>[] = [];
  /** the launch protocol's control (chunk-protocol.ts) */
  private readonly control = new ChunkControl();
  /** the main thread may block (Node); a browser's main thread must spin */
  private readonly canWait: boolean;
  launches = 0;
  /** chunks run so far, and how many of them the calling thread ran */
  chunks = 0;
  callerChunks = 0;

  constructor(spawn: (body: string) => WorkerLike, readonly threads: number, memory: WebAssembly.Memory, canWait: boolean) {
    this.canWait = canWait;
    for (let i = 0; i < threads - 1; i++) {
      const w = spawn(workerBody());
      w.unref?.(); // an idle pool never keeps the process alive
      w.postMessage({ init: { memory, ctl: this.control.ctl.buffer } });
      this.workers.push(w);
      this.sent.push(new Set());
    }
  }

  /**
   * Runs `fn` of module `id` over [0, extent) in chunks the threads claim (planChunks; `grain`:
   * the least units per chunk, see chunkGrain); `scratch[t]` is thread t's scratch address
   * (a thread's chunks run one after another, so one region per thread still suffices).
   * `local` runs a chunk on this thread (and reruns failed ones, so a worker's error surfaces
   * here with its message).
   */
  run(id: number, mod: WebAssembly.Module, fn: string, args: readonly number[], extent: number, scratch: readonly number[], aux: number, local: (lo: number, hi: number, scratch: number) => void, grain?: number): void {
    this.launches++;
    const { size, chunks } = planChunks(extent, this.threads, grain ?? Math.ceil(extent / this.threads));
    this.chunks += chunks;
    if (chunks <= 1) {
      this.callerChunks += chunks;
      local(0, extent, scratch[0]!);
      return;
    }
    const m = this.control.open(chunks, size, extent);
    for (let w = 0; w < this.workers.length; w++) {
      const first = !this.sent[w]!.has(id);
      this.sent[w]!.add(id);
      this.workers[w]!.postMessage({ id, mod: first ? mod : undefined, fn, args, scratch: scratch[w + 1], aux, ...m });
    }
    const own = scratch[0]!;
    this.callerChunks += this.control.finish(m, (lo, hi) => local(lo, hi, own), this.canWait);
  }
}

const nodeWorkers = (): NodeWorkers | undefined => {
  const proc = (globalThis as { process?: { getBuiltinModule?: (m: string) => unknown } }).process;
  return proc?.getBuiltinModule?.('node:worker_threads') as NodeWorkers | undefined;
};
type BrowserGlobals = { Worker?: new (url: string) => WorkerLike; Blob?: typeof Blob; URL?: typeof URL };
const browserWorkers = (): boolean => {
  const g = globalThis as BrowserGlobals;
  return !!(g.Worker && g.Blob && g.URL);
};

/** Why `threads` threads over this memory cannot have a pool (null: they can), without making one. */
export function poolUnavailableReason(threads: number, shared: boolean): string | null {
  if (!shared) return 'the wasm memory is not shared';
  if (threads <= 1) return 'one thread requested (KILN_THREADS=1) or one core';
  if (!nodeWorkers() && !browserWorkers()) return 'no worker threads on this platform';
  return null;
}

/** A pool, or the reason there is none. */
export function createPool(threads: number, memory: WebAssembly.Memory, shared: boolean): WasmPool | string {
  const why = poolUnavailableReason(threads, shared);
  if (why) return why;
  const wt = nodeWorkers();
  if (wt) {
    return new WasmPool((body) => new wt.Worker(`const { parentPort } = require('node:worker_threads');${body}\nparentPort.on('message', handle);`, { eval: true, workerData: null, execArgv: workerExecArgv() }), threads, memory, true);
  }
  const g = globalThis as BrowserGlobals;
  return new WasmPool((body) => new g.Worker!(g.URL!.createObjectURL(new g.Blob!([`${body}\nself.onmessage = (e) => handle(e.data);`], { type: 'text/javascript' }))), threads, memory, false);
}
