// The WebGPU backend. Buffers live in GPU memory (float32 as f32, int32 as i32, bool as u32;
// float64 buffers hold raw bytes so data can move through, but no kernel takes them). Every
// kernel, eager or compiled, is a loop-IR kernel rendered as WGSL (render-wgsl.ts).
//
// Submission: launches record dispatches into one open compute pass; the pass is submitted
// when the JavaScript turn ends (a microtask), or earlier when a write, read or buffer
// destruction needs queue order. A compiled program's run is one synchronous call, so all
// its kernels go in one command buffer, one submit. In mode 'reduce-overhead' a program's
// steps are prerecorded (prerecord.ts): pipelines, bind groups and grids made once, so a call
// only encodes them in one loop.
//
// Errors the device reports later (validation, out of memory, a shader compile error, a lost
// device) are kept and thrown by the next call, and reject pending reads: never swallowed.

import type { Backend, BackendBuffer, PreparedKernel, ProgramRecording, RecordStep } from '../backend.js';
import type { KernelArgs, KernelSpec, RandomDist } from '../../ir/kernel-spec.js';
import { TYPED_ARRAY, type DType, type TypedArray } from '../../core/dtype.js';
import type { LoopKernel } from '../../ir/loop-ir.js';
import { BufferPool } from './buffer-pool.js';
import { eagerKernel } from './eager.js';
import { numberedSource, WebGpuDeviceLostError, WebGpuOutOfMemoryError, WebGpuShaderError, WebGpuSyncReadError, WebGpuUnsupportedError, WebGpuValidationError } from './errors.js';
import { INDEXING_KINDS, renderIndexing } from './render-indexing.js';
import { integerStream, normalStream, uniformStream } from '../../core/random.js';
import { gpuIntegerExact, randomKernel, randomLaunch, RANDOM_PARAM_WORDS } from './render-random.js';
import { renderWgsl, type AliasMap, type WgslKernel } from './render-wgsl.js';
import { renderRow } from './render-row.js';
import { splitForBindings } from './split.js';
import { PrerecordedProgram } from './prerecord.js';
import { configName, renderMatmul, type MatmulConfig, type MatmulPrecision } from './render-matmul.js';
import { checkEnum } from '../../core/enum-arg.js';
import { MatmulTuner, type AutotuneOptions, type AutotuneReport, type AutotuneTarget } from './autotune.js';
import { Profiler, type GpuProfile } from './profile.js';
import { hasTimestamps } from './timestamps.js';
import type { Lowered } from '../../ir/lowered.js';

const MAP_READ = 1, COPY_DST = 8;
const GPU_MAP_READ = 1;

/** Buffers up to this many elements keep a host copy of what the host wrote (see readSync). */
const SHADOW_MAX = 1 << 16;

export class WebGpuBuffer implements BackendBuffer {
  /**
   * The host's copy of the contents, while no kernel has written the buffer since the host
   * wrote all of it: constants made while tracing (masks, index tables) are read synchronously
   * by the compiler, and this serves them without a GPU read.
   */
  host: TypedArray | undefined;
  constructor(readonly dtype: DType, readonly size: number, readonly gpu: GPUBuffer) {}
  /** bytes of data (bool is 4 bytes per element on the GPU) */
  get bytes(): number {
    return this.size * (this.dtype === 'float64' ? 8 : 4);
  }
}

/** @internal a WGSL kernel ready to dispatch */
export interface Compiled {
  readonly w: WgslKernel;
  readonly p: Pipeline;
}

/** @internal a cached pipeline: its explicit bind-group layout and the kernel name it was first made for (profiles) */
export interface Pipeline {
  readonly pipeline: GPUComputePipeline;
  readonly layout: GPUBindGroupLayout;
  readonly name: string;
}

/** @internal what a dispatch recorded while capturing bound (prerecord.ts) */
export interface Capture {
  readonly dispatches: { readonly c: Compiled; readonly buffers: readonly WebGpuBuffer[] }[];
  /** why the captured work cannot be replayed (it allocated, wrote or freed a buffer) */
  broken?: string;
}

/** @internal */
export interface GpuKernel extends PreparedKernel {
  /** loop kernels: rendered per alias pattern of the launch's buffers ('' = none) */
  readonly variants?: Map<string, Compiled[]>;
  /** matmul and row kernels (their WGSL follows the backend's switches): the render epoch of their variants */
  epoch?: number;
}

