// Weights placed where compiled kernels read them, ahead of the first call. The first launch
// of a kernel over a weight otherwise copies it there: into shared memory for the JS backend's
// worker threads (JsBuffer.share), into the heap for wasm (Heap.adopt). For W7 that is 56 MB,
// 150-300 ms on the loaded benchmark machine (bench/results/coldstart.json), paid inside the
// first call. Placement only moves bytes: values, shapes and tensors stay the same, and eager
// kernels keep working on the moved memory. Browser-safe.

import type { Backend } from '../../backend/backend.js';
import { runtime } from '../../ops/dispatch.js';
import { Tensor } from '../../tensor/tensor.js';
import { resolveKernelBackend } from '../../backend/registry.js';
import type { CompileOptions } from '../compile.js';

/** Moves weights into the memory the kernel backend `kb` reads. */
export function placeWeights(kb: Backend, weights: Iterable<Tensor>): void {
  if (!kb.placeWeights) return;
  const bufs = [];
  for (const t of weights) if (!t.isDisposed && !t.trace) bufs.push(t.storage.buf);
  kb.placeWeights(bufs);
}

/**
 * kiln.compile(fn, { captures }): the captures are the function's weights (named so a warm start
 * can bind them), so they are placed when it is compiled, before the first call (where the
 * kernels run on JS or wasm; native reads the typed arrays as they are). A backend that cannot
 * run here is left to report itself at the first call.
 */
export function placeCaptures(opts: CompileOptions): void {
  if (!opts.captures || opts.fuse === false || opts.backend === 'eager') return;
  let kb: Backend;
  try {
    kb = resolveKernelBackend(opts.backend, runtime.backend).backend;
  } catch {
    return;
  }
  placeWeights(kb, Object.values(opts.captures).filter((t): t is Tensor => t instanceof Tensor));
}
