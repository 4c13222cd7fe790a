// The JavaScript backend: buffers are typed arrays, kernels are generated JS functions
// (pointwise, reductions) or hand-written loops (matmul, indexing, windows).

import { PARALLEL_WORK } from './chunk-protocol.js';
import { TYPED_ARRAY, type DType, type TypedArray } from '../../core/dtype.js';
import { OutOfMemoryError, fmtBytes } from '../../core/errors.js';
import { integerStream, normalStream, uniformStream } from '../../core/random.js';
import type { Backend, BackendBuffer, PreparedKernel } from '../backend.js';
import { coalesce } from '../iteration.js';
import type { KernelArgs, KernelSpec, ViewArg } from '../../ir/kernel-spec.js';
import { exprKey } from '../../ir/scalar-expr.js';
import { cumsum, gather, indexAdd, indexSelect, scatterAdd } from './indexing.js';
import { scan, sortIndices } from './sort-scan.js';
import { matmul2d } from './matmul.js';
import { pointwiseKernel, type PointwiseFn } from './pointwise.js';
import { reduceKernel } from './reduce.js';
import { col2im, im2col } from './window.js';
import { compileKernel, kernelExtent, kernelWork, renderKernelSource } from './render-loop.js';
import { chunkGrain, getThreadPool, isShared } from './threads.js';
import { kernelLoads, kernelStores, type GroupKernel, type KernelSizes, type LoopKernel } from '../../ir/loop-ir.js';
import { symbolicRunner } from './symbolic-runner.js';

/**
 * Eager buffers are plain memory (shared memory made eager kernels 10-15% slower here);
 * compiled programs allocate theirs shared, and move inputs there on first parallel use.
 */

/**
 * Compiled programs recycle outputs of 64 KiB or more (Backend.outputRecycling): a fresh one is
 * a new SharedArrayBuffer, zero-filled and page-faulted on first touch (~88 ms per steady W6
 * call); below that V8's allocation is cheap.
 */
export const JS_OUTPUT_RECYCLING = { minBytes: 64 * 1024 } as const;

export class JsBuffer implements BackendBuffer {
  constructor(readonly dtype: DType, public data: TypedArray) {}
  /** set by a backend that moved the data into memory it manages (the wasm heap): gives it back (JsBackend.free) */
  release?: () => void;
  get size(): number {
    return this.data.length;
  }
  /**
   * Moves the data into shared memory (once), so worker threads can use it. Every tensor
   * keeps working: they hold this object, not the array.
   */
  share(): TypedArray {
    if (!isShared(this.data) && typeof SharedArrayBuffer !== 'undefined') {
      const T = TYPED_ARRAY[this.dtype];
      const copy = new T(new SharedArrayBuffer(this.data.length * T.BYTES_PER_ELEMENT), 0, this.data.length);
      copy.set(this.data);
      this.data = copy;
    }
    return this.data;
  }
}

interface JsKernel extends PreparedKernel {
  run(args: KernelArgs): void;
}

const data = (v: ViewArg): TypedArray => (v.buf as JsBuffer).data;

export class JsBackend implements Backend {
  readonly name = 'js';
  readonly outputRecycling = JS_OUTPUT_RECYCLING;
  /** the JS renderer computes attention kernels (render-loop.ts) */
  readonly attentionKernels = true;
  /** dynamic kernels render once and read their sizes at entry (symbolic-runner.ts) */
  readonly symbolicKernels = true;
  private readonly prepared = new Map<string, JsKernel>();

