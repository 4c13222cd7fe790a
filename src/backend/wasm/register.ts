// Registers the wasm backend with kiln.compile (imported by the browser-safe 'kilnjs' entry).

import { registerKernelBackend } from '../registry.js';
import { log } from '../../core/logs.js';
import { statsSections } from '../../core/stats.js';
import { ArgumentError } from '../../core/errors.js';
import { JsBackend } from '../js/index.js';
import { WasmBackend, wasmBackend, wasmStats, wasmUnavailableReason } from './index.js';

let said = false;

registerKernelBackend('wasm', (eager) => {
  if (eager instanceof WasmBackend) return eager;
  if (!(eager instanceof JsBackend)) {
    throw new ArgumentError(`backend 'wasm' runs over JS buffers, but the default backend is '${eager.name}'`, 'kiln.compile', "compile with the default backend's own kernels, or make the JS backend the default");
  }
  const b = wasmBackend();
  b.log = (msg) => log('perf', `wasm: ${msg}`);
  if (!said) {
    said = true;
    if (b.singleThreadReason) log('perf', `wasm: kernels run on one thread: ${b.singleThreadReason}`);
    statsSections.wasm = () => {
      const s = wasmStats();
      return { threads: s.threads, singleThreadReason: s.singleThreadReason, modules: s.modules, kernels: s.kernels, kernelHits: s.kernelHits, compileMs: s.compileMs, parallelLaunches: s.parallelLaunches, heapBytesInUse: s.heap.bytesInUse };
    };
  }
  return b;
}, {
  available: wasmUnavailableReason,
  rank: 20,
  summary: 'wasm: WebAssembly with f32x4 SIMD from the loop IR, threads over shared memory (no compiler needed; compiles in milliseconds)',
});
