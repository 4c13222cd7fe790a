import { DTypeError } from './errors.js';

export type DType = 'float32' | 'float64' | 'int32' | 'bool';
export const DTYPES: readonly DType[] = ['float32', 'float64', 'int32', 'bool'];

export type TypedArray = Float32Array | Float64Array | Int32Array | Uint8Array;

export const TYPED_ARRAY: {
  [K in DType]: {
    new (n: number): TypedArray;
    new (buf: ArrayBufferLike, off: number, len: number): TypedArray;
    from(src: ArrayLike<number> | Iterable<number>): TypedArray;
    BYTES_PER_ELEMENT: number;
  };
} = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  bool: Uint8Array,
} as never;

export function itemSize(dtype: DType): number {
  return TYPED_ARRAY[dtype].BYTES_PER_ELEMENT;
}

export function isFloat(dtype: DType): boolean {
  return dtype === 'float32' || dtype === 'float64';
}

const RANK: Record<DType, number> = { bool: 0, int32: 1, float32: 2, float64: 3 };

/** torch-style promotion between two tensor dtypes. */
export function promoteTypes(a: DType, b: DType): DType {
  return RANK[a] >= RANK[b] ? a : b;
}

/** Dtype of `tensor op scalar`: a JS number does not widen a tensor's category beyond need. */
export function promoteWithScalar(t: DType, scalar: number | boolean): DType {
  if (typeof scalar === 'boolean') return t;
  if (!Number.isInteger(scalar) || !Number.isFinite(scalar)) return isFloat(t) ? t : 'float32';
  return t === 'bool' ? 'int32' : t;
}

/** Whether an in-place op may write a `from` result into a `to` tensor (torch's canCast: not float into int or bool, not int into bool). */
export function canCast(from: DType, to: DType): boolean {
  if (isFloat(from) && !isFloat(to)) return false;
  return !(from !== 'bool' && to === 'bool');
}

/** The float dtype an op that always yields floats (div, exp, mean) produces. */
export function toFloat(dtype: DType): DType {
  return isFloat(dtype) ? dtype : 'float32';
}

export function assertDType(value: unknown, op: string): asserts value is DType {
  if (typeof value !== 'string' || !(DTYPES as readonly string[]).includes(value)) {
    throw new DTypeError(`unknown dtype ${JSON.stringify(value)}`, op, `use one of ${DTYPES.join(', ')}`);
  }
}

export function typedArrayDType(a: ArrayBufferView): DType | undefined {
  if (a instanceof Float32Array) return 'float32';
  if (a instanceof Float64Array) return 'float64';
  if (a instanceof Int32Array) return 'int32';
  if (a instanceof Uint8Array) return 'bool';
  return undefined;
}
