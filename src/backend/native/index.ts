// The native backend: compiled programs' loop kernels rendered as C (render-c.ts), compiled
// by the system C compiler at run time (one translation unit per program, cached on disk)
// and called through koffi. Buffers stay JS typed arrays (JsBuffer), so eager ops, opaque
// steps and the JS backend work on the same memory; every spec other than `loop` (eager
// kernels) is the JS backend's. Node only: reached through 'kilnjs/node'.
//
// Selecting it: kiln.compile(fn, { backend: 'native' }) (after importing 'kilnjs/node'). With
// no C compiler (or no koffi) that throws NativeUnavailableError at the first call: an
// explicit request is never silently served by another backend.

import { existsSync } from 'node:fs';
import type { Backend, BackendBuffer, PreparedKernel } from '../backend.js';
import type { KernelArgs, KernelSpec } from '../../ir/kernel-spec.js';
import type { DType, TypedArray } from '../../core/dtype.js';
import { JS_OUTPUT_RECYCLING, JsBackend, type JsBuffer } from '../js/index.js';
import { JsBufferBackend } from '../js/buffer-backend.js';
import { kernelExtent, kernelWork, type LoopKernel } from '../../ir/loop-ir.js';
import { threadCount } from '../js/threads.js';
import { C_HEADER, kernelParams, kernelPrepack, MAX_DIRECT_BUFFERS, renderKernelC, runtimeSource, type Param, type PrepackB } from './render-c.js';
import { buildAndLoad, cacheDir, compileFlags, cpuModel, findCompiler, getKoffi, LIBRARY_NAME, loadLibrary, nativeCounters, resetToolchain, type Compiler, type KoffiLib } from './toolchain.js';
import { arch, platform } from 'node:os';
import { basename, join } from 'node:path';
import { NativeUnavailableError } from './errors.js';
import { packedB, type PackedOperands } from './prepack.js';

export { NativeCompileError, NativeUnavailableError } from './errors.js';
export { renderKernelC } from './render-c.js';

type NativeFn = (...args: unknown[]) => unknown;

interface NativeKernel extends PreparedKernel {
  readonly native: true;
  /** the kernel's C text with the placeholder name (the cache key) */
  readonly key: string;
  readonly params: readonly Param[];
  readonly helpers: ReadonlyMap<string, string>;
  /** the split loop's length; -1 for a dynamic kernel (it computes its extent from its sizes) */
  readonly extent: number;
  readonly work: number;
  /** buffers passed as one pointer array (see MAX_DIRECT_BUFFERS) */
  readonly viaArray: boolean;
  /** a matmul whose B may come prepacked (one more argument after hi; prepack.ts) */
  readonly prepack?: PrepackB;
  readonly packs?: PackedOperands;
  /** the runtime library it links (where the packing functions are) */
  runtime?: KoffiLib;
  fn: NativeFn | null;
}

const FN = 'KILN_FN';
/** Kernels with less work than this (elements, multiply-adds) compile at -O1 when a unit has only such kernels. */
const LIGHT_WORK = 1 << 14;
/** Most kernels in one translation unit (more compile as several, in parallel). */
const UNIT_KERNELS = 48;

/** Counters of the native backend (compiles, disk cache hits, kernels reused in memory). */
export interface NativeStats {
  /** translation units compiled by the C compiler */
  compiles: number;
  /** translation units found in the disk cache */
  diskHits: number;
  /** kernels found already compiled in this process (no new translation unit) */
  memoryHits: number;
  /** kernels compiled or loaded */
  kernels: number;
  /** kernels prepared whose buffers pass as one pointer array (more than koffi's parameter limit) */
  pointerArrays: number;
  /** libraries loaded */
  loads: number;
  /** milliseconds in the C compiler */
  compileMs: number;
  /** compiles that had to drop -fopenmp */
  noOpenmp: number;
}

const counters = { memoryHits: 0, kernels: 0, pointerArrays: 0 };
/** compiled kernels by key, shared by every NativeBackend of the process */
const compiled = new Map<string, NativeFn>();

export function nativeStats(): NativeStats {
  return { ...nativeCounters, ...counters };
}

/**
 * Forgets the kernels compiled in this process (not the disk cache): the next build of a
 * program compiles or loads its translation unit again. For tests of the disk cache.
 */
export function clearNativeMemoryCache(): void {
  compiled.clear();
  runtimes.clear();
  shared = null;
  resetToolchain();
}