export interface WebGpuStats {
  dispatches: number;
  submits: number;
  /** bind groups created (a prerecorded program creates none while its buffers stay the same) */
  bindGroups: number;
  /** program calls run from prerecorded dispatches (reduce-overhead) */
  prerecordedRuns: number;
  pipelines: number;
  reads: number;
  buffersCreated: number;
  buffersReused: number;
}

export class WebGpuBackend implements Backend {
  readonly name = 'webgpu';
  /**
   * GPU memory is read with `await read()` only: the compiler checks this flag to fold constants
   * on the host and to report a value read while tracing as an asynchronous graph break.
   */
  readonly syncReads = false;
  readonly float64 = false;
  syncReadError(message: string, op: string, hint: string): Error {
    return new WebGpuSyncReadError(message, op, hint);
  }
  private readonly pool: BufferPool;
  private readonly pipelines = new Map<string, Pipeline>();
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  /** the pipeline last set in the open pass (state persists within a pass) */
  private passPipeline: GPUComputePipeline | null = null;
  /** while an opaque step of a prerecorded program is captured (prerecord.ts) */
  private capturing: Capture | null = null;
  /**
   * reduce-overhead: prerecord compiled programs (prerecord.ts). Read when a program is built;
   * false builds them as in the default mode (re-encoded each call: benchmarks, comparisons).
   */
  prerecord = true;
  /**
   * Forces one matmul configuration (render-matmul.ts, e.g. parseConfig('128x128x16/8x8')) for
   * every matmul from now on, eager and compiled (tests, benchmarks): eager launches at once,
   * compiled programs (prerecorded ones too) at their next call; null: the max-autotune winner
   * where measured, else the default 64x64x16/4x4.
   */
  get matmulConfig(): MatmulConfig | null {
    return this.forcedMatmul;
  }
  set matmulConfig(c: MatmulConfig | null) {
    const was = this.forcedMatmul && configName(this.forcedMatmul), now = c && configName(c);
    this.forcedMatmul = c;
    if (now !== was) this.rerender(now ? `gpu.matmulConfig set to ${now}` : 'gpu.matmulConfig cleared');
  }
  private forcedMatmul: MatmulConfig | null = null;
  /**
   * Row reductions combine within subgroups on registers first (render-row.ts): on by default
   * where the device has 'subgroups' (device.ts requests it). Read when a kernel is rendered
   * (eager launches at once, compiled programs, prerecorded ones too, at their next call);
   * false renders the workgroup-memory tree only (tests compare both paths).
   */
  get subgroups(): boolean {
    return this.useSubgroups;
  }
  set subgroups(on: boolean) {
    if (on && !this.hasSubgroups) throw new WebGpuUnsupportedError(`this adapter (${this.adapterInfo || 'unknown'}) has no 'subgroups' feature`, 'subgroups', 'leave gpu.subgroups off on this device');
    if (on === this.useSubgroups) return;
    this.useSubgroups = on;
    this.rerender(`gpu.subgroups turned ${on ? 'on' : 'off'}`);
  }
  /**
   * The precision of float32 matmuls (eager and compiled) on this device: 'float32' (default),
   * or 'f16' where the device has 'shader-f16': the operand tiles are rounded to f16 in
   * workgroup memory (10 mantissa bits, as TF32, but f16's range: |x| > 65504 becomes
   * infinite) and multiplied and summed in f32, so tiles take half the workgroup memory and
   * its bandwidth. The analogue of torch.set_float32_matmul_precision('high'); see README.
   */
  get matmulPrecision(): MatmulPrecision {
    return this.precision;
  }
  set matmulPrecision(p: MatmulPrecision) {
    checkEnum('matmulPrecision', 'precision', p, ['float32', 'f16']);
    if (p === 'f16' && !this.hasShaderF16) throw new WebGpuUnsupportedError(`this adapter (${this.adapterInfo || 'unknown'}) has no 'shader-f16' feature`, 'matmulPrecision', "keep gpu.matmulPrecision = 'float32' on this device");
    if (p === this.precision) return;
    this.precision = p;
    this.rerender(`gpu.matmulPrecision set to ${p}`);
  }
  /** Whether the device has the 'shader-f16' feature (device.ts requests it where offered). */
  get hasShaderF16(): boolean {
    return this.device.features.has('shader-f16');
  }
  private precision: MatmulPrecision = 'float32';
  /**
   * @internal Moves whenever kernels may render to other WGSL (matmulConfig, subgroups, max-autotune
   * winners): matmul and row kernels render again at their next launch, prerecorded programs
   * rebuild at their next call (one integer compare per call).
   */
  renderEpoch = 0;
  /** @internal why renderEpoch last moved (prerecorded programs' summary) */
  renderChange = '';
  /** @internal */
  rerender(why: string): void {
    this.renderEpoch++;
    this.renderChange = why;
  }
  /** Whether the device has the 'subgroups' feature. */
  get hasSubgroups(): boolean {
    return this.device.features.has('subgroups');
  }
  private useSubgroups: boolean;
  /** @internal max-autotune's measurements (autotune.ts) */
  readonly tuner = new MatmulTuner(this);
  /** @internal while profile() runs */
  private profiler: Profiler | null = null;
  private submitQueued = false;
  /** an error the device reported since the last call (thrown once) */
  private pending: Error | null = null;
  /** a lost device: every later call throws this */
  private lost: WebGpuDeviceLostError | null = null;
  /** asynchronous checks (error scopes) that reads wait for */
  private checks: Promise<void>[] = [];
  /** @internal counters (prerecord.ts adds to them) */
  readonly counters = { dispatches: 0, submits: 0, reads: 0, bindGroups: 0, prerecordedRuns: 0 };
  readonly maxStorageBuffers: number;

