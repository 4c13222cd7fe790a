// A minimal Web Worker on top of node:worker_threads, for peers (jax-js) that run their
// WebAssembly kernels on several threads only when a global `Worker` exists. Node 20 has
// none, so without this shim jax-js's wasm backend is single-threaded in Node.
//
// What jax-js needs (and all this covers): `new Worker(blobUrl, { type: 'module' })` with
// code from URL.createObjectURL(new Blob([source])); `postMessage` both ways (shared
// WebAssembly.Memory and WebAssembly.Module are cloneable across worker_threads);
// `onmessage` / `onerror` properties; `self.onmessage` and a global `postMessage` inside.
// The Blob's text can only be read asynchronously while the constructor is synchronous, so
// the worker starts with a bootstrap that queues messages until the source arrives, then
// imports it as a data: URL module and replays the queue.

import { resolveObjectURL } from 'node:buffer';
import * as os from 'node:os';
import { Worker as NodeWorker } from 'node:worker_threads';

const BOOTSTRAP = `
const { parentPort } = require('node:worker_threads');
globalThis.self = globalThis;
globalThis.postMessage = (d) => parentPort.postMessage(d);
let queue = [];
parentPort.on('message', async (m) => {
  if (queue !== null && m && m.__shimSource !== undefined) {
    await import('data:text/javascript;base64,' + Buffer.from(m.__shimSource).toString('base64'));
    const q = queue; queue = null;
    for (const d of q) globalThis.onmessage?.({ data: d });
    return;
  }
  if (queue !== null) { queue.push(m); return; }
  globalThis.onmessage?.({ data: m });
});
`;

const counters = { workers: 0, messages: 0 };

/** Workers created and messages posted to them (a pool that was used posted more than its init messages). */
export const shimCounters = (): { workers: number; messages: number } => ({ ...counters });

class ShimWorker {
  onmessage: ((e: { data: unknown }) => void) | null = null;
  onerror: ((e: { message: string }) => void) | null = null;
  private readonly w: NodeWorker;

  constructor(url: string | URL, _opts?: { type?: string }) {
    this.w = new NodeWorker(BOOTSTRAP, { eval: true });
    counters.workers++;
    // the pool's threads must not keep a finished benchmark process alive
    this.w.unref();
    this.w.on('message', (data: unknown) => this.onmessage?.({ data }));
    this.w.on('error', (e: Error) => this.onerror?.({ message: e.message }));
    const blob = resolveObjectURL(String(url));
    if (!blob) throw new Error(`worker shim: ${String(url)} is not a blob: URL of this process`);
    void blob.text().then((src) => this.w.postMessage({ __shimSource: src }));
  }

  postMessage(data: unknown): void {
    counters.messages++;
    this.w.postMessage(data);
  }

  terminate(): void {
    void this.w.terminate();
  }
}

export interface ShimInfo {
  installed: boolean;
  threads: number;
  reason: string;
}

/**
 * Installs globalThis.Worker (and navigator.hardwareConcurrency, which jax-js reads for the
 * pool size; Node 20 has no navigator) unless a Worker already exists. Must run before
 * the peer's backend is initialized (jax-js checks for Worker when its wasm backend starts).
 */
export function installWorkerShim(threads = os.cpus().length): ShimInfo {
  const g = globalThis as Record<string, unknown>;
  if (typeof g['Worker'] !== 'undefined') return { installed: false, threads, reason: 'a global Worker already exists' };
  g['Worker'] = ShimWorker;
  if (typeof g['navigator'] === 'undefined') g['navigator'] = { hardwareConcurrency: threads };
  return { installed: true, threads, reason: 'Worker mapped onto node:worker_threads' };
}