/** Whether the native backend can run here: null, or the reason it cannot. */
export function nativeUnavailableReason(): string | null {
  const cc = findCompiler();
  if (typeof cc === 'string') return cc;
  const k = getKoffi();
  return typeof k === 'string' ? k : null;
}

/**
 * A backend whose loop kernels are native code; everything else (buffers, eager kernels) is
 * the wrapped JS backend's, so the two work on the same typed arrays.
 */
export class NativeBackend extends JsBufferBackend implements Backend {
  readonly name = 'native';
  /**
   * Dynamic kernels (issue 7) render once: the C reads s0, s1, ... from the sizes buffer at
   * entry (sizes-c.ts) and decides its extent and threading from them, so DynamicProgram
   * prepares each once and no size compiles C again.
   */
  readonly symbolicKernels = true;
  /** attention as one kernel (attention-c.ts) */
  readonly attentionKernels = true;
  /** a fresh output is a fresh typed array here too (page faults, garbage collection): W4 took 3.9 ms a call against 1.7 ms recycled */
  readonly outputRecycling = JS_OUTPUT_RECYCLING;
  constructor(js: JsBackend = new JsBackend()) {
    super(js);
  }
  private readonly pending: NativeKernel[] = [];
  private readonly kernels = new Map<string, NativeKernel>();

  /** while > 0, flush() leaves kernels pending and launches run them as JS (see batch) */
  private deferred = 0;

  /** messages for the logs (set by the compiler driver) */
  log: (msg: string) => void = () => {};

  /** Throws NativeUnavailableError when there is no C compiler or no koffi. */
  static create(): NativeBackend {
    const why = nativeUnavailableReason();
    if (why) throw new NativeUnavailableError(why);
    return new NativeBackend();
  }

  alloc(dtype: DType, size: number): BackendBuffer {
    // plain memory even when asked for shared (programs ask for their outputs and scratch):
    // native threads need no SharedArrayBuffer, and a fresh 16 MiB one cost ~45 ms here
    // (plain: ~0.5 ms); JS kernels move a buffer to shared memory on first parallel use
    return this.js.alloc(dtype, size);
  }

  prepare(spec: KernelSpec): PreparedKernel {
    if (spec.kind !== 'loop') return this.js.prepare(spec);
    const imp = importedKernels.get(spec.kernel);
    if (imp) {
      const k = this.bindImported(spec, imp);
      if (k) {
        if (k.viaArray) counters.pointerArrays++;
        return k;
      }
    }
    const r = renderKernelC(spec.kernel, FN);
    // koffi binds at most 64 parameters: a kernel with more buffers takes them as one array
    if (r.viaArray) counters.pointerArrays++;
    const extent = launchExtent(spec.kernel);
    const key = `${[...r.helpers.keys()].join(',')}\n${r.code}`;
    // the code is the same for every extent of a split loop ([lo, hi)): the extent is part of the kernel's key
    let k = this.kernels.get(`${extent}|${key}`);
    if (!k) {
      k = { spec, native: true, key, params: r.params, helpers: r.helpers, extent, work: kernelWork(spec.kernel), viaArray: r.viaArray, ...withPrepack(r.prepack), fn: compiled.get(key) ?? null };
      if (k.fn) counters.memoryHits++;
      else this.pending.push(k);
      this.kernels.set(`${extent}|${key}`, k);
    }
    return k;
  }

  /**
   * Runs `fn` with compiling deferred: programs built inside run their new kernels as JS
   * kernels, and every kernel prepared is compiled at the end, together (units of up to
   * UNIT_KERNELS kernels, compiled in parallel): for test suites, models with many graphs.
   */
  batch<T>(fn: () => T): T {
    this.deferred++;
    try {
      return fn();
    } finally {
      if (--this.deferred === 0) this.flush();
    }
  }

  prewarm(): void {
    const cc = findCompiler();
    if (typeof cc === 'string') return;
    try {
      runtimeLibrary(cc, this.log);
    } catch {
      // reported again, with its error, when the first program compiles
    }
  }