  constructor(readonly device: GPUDevice, readonly adapterInfo = '') {
    this.pool = new BufferPool(device);
    this.maxStorageBuffers = device.limits.maxStorageBuffersPerShaderStage;
    this.useSubgroups = this.hasSubgroups;
    device.lost.then((info) => {
      this.lost = new WebGpuDeviceLostError(`the GPU device was lost (${info.reason}): ${info.message}`, 'webgpu', 'tensors on it are gone: request a new backend and move the data again');
    });
    device.addEventListener('uncapturederror', (ev) => {
      const err = (ev as GPUUncapturedErrorEvent).error;
      this.fail(err.constructor?.name === 'GPUOutOfMemoryError'
        ? new WebGpuOutOfMemoryError(err.message, 'webgpu', 'free tensors (kiln.scope, dispose) or use smaller batches')
        : new WebGpuValidationError(err.message, 'webgpu', 'this is a kiln bug: please report it'));
    });
  }

  get stats(): WebGpuStats {
    return { ...this.counters, pipelines: this.pipelines.size, buffersCreated: this.pool.stats.created, buffersReused: this.pool.stats.reused };
  }

  private fail(e: Error): void {
    this.pending ??= e;
  }

  /** @internal Throws what the device reported since the last call. */
  check(): void {
    if (this.lost) throw this.lost;
    const e = this.pending;
    if (e) {
      this.pending = null;
      throw e;
    }
  }

  /** Runs `fn` inside an error scope; what it reports becomes a pending error. */
  private scoped(filter: GPUErrorFilter, fn: () => void, onError: (e: GPUError) => Promise<Error> | Error): void {
    this.checks.push(this.inScope(filter, fn, onError).then((e) => {
      if (e) this.fail(e);
    }));
  }

  /** Runs `fn` inside an error scope; resolves to what it reported, typed by `onError`, or null. */
  private inScope(filter: GPUErrorFilter, fn: () => void, onError: (e: GPUError) => Promise<Error> | Error): Promise<Error | null> {
    this.device.pushErrorScope(filter);
    fn();
    return this.device.popErrorScope().then((e) => (e ? onError(e) : null));
  }

  // ---- memory ----