  alloc(dtype: DType, size: number, hint?: 'shared'): BackendBuffer {
    const T = TYPED_ARRAY[dtype];
    try {
      if (hint === 'shared' && typeof SharedArrayBuffer !== 'undefined') return new JsBuffer(dtype, new T(new SharedArrayBuffer(size * T.BYTES_PER_ELEMENT), 0, size));
      return new JsBuffer(dtype, new T(size));
    } catch (e) {
      // JavaScript refuses a typed array that large (or cannot find the memory): RangeError
      if (e instanceof RangeError) throw new OutOfMemoryError(`cannot allocate ${fmtBytes(size * T.BYTES_PER_ELEMENT)} (${size} ${dtype}): ${e.message}`);
      throw e;
    }
  }
  free(buf: BackendBuffer): void {
    // typed arrays are garbage collected; a buffer adopted by the wasm heap returns its region
    (buf as JsBuffer).release?.();
  }
  write(buf: BackendBuffer, src: TypedArray, offset = 0): void {
    (buf as JsBuffer).data.set(src, offset);
  }
  readSync(buf: BackendBuffer): TypedArray {
    return (buf as JsBuffer).data;
  }
  read(buf: BackendBuffer): Promise<TypedArray> {
    return Promise.resolve((buf as JsBuffer).data);
  }

  prepare(spec: KernelSpec): PreparedKernel {
    const key = specKey(spec);
    let k = this.prepared.get(key);
    if (!k) {
      k = { spec, run: buildRunner(spec) };
      this.prepared.set(key, k);
    }
    return k;
  }

  launch(kernel: PreparedKernel, args: KernelArgs): void {
    (kernel as JsKernel).run(args);
  }

  describe(spec: KernelSpec): string {
    return spec.kind === 'loop' ? loopSource(spec.kernel, spec.nBuffers) : JSON.stringify(spec);
  }

  /** kiln.compile: the worker threads start booting and the matmul engine compiles its micro-kernels now, not inside the first call. */
  prewarm(): void {
    getThreadPool();
    matmul2d.prepare();
  }

  /** Into shared memory, when there are worker threads to read it. */
  placeWeights(bufs: readonly BackendBuffer[]): void {
    if (getThreadPool() === null) return;
    for (const b of bufs) if (typeof (b as JsBuffer).share === 'function') (b as JsBuffer).share();
  }

  /** The JS source of each loop kernel (the persistent compile cache stores it). */
  exportCode(specs: readonly KernelSpec[]): (string | null)[] {
    return specs.map((s) => (s.kind === 'loop' ? loopSource(s.kernel, s.nBuffers) : null));
  }

  /** Sources from exportCode: preparing these kernels then skips rendering them. */
  importCode(specs: readonly KernelSpec[], code: unknown): boolean {
    if (!Array.isArray(code) || code.length !== specs.length) return false;
    specs.forEach((s, i) => {
      if (s.kind === 'loop' && typeof code[i] === 'string') importedSources.set(s.kernel, code[i] as string);
    });
    return true;
  }
}

/** Loop-kernel sources read back from the compile cache, by kernel object (skips rendering). */
const importedSources = new WeakMap<object, string>();
const loopSource = (k: LoopKernel, nBuffers: number): string => importedSources.get(k) ?? renderKernelSource(k, nBuffers);

/** The cache key of a prepared kernel (pointwise: by expression text). */
export function specKey(spec: KernelSpec): string {
  if (spec.kind === 'pointwise') return `pw|${exprKey(spec.expr)}|${spec.outDType}|${spec.nInputs}|${spec.ndim}`;
  // the source is the same for every row count of a split loop: the extent is part of the key
  if (spec.kind === 'loop') return `loop|${kernelExtent(spec.kernel)}|${kernelWork(spec.kernel)}|${loopSource(spec.kernel, spec.nBuffers)}`;
  return JSON.stringify(spec);
}

