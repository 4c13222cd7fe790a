// A pool of threads running wasm kernels over the shared heap: each worker instantiates a
// program's module against the same WebAssembly.Memory and runs [lo, hi) ranges of a
// kernel's split loop; the calling thread runs the first range and waits on an Atomics
// counter (as ../js/threads.ts). Node: worker_threads; browsers: Web Workers (module workers
// need cross-origin isolation for shared memory, without which the heap is not shared and
// no pool is made).

import { mathImportsSource } from './imports.js';

interface WorkerLike {
  postMessage(m: unknown): void;
  unref?(): void;
  terminate?(): unknown;
}
type NodeWorkers = { Worker: new (src: string, o: { eval: boolean; workerData: unknown }) => WorkerLike };

function workerBody(): string {
  return `
const math = ${mathImportsSource()};
let memory = null, ctl = null;
const instances = new Map();
function handle(m) {
  if (m.init) { memory = m.init.memory; ctl = new Int32Array(m.init.ctl); return; }
  try {
    let inst = instances.get(m.id);
    if (!inst) { inst = new WebAssembly.Instance(m.mod, { env: { memory }, math }); instances.set(m.id, inst); }
    inst.exports[m.fn](...m.args, m.lo, m.hi, m.scratch, m.aux);
  } catch (e) {
    Atomics.store(ctl, 1, 1);
  }
  Atomics.sub(ctl, 0, 1);
  Atomics.notify(ctl, 0);
}`;
}

export class WasmPool {
  private readonly workers: WorkerLike[] = [];
  private readonly sent: Set<number>[] = [];
  private readonly ctl = new Int32Array(new SharedArrayBuffer(8));
  /** the main thread may block (Node); a browser's main thread must spin */
  private readonly canWait: boolean;
  launches = 0;

  constructor(spawn: (body: string) => WorkerLike, readonly threads: number, memory: WebAssembly.Memory, canWait: boolean) {
    this.canWait = canWait;
    for (let i = 0; i < threads - 1; i++) {
      const w = spawn(workerBody());
      w.unref?.(); // an idle pool never keeps the process alive
      w.postMessage({ init: { memory, ctl: this.ctl.buffer } });
      this.workers.push(w);
      this.sent.push(new Set());
    }
  }

  /**
   * Runs `fn` of module `id` over [0, extent) split in one range per thread; `scratch[t]` is
   * thread t's scratch address. `local` runs a range on this thread (and reruns failed ones,
   * so a worker's error surfaces here with its message).
   */
  run(id: number, mod: WebAssembly.Module, fn: string, args: readonly number[], extent: number, scratch: readonly number[], aux: number, local: (lo: number, hi: number, scratch: number) => void): void {
    this.launches++;
    const parts = Math.min(this.threads, extent);
    const bounds = Array.from({ length: parts + 1 }, (_, i) => Math.round((i * extent) / parts));
    Atomics.store(this.ctl, 0, parts - 1);
    Atomics.store(this.ctl, 1, 0);
    for (let w = 0; w < parts - 1; w++) {
      const first = !this.sent[w]!.has(id);
      this.sent[w]!.add(id);
      this.workers[w]!.postMessage({ id, mod: first ? mod : undefined, fn, args, lo: bounds[w + 1], hi: bounds[w + 2], scratch: scratch[w + 1], aux });
    }
    local(bounds[0]!, bounds[1]!, scratch[0]!);
    for (let v = Atomics.load(this.ctl, 0); v !== 0; v = Atomics.load(this.ctl, 0)) {
      if (this.canWait) Atomics.wait(this.ctl, 0, v, 1000);
    }
    if (Atomics.load(this.ctl, 1) !== 0) {
      for (let w = 0; w < parts - 1; w++) local(bounds[w + 1]!, bounds[w + 2]!, scratch[0]!);
    }
  }
}

/** A pool, or the reason there is none. */
export function createPool(threads: number, memory: WebAssembly.Memory, shared: boolean): WasmPool | string {
  if (!shared) return 'the wasm memory is not shared';
  if (threads <= 1) return 'one thread requested (KILN_THREADS=1) or one core';
  const proc = (globalThis as { process?: { getBuiltinModule?: (m: string) => unknown } }).process;
  const wt = proc?.getBuiltinModule?.('node:worker_threads') as NodeWorkers | undefined;
  if (wt) {
    return new WasmPool((body) => new wt.Worker(`const { parentPort } = require('node:worker_threads');${body}\nparentPort.on('message', handle);`, { eval: true, workerData: null }), threads, memory, true);
  }
  const g = globalThis as { Worker?: new (url: string) => WorkerLike; Blob?: typeof Blob; URL?: typeof URL };
  if (g.Worker && g.Blob && g.URL) {
    return new WasmPool((body) => new g.Worker!(g.URL!.createObjectURL(new g.Blob!([`${body}\nself.onmessage = (e) => handle(e.data);`], { type: 'text/javascript' }))), threads, memory, false);
  }
  return 'no worker threads on this platform';
}
