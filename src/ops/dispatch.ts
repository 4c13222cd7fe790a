// Every op reaches the machine through apply(): validate and infer the output (meta),
// then either run the kernel (eager), or record a node (while the compiler traces),
// and attach the autograd node when an input requires grad.

import type { Backend } from '../backend/backend.js';
import type { ViewArg } from '../ir/kernel-spec.js';
import type { DType, TypedArray } from '../core/dtype.js';
import { TYPED_ARRAY, isFloat } from '../core/dtype.js';
import { ArgumentError, KilnError, NumericsError, OutOfMemoryError, fmtShape } from '../core/errors.js';
import { numel } from '../core/shape.js';
import { GradNode, edgeOf, type BackwardFn, type Edge } from '../autograd/node.js';
import { isGradEnabled, setGradEnabled } from '../autograd/grad-mode.js';
import { Storage } from '../tensor/storage.js';
import { Tensor, readHooks } from '../tensor/tensor.js';
import { profiling } from '../core/profiling.js';

export interface OutMeta {
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** set for view ops: the output aliases input 0's storage with these strides */
  readonly view?: { readonly strides: readonly number[]; readonly offset: number };
}

export interface PrimDef<A> {
  readonly name: string;
  /** validates the inputs and infers the output; throws before anything is allocated */
  meta(inputs: readonly Tensor[], attrs: A): OutMeta;
  /** computes into a fresh contiguous output (not called for views) */
  run?(inputs: readonly Tensor[], out: Tensor, attrs: A): void;
  backward?: BackwardFn<A>;
  /** which inputs backward reads (default: all) */
  readonly saveInputs?: boolean | readonly number[];
  /** whether backward reads the output */
  readonly saveOutput?: boolean;
  /** the textual form of attrs in printed graphs */
  formatAttrs?(attrs: A): string;
}

/** What the compiler's tracer implements to capture ops instead of running them. */
export interface TraceHook {
  record<A>(prim: PrimDef<A>, inputs: readonly Tensor[], attrs: A, meta: OutMeta): Tensor;
  /** a read-out of a traced tensor: the tracer decides (graph break) and returns real data */
  concretize(t: Tensor, reason: string): TypedArray;
  /** a read-out of a concrete tensor while tracing (a captured one's values would be frozen into the trace) */
  readsConcrete(t: Tensor, reason: string): void;
  /** an in-place write of src into dst's memory */
  mutate(dst: Tensor, src: Tensor): void;
  /** a second handle on a traced value (`internal`: autograd's saved tensors, not the user's) */
  adopt(alias: Tensor, internal: boolean): void;
  /**
   * The counters of a random draw of n values while tracing: placeholders that leave the global
   * generator alone (the compiled program reserves its draws from it each time it runs, in
   * order, as eager does), distinct per draw so the graph's structure does not change per call.
   */
  drawRandom(n: number): { seed: number; offset: number };
}

/** The default backend until kiln's API sets one (src/api/eager.ts): any use says what is missing. */
const NO_BACKEND = new Proxy({} as Backend, {
  get(_, key) {
    throw new KilnError(`no default backend (reading its '${String(key)}')`, 'eager ops', "import 'kilnjs' or 'kilnjs/node' (they set it), or call setDefaultBackend");
  },
});

export const runtime = {
  /** eager ops' backend: set on import by kiln's API (src/api/eager.ts), or by setDefaultBackend */
  backend: NO_BACKEND,
  tracer: null as TraceHook | null,
  /** KILN_DEBUG_NAN: check every kernel's output for NaN/Inf */
  checkNumerics: typeof process !== 'undefined' && !!process.env?.KILN_DEBUG_NAN,
};

export function setDefaultBackend(b: Backend): void {
  runtime.backend = b;
}

/** Enables the NaN/Inf check on every kernel output (or turns it off). */
export function setCheckNumerics(on: boolean): void {
  runtime.checkNumerics = on;
}