function buildRunner(spec: KernelSpec): (args: KernelArgs) => void {
  switch (spec.kind) {
    case 'pointwise': {
      // one generated function per coalesced rank, found without rebuilding the key
      const byRank: PointwiseFn[] = [];
      const key = exprKey(spec.expr);
      return (a) => {
        const args = a as Extract<KernelArgs, { kind: 'pointwise' }>;
        const c = coalesce(args.shape, [args.out.strides, ...args.inputs.map((v) => v.strides)]);
        const ndim = c.shape.length;
        const fn = (byRank[ndim] ??= pointwiseKernel(`${key}|${spec.nInputs}|${ndim}`, spec.expr, spec.nInputs, ndim));
        fn(args.params, data(args.out), args.out.offset, c.strides[0]!, args.inputs.map(data),
          args.inputs.map((v) => v.offset), c.strides.slice(1), c.shape);
      };
    }
    case 'reduce':
      return (a) => {
        const args = a as Extract<KernelArgs, { kind: 'reduce' }>;
        const fn = reduceKernel(spec.op, args.keepShape.length, args.reduceShape.length);
        fn(data(args.input), args.input.offset, args.input.strides, data(args.out), args.out.offset, args.out.strides,
          args.keepShape, args.reduceShape);
      };
    case 'matmul':
      return (a) => runMatmul(a as Extract<KernelArgs, { kind: 'matmul' }>);
    case 'gather':
      return (a) => {
        const args = a as Extract<KernelArgs, { kind: 'gather' }>;
        gather(args, data, args.dimSize);
      };
    case 'scatterAdd':
      return (a) => {
        const args = a as Extract<KernelArgs, { kind: 'scatterAdd' }>;
        scatterAdd(args, data, args.dimSize);
      };
    case 'indexSelect':
      return (a) => indexSelect(a as Extract<KernelArgs, { kind: 'indexSelect' }>, data);
    case 'indexAdd':
      return (a) => indexAdd(a as Extract<KernelArgs, { kind: 'indexAdd' }>, data);
    case 'cumsum':
      return (a) => cumsum(a as Extract<KernelArgs, { kind: 'cumsum' }>, data);
    case 'scan':
      return (a) => scan(a as Extract<KernelArgs, { kind: 'scan' }>, spec.op, spec.dtype === 'int32' || spec.dtype === 'bool', data);
    case 'sort':
      return (a) => sortIndices(a as Extract<KernelArgs, { kind: 'sort' }>, spec.descending, data);
    case 'im2col':
      return (a) => {
        const args = a as Extract<KernelArgs, { kind: 'im2col' | 'col2im' }>;
        im2col(data(args.image), args.image.offset, data(args.cols), args.cols.offset, args.geom);
      };
    case 'col2im':
      return (a) => {
        const args = a as Extract<KernelArgs, { kind: 'im2col' | 'col2im' }>;
        col2im(data(args.cols), args.cols.offset, data(args.image), args.image.offset, args.geom);
      };
    case 'loop': {
      if (spec.kernel.sizes) return symbolicRunner(spec.kernel as LoopKernel & { sizes: KernelSizes }, spec.nBuffers, loopSource(spec.kernel, spec.nBuffers));
      if (spec.kernel.kind === 'group') return groupRunner(spec.kernel, spec.nBuffers);
      const { fn, source } = compileKernel(spec.kernel, spec.nBuffers, loopSource(spec.kernel, spec.nBuffers));
      const extent = kernelExtent(spec.kernel);
      const parallel = extent > 1 && kernelWork(spec.kernel) >= PARALLEL_WORK;
      const grain = chunkGrain(spec.kernel, extent, kernelWork(spec.kernel));
      const used = [...new Set([...kernelStores(spec.kernel).map((st) => st.buf), ...kernelLoads(spec.kernel)])];
      // start the pool and let its workers compile this kernel now, at program build, rather
      // than on the first call's critical path
      if (parallel) getThreadPool()?.prepare([source]);
      return (a) => {
        const args = a as Extract<KernelArgs, { kind: 'loop' }>;
        const pool = parallel && !args.range ? getThreadPool() : null;
        // threads need every buffer the kernel touches in shared memory (moved there once)
        if (pool) for (const i of used) (args.buffers[i] as JsBuffer).share();
        const bufs = args.buffers.map((b) => (b as JsBuffer | undefined)?.data as TypedArray);
        if (args.range) return fn(bufs, args.range[0], args.range[1]);
        if (pool) pool.run(source, fn, bufs, extent, used, grain);
        else fn(bufs, 0, extent);
      };
    }
    case 'random':
      return (a) => {
        const args = a as Extract<KernelArgs, { kind: 'random' }>;
        const out = data(args.out).subarray(args.out.offset, args.out.offset + args.size) as Float32Array | Float64Array;
        if (spec.dist === 'integer') integerStream(args.seed, args.offset, args.size, args.low!, args.high!, out);
        else (spec.dist === 'uniform' ? uniformStream : normalStream)(args.seed, args.offset, args.size, out);
      };
  }
}