  alloc(dtype: DType, size: number): BackendBuffer {
    this.check();
    if (this.capturing) this.capturing.broken ??= 'allocate a temporary buffer (e.g. a non-contiguous input made contiguous)';
    const bytes = Math.max(4, size * (dtype === 'float64' ? 8 : 4));
    const max = Math.min(this.device.limits.maxStorageBufferBindingSize, this.device.limits.maxBufferSize);
    if (bytes > max) {
      throw new WebGpuOutOfMemoryError(`a ${dtype} buffer of ${size} elements (${bytes} bytes) exceeds this device's largest storage binding (${max} bytes)`, 'alloc', 'split the tensor into smaller ones');
    }
    let gpu!: GPUBuffer;
    this.scoped('out-of-memory', () => (gpu = this.pool.take(bytes)), (e) => new WebGpuOutOfMemoryError(`allocating ${bytes} bytes: ${e.message}`, 'alloc', 'free tensors (kiln.scope, dispose) or use smaller batches'));
    return new WebGpuBuffer(dtype, size, gpu);
  }

  free(buf: BackendBuffer): void {
    const b = buf as WebGpuBuffer;
    if (this.capturing) this.capturing.broken ??= 'free a buffer';
    if (this.pool.give(b.gpu)) return;
    // destroying needs every recorded use submitted first
    this.submit();
    b.gpu.destroy();
  }

  write(buf: BackendBuffer, data: TypedArray, offset = 0): void {
    this.check();
    const b = buf as WebGpuBuffer;
    if (this.capturing) this.capturing.broken ??= 'write from the host (a queue write)';
    // queue.writeBuffer runs before work submitted later: submit what is recorded first
    this.submit();
    const src = gpuArray(b.dtype, data);
    b.host = offset === 0 && data.length === b.size && b.size <= SHADOW_MAX ? (TYPED_ARRAY[b.dtype] as unknown as { from(d: ArrayLike<number>): TypedArray }).from(data as ArrayLike<number>) : undefined;
    this.device.queue.writeBuffer(b.gpu, offset * src.BYTES_PER_ELEMENT, src.buffer, src.byteOffset, src.byteLength);
  }

  readSync(buf: BackendBuffer): TypedArray {
    const host = (buf as WebGpuBuffer).host;
    if (host) return host;
    throw new WebGpuSyncReadError('tensors on webgpu cannot be read synchronously (dataSync, item, toArray, printing, a graph break or a check that reads values)', 'read', 'use `await t.data()`; compiled functions on webgpu must not read tensor values while tracing (fullgraph)');
  }

  async read(buf: BackendBuffer): Promise<TypedArray> {
    this.check();
    const b = buf as WebGpuBuffer;
    if (this.capturing) this.capturing.broken ??= 'read a buffer';
    const bytes = Math.max(4, b.bytes);
    this.submit();
    const staging = this.device.createBuffer({ size: bytes, usage: MAP_READ | COPY_DST });
    const enc = this.device.createCommandEncoder();
    enc.copyBufferToBuffer(b.gpu, 0, staging, 0, bytes);
    this.device.queue.submit([enc.finish()]);
    this.counters.reads++;
    const checks = this.checks.splice(0);
    try {
      await Promise.all([staging.mapAsync(GPU_MAP_READ), ...checks]);
      this.check();
      return fromGpu(b.dtype, b.size, staging.getMappedRange());
    } catch (e) {
      this.check();
      throw e;
    } finally {
      staging.destroy();
    }
  }

  /** Waits for the submitted work (and the error checks) to finish. */
  async sync(): Promise<void> {
    this.submit();
    await Promise.all([this.device.queue.onSubmittedWorkDone(), ...this.checks.splice(0)]);
    this.check();
  }

  // ---- kernels ----

  prepare(spec: KernelSpec): PreparedKernel {
    this.check();
    if (spec.kind !== 'loop') return { spec };
    const k: GpuKernel = { spec, variants: new Map() };
    if (spec.kernel.kind === 'matmul' || spec.kernel.kind === 'row') k.epoch = this.renderEpoch;
    // render now: unsupported dtypes and binding limits surface when the program is built
    k.variants!.set('', this.compile(spec.kernel, new Map()));
    return k;
  }

  launch(kernel: PreparedKernel, args: KernelArgs): void {
    this.check();
    const k = kernel as GpuKernel;
    if (k.spec.kind === 'loop' && args.kind === 'loop') {
      for (const c of this.variants(k, aliases(args.buffers))) this.dispatch(c, args.buffers);
      return;
    }
    if (INDEXING_KINDS.has(k.spec.kind)) {
      const { w, buffers } = renderIndexing(k.spec, args);
      return this.dispatch(this.compiled(w), buffers);
    }
    if (k.spec.kind === 'random' && args.kind === 'random') return this.random(k.spec.dist, args);
    const { kernel: lk, buffers } = eagerKernel(k.spec, args);
    for (const c of this.compile(lk, aliases(buffers).map)) this.dispatch(c, buffers);
  }

