// The backend interface: a handful of methods. A backend allocates buffers, copies data,
// prepares a kernel from a KernelSpec and launches it. Everything above this line
// (ops, autograd, the compiler's fusion and scheduling) is backend-neutral.

import type { DType, TypedArray } from '../core/dtype.js';
import type { BackendBuffer, KernelSpec, KernelArgs } from '../ir/kernel-spec.js';
import type { Lowered } from '../ir/lowered.js';

export type { BackendBuffer };

export interface PreparedKernel {
  readonly spec: KernelSpec;
}

export interface Backend {
  readonly name: string;
  /** `shared`: the buffer may be written by several threads (compiled programs ask for it) */
  alloc(dtype: DType, size: number, hint?: 'shared'): BackendBuffer;
  free(buf: BackendBuffer): void;
  write(buf: BackendBuffer, data: TypedArray, offset?: number): void;
  /** Synchronous read; a GPU backend may throw and ask for `read`. */
  readSync(buf: BackendBuffer): TypedArray;
  read(buf: BackendBuffer): Promise<TypedArray>;
  prepare(spec: KernelSpec): PreparedKernel;
  launch(kernel: PreparedKernel, args: KernelArgs): void;
  /** The code a kernel spec becomes on this backend, for logs and debug dumps (optional). */
  describe?(spec: KernelSpec): string;
  /**
   * Builds the kernels prepared so far together (optional): a native backend compiles all of
   * a program's kernels as one translation unit. Called after a program prepares its kernels.
   */
  flush?(): void;
  /**
   * Loads what its first program will need (optional; native: the runtime library), so that
   * kiln.compile does it ahead of the first call. Never throws: a backend that cannot work
   * reports itself when a program is built, as before.
   */
  prewarm?(): void;
  /**
   * reduce-overhead on a kernel backend that can prerecord a program (optional; webgpu): each
   * step's pipelines, bindings and dispatch sizes are made once, so a call only encodes them.
   * `variable`: the logical buffers that can differ between calls (inputs, this call's outputs);
   * every other buffer the steps use (scratch slots, constants) is the same on every call.
   */
  recordProgram?(steps: readonly RecordStep[], variable: readonly number[]): ProgramRecording;
  /**
   * max-autotune by the backend's own tuner (optional; webgpu measures on the device,
   * asynchronously): called for each max-autotune program instead of the compiler's
   * synchronous timing of matmul blockings.
   */
  autotuneProgram?(lowered: Lowered): void;
  /**
   * The persistent compile cache and artifacts (optional, src/compiler/cache): the code this
   * backend generates for some loop-kernel specs, as JSON-safe data (e.g. JS sources).
   */
  exportCode?(specs: readonly KernelSpec[]): unknown;
  /**
   * Hands back `exportCode` data for the same specs before they are prepared, so that preparing
   * them skips code generation. Returns false when the data cannot be used (then it generates).
   */
  importCode?(specs: readonly KernelSpec[], code: unknown): boolean;
  /** What generated code depends on besides the kernels (compiler, flags, CPU): part of cache keys. */
  codeFingerprint?(): string;
  /**
   * Moves weights' buffers into the memory this backend's kernels read (optional; wasm: its heap,
   * JS: shared memory for its worker threads), so that kiln.compile places them, not the first
   * launch over them. Only bytes move: tensors over these buffers keep working.
   */
  placeWeights?(bufs: readonly BackendBuffer[]): void;
  /**
   * Dynamic shapes (issue 7): true when `prepare` takes loop kernels with sizes that are runtime
   * values (`kernel.sizes`, `*Sym` fields; see src/compiler/dynamic/DYNAMIC.md) and renders each once,
   * reading the sizes from the sizes buffer at launch. Absent or false: the compiler specializes
   * a dynamic program per concrete size for this backend (one compile per size).
   */
  readonly symbolicKernels?: boolean;
  /** Whether `prepare` renders AttentionKernel (loop-ir.ts; made by src/compiler/schedule/fuse-attention.ts); absent: programs keep score, softmax and ·v kernels */
  readonly attentionKernels?: boolean;
  /**
   * false for a backend that reads only asynchronously (WebGPU): the compiler then folds
   * constants on the host and reports a value read inside a compiled function as an
   * asynchronous graph break, raised as `syncReadError(...)` (default: a SyncReadError).
   */
  readonly syncReads?: boolean;
  syncReadError?(message: string, op: string, hint: string): Error;
  /**
   * Whether compiled programs recycle the output buffers this backend allocates for them
   * (src/compiler/run/output-pool.ts): set where a fresh buffer is costly (zero-filled pages,
   * page faults, garbage collection); outputs of at least `minBytes` then come back to their
   * program once their tensors are gone and serve a later call. Absent: outputs are fresh and
   * freed (e.g. an allocator that reuses freed memory itself), except under mode
   * 'reduce-overhead', which recycles every output on every backend.
   */
  readonly outputRecycling?: { readonly minBytes: number };
  /** false for a backend without float64 kernels (WebGPU: WGSL has no f64); absent: float64 runs */
  readonly float64?: boolean;
  /**
   * Device-timed profiling (optional; webgpu: timestamp queries, `gpu.profile`): runs `fn` and
   * returns the device time of every dispatch it made, each with the mark set when it was made
   * (`profileMark`). kiln.profile uses it when the default backend has it.
   */
  profile?(fn: () => unknown): Promise<{ readonly dispatches: readonly { readonly kernel: string; readonly ns: number; readonly mark?: unknown }[] }>;
  /** while `profile` runs: the dispatches made from now on carry `mark` (null: none) */
  profileMark?(mark: unknown): void;
}

/** a loop kernel (prepared), or an opaque step (its op and graph node) that runs `runOpaque` */
export type RecordStep = { readonly prepared: PreparedKernel } | { readonly op: string; readonly node: number };
export interface ProgramRecording {
  /** what runs prerecorded and why the rest does not (print, explain's program text, perf log); kept current */
  readonly summary: string;
  /** runs the steps on this call's buffers, `opaque(i)` for step i's eager kernels; absent: not prerecorded (the summary says why) */
  readonly run?: (bufs: readonly BackendBuffer[], opaque: (step: number) => void) => void;
}