  /** Compiles every kernel prepared since the last flush as one translation unit. */
  flush(): void {
    if (this.deferred > 0) return;
    const todo: NativeKernel[] = [];
    for (const k of this.pending.splice(0)) {
      if (k.fn) continue;
      const fn = compiled.get(k.key);
      if (fn) k.fn = fn;
      else if (!todo.some((t) => t.key === k.key)) todo.push(k);
    }
    if (todo.length === 0) return;
    const cc = findCompiler();
    if (typeof cc === 'string') throw new NativeUnavailableError(cc);
    const rt = runtimeLibrary(cc, this.log);
    const t0 = performance.now();
    // a program's kernels are one unit; many (a batch) are cut in units of UNIT_KERNELS that
    // compile in parallel; small kernels go in light units (-O1: most of the compile time of
    // -O3 is vectorizing loops that are too short to gain from it)
    const units: { kernels: NativeKernel[]; light: boolean }[] = [];
    for (const light of [true, false]) {
      const group = todo.filter((k) => (k.work < LIGHT_WORK) === light);
      for (let i = 0; i < group.length; i += UNIT_KERNELS) units.push({ kernels: group.slice(i, i + UNIT_KERNELS), light });
    }
    // one unit when every kernel is small or the program is small
    if (units.length === 2 && todo.length <= UNIT_KERNELS) units.splice(0, 2, { kernels: todo, light: false });
    const sources = units.map((u) => {
      const helpers = new Map<string, string>();
      const bodies = u.kernels.map((k, i) => {
        k.helpers.forEach((v, n) => helpers.set(n, v));
        return k.key.slice(k.key.indexOf('\n') + 1).replaceAll(FN, `kiln_k${i}`);
      });
      return { source: [C_HEADER, ...helpers.values(), ...bodies].join('\n'), light: u.light, libs: [rt] };
    });
    const { built, libs } = buildAndLoad(sources, cc, this.log);
    units.forEach((u, ui) => {
      const lib = libs[ui]!;
      u.kernels.forEach((k, i) => {
        compiled.set(k.key, lib.func(`kiln_k${i}`, 'void', signature(k.params.length, k.viaArray, !!k.prepack)));
        libraryOf.set(k.key, built[ui]!.path);
        symbolOf.set(k.key, `kiln_k${i}`);
        runtimeOf.set(built[ui]!.path, rt);
        counters.kernels++;
      });
    });
    for (const k of this.kernels.values()) k.fn ??= compiled.get(k.key) ?? null;
    const fresh = built.filter((b) => !b.cached).length;
    this.log(`${todo.length} kernels in ${units.length} C unit${units.length > 1 ? 's' : ''} (${fresh} compiled, ${units.length - fresh} from the disk cache) in ${(performance.now() - t0).toFixed(0)} ms${built.every((b) => b.openmp) ? '' : ', without OpenMP'}: ${built.map((b) => b.path).join(', ')}`);
  }

  launch(kernel: PreparedKernel, args: KernelArgs): void {
    const k = kernel as NativeKernel;
    if (!k.native) return this.js.launch(kernel, args);
    if (!k.fn && this.deferred > 0) return this.js.launch(this.js.prepare(k.spec), args);
    if (!k.fn) {
      if (!this.pending.includes(k)) this.pending.push(k); // e.g. after a failed compile
      this.flush();
    }
    const a = args as Extract<KernelArgs, { kind: 'loop' }>;
    const bufs = a.buffers;
    const ptrs: TypedArray[] = new Array(k.params.length);
    for (let i = 0; i < k.params.length; i++) ptrs[i] = (bufs[k.params[i]!.buf] as JsBuffer).data as TypedArray;
    const lo = a.range ? a.range[0] : 0, hi = a.range ? a.range[1] : k.extent;
    if (k.prepack) {
      const p = k.prepack;
      const pk = packedB(this.runtimeOf(), p, k.packs!, a.stable?.[p.buf], (bufs[p.buf] as JsBuffer).data as TypedArray);
      if (k.viaArray) k.fn!(ptrs, lo, hi, pk);
      else k.fn!(...ptrs, lo, hi, pk);
    } else if (k.viaArray) k.fn!(ptrs, lo, hi);
    else k.fn!(...ptrs, lo, hi);
  }

  /** The runtime library (its packing functions), loaded once a program was built. */
  private runtimeLib: KoffiLib | null = null;
  private runtimeOf(): KoffiLib {
    if (!this.runtimeLib) {
      const cc = findCompiler();
      if (typeof cc === 'string') throw new NativeUnavailableError(cc);
      this.runtimeLib = loadLibrary(runtimeLibrary(cc, this.log));
    }
    return this.runtimeLib;
  }