  /** @internal A loop kernel's WGSL for one alias pattern of its launch's buffers (rendered once per pattern). */
  variants(k: GpuKernel, alias: Aliases): Compiled[] {
    if (k.epoch !== undefined && k.epoch !== this.renderEpoch) {
      // matmulConfig, subgroups or a max-autotune winner changed since these were rendered
      k.variants!.clear();
      k.epoch = this.renderEpoch;
    }
    let list = k.variants!.get(alias.key);
    if (!list) k.variants!.set(alias.key, (list = this.compile((k.spec as Extract<KernelSpec, { kind: 'loop' }>).kernel, alias.map)));
    return list;
  }

  /**
   * reduce-overhead (Backend.recordProgram, called by FusedProgram): the program's steps prerecorded
   * with fixed pipelines, bind groups and grids (prerecord.ts).
   */
  recordProgram(steps: readonly RecordStep[], variable: readonly number[]): ProgramRecording {
    if (!this.prerecord) return { summary: 'not prerecorded: turned off on this backend (prerecord = false); every dispatch is encoded on each call' };
    return new PrerecordedProgram(this, steps, variable);
  }

  /**
   * Random numbers: Philox4x32-10 on the GPU (render-random.ts), the CPU backend's stream for the
   * same (seed, offset): uniform and integer draws bit-identical, float32 normals within
   * NORMAL_TOLERANCE of the CPU's float64 Box-Muller. Drawn on the host and uploaded instead (the
   * CPU's exact numbers, a queue write: the recorded dispatches are submitted first): float64 and
   * bool outputs, integer ranges the GPU cannot reproduce exactly (gpuIntegerExact), and normals
   * while `hostNormals` is true.
   */
  hostNormals = false;
  /** parameter buffers of GPU draws, with the submit count when last bound (see randomParams) */
  private readonly randomParamBuffers: { buf: WebGpuBuffer; submits: number }[] = [];
  /** the compiled draw kernel per distribution and output type (its grid is each draw's) */
  private readonly randomKernels = new Map<string, Compiled>();

  private random(dist: RandomDist, args: Extract<KernelArgs, { kind: 'random' }>): void {
    const buf = args.out.buf as WebGpuBuffer;
    if (args.size === 0) return;
    const out = buf.dtype === 'float32' ? 'f32' : buf.dtype === 'int32' ? 'i32' : null;
    const onGpu = out !== null && (dist === 'integer' ? gpuIntegerExact(args.low!, args.high!, buf.dtype) : out === 'f32' && !(dist === 'normal' && this.hostNormals));
    if (onGpu) {
      const key = `${dist} ${out}`;
      let c = this.randomKernels.get(key);
      if (!c) this.randomKernels.set(key, (c = this.compiled(randomKernel(dist, out))));
      const { params, grid } = randomLaunch(dist, { seed: args.seed, offset: args.offset, size: args.size, outOffset: args.out.offset, low: args.low, high: args.high });
      const p = this.randomParams();
      this.device.queue.writeBuffer(p.gpu, 0, params.buffer, params.byteOffset, params.byteLength);
      this.dispatch({ w: { ...c.w, grid }, p: c.p }, [buf, p]);
      return;
    }
    const host = buf.dtype === 'float64' ? new Float64Array(args.size) : buf.dtype === 'int32' ? new Int32Array(args.size) : buf.dtype === 'bool' ? new Uint8Array(args.size) : new Float32Array(args.size);
    if (dist === 'integer') integerStream(args.seed, args.offset, args.size, args.low!, args.high!, host);
    else (dist === 'uniform' ? uniformStream : normalStream)(args.seed, args.offset, args.size, host as Float32Array | Float64Array);
    this.write(buf, host, args.out.offset);
  }

