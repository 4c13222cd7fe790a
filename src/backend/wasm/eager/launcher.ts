// The eager kernels of one wasm backend: each family (kernels.ts) is prepared as one module the
// first time an op needs it, and every launch writes its sizes into one float64 heap buffer
// (and its scalar operands into one float32 buffer) that the kernel reads at entry. Launches
// go through WasmBackend.launch: the same threads, scratch and dynamic-size handling as
// compiled programs. Launches are synchronous, so one sizes buffer serves them all.

import type { BackendBuffer, PreparedKernel } from '../../backend.js';
import { JsBuffer } from '../../js/index.js';
import type { LoopKernel } from '../../../compiler/loop-ir.js';
import type { WasmBackend } from '../index.js';
import { copyFamily, matmulFamily, pointwiseFamily, reduceFamily } from './kernels.js';

export type Family = 'pointwise' | 'copy' | 'reduce' | 'matmul';
const FAMILIES: Record<Family, () => Map<string, LoopKernel>> = { pointwise: pointwiseFamily, copy: copyFamily, reduce: reduceFamily, matmul: matmulFamily };

/** slots of the sizes buffer (the largest layout, matmul, uses 15) and of the scalar operands */
const SIZE_SLOTS = 16;
export const PARAM_SLOTS = 8;

/** What building the families cost and what could not be built (kiln.stats().eager). */
export interface EagerBuildStats {
  modules: number;
  kernels: number;
  buildMs: number;
  /** kernels the wasm renderer could not emit (their ops run on the JS kernels), with why */
  skipped: string[];
}

export class EagerLauncher {
  private readonly families = new Map<Family, Map<string, PreparedKernel | null>>();
  private readonly sizes: JsBuffer;
  /** scalar operands (pointwise params), read as broadcast leaves: in float32, and in float64 (EXACT_SCALAR_OPS) */
  readonly params: JsBuffer;
  readonly params64: JsBuffer;
  readonly stats: EagerBuildStats = { modules: 0, kernels: 0, buildMs: 0, skipped: [] };

  constructor(readonly wasm: WasmBackend) {
    this.sizes = wasm.heap.allocBuffer((d) => new JsBuffer('float64', d), 'float64', SIZE_SLOTS);
    this.params = wasm.heap.allocBuffer((d) => new JsBuffer('float32', d), 'float32', PARAM_SLOTS);
    this.params64 = wasm.heap.allocBuffer((d) => new JsBuffer('float64', d), 'float64', PARAM_SLOTS);
  }

  /** The prepared kernel `key` of `family` (built with its family on first use), or null: none. */
  kernel(family: Family, key: string): PreparedKernel | null {
    let f = this.families.get(family);
    if (!f) {
      const t0 = performance.now();
      const defs = FAMILIES[family]();
      const keys = [...defs.keys()];
      const prepared = this.wasm.prepareModule([...defs.values()], (k, e) => this.stats.skipped.push(`${k.name}: ${e.message}`));
      f = new Map(keys.map((k, i) => [k, prepared[i]!]));
      this.families.set(family, f);
      this.stats.modules++;
      this.stats.kernels += prepared.filter(Boolean).length;
      this.stats.buildMs += performance.now() - t0;
    }
    return f.get(key) ?? null;
  }

  /**
   * Moves every buffer into the heap (a no-op for eager buffers, which live there) before an op
   * writes anything, so that running out of heap memory falls back to the JS kernels cleanly.
   */
  adopt(bufs: readonly BackendBuffer[]): boolean {
    try {
      for (const b of bufs) this.wasm.heap.adopt(b as JsBuffer);
      return true;
    } catch (e) {
      if (e instanceof RangeError) return false;
      throw e;
    }
  }

  /** Runs `k` over `bufs` (its buffers but the sizes buffer) at `sizes`. */
  run(k: PreparedKernel, bufs: readonly BackendBuffer[], sizes: readonly number[]): void {
    const d = this.sizes.data;
    for (let i = 0; i < sizes.length; i++) d[i] = sizes[i]!;
    this.wasm.launch(k, { kind: 'loop', buffers: [...bufs, this.sizes] });
  }
}