  describe(spec: KernelSpec): string {
    if (spec.kind !== 'loop') return this.js.describe(spec);
    return renderKernelC(spec.kernel, spec.kernel.name).code;
  }

  /**
   * The compile cache and artifacts: the disk-cached libraries holding these kernels (`libs`:
   * paths, for artifacts to copy) and per kernel its library and runtime library by file name
   * in the native cache folder, and its symbol.
   */
  exportCode(specs: readonly KernelSpec[]): { libs: string[]; kernels: (StoredKernel | null)[] } {
    const libs = new Set<string>();
    // per kernel: its library and symbol, so a cache hit binds it without rendering C
    const kernels = specs.map((s): StoredKernel | null => {
      if (s.kind !== 'loop') return null;
      const imp = importedKernels.get(s.kernel);
      if (imp) {
        libs.add(imp.lib);
        return { lib: basename(imp.lib), sym: imp.sym, runtime: basename(imp.runtime) };
      }
      const r = renderKernelC(s.kernel, FN);
      const key = `${[...r.helpers.keys()].join(',')}\n${r.code}`;
      const lib = libraryOf.get(key), sym = symbolOf.get(key), runtime = lib && runtimeOf.get(lib);
      if (!lib) return null;
      libs.add(lib);
      return sym && runtime ? { lib: basename(lib), sym, runtime: basename(runtime) } : null;
    });
    for (const rt of runtimes.values()) libs.add(rt);
    return { libs: [...libs], kernels };
  }

  /**
   * A program-cache hit: remembers which cached library and symbol holds each kernel, so that
   * preparing them binds the symbol directly (no C rendered, hashed or looked up). Libraries are
   * named by file name and looked up only in the native cache folder (verified there when
   * loaded); the parameters and a prepacked B are derived from the kernel, as rendering does. A kernel whose
   * library is gone or does not load falls back to rendering (and the disk cache).
   */
  importCode(specs: readonly KernelSpec[], code: unknown): boolean {
    const ks = (code as { kernels?: unknown } | null)?.kernels;
    if (!Array.isArray(ks) || ks.length !== specs.length) return false;
    const dir = cacheDir();
    let n = 0;
    specs.forEach((s, i) => {
      const k = ks[i] as Partial<StoredKernel> | null;
      if (s.kind !== 'loop' || !k || typeof k.lib !== 'string' || typeof k.sym !== 'string' || typeof k.runtime !== 'string') return;
      if (!LIBRARY_NAME.test(k.lib) || !LIBRARY_NAME.test(k.runtime) || !/^kiln_k\d{1,6}$/.test(k.sym)) return;
      // the calling convention is the kernel's own (its buffers, a prepacked B), as renderKernelC gives it, never the entry's
      const params = kernelParams(s.kernel), prepack = kernelPrepack(s.kernel);
      importedKernels.set(s.kernel, { lib: join(dir, k.lib), sym: k.sym, runtime: join(dir, k.runtime), params, viaArray: params.length > MAX_DIRECT_BUFFERS, ...(prepack ? { prepack } : {}) });
      n++;
    });
    return n > 0;
  }

  /** The prepared kernel of an imported one, bound now; null: prepare it the usual way. */
  private bindImported(spec: Extract<KernelSpec, { kind: 'loop' }>, imp: ImportedKernel): NativeKernel | null {
    const extent = launchExtent(spec.kernel);
    const key = `lib:${imp.lib}#${imp.sym}`;
    const known = this.kernels.get(`${extent}|${key}`);
    if (known) return known;
    let fn = compiled.get(key) ?? null;
    if (!fn) {
      const cc = findCompiler();
      if (typeof cc === 'string' || !existsSync(imp.lib)) return null;
      try {
        // the runtime first: OpenMP's settings and the thread count are set as it loads; a
        // library linked against another runtime (older sources) is not bound: render instead
        if (runtimeLibrary(cc, this.log) !== imp.runtime) throw new Error(`linked against another runtime library (${imp.runtime})`);
        fn = loadLibrary(imp.lib).func(imp.sym, 'void', signature(imp.params.length, imp.viaArray, !!imp.prepack));
      } catch (e) {
        this.log(`cached library ${imp.lib} did not bind ${imp.sym} (${(e as Error).message.split('\n')[0]}); rendering the kernel again`);
        importedKernels.delete(spec.kernel);
        return null;
      }
      compiled.set(key, fn);
      counters.kernels++;
    } else counters.memoryHits++;
    const k: NativeKernel = { spec, native: true, key, params: imp.params, helpers: new Map(), extent, work: kernelWork(spec.kernel), viaArray: imp.viaArray, ...withPrepack(imp.prepack), fn };
    this.kernels.set(`${extent}|${key}`, k);
    return k;
  }