  /**
   * A parameter buffer for a GPU draw that no unsubmitted dispatch binds: its queue write lands
   * after all submitted work (which may still read the old words) and before the open pass, so
   * no recorded dispatch sees another draw's parameters and no extra submit is needed.
   */
  private randomParams(): WebGpuBuffer {
    const now = this.counters.submits;
    let e = this.randomParamBuffers.find((x) => x.submits < now);
    if (!e) {
      const gpu = this.device.createBuffer({ size: RANDOM_PARAM_WORDS * 4, usage: 128 | 8 /* STORAGE | COPY_DST */ });
      this.randomParamBuffers.push((e = { buf: new WebGpuBuffer('int32', RANDOM_PARAM_WORDS, gpu), submits: now }));
    }
    e.submits = now;
    return e.buf;
  }

  describe(spec: KernelSpec): string {
    if (spec.kind !== 'loop') return JSON.stringify(spec);
    return this.render(spec.kernel, new Map()).map((w) => `// ${w.name}: dispatch ${w.grid.join('x')}\n${w.code}`).join('\n\n');
  }

  /** WGSL for a loop kernel (for tests and logs). */
  wgsl(k: LoopKernel): string[] {
    return this.render(k, new Map()).map((w) => w.code);
  }

  /** A loop kernel's WGSL; a matmul in its configuration (`cfg`: a split part's, its kernel's). */
  private render(k: LoopKernel, alias: AliasMap, cfg?: MatmulConfig): WgslKernel[] {
    if (k.kind === 'row' && this.useSubgroups) return [renderRow(k, alias, { subgroups: true })];
    return k.kind === 'matmul' ? [renderMatmul(k, alias, cfg ?? this.tuner.configFor(k), this.precision)] : renderWgsl(k, alias);
  }

  private compile(k: LoopKernel, alias: AliasMap): Compiled[] {
    const cfg = k.kind === 'matmul' ? this.tuner.configFor(k) : undefined;
    let ws = this.render(k, alias, cfg);
    if (ws.some((w) => w.bindings.length > this.maxStorageBuffers)) {
      // too many buffers for one shader on this device: dispatch parts in order (split.ts)
      const parts = splitForBindings(k, this.maxStorageBuffers, alias);
      if (parts) ws = parts.flatMap((p) => this.render(p, alias, cfg));
    }
    return ws.map((w) => this.compiled(this.bindable(w)));
  }

  /** `w`, if this device binds its buffers; else the typed error. */
  private bindable(w: WgslKernel): WgslKernel {
    if (w.bindings.length > this.maxStorageBuffers) {
      throw new WebGpuUnsupportedError(`kernel ${w.name} reads and writes ${w.bindings.length} buffers, more than this device binds per shader (maxStorageBuffersPerShaderStage = ${this.maxStorageBuffers})`, 'webgpu', 'compile smaller functions (fewer tensors per fused kernel), or use a device with a higher limit');
    }
    return w;
  }

  private compiled(w: WgslKernel): Compiled {
    return { w, p: this.pipeline(w.code, w.writable, w.name) };
  }

  /** A cached pipeline; a compile error becomes a pending error (thrown by the next call). */
  private pipeline(code: string, writable: readonly boolean[], name = 'kernel'): Pipeline {
    const key = pipelineKey(code, writable);
    let p = this.pipelines.get(key);
    if (p) return p;
    const made = this.makePipeline(code, writable, name);
    this.checks.push(made.error.then((e) => {
      if (e) this.fail(e);
    }));
    this.pipelines.set(key, (p = made.p));
    return p;
  }

  /** A new pipeline and the typed error the device reports for it (WebGpuShaderError with the line), or null. */
  private makePipeline(code: string, writable: readonly boolean[], name: string): { p: Pipeline; error: Promise<Error | null> } {
    let module!: GPUShaderModule;
    let p!: Pipeline;
    const error = this.inScope('validation', () => {
      module = this.device.createShaderModule({ code });
      // an explicit layout: 'auto' drops bindings the compiled WGSL does not touch
      const bgl = this.device.createBindGroupLayout({
        entries: writable.map((w, i) => ({ binding: i, visibility: 4 /* COMPUTE */, buffer: { type: w ? 'storage' : 'read-only-storage' } as GPUBufferBindingLayout })),
      });
      const pipeline = this.device.createComputePipeline({ layout: this.device.createPipelineLayout({ bindGroupLayouts: [bgl] }), compute: { module, entryPoint: 'main' } });
      p = { pipeline, layout: bgl, name };
    }, async (e) => {
      const info = await module.getCompilationInfo();
      const err = info.messages.find((m) => m.type === 'error');
      const line = err?.lineNum;
      return new WebGpuShaderError(`WGSL rejected${line ? ` at line ${line}` : ''}: ${err?.message ?? e.message}\n${numberedSource(code, line)}`, code, line);
    });
    return { p, error };
  }

