// The wasm backend: compiled programs' loop kernels as WebAssembly emitted directly from the
// loop IR (render.ts; f32x4 SIMD), run over one heap memory (heap.ts) split across threads
// (threads.ts) where memory can be shared. Buffers stay JsBuffers (adopted into the heap on
// first use), eager kernels and every spec other than `loop` are the wrapped JS backend's.
// Browser-safe: Node-only parts (worker_threads) are reached through process.getBuiltinModule.

import { PARALLEL_WORK } from '../js/chunk-protocol.js';
import type { WasmStatsSection } from '../../core/stats.js';
import type { Backend, BackendBuffer, PreparedKernel } from '../backend.js';
import type { KernelArgs, KernelSpec } from '../../ir/kernel-spec.js';
import type { DType, TypedArray } from '../../core/dtype.js';
import { JsBackend, JsBuffer } from '../js/index.js';
import { JsBufferBackend } from '../js/buffer-backend.js';
import { chunkGrain, threadCount } from '../js/threads.js';
import { kernelExtent, kernelWork, type LoopKernel } from '../../ir/loop-ir.js';
import { Heap, processHeap, type HeapStats } from './heap.js';
import { describeKernel, renderModule, renderModuleSkipping, type RenderedKernel } from './render.js';
import { createPool, poolUnavailableReason, type WasmPool } from './threads.js';
import { mathImports } from './imports.js';
import { WasmCompileError, WasmUnavailableError } from './errors.js';
import { DynamicLaunch } from './dynamic.js';
import { dropImported, exportWasmCode, importedEntry, importWasmCode, rememberModule } from './code-cache.js';
import { packedB, type PackedOperands } from './prepack.js';
import { panelColumns } from './matmul.js';

export { WasmCompileError, WasmUnavailableError } from './errors.js';
export { renderModule } from './render.js';

interface CompiledFn {
  readonly fn: (...a: number[]) => void;
  readonly r: RenderedKernel;
  readonly moduleId: number;
  readonly module: WebAssembly.Module;
}

interface WasmKernel extends PreparedKernel {
  readonly wasm: true;
  readonly key: string;
  readonly kernel: LoopKernel;
  readonly extent: number;
  readonly parallel: boolean;
  /** least units of the split loop per chunk threads claim (chunkGrain; per launch when dynamic) */
  readonly grain: number;
  compiled: CompiledFn | null;
  /** the kernel's own scratch (a matmul accumulator), allocated on first launch */
  aux: number;
  /** dynamic kernels (issue 7): extent, work and aux size evaluated per launch from the sizes */
  readonly dyn: DynamicLaunch | null;
  /** a matmul's prepacked B per storage (prepack.ts) */
  readonly packs: PackedOperands;
}

/** kiln.stats().wasm's fields, with the heap's whole statistics instead of its bytes in use. */
export interface WasmStats extends Omit<WasmStatsSection, 'heapBytesInUse'> {
  heap: HeapStats;
}

const counters = { modules: 0, kernels: 0, kernelHits: 0, compileMs: 0 };
/** compiled modules by their bytes */
const modules = new Map<string, WebAssembly.Module>();
/** bytesKey of module bytes restored from the compile cache */
const cachedKeys = new WeakMap<Uint8Array, string>();

/** Whether this runtime has WebAssembly with 128-bit SIMD: null, or why not. */
export function wasmUnavailableReason(): string | null {
  if (typeof WebAssembly === 'undefined') return 'WebAssembly is not available';
  // (module (func (result v128) v128.const 0)): validates only where SIMD is supported
  const probe = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 22, 1, 20, 0, 253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11]);
  return WebAssembly.validate(probe) ? null : 'WebAssembly SIMD (128-bit) is not supported';
}

function bytesKey(b: Uint8Array): string {
  // FNV-1a over the bytes, plus the length (collisions are checked against the bytes)
  let h1 = 0x811c9dc5, h2 = 0x01000193;
  for (let i = 0; i < b.length; i++) {
    h1 = Math.imul(h1 ^ b[i]!, 16777619);
    h2 = Math.imul(h2 ^ b[i]!, 2246822519);
  }
  return `${b.length}:${(h1 >>> 0).toString(16)}:${(h2 >>> 0).toString(16)}`;
}

