// The native backend: compiled programs' loop kernels rendered as C (render-c.ts), compiled
// by the system C compiler at run time (one translation unit per program, cached on disk)
// and called through koffi. Buffers stay JS typed arrays (JsBuffer), so eager ops, opaque
// steps and the JS backend work on the same memory; every spec other than `loop` (eager
// kernels) is the JS backend's. Node only: reached through 'kiln/node'.
//
// Selecting it: kiln.compile(fn, { backend: 'native' }) (after importing 'kiln/node'). With
// no C compiler (or no koffi) that throws NativeUnavailableError at the first call: an
// explicit request is never silently served by another backend.

import { existsSync } from 'node:fs';
import type { Backend, BackendBuffer, PreparedKernel } from '../backend.js';
import type { KernelArgs, KernelSpec } from '../kernel-spec.js';
import type { DType, TypedArray } from '../../core/dtype.js';
import { JsBackend, type JsBuffer } from '../js/index.js';
import { kernelExtent, kernelWork } from '../../compiler/loop-ir.js';
import { threadCount } from '../js/threads.js';
import { C_HEADER, renderKernelC, runtimeSource, type Param } from './render-c.js';
import { buildAndLoad, findCompiler, getKoffi, nativeCounters, resetToolchain, type Compiler } from './toolchain.js';
import { NativeUnavailableError } from './errors.js';

export { NativeCompileError, NativeUnavailableError } from './errors.js';
export { renderKernelC } from './render-c.js';

type NativeFn = (...args: unknown[]) => unknown;

interface NativeKernel extends PreparedKernel {
  readonly native: true;
  /** the kernel's C text with the placeholder name (the cache key) */
  readonly key: string;
  readonly params: readonly Param[];
  readonly helpers: ReadonlyMap<string, string>;
  readonly extent: number;
  readonly work: number;
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
  /** kernels that read more buffers than the FFI can pass and ran as JavaScript */
  tooManyBuffers: number;
  /** libraries loaded */
  loads: number;
  /** milliseconds in the C compiler */
  compileMs: number;
  /** compiles that had to drop -fopenmp */
  noOpenmp: number;
}

const counters = { memoryHits: 0, kernels: 0, tooManyBuffers: 0 };
/** koffi functions take at most 64 parameters; two are the [lo, hi) range */
const MAX_FFI_BUFFERS = 62;
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
export class NativeBackend implements Backend {
  readonly name = 'native';
  constructor(readonly js: JsBackend = new JsBackend()) {}
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

  alloc(dtype: DType, size: number, hint?: 'shared'): BackendBuffer {
    return this.js.alloc(dtype, size, hint);
  }
  free(buf: BackendBuffer): void {
    this.js.free(buf);
  }
  write(buf: BackendBuffer, data: TypedArray, offset?: number): void {
    this.js.write(buf, data, offset);
  }
  readSync(buf: BackendBuffer): TypedArray {
    return this.js.readSync(buf);
  }
  read(buf: BackendBuffer): Promise<TypedArray> {
    return this.js.read(buf);
  }

  prepare(spec: KernelSpec): PreparedKernel {
    if (spec.kind !== 'loop') return this.js.prepare(spec);
    const r = renderKernelC(spec.kernel, FN);
    // koffi binds at most 64 parameters (buffers + lo, hi): a kernel reading more buffers (a
    // horizontal group updating many parameters) runs as the JS backend's kernel, and says so
    if (r.params.length > MAX_FFI_BUFFERS) {
      counters.tooManyBuffers++;
      this.log(`kernel ${spec.kernel.name} reads ${r.params.length} buffers (FFI limit ${MAX_FFI_BUFFERS}): running it as JavaScript`);
      return this.js.prepare(spec);
    }
    const extent = kernelExtent(spec.kernel);
    const key = `${[...r.helpers.keys()].join(',')}\n${r.code}`;
    // the code is the same for every extent of a split loop ([lo, hi)): the extent is part of the kernel's key
    let k = this.kernels.get(`${extent}|${key}`);
    if (!k) {
      k = { spec, native: true, key, params: r.params, helpers: r.helpers, extent, work: kernelWork(spec.kernel), fn: compiled.get(key) ?? null };
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
        compiled.set(k.key, lib.func(`kiln_k${i}`, 'void', [...k.params.map(() => 'void *'), 'int64_t', 'int64_t']));
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
    const call: unknown[] = new Array(k.params.length + 2);
    for (let i = 0; i < k.params.length; i++) call[i] = (bufs[k.params[i]!.buf] as JsBuffer).data as TypedArray;
    call[k.params.length] = a.range ? a.range[0] : 0;
    call[k.params.length + 1] = a.range ? a.range[1] : k.extent;
    k.fn!(...call);
  }

  describe(spec: KernelSpec): string {
    if (spec.kind !== 'loop') return this.js.describe(spec);
    return renderKernelC(spec.kernel, spec.kernel.name).code;
  }
}

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