/**
 * A horizontal group runs as one function when small; when large, part by part so each
 * part's loop can still be split across threads.
 */
function groupRunner(k: GroupKernel, nBuffers: number): (a: KernelArgs) => void {
  const whole = compileKernel(k, nBuffers).fn;
  const parts = k.parts.map((p) => ({ ...compileKernel(p, nBuffers), extent: kernelExtent(p), work: kernelWork(p), grain: chunkGrain(p, kernelExtent(p), kernelWork(p)), writes: [...new Set(p.stores.map((st) => st.buf))], used: [...new Set([...p.stores.map((st) => st.buf), ...kernelLoads(p)])] }));
  const large = parts.some((p) => p.work >= PARALLEL_WORK && p.extent > 1);
  if (large) getThreadPool()?.prepare(parts.filter((p) => p.work >= PARALLEL_WORK && p.extent > 1).map((p) => p.source));
  const used = [...new Set([...kernelStores(k).map((st) => st.buf), ...kernelLoads(k)])];
  return (a) => {
    const bufs = (a as Extract<KernelArgs, { kind: 'loop' }>).buffers.map((b) => (b as JsBuffer | undefined)?.data as TypedArray);
    const pool = large ? getThreadPool() : null;
    if (!pool) return whole(bufs, 0, 1);
    const all = (a as Extract<KernelArgs, { kind: 'loop' }>).buffers;
    for (const i of used) (all[i] as JsBuffer).share();
    for (const i of used) bufs[i] = (all[i] as JsBuffer).data;
    for (const p of parts) {
      if (p.work >= PARALLEL_WORK && p.extent > 1 && p.writes.every((w) => isShared(bufs[w]!))) pool.run(p.source, p.fn, bufs, p.extent, p.used, p.grain);
      else p.fn(bufs, 0, p.extent);
    }
  };
}

function runMatmul(args: Extract<KernelArgs, { kind: 'matmul' }>): void {
  const { a, b, out, batchShape, m, n, k } = args;
  const nb = batchShape.length;
  const total = batchShape.reduce((x, y) => x * y, 1);
  const idx = new Array<number>(nb).fill(0);
  let aOff = a.offset, bOff = b.offset, cOff = out.offset;
  const A = data(a), B = data(b), C = data(out);
  for (let t = 0; t < total; t++) {
    matmul2d({
      a: A, aOff, sam: a.strides[nb]!, sak: a.strides[nb + 1]!,
      b: B, bOff, sbk: b.strides[nb]!, sbn: b.strides[nb + 1]!,
      c: C, cOff, scm: out.strides[nb]!, scn: out.strides[nb + 1]!,
      m, n, k,
    });
    for (let d = nb - 1; d >= 0; d--) {
      idx[d]!++;
      aOff += a.strides[d]!; bOff += b.strides[d]!; cOff += out.strides[d]!;
      if (idx[d]! < batchShape[d]!) break;
      aOff -= a.strides[d]! * batchShape[d]!; bOff -= b.strides[d]! * batchShape[d]!; cOff -= out.strides[d]! * batchShape[d]!;
      idx[d] = 0;
    }
  }
}