function kernelKey(k: LoopKernel): string {
  return JSON.stringify(k, (key, v) => (key === 'name' ? undefined : v));
}

export class WasmBackend extends JsBufferBackend implements Backend {
  readonly name = 'wasm';
  /** dynamic kernels render once and read their sizes at entry (sizes.ts): no per-size compile */
  readonly symbolicKernels = true;
  /** attention as one kernel (attention.ts) */
  readonly attentionKernels = true;
  readonly heap: Heap;
  private readonly pending: WasmKernel[] = [];
  private readonly prepared = new Map<string, WasmKernel>();
  private readonly instances = new Map<number, WebAssembly.Instance>();
  /** compiled kernels by key (functions of this backend's instances, over its memory) */
  private readonly compiledKernels = new Map<string, CompiledFn>();
  /** the worker pool, made at the first parallel launch or prewarm (undefined: not yet) */
  private poolState: WasmPool | null | undefined;
  readonly singleThreadReason: string | null;
  private readonly plannedThreads: number;
  /** per-thread scratch regions (matmul packing), grown on demand */
  private scratch: { addr: number[]; bytes: number } = { addr: [], bytes: 0 };
  private readonly imports: WebAssembly.Imports;
  /** messages for the logs (set by register.ts) */
  log: (msg: string) => void = () => {};

  /** `heap`: the memory to run over (default: a new one; the process's backend uses processHeap()) */
  constructor(js: JsBackend = new JsBackend(), opts: { threads?: number; shared?: boolean; heap?: Heap } = {}) {
    const why = wasmUnavailableReason();
    if (why) throw new WasmUnavailableError(why);
    super(js);
    this.heap = opts.heap ?? new Heap(opts.shared === false);
    this.imports = { env: { memory: this.heap.memory }, math: mathImports() };
    const threads = opts.threads ?? threadCount();
    const noPool = poolUnavailableReason(threads, this.heap.shared);
    this.singleThreadReason = noPool === null ? null : (this.heap.unsharedReason ?? noPool);
    this.plannedThreads = noPool === null ? threads : 1;
  }

  get threads(): number {
    return this.plannedThreads;
  }

  /**
   * The pool, made on first need: eager kernels run over this backend too, and a process that
   * never runs a large kernel never starts a worker (kiln.compile starts them early: prewarm).
   */
  private get pool(): WasmPool | null {
    if (this.poolState === undefined) {
      const p = this.singleThreadReason === null ? createPool(this.plannedThreads, this.heap.memory, this.heap.shared) : null;
      this.poolState = typeof p === 'string' ? null : p;
    }
    return this.poolState;
  }

  /** kiln.compile: the workers start booting now (~60 ms each), not inside the first call. */
  placeWeights(bufs: readonly BackendBuffer[]): void {
    for (const b of bufs) this.heap.adopt(b as JsBuffer);
  }

  prewarm(): void {
    void this.pool;
  }

  // No `outputRecycling`: the heap reuses a freed output's region itself (first fit), so a
  // spare held for the program's next call would only raise the heap's peak.
  alloc(dtype: DType, size: number): BackendBuffer {
    return this.heap.allocBuffer((data) => new JsBuffer(dtype, data), dtype, size);
  }

  prepare(spec: KernelSpec): PreparedKernel {
    if (spec.kind !== 'loop') return this.js.prepare(spec);
    const key = kernelKey(spec.kernel);
    let k = this.prepared.get(key);
    if (!k) {
      const work = kernelWork(spec.kernel);
      const extent = kernelExtent(spec.kernel);
      k = { spec, wasm: true, key, kernel: spec.kernel, extent, parallel: extent > 1 && work >= PARALLEL_WORK, grain: chunkGrain(spec.kernel, extent, work, true), compiled: this.compiledKernels.get(key) ?? this.fromCodeCache(key, spec.kernel), aux: 0, dyn: spec.kernel.sizes ? new DynamicLaunch(spec.kernel, spec.kernel.sizes) : null, packs: new WeakMap() };
      if (k.compiled) counters.kernelHits++;
      else this.pending.push(k);
      this.prepared.set(key, k);
    }
    return k;
  }

