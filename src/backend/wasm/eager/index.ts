// The default eager backend where WebAssembly SIMD exists: the JS backend (same buffers,
// JsBuffer over typed arrays, and every kernel it has) whose float32 pointwise ops, copies and
// casts, reductions and matmul run on wasm kernels built once per process from the compiler's
// own loop IR (kernels.ts), over the process heap that compiled wasm programs use too.
// Whatever has no wasm kernel (float64 and int arithmetic, gather/scatter, windows, random
// numbers, ...) runs on the JS kernels over the same memory. Synchronous, deterministic (no
// reduction splits across threads), the same code in Node and browsers.

import type { Backend, BackendBuffer, PreparedKernel } from '../../backend.js';
import type { KernelArgs, KernelSpec } from '../../../ir/kernel-spec.js';
import type { DType } from '../../../core/dtype.js';
import { OutOfMemoryError } from '../../../core/errors.js';
import { JsBackend, JsBuffer, specKey } from '../../js/index.js';
import { processHeap } from '../heap.js';
import { wasmBackend, wasmUnavailableReason, type WasmBackend } from '../index.js';
import { EagerLauncher, eagerBuild } from './launcher.js';
import { runMatmul } from './matmul.js';
import { runPointwise } from './pointwise.js';
import { runReduce } from './reduce.js';

interface EagerKernel extends PreparedKernel {
  run(args: KernelArgs): void;
}

/** Launches that ran on wasm kernels and on the JS kernels, the latter per kernel kind (kiln.eagerStats()). */
export const eagerCounters = { wasmLaunches: 0, jsLaunches: 0 };
const jsByKind = new Map<string, number>();

function countJs(kind: string): void {
  eagerCounters.jsLaunches++;
  jsByKind.set(kind, (jsByKind.get(kind) ?? 0) + 1);
}

export class WasmEagerBackend extends JsBackend {
  private readonly eager = new Map<string, EagerKernel>();
  /** one launcher per wasm backend (setWasmThreads makes a new one over the same heap) */
  private readonly launchers = new WeakMap<WasmBackend, EagerLauncher>();

  /** The launcher over the process's wasm backend; null when the heap has no room for its buffers. */
  private launcher(): EagerLauncher | null {
    const w = wasmBackend();
    let l = this.launchers.get(w);
    if (!l) {
      try {
        l = new EagerLauncher(w);
      } catch (e) {
        if (e instanceof RangeError) return null;
        throw e;
      }
      this.launchers.set(w, l);
    }
    return l;
  }

  /**
   * Buffers live in the process heap; a plain typed array when the heap is full (its
   * OutOfMemoryError), so only what fits nowhere is an error, the JS allocation's.
   */
  override alloc(dtype: DType, size: number, hint?: 'shared'): BackendBuffer {
    try {
      return processHeap().allocBuffer((data) => new JsBuffer(dtype, data), dtype, size);
    } catch (e) {
      if (!(e instanceof RangeError || e instanceof OutOfMemoryError)) throw e;
      return super.alloc(dtype, size, hint);
    }
  }

  override prepare(spec: KernelSpec): PreparedKernel {
    // a compiled program's kernels on the JS renderer are not eager launches
    if (spec.kind === 'loop') return super.prepare(spec);
    const key = specKey(spec);
    let k = this.eager.get(key);
    if (k) return k;
    let js: EagerKernel | null = null;
    const onJs = (args: KernelArgs) => {
      countJs(spec.kind);
      (js ??= super.prepare(spec) as EagerKernel).run(args);
    };
    if (spec.kind !== 'pointwise' && spec.kind !== 'reduce' && spec.kind !== 'matmul') {
      // gather/scatter, index ops, windows, scans, sorts, random numbers: JS kernels only
      k = { spec, run: onJs };
    } else {
      const wasm = (args: KernelArgs): boolean => {
        const l = this.launcher();
        if (!l) return false;
        if (spec.kind === 'pointwise') return runPointwise(l, this, spec, args as Extract<KernelArgs, { kind: 'pointwise' }>);
        if (spec.kind === 'reduce') return runReduce(l, spec, args as Extract<KernelArgs, { kind: 'reduce' }>);
        return runMatmul(l, spec, args as Extract<KernelArgs, { kind: 'matmul' }>);
      };
      k = {
        spec,
        run: (args) => {
          if (wasm(args)) eagerCounters.wasmLaunches++;
          else onJs(args);
        },
      };
    }
    this.eager.set(key, k);
    return k;
  }
}

export interface EagerStats {
  /** the default eager backend: 'wasm' (WasmEagerBackend) or 'js' (the JS kernels alone), and why */
  backend: 'wasm' | 'js';
  reason: string;
  /** eager kernel launches that ran on wasm kernels, and on the JS kernels (other dtypes and ops) */
  wasmLaunches: number;
  jsLaunches: number;
  /** the JS launches per kernel kind ('pointwise', 'reduce', 'matmul': dtypes or layouts without a wasm kernel; 'gather', 'im2col', 'random', ...: ops that have none) */
  jsByKind: Record<string, number>;
  /** modules built so far (one per kernel group), the kernels in them, the time building them took */
  modules: number;
  kernels: number;
  buildMs: number;
  /** kernels the wasm renderer could not emit (their ops run on the JS kernels) */
  skipped: string[];
}

/** What the default eager backend is and did (kiln.eagerStats()). */
export function eagerStats(backend: Backend): EagerStats {
  const wasm = backend instanceof WasmEagerBackend;
  return { backend: wasm ? 'wasm' : 'js', reason: wasm ? 'WebAssembly SIMD available' : jsReason(), ...eagerCounters, jsByKind: Object.fromEntries(jsByKind), ...eagerBuild, skipped: [...eagerBuild.skipped] };
}

function jsReason(): string {
  return envEager() === 'js' ? 'KILN_EAGER=js' : (wasmUnavailableReason() ?? 'the default backend was replaced (kiln.setDefaultBackend)');
}

const envEager = (): string | undefined => (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.KILN_EAGER;

/**
 * The backend eager ops run on by default: WasmEagerBackend where WebAssembly SIMD exists and
 * KILN_EAGER is not 'js' (then the JS kernels alone: the reference for debugging and benchmarks).
 */
export function defaultEagerBackend(): Backend {
  if (envEager() === 'js' || wasmUnavailableReason() !== null) return new JsBackend();
  return new WasmEagerBackend();
}