/** Checks a plain-JavaScript caller passed a live Tensor where one is required. */
export function expectTensor(op: string, x: unknown, name = 'input'): asserts x is Tensor {
  if (x instanceof Tensor) return;
  const what = x === null ? 'null' : Array.isArray(x) ? 'an array' : typeof x;
  throw new ArgumentError(`${name} must be a Tensor, got ${what}`, op, Array.isArray(x) || typeof x === 'number' ? 'wrap values with kiln.tensor(...)' : undefined);
}

export function view(t: Tensor): ViewArg {
  return { buf: t.storage.buf, offset: t.offset, strides: t.strides };
}

/** Kernel-level copy of src into the memory of dst (same shape; casts to dst's dtype). */
export function copyInto(dst: Tensor, src: Tensor, srcStrides: readonly number[] = src.strides): void {
  const backend = dst.storage.backend;
  const expr = { kind: 'op' as const, op: 'identity' as const, dtype: dst.dtype, args: [{ kind: 'input' as const, index: 0, dtype: src.dtype }] };
  backend.launch(backend.prepare({ kind: 'pointwise', expr, outDType: dst.dtype, nInputs: 1, ndim: dst.ndim }), {
    kind: 'pointwise', out: view(dst), inputs: [{ buf: src.storage.buf, offset: src.offset, strides: srcStrides }], shape: dst.shape, params: [],
  });
}

export function backendOf(op: string, inputs: readonly Tensor[]): Backend {
  let b: Backend | undefined;
  for (const t of inputs) {
    if (!t.hasStorage) continue;
    const tb = t.storage.backend;
    if (b && tb !== b) {
      throw new ArgumentError(`inputs live on different backends (${b.name} and ${tb.name})`, op, 'copy one to the other backend with kiln.toBackend(t, backend) (from a GPU: await kiln.toBackendAsync(t, backend)); t.to() changes the dtype, not the backend');
    }
    b = tb;
  }
  return b ?? runtime.backend;
}

export function apply<A>(prim: PrimDef<A>, inputs: readonly Tensor[], attrs: A): Tensor {
  for (const t of inputs) t.assertAlive(prim.name);
  const meta = prim.meta(inputs, attrs);
  let out: Tensor;
  const tracer = runtime.tracer;
  if (tracer) {
    out = tracer.record(prim, inputs, attrs, meta);
  } else if (meta.view) {
    out = new Tensor(inputs[0]!.storage, meta.shape, meta.view.strides, meta.view.offset, meta.dtype);
  } else {
    out = allocate(backendOf(prim.name, inputs), meta.shape, meta.dtype, prim.name);
    // kernels may call ops for scratch work (a contiguous copy): never recorded by autograd
    const grad = isGradEnabled();
    setGradEnabled(false);
    const sink = profiling.sink;
    const t0 = sink ? sink.begin() : 0;
    try {
      prim.run!(inputs, out, attrs);
    } catch (e) {
      out.dispose();
      throw e;
    } finally {
      setGradEnabled(grad);
      if (sink) sink.endEager(prim.name, t0, { shape: meta.shape, dtype: meta.dtype });
    }
    if (runtime.checkNumerics && isFloat(meta.dtype)) {
      try {
        checkFinite(prim.name, inputs, out);
      } catch (e) {
        out.dispose();
        throw e;
      }
    }
  }
  if (isGradEnabled() && prim.backward && inputs.some((t) => t.requiresGrad)) attachGrad(prim, inputs, attrs, out);
  return out;
}

/** A fresh contiguous tensor; `op` names the op whose output it is in an out-of-memory error. */
export function allocate(backend: Backend, shape: readonly number[], dtype: DType, op?: string): Tensor {
  try {
    return new Tensor(Storage.alloc(backend, dtype, numel(shape)), shape, undefined, 0, dtype);
  } catch (e) {
    if (e instanceof OutOfMemoryError && op !== undefined && e.primitive === undefined) {
      throw new OutOfMemoryError(`its ${dtype}${fmtShape(shape)} output does not fit: ${e.detail}`, op, e.hint);
    }
    throw e;
  }
}

