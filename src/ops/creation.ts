// Creation ops: tensor(), zeros, ones, full, arange, linspace, eye, rand, randn, randint.

import type { Backend } from '../backend/backend.js';
import type { RandomDist } from '../ir/kernel-spec.js';
import type { DType, TypedArray } from '../core/dtype.js';
import { TYPED_ARRAY, assertDType, typedArrayDType } from '../core/dtype.js';
import { ArgumentError, DTypeError, ShapeError, fmtShape } from '../core/errors.js';
import { defaultGenerator, type GeneratorState } from '../core/random.js';
import { numel } from '../core/shape.js';
import { Storage } from '../tensor/storage.js';
import { Tensor } from '../tensor/tensor.js';
import { apply, runtime, type PrimDef } from './dispatch.js';
import { publicOp } from '../core/user-op.js';

export interface CreateOptions {
  dtype?: DType;
  requiresGrad?: boolean;
}

export type NestedArray = number | boolean | readonly NestedArray[];

function finish(t: Tensor, opts?: CreateOptions): Tensor {
  if (opts?.requiresGrad) t.requiresGrad = true;
  return t;
}

function fromTyped(data: TypedArray, shape: readonly number[], dtype: DType, backend: Backend = runtime.backend): Tensor {
  const storage = Storage.alloc(backend, dtype, data.length);
  backend.write(storage.buf, data);
  return new Tensor(storage, shape, undefined, 0, dtype);
}

/** A constant tensor: inside a trace it is recorded as a graph constant. */
function constant(data: TypedArray, shape: readonly number[], dtype: DType): Tensor {
  if (runtime.tracer) return apply(constantPrim, [], { data, shape, dtype });
  return fromTyped(data, shape, dtype);
}

interface ConstantAttrs { readonly data: TypedArray; readonly shape: readonly number[]; readonly dtype: DType }

export const constantPrim: PrimDef<ConstantAttrs> = {
  name: 'constant',
  meta: (_i, a) => ({ shape: a.shape, dtype: a.dtype }),
  run: (_i, out, a) => out.storage.backend.write(out.storage.buf, a.data),
  formatAttrs: (a) => (a.data.length <= 4 ? `[${Array.from(a.data).join(', ')}]` : `<${a.data.length} values>`),
};

function inferShape(x: NestedArray): number[] {
  const shape: number[] = [];
  let cur: NestedArray = x;
  while (Array.isArray(cur)) {
    shape.push(cur.length);
    cur = cur[0] as NestedArray;
  }
  return shape;
}

function flattenNested(x: NestedArray, shape: readonly number[], depth: number, out: number[], op: string): void {
  if (depth === shape.length) {
    if (typeof x !== 'number' && typeof x !== 'boolean') {
      throw new ArgumentError(`expected a number at depth ${depth}, got ${Array.isArray(x) ? 'an array' : typeof x}`, op, 'nested arrays must be rectangular');
    }
    out.push(typeof x === 'boolean' ? Number(x) : x);
    return;
  }
  if (!Array.isArray(x) || x.length !== shape[depth]) {
    throw new ShapeError(`ragged nested array: expected length ${shape[depth]} at depth ${depth}, got ${Array.isArray(x) ? x.length : typeof x}`, op, 'every row must have the same length');
  }
  for (const v of x) flattenNested(v, shape, depth + 1, out, op);
}

/** kiln.tensor(nested arrays | typed array, shape?) */
export const tensor = publicOp('tensor', function tensor(data: NestedArray | TypedArray | readonly number[], optsOrShape?: CreateOptions | readonly number[], maybeOpts?: CreateOptions): Tensor {
  let shape: readonly number[] | undefined;
  let opts: CreateOptions | undefined;
  if (Array.isArray(optsOrShape)) {
    shape = optsOrShape;
    opts = maybeOpts;
  } else opts = optsOrShape as CreateOptions | undefined;
  if (opts?.dtype !== undefined) assertDType(opts.dtype, 'tensor');
  if (ArrayBuffer.isView(data)) {
    const src = data as TypedArray;
    const srcDType = typedArrayDType(src);
    if (!srcDType) throw new ArgumentError(`unsupported typed array ${data.constructor.name}`, 'tensor', 'use Float32Array, Float64Array, Int32Array or Uint8Array');
    const dtype = opts?.dtype ?? srcDType;
    const s = shape ?? [src.length];
    if (numel(s) !== src.length) throw new ShapeError(`shape ${fmtShape(s)} needs ${numel(s)} elements, the array has ${src.length}`, 'tensor');
    if (dtype === 'int32' && (srcDType === 'float32' || srcDType === 'float64')) checkInt32Values(src);
    const converted = dtype === srcDType ? src : TYPED_ARRAY[dtype].from(src);
    return finish(constant(converted.slice(), s, dtype), opts);
  }
  if (typeof data !== 'number' && typeof data !== 'boolean' && !Array.isArray(data)) {
    throw new ArgumentError(`expects a number, boolean, nested array or typed array, got ${data === null ? 'null' : typeof data}`, 'tensor');
  }
  const s = inferShape(data as NestedArray);
  const flat: number[] = [];
  flattenNested(data as NestedArray, s, 0, flat, 'tensor');
  const allBool = isAllBool(data as NestedArray);
  // all booleans -> bool; all integers that int32 holds -> int32 (torch's int64 for integer
  // literals; JavaScript cannot tell 3 from 3.0, so 3e9 is a float, as torch's 3e9 literal); else float32
  const dtype = opts?.dtype ?? (allBool && flat.length > 0 ? 'bool' : flat.length > 0 && flat.every(isInt32) ? 'int32' : 'float32');
  if (dtype === 'int32') checkInt32Values(flat);
  const finalShape = shape ?? s;
  if (numel(finalShape) !== flat.length) throw new ShapeError(`shape ${fmtShape(finalShape)} needs ${numel(finalShape)} elements, got ${flat.length}`, 'tensor');
  return finish(constant(TYPED_ARRAY[dtype].from(flat), finalShape, dtype), opts);
});