  /**
   * Prepares a fixed set of kernels as one module (the eager kernels, ../eager): a kernel the
   * renderer cannot emit gets null (and `skip` is told why) instead of failing the others.
   */
  prepareModule(kernels: readonly LoopKernel[], skip: (k: LoopKernel, e: Error) => void): (PreparedKernel | null)[] {
    const prepared = kernels.map((kernel) => this.prepare({ kind: 'loop', kernel, nBuffers: 0 }) as WasmKernel);
    const failed = new Set<string>();
    this.flush((k, e) => {
      failed.add(kernelKey(k));
      skip(k, e);
    });
    return prepared.map((k) => {
      if (!failed.has(k.key)) return k;
      this.prepared.delete(k.key);
      return null;
    });
  }

  /** Compiles the kernels prepared since the last flush as one module. */
  flush(skip?: (k: LoopKernel, e: Error) => void): void {
    const todo: WasmKernel[] = [];
    for (const k of this.pending.splice(0)) {
      k.compiled ??= this.compiledKernels.get(k.key) ?? null;
      if (!k.compiled && !todo.some((t) => t.key === k.key)) todo.push(k);
    }
    if (todo.length === 0) return;
    const t0 = performance.now();
    const { bytes, kernels } = skip ? renderModuleSkipping(todo.map((k) => k.kernel), this.heap.shared, skip) : renderModule(todo.map((k) => k.kernel), this.heap.shared);
    const mkey = bytesKey(bytes);
    let module = modules.get(mkey);
    if (!module) {
      try {
        module = new WebAssembly.Module(bytes as BufferSource);
      } catch (e) {
        throw new WasmCompileError(todo.map((k) => k.kernel.name), (e as Error).message);
      }
      modules.set(mkey, module);
      counters.modules++;
    }
    const instance = new WebAssembly.Instance(module, this.imports);
    const moduleId = this.instances.size;
    this.instances.set(moduleId, instance);
    todo.forEach((k, i) => {
      const r = kernels[i];
      if (!r) return;
      rememberModule(k.key, { bytes, r }); // for exportCode (the compile cache)
      const c: CompiledFn = { fn: instance.exports[r.name] as (...a: number[]) => void, r, moduleId, module: module! };
      this.compiledKernels.set(k.key, c);
      k.compiled = c;
      counters.kernels++;
    });
    for (const k of this.prepared.values()) k.compiled ??= this.compiledKernels.get(k.key) ?? null;
    const ms = performance.now() - t0;
    counters.compileMs += ms;
    this.log(`${todo.length} kernels in one module (${bytes.length} bytes) in ${ms.toFixed(1)} ms`);
  }

  private ensureScratch(bytes: number): void {
    if (bytes <= this.scratch.bytes) return;
    for (const a of this.scratch.addr) this.heap.release(a);
    const n = this.threads;
    this.scratch = { addr: Array.from({ length: n }, () => this.heap.alloc(bytes)), bytes };
  }

  launch(kernel: PreparedKernel, args: KernelArgs): void {
    const k = kernel as WasmKernel;
    if (!k.wasm) return this.js.launch(kernel, args);
    if (!k.compiled) {
      if (!this.pending.includes(k)) this.pending.push(k);
      this.flush();
    }
    const c = k.compiled!;
    const a = args as Extract<KernelArgs, { kind: 'loop' }>;
    const addrs = c.r.bufs.map((b) => this.heap.adopt(a.buffers[b] as JsBuffer));
    if (c.r.prepack) {
      const pre = c.r.prepack;
      addrs.push(packedB(this.heap, pre, panelColumns(pre.dtype), k.packs, a.stable?.[pre.buf], () => (a.buffers[pre.buf] as JsBuffer).data as TypedArray));
    }
    if (c.r.scratchBytes) this.ensureScratch(c.r.scratchBytes);
    if (c.r.auxBytes && !k.aux) k.aux = this.heap.alloc(c.r.auxBytes);
    let { extent, parallel, grain } = k;
    if (k.dyn) {
      const at = k.dyn.at(a.buffers);
      (extent = at.extent), (parallel = extent > 1 && at.work >= PARALLEL_WORK), (grain = at.grain);
      if (c.r.auxSym) k.aux = k.dyn.auxAt(this.heap, c.r.auxSym, at.values);
    }
    const scratch0 = this.scratch.addr[0] ?? 0;
    if (a.range) return c.fn(...addrs, a.range[0], a.range[1], scratch0, k.aux);
    const pool = parallel ? this.pool : null;
    if (pool) {
      pool.run(c.moduleId, c.module, c.r.name, addrs, extent, this.scratch.addr, k.aux, (lo, hi, s) => c.fn(...addrs, lo, hi, s, k.aux), grain);
    } else c.fn(...addrs, 0, extent, scratch0, k.aux);
  }