function attachGrad<A>(prim: PrimDef<A>, inputs: readonly Tensor[], attrs: A, out: Tensor): void {
  const save = prim.saveInputs ?? true;
  const saved = inputs.map((t, i) => (save === true || (Array.isArray(save) && save.includes(i)) ? alias(t) : null));
  const next: Edge[] = inputs.map((t) => (t.requiresGrad ? edgeOf(t) : null));
  const node = new GradNode<A>(prim.name, prim.backward!, next, {
    inputs: saved,
    output: prim.saveOutput ? alias(out) : null,
    inputShapes: inputs.map((t) => t.shape),
    inputDTypes: inputs.map((t) => t.dtype),
    attrs,
    needsGrad: inputs.map((t) => t.requiresGrad),
  }, runtime.tracer);
  node.savedVersions = [...saved, prim.saveOutput ? out : null].map((t) => (t && t.hasStorage ? t.storage.version : -1));
  out.setGradFn(node);
}

/** A second handle on the same memory, outside any scope and the autograd graph. */
export function alias(t: Tensor, internal = true): Tensor {
  if (!t.hasStorage) {
    const a = new Tensor(null, t.shape, t.strides, t.offset, t.dtype, internal);
    a.trace = t.trace;
    runtime.tracer?.adopt(a, internal);
    return a;
  }
  const a = new Tensor(t.storage, t.shape, t.strides, t.offset, t.dtype, internal);
  if (internal) a.aliasOf = t.aliasOf ?? t;
  return a;
}

function checkFinite(op: string, inputs: readonly Tensor[], out: Tensor): void {
  assertFinite(op, out, `its ${out.dtype}${fmtShape(out.shape)} output (inputs: ${inputs.map((t) => `${t.dtype}${fmtShape(t.shape)}`).join(', ')})`, 'check the inputs of this op for NaN/Inf or out-of-domain values (log of <= 0, sqrt of < 0, division by 0)');
}

/** Throws a NumericsError naming `op` when the float tensor `t` holds NaN or Inf (setCheckNumerics). */
export function assertFinite(op: string, t: Tensor, what: string, hint: string): void {
  if (!isFloat(t.dtype)) return;
  const d = readContiguous(t);
  for (let i = 0; i < d.length; i++) {
    const v = d[i]!;
    if (v !== v || v === Infinity || v === -Infinity) throw new NumericsError(`produced ${v} at flat index ${i} of ${what}`, op, hint);
  }
}

/** Row-major copy of a tensor's elements. */
export function readContiguous(t: Tensor, how = 'dataSync()'): TypedArray {
  t.assertAlive('read');
  if (!t.hasStorage) {
    if (!runtime.tracer) throw new ArgumentError('tensor has no data', 'read');
    return runtime.tracer.concretize(t, `${how} needs the value of a tensor ${fmtShape(t.shape)} (a tensor value was read)`);
  }
  runtime.tracer?.readsConcrete(t, `${how} read the values of a captured tensor ${fmtShape(t.shape)}${t.name ? ` '${t.name}'` : ''}`);
  const src = t.storage.backend.readSync(t.storage.buf);
  const n = numel(t.shape);
  if (t.isContiguous) return src.slice(t.offset, t.offset + n);
  const out = new TYPED_ARRAY[t.dtype](n);
  const nd = t.ndim;
  const idx = new Array<number>(nd).fill(0);
  let p = t.offset;
  for (let i = 0; i < n; i++) {
    out[i] = src[p]!;
    for (let d = nd - 1; d >= 0; d--) {
      idx[d]!++;
      p += t.strides[d]!;
      if (idx[d]! < t.shape[d]!) break;
      p -= t.strides[d]! * t.shape[d]!;
      idx[d] = 0;
    }
  }
  return out;
}
readHooks.readContiguous = readContiguous;