const isInt32 = (v: number) => Number.isInteger(v) && v >= -2147483648 && v <= 2147483647;

/** An int32 tensor from numbers truncates them (as torch); a value int32 cannot hold is an error, not a wrapped number. */
function checkInt32Values(values: ArrayLike<number>): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!isInt32(Math.trunc(v))) {
      throw new DTypeError(`value ${v} (element ${i}) cannot be converted to int32 without overflow`, 'tensor', 'int32 holds integers in [-2147483648, 2147483647]; use dtype float32 or float64');
    }
  }
}

function isAllBool(x: NestedArray): boolean {
  if (typeof x === 'boolean') return true;
  if (typeof x === 'number') return false;
  return x.length > 0 && x.every(isAllBool);
}

function checkShape(op: string, shape: unknown): asserts shape is readonly number[] {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new ArgumentError(`shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`, op);
  }
}

export const full = publicOp('full', function full(shape: readonly number[], value: number | boolean, opts?: CreateOptions): Tensor {
  checkShape('full', shape);
  const dtype = opts?.dtype ?? (typeof value === 'boolean' ? 'bool' : 'float32');
  assertDType(dtype, 'full');
  return finish(apply(fillPrim, [], { shape, dtype, value: Number(value) }), opts);
});

interface FillAttrs { readonly shape: readonly number[]; readonly dtype: DType; readonly value: number }

export const fillPrim: PrimDef<FillAttrs> = {
  name: 'full',
  meta: (_i, a) => ({ shape: a.shape, dtype: a.dtype }),
  run(_i, out, a) {
    const backend = out.storage.backend;
    backend.launch(backend.prepare({ kind: 'pointwise', expr: { kind: 'param', index: 0 }, outDType: a.dtype, nInputs: 0, ndim: 1 }), {
      kind: 'pointwise', out: { buf: out.storage.buf, offset: 0, strides: [1] }, inputs: [], shape: [out.size], params: [a.value],
    });
  },
  formatAttrs: (a) => `${fmtShape(a.shape)}, ${a.value}`,
};

export const zeros = publicOp('zeros', (shape: readonly number[], opts?: CreateOptions): Tensor => full(shape, 0, { dtype: 'float32', ...opts }));
export const ones = publicOp('ones', (shape: readonly number[], opts?: CreateOptions): Tensor => full(shape, 1, { dtype: 'float32', ...opts }));
export const zerosLike = publicOp('zerosLike', (t: Tensor, opts?: CreateOptions): Tensor => full(t.shape, 0, { dtype: t.dtype, ...opts }));
export const onesLike = publicOp('onesLike', (t: Tensor, opts?: CreateOptions): Tensor => full(t.shape, 1, { dtype: t.dtype, ...opts }));
export const fullLike = publicOp('fullLike', (t: Tensor, value: number, opts?: CreateOptions): Tensor => full(t.shape, value, { dtype: t.dtype, ...opts }));

/** arange(end) | arange(start, end, step?) */
export const arange = publicOp('arange', function arange(startOrEnd: number, end?: number, step = 1, opts?: CreateOptions): Tensor {
  const start = end === undefined ? 0 : startOrEnd;
  const stop = end === undefined ? startOrEnd : end;
  if (step === 0 || !Number.isFinite(step)) throw new ArgumentError(`step must be finite and non-zero, got ${step}`, 'arange');
  const n = Math.max(0, Math.ceil((stop - start) / step));
  const isInt = [start, stop, step].every(Number.isInteger);
  const dtype = opts?.dtype ?? (isInt ? 'int32' : 'float32');
  const data = new TYPED_ARRAY[dtype](n);
  for (let i = 0; i < n; i++) data[i] = start + i * step;
  return finish(constant(data, [n], dtype), opts);
});