  describe(spec: KernelSpec): string {
    if (spec.kind !== 'loop') return this.js.describe(spec);
    return describeKernel(spec.kernel, this.heap.shared);
  }

  /** The compile cache and artifacts: the module bytes holding these kernels (code-cache.ts). */
  exportCode(specs: readonly KernelSpec[]): unknown {
    return exportWasmCode(specs.map((s) => (s.kind === 'loop' ? s.kernel : null)), kernelKey);
  }

  /** Module bytes from exportCode: preparing these kernels then skips rendering them. */
  importCode(specs: readonly KernelSpec[], code: unknown): boolean {
    return importWasmCode(specs.map((s) => (s.kind === 'loop' ? s.kernel : null)), code);
  }

  /** Modules import the heap's memory as shared or not: part of the cache key. */
  codeFingerprint(): string {
    return `wasm simd128 memory=${this.heap.shared ? 'shared' : 'unshared'}`;
  }

  /** instances of modules restored from the compile cache, by their bytes' key */
  private readonly cachedInstances = new Map<string, { instance: WebAssembly.Instance; moduleId: number; module: WebAssembly.Module }>();

  /** A kernel restored by importCode: its module compiled (once per bytes) and instantiated here. */
  private fromCodeCache(key: string, kernel: LoopKernel): CompiledFn | null {
    const e = importedEntry(kernel);
    if (!e) return null;
    // the kernels of one stored module share its bytes: hash them once
    let mkey = cachedKeys.get(e.bytes);
    if (mkey === undefined) cachedKeys.set(e.bytes, (mkey = bytesKey(e.bytes)));
    let inst = this.cachedInstances.get(mkey);
    if (!inst) {
      try {
        const t0 = performance.now();
        let module = modules.get(mkey);
        if (!module) {
          module = new WebAssembly.Module(e.bytes as BufferSource);
          modules.set(mkey, module);
          counters.modules++;
        }
        const instance = new WebAssembly.Instance(module, this.imports);
        const moduleId = this.instances.size;
        this.instances.set(moduleId, instance);
        this.cachedInstances.set(mkey, (inst = { instance, moduleId, module }));
        const ms = performance.now() - t0;
        counters.compileMs += ms;
        this.log(`a module from the compile cache (${e.bytes.length} bytes) in ${ms.toFixed(1)} ms`);
      } catch (err) {
        this.log(`a module from the compile cache did not compile (${(err as Error).message}); rendering its kernels again`);
        dropImported(kernel);
        return null;
      }
    }
    const fn = inst.instance.exports[e.r.name];
    if (typeof fn !== 'function') {
      dropImported(kernel);
      return null;
    }
    const c: CompiledFn = { fn: fn as (...a: number[]) => void, r: e.r, moduleId: inst.moduleId, module: inst.module };
    this.compiledKernels.set(key, c);
    counters.kernels++;
    return c;
  }

  stats(): WasmStats {
    return { threads: this.threads, singleThreadReason: this.singleThreadReason, ...counters, parallelLaunches: this.poolState?.launches ?? 0, heap: this.heap.stats() };
  }
}

let shared: WasmBackend | null = null;

/** The process's wasm backend for compiled programs and eager kernels (throws WasmUnavailableError). */
export function wasmBackend(): WasmBackend {
  return (shared ??= new WasmBackend(undefined, { heap: processHeap() }));
}

/**
 * Replaces the process's wasm backend with one of `threads` threads (over the same heap, so
 * no buffer moves). For tests and benchmarks comparing thread counts.
 */
export function setWasmThreads(threads: number): WasmBackend {
  return (shared = new WasmBackend(undefined, { threads, heap: processHeap() }));
}

/** Counters of the wasm backend (threads, modules, kernels, heap); zeros before first use. */
export function wasmStats(): WasmStats {
  return shared ? shared.stats() : { threads: 0, singleThreadReason: null, ...counters, parallelLaunches: 0, heap: { bytesInUse: 0, peakBytes: 0, regions: 0, memoryBytes: 0, shared: false, adopted: 0, } };
}