  /**
   * @internal A kernel to try (max-autotune's candidates): the cached pipeline, or a new one once
   * the device accepted it; rejects with the typed error (WebGpuShaderError, or
   * WebGpuUnsupportedError for too many bindings) without making it pending. A new pipeline is
   * not cached (`keep` caches one).
   */
  async tryCompile(w: WgslKernel): Promise<Compiled> {
    this.bindable(w);
    const cached = this.pipelines.get(pipelineKey(w.code, w.writable));
    if (cached) return { w, p: cached };
    const { p, error } = this.makePipeline(w.code, w.writable, w.name);
    const e = await error;
    if (e) throw e;
    return { w, p };
  }

  /** @internal Caches a pipeline from tryCompile (a max-autotune winner: the programs' next render finds it). */
  keep(c: Compiled): void {
    const key = pipelineKey(c.w.code, c.w.writable);
    if (!this.pipelines.has(key)) this.pipelines.set(key, c.p);
  }

  private dispatch(c: Compiled, buffers: readonly BackendBuffer[]): void {
    const bound = c.w.bindings.map((b) => buffers[b] as WebGpuBuffer);
    c.w.writable.forEach((w, i) => {
      if (w) bound[i]!.host = undefined;
    });
    this.capturing?.dispatches.push({ c, buffers: bound });
    this.encode(c.p, this.bindGroup(c.p.layout, bound.map((b) => b.gpu)), c.w.grid);
  }

  /** @internal A bind group of `buffers` in binding order. */
  bindGroup(layout: GPUBindGroupLayout, buffers: readonly GPUBuffer[]): GPUBindGroup {
    this.counters.bindGroups++;
    return this.device.createBindGroup({ layout, entries: buffers.map((buffer, i) => ({ binding: i, resource: { buffer } })) });
  }

  /** @internal Records one dispatch into the open compute pass (opened here; submitted at the end of the turn). */
  encode(p: Pipeline, group: GPUBindGroup, grid: readonly [number, number, number]): void {
    const pipeline = p.pipeline;
    let pass = this.pass;
    if (!pass) {
      // while profiling, each dispatch is its own pass in the open encoder (timestamps are per pass)
      const enc = (this.encoder ??= this.device.createCommandEncoder());
      pass = this.pass = enc.beginComputePass(this.profiler?.nextPass(p.name, grid, enc));
      this.passPipeline = null;
    }
    if (pipeline !== this.passPipeline) {
      pass.setPipeline(pipeline);
      this.passPipeline = pipeline;
    }
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(grid[0], grid[1], grid[2]);
    this.counters.dispatches++;
    if (this.profiler) {
      pass.end();
      this.pass = null;
    }
    if (!this.submitQueued) {
      this.submitQueued = true;
      queueMicrotask(() => this.submit());
    }
  }

  /**
   * @internal Runs `fn` (an opaque step's eager kernels) and returns the dispatches it made, with
   * the buffers each bound; `broken` says why they cannot be replayed. Not reentrant.
   */
  capture(fn: () => void): Capture {
    const cap: Capture = { dispatches: [] };
    this.capturing = cap;
    try {
      fn();
    } finally {
      this.capturing = null;
    }
    return cap;
  }

  /** Submits the recorded dispatches (one command buffer). */
  submit(): void {
    this.submitQueued = false;
    if (!this.encoder) return;
    this.pass?.end();
    this.profiler?.beforeSubmit(this.encoder);
    this.device.queue.submit([this.encoder.finish()]);
    this.pass = null;
    this.encoder = null;
    this.counters.submits++;
  }

  /**
   * max-autotune (called by FusedProgram before it prepares its kernels): registers the program's
   * matmuls with the tuner, which records each decision (autotune.ts).
   */
  autotuneProgram(l: Lowered): void {
    this.tuner.register(l);
  }