export const linspace = publicOp('linspace', function linspace(start: number, end: number, steps: number, opts?: CreateOptions): Tensor {
  if (!Number.isInteger(steps) || steps < 0) throw new ArgumentError(`steps must be a non-negative integer, got ${steps}`, 'linspace');
  const dtype = opts?.dtype ?? 'float32';
  const data = new TYPED_ARRAY[dtype](steps);
  const step = steps > 1 ? (end - start) / (steps - 1) : 0;
  for (let i = 0; i < steps; i++) data[i] = i < steps / 2 ? start + i * step : end - (steps - 1 - i) * step;
  return finish(constant(data, [steps], dtype), opts);
});

export const eye = publicOp('eye', function eye(n: number, mCols = n, opts?: CreateOptions): Tensor {
  const dtype = opts?.dtype ?? 'float32';
  const data = new TYPED_ARRAY[dtype](n * mCols);
  for (let i = 0; i < Math.min(n, mCols); i++) data[i * mCols + i] = 1;
  return finish(constant(data, [n, mCols], dtype), opts);
});

// ---- random ----

interface RandomAttrs { readonly shape: readonly number[]; readonly dtype: DType; readonly dist: RandomDist; readonly seed: number; readonly offset: number; readonly low?: number; readonly high?: number }

export const randomPrim: PrimDef<RandomAttrs> = {
  name: 'random',
  meta: (_i, a) => ({ shape: a.shape, dtype: a.dtype }),
  run(_i, out, a) {
    const backend = out.storage.backend;
    backend.launch(backend.prepare({ kind: 'random', dist: a.dist, dtype: a.dtype }), {
      kind: 'random', out: { buf: out.storage.buf, offset: 0, strides: [1] }, size: out.size, seed: a.seed, offset: a.offset, low: a.low, high: a.high,
    });
  },
  formatAttrs: (a) => `${a.dist}${a.dist === 'integer' ? ` [${a.low}, ${a.high})` : ''} ${fmtShape(a.shape)}`,
};

/** Counters for n random values: the global generator's, or the tracer's placeholders (compiled programs reserve theirs when they run). */
function reserveDraw(n: number): { seed: number; offset: number } {
  return runtime.tracer ? runtime.tracer.drawRandom(n) : defaultGenerator.reserve(n);
}

function random(op: string, dist: 'uniform' | 'normal', shape: readonly number[], opts?: CreateOptions): Tensor {
  checkShape(op, shape);
  const dtype = opts?.dtype ?? 'float32';
  if (dtype !== 'float32' && dtype !== 'float64') throw new ArgumentError(`random floats need a float dtype, got ${dtype}`, op);
  const { seed, offset } = reserveDraw(numel(shape));
  return finish(apply(randomPrim, [], { shape, dtype, dist, seed, offset }), opts);
}

/** Uniform on [0, 1). */
export const rand = publicOp('rand', (shape: readonly number[], opts?: CreateOptions): Tensor => random('rand', 'uniform', shape, opts));
/** Standard normal. */
export const randn = publicOp('randn', (shape: readonly number[], opts?: CreateOptions): Tensor => random('randn', 'normal', shape, opts));

/** Integers uniform on [low, high). */
export const randint = publicOp('randint', function randint(low: number, high: number, shape: readonly number[], opts?: CreateOptions): Tensor {
  if (!Number.isInteger(low) || !Number.isInteger(high) || high <= low) {
    throw new ArgumentError(`needs integers low < high, got ${low}, ${high}`, 'randint');
  }
  checkShape('randint', shape);
  const dtype = opts?.dtype ?? 'int32';
  // one op drawing integers directly (not float64 uniforms scaled, floored and cast): the same
  // numbers, and a GPU backend without float64 kernels can make them (random draws are uploaded)
  const { seed, offset } = reserveDraw(numel(shape));
  return finish(apply(randomPrim, [], { shape, dtype, dist: 'integer', seed, offset, low, high }), opts);
});

export function manualSeed(seed: number): void {
  if (!Number.isInteger(seed) || seed < 0) throw new ArgumentError(`seed must be a non-negative integer, got ${seed}`, 'manualSeed');
  defaultGenerator.manualSeed(seed);
}

/** The global generator's state (torch.get_rng_state): save it to resume a run's random numbers. */
export function getRngState(): GeneratorState {
  return defaultGenerator.getState();
}

/** Restores the global generator's state from getRngState(). */
export function setRngState(state: GeneratorState): void {
  defaultGenerator.setState(state);
}