  /** Compiler, flags and CPU: what the generated libraries depend on besides the kernels. */
  codeFingerprint(): string {
    const cc = findCompiler();
    return [typeof cc === 'string' ? `no compiler (${cc})` : `${cc.cmd.join(' ')} ${cc.version}`, compileFlags().join(' '), cpuModel(), platform(), arch()].join('|');
  }
}

/** What a launch without a range passes as hi: the extent, or -1 (a dynamic kernel's own, at its sizes). */
const launchExtent = (k: LoopKernel): number => (k.sizes ? -1 : kernelExtent(k));

/** The library each compiled kernel lives in, and its symbol there (by kernel key). */
const libraryOf = new Map<string, string>();
const symbolOf = new Map<string, string>();
/** the runtime library each unit library links against (by library path) */
const runtimeOf = new Map<string, string>();

/** A kernel's place in the native cache folder, as program-cache entries store it (exportCode). */
interface StoredKernel {
  /** file names in the native cache folder */
  readonly lib: string;
  readonly runtime: string;
  readonly sym: string;
}

/** A kernel's place in a cached library (importCode), ready to bind. */
interface ImportedKernel {
  readonly lib: string;
  readonly sym: string;
  /** the runtime library it was linked against */
  readonly runtime: string;
  /** the pointer parameters (program buffers), in order */
  readonly params: readonly Param[];
  readonly viaArray: boolean;
  readonly prepack?: PrepackB;
}

/** koffi's parameter types of a kernel: its buffers (or one array of them), lo, hi, and a prepacked B. */
function signature(buffers: number, viaArray: boolean, prepack: boolean): string[] {
  return [...(viaArray ? ['void **'] : new Array<string>(buffers).fill('void *')), 'int64_t', 'int64_t', ...(prepack ? ['void *'] : [])];
}

const withPrepack = (p: PrepackB | undefined) => (p ? { prepack: p, packs: new WeakMap() as PackedOperands } : {});

/** Kernels handed back by importCode, by loop-kernel object (see bindImported). */
const importedKernels = new WeakMap<object, ImportedKernel>();

const runtimes = new Map<string, string>();

/**
 * The runtime library (scratch, threads, common matmul engines) for this compiler: built or
 * found in the disk cache once, loaded once (units link against it), threads set once.
 */
function runtimeLibrary(cc: Compiler, log: (msg: string) => void): string {
  const key = `${cc.cmd.join(' ')}\0${cc.version}\0${process.env.KILN_CFLAGS ?? ''}\0${process.env.KILN_CACHE_DIR ?? ''}`;
  let path = runtimes.get(key);
  if (!path || !existsSync(path)) {
    // OpenMP threads sleep at barriers instead of spinning (read when libgomp loads): spinning
    // threads collapse on a machine shared with other work, for little gain on coarse kernels
    process.env.OMP_WAIT_POLICY ??= 'passive';
    const { built: [built], libs: [lib] } = buildAndLoad([{ source: runtimeSource() }], cc, log);
    path = built!.path;
    lib!.func('kiln_set_threads', 'void', ['int'])(threadCount());
    log(`${built!.cached ? 'loaded' : 'compiled'} the runtime library (${path})${built!.openmp ? '' : ', without OpenMP'}`);
    runtimes.set(key, path);
  }
  return path;
}

let shared: NativeBackend | null = null;

/** The process's native backend for compiled programs (throws NativeUnavailableError). */
export function nativeBackend(): NativeBackend {
  const why = nativeUnavailableReason();
  if (why) throw new NativeUnavailableError(why);
  return (shared ??= new NativeBackend());
}

/**
 * Runs `fn` with the native backend's C compiles deferred to its end, where every kernel the
 * programs built inside it prepared is compiled as one translation unit (meanwhile they run
 * as JS kernels). A no-op wrapper where the native backend is unavailable.
 */
export function nativeBatch<T>(fn: () => T): T {
  if (nativeUnavailableReason()) return fn();
  return nativeBackend().batch(fn);
}

export type { Compiler };
