// The eager kernels of one wasm backend: each is built the first time an op needs it, together
// with the few kernels of its group (a pointwise op's operand walks, a reduction's two inner
// loops; a matmul or copy kernel alone), as one module kept for the process, so a process
// builds only what it uses and its first op builds a handful of kernels. Every launch writes
// its sizes into one float64 heap buffer (and its scalar operands into one float32 and one
// float64 buffer) that the kernel reads at entry. Launches go through WasmBackend.launch: the
// same threads, scratch and dynamic-size handling as compiled programs. Launches are
// synchronous, so one sizes buffer serves them all.

import type { BackendBuffer, PreparedKernel } from '../../backend.js';
import { JsBuffer } from '../../js/index.js';
import type { LoopKernel } from '../../../ir/loop-ir.js';
import { WasmCompileError, type WasmBackend } from '../index.js';
import { copyFamily, matmulFamily, pointwiseFamily, reduceFamily } from './kernels.js';

export type Family = 'pointwise' | 'copy' | 'reduce' | 'matmul';
const FAMILIES: Record<Family, () => Map<string, LoopKernel>> = { pointwise: pointwiseFamily, copy: copyFamily, reduce: reduceFamily, matmul: matmulFamily };
/** the group (one module) of a kernel key: pointwise and reduce keys start with their op */
const GROUP: Record<Family, (key: string) => string> = { pointwise: (k) => k.slice(0, k.indexOf('|')), reduce: (k) => k.slice(0, k.indexOf('|')), copy: (k) => k, matmul: (k) => k };

/** slots of the sizes buffer (the largest layout, matmul, uses 15) and of the scalar operands */
const SIZE_SLOTS = 16;
export const PARAM_SLOTS = 8;

/** What building the families cost in this process and what could not be built (kiln.eagerStats()). */
export interface EagerBuildStats {
  modules: number;
  kernels: number;
  buildMs: number;
  /** kernels the wasm renderer could not emit (their ops run on the JS kernels), with why */
  skipped: string[];
}

export const eagerBuild: EagerBuildStats = { modules: 0, kernels: 0, buildMs: 0, skipped: [] };

export class EagerLauncher {
  /** kernel definitions per family (made on first use; cheap) */
  private readonly defs = new Map<Family, Map<string, LoopKernel>>();
  /** prepared kernels by `family:key` (null: no kernel, or the renderer could not emit it) */
  private readonly built = new Map<string, PreparedKernel | null>();
  private readonly sizes: JsBuffer;
  /** scalar operands (pointwise params), read as broadcast leaves: in float32, and in float64 (EXACT_SCALAR_OPS) */
  readonly params: JsBuffer;
  readonly params64: JsBuffer;

  constructor(readonly wasm: WasmBackend) {
    this.sizes = wasm.heap.allocBuffer((d) => new JsBuffer('float64', d), 'float64', SIZE_SLOTS);
    this.params = wasm.heap.allocBuffer((d) => new JsBuffer('float32', d), 'float32', PARAM_SLOTS);
    this.params64 = wasm.heap.allocBuffer((d) => new JsBuffer('float64', d), 'float64', PARAM_SLOTS);
  }

  /** The prepared kernel `key` of `family` (built with its group on first use), or null: none. */
  kernel(family: Family, key: string): PreparedKernel | null {
    const id = `${family}:${key}`;
    const hit = this.built.get(id);
    if (hit !== undefined) return hit;
    let defs = this.defs.get(family);
    if (!defs) this.defs.set(family, (defs = FAMILIES[family]()));
    if (!defs.has(key)) {
      this.built.set(id, null);
      return null;
    }
    const t0 = performance.now();
    const group = GROUP[family](key);
    const members = [...defs].filter(([k]) => GROUP[family](k) === group);
    let prepared: (PreparedKernel | null)[];
    try {
      prepared = this.wasm.prepareModule(members.map(([, k]) => k), (k, e) => eagerBuild.skipped.push(`${k.name}: ${e.message}`));
    } catch (e) {
      // the engine refused the module (a kiln bug, or a browser's limit on compiling on the main thread): its ops run on the JS kernels
      if (!(e instanceof WasmCompileError)) throw e;
      eagerBuild.skipped.push(`${members.map(([k]) => k).join(', ')}: ${e.engineMessage}`);
      prepared = members.map(() => null);
    }
    members.forEach(([k], i) => this.built.set(`${family}:${k}`, prepared[i]!));
    if (prepared.some(Boolean)) eagerBuild.modules++;
    eagerBuild.kernels += prepared.filter(Boolean).length;
    eagerBuild.buildMs += performance.now() - t0;
    return this.built.get(id)!;
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