  /**
   * Times the matmul configurations of max-autotune programs on this device and keeps the fastest
   * per shape (autotune.ts). With `compiled` (a kiln.compile result) and its arguments, it first
   * runs `compiled.warmup([args])` so the program exists; programs switch at their next call.
   */
  autotune(compiled?: AutotuneTarget, args: readonly unknown[] = [], opts: AutotuneOptions = {}): Promise<AutotuneReport> {
    this.check();
    return this.tuner.run(compiled, args, opts);
  }

  /** kiln.profile: the dispatches made from now on (while profile() runs) carry `mark` */
  profileMark(mark: unknown): void {
    if (this.profiler) this.profiler.mark = mark;
  }

  /** Whether profile() can run here (the device has 'timestamp-query'). */
  get canProfile(): boolean {
    return hasTimestamps(this.device);
  }

  /**
   * GPU time of every dispatch `fn` makes (profile.ts), from timestamp queries; throws
   * WebGpuUnsupportedError where the device has no 'timestamp-query'. Not reentrant.
   */
  async profile(fn: () => unknown): Promise<GpuProfile> {
    this.check();
    if (!this.canProfile) {
      throw new WebGpuUnsupportedError(`GPU timestamps are not available on this adapter (${this.adapterInfo || 'unknown'}): it has no 'timestamp-query' feature`, 'profile', 'time calls with `await gpu.sync()` around them instead, or profile on an adapter with timestamp-query (Dawn on Vulkan, Metal or D3D12; Chrome)');
    }
    if (this.profiler) throw new WebGpuUnsupportedError('profile() is already running on this backend', 'profile', 'await the running profile first');
    this.submit();
    const p = (this.profiler = new Profiler(this.device));
    const t0 = performance.now();
    try {
      const r = fn();
      if (r && typeof (r as Promise<unknown>).then === 'function') await r;
    } finally {
      this.submit();
      this.profiler = null;
    }
    await this.sync();
    return p.result(this.adapterInfo, performance.now() - t0);
  }

  /**
   * Releases pooled buffers and the device, after the submitted work finished (destroying a
   * device with work in flight crashed Dawn's OpenGL backend here).
   */
  async destroy(): Promise<void> {
    this.submit();
    await this.device.queue.onSubmittedWorkDone();
    this.pool.clear();
    this.device.destroy();
  }
}

/** The pipeline cache's key: the WGSL and which bindings are writable (the explicit layout). */
function pipelineKey(code: string, writable: readonly boolean[]): string {
  return `${writable.map((w) => (w ? 'w' : 'r')).join('')}\n${code}`;
}

/** @internal logical buffers that are one GPU buffer in a launch, and the key of that pattern */
export interface Aliases {
  readonly key: string;
  readonly map: Map<number, number>;
}

/** @internal Logical buffers that are the same GPU buffer in this launch (see AliasMap). */
export function aliases(buffers: readonly BackendBuffer[]): Aliases {
  const first = new Map<GPUBuffer, number>();
  const map = new Map<number, number>();
  buffers.forEach((b, i) => {
    if (!b) return;
    const g = (b as WebGpuBuffer).gpu;
    const f = first.get(g);
    if (f === undefined) first.set(g, i);
    else map.set(i, f);
  });
  if (map.size === 0) return { key: '', map };
  return { key: [...map].map(([a, b]) => `${a}=${b}`).join(','), map };
}

function gpuArray(dtype: DType, data: TypedArray): Float32Array | Int32Array | Uint32Array | Float64Array {
  if (dtype === 'float32') return data instanceof Float32Array ? data : Float32Array.from(data as ArrayLike<number>);
  if (dtype === 'int32') return data instanceof Int32Array ? data : Int32Array.from(data as ArrayLike<number>);
  if (dtype === 'bool') return Uint32Array.from(data as ArrayLike<number>, (v) => (v ? 1 : 0));
  return data instanceof Float64Array ? data : Float64Array.from(data as ArrayLike<number>);
}

function fromGpu(dtype: DType, size: number, bytes: ArrayBuffer): TypedArray {
  if (dtype === 'bool') return Uint8Array.from(new Uint32Array(bytes, 0, size));
  const T = TYPED_ARRAY[dtype] as unknown as new (b: ArrayBuffer) => TypedArray;
  return new T(bytes.slice(0, size * (dtype === 'float64' ? 8 : 4)));
}
