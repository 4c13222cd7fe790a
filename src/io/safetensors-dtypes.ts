// The dtypes of safetensors files and their conversion to and from kiln's dtypes. Reading
// widens F16 / BF16 to float32 (exact), I8 / I16 / U8 to int32 (exact) and I64 to int32 with a
// range check; writing narrows with a range check (a finite value that would become infinite in
// F16 / BF16 / F32, or an integer outside I8 / I16 / U8, is an error naming the element), rounding
// floats to nearest even as torch's .half() / .bfloat16() do. NaN is written as the canonical
// quiet NaN of the format.

import type { DType } from '../core/dtype.js';
import { StateDictError } from '../core/errors.js';

export type SafetensorsFileDType = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'BOOL';
export type TypedData = Float32Array | Float64Array | Int32Array | Uint8Array;

export const LOAD = 'loadSafetensors';
export const SAVE = 'saveSafetensors';

// Typed-array views use host byte order; the file is little-endian. On a (rare) big-endian
// host every element goes through a DataView instead of a byte copy.
export const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The file dtype each kiln dtype is written as by default. */
export const NATIVE: Record<DType, SafetensorsFileDType> = { float32: 'F32', float64: 'F64', int32: 'I32', bool: 'BOOL' };

// ---- reading ---------------------------------------------------------------------------------

export interface ReadSpec {
  dtype: DType;
  size: number;
  /** Reads `n` elements from `dv` (positioned at the tensor) into a fresh array. */
  read: (dv: DataView, n: number, where: string) => TypedData;
}

/** Fresh array filled element by element through a DataView (any alignment, any host). */
function readEach<T extends TypedData>(out: T, dv: DataView, get: (dv: DataView, i: number) => number): T {
  for (let i = 0; i < out.length; i++) out[i] = get(dv, i);
  return out;
}

/** Native-width dtype: on LE hosts a byte copy (into a new, aligned buffer), else per element. */
function native<T extends Float32Array | Float64Array | Int32Array>(ctor: { new (buf: ArrayBuffer): T; new (n: number): T }, get: (dv: DataView, i: number) => number) {
  return (dv: DataView, n: number): TypedData => (HOST_LE ? new ctor(copyBytes(dv)) : readEach(new ctor(n), dv, get));
}

function copyBytes(dv: DataView): ArrayBuffer {
  // new Uint8Array(...) over the ArrayBuffer is a plain view (not a Node Buffer, whose slice()
  // aliases), so .slice() really copies; the copy starts at offset 0, hence is aligned.
  return new Uint8Array(dv.buffer, dv.byteOffset, dv.byteLength).slice().buffer;
}

export const READ: Record<SafetensorsFileDType, ReadSpec> = {
  F32: { dtype: 'float32', size: 4, read: native(Float32Array, (dv, i) => dv.getFloat32(i * 4, true)) },
  F64: { dtype: 'float64', size: 8, read: native(Float64Array, (dv, i) => dv.getFloat64(i * 8, true)) },
  I32: { dtype: 'int32', size: 4, read: native(Int32Array, (dv, i) => dv.getInt32(i * 4, true)) },
  // Normalise to 0/1 so a stray byte never reads as some other "true".
  BOOL: { dtype: 'bool', size: 1, read: (dv, n) => readEach(new Uint8Array(n), dv, (d, i) => (d.getUint8(i) ? 1 : 0)) },
  F16: { dtype: 'float32', size: 2, read: (dv, n) => readEach(new Float32Array(n), dv, (d, i) => halfToFloat(d.getUint16(i * 2, true))) },
  BF16: { dtype: 'float32', size: 2, read: (dv, n) => readEach(new Float32Array(n), dv, (d, i) => bf16ToFloat(d.getUint16(i * 2, true))) },
  I8: { dtype: 'int32', size: 1, read: (dv, n) => readEach(new Int32Array(n), dv, (d, i) => d.getInt8(i)) },
  U8: { dtype: 'int32', size: 1, read: (dv, n) => readEach(new Int32Array(n), dv, (d, i) => d.getUint8(i)) },
  I16: { dtype: 'int32', size: 2, read: (dv, n) => readEach(new Int32Array(n), dv, (d, i) => d.getInt16(i * 2, true)) },
  I64: {
    dtype: 'int32',
    size: 8,
    read: (dv, n, where) =>
      readEach(new Int32Array(n), dv, (d, i) => {
        const v = d.getBigInt64(i * 8, true);
        if (v < -0x80000000n || v > 0x7fffffffn) {
          throw new StateDictError(`${where}: element ${i} = ${v} does not fit in int32`, LOAD, 'kiln has no int64 dtype; store the tensor as I32 (or F64 for larger integers)');
        }
        return Number(v);
      }),
  },
};

/** IEEE half (1-5-10) to number. */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const man = h & 0x3ff;
  if (exp === 0) return sign * man * 2 ** -24; // zero / subnormal
  if (exp === 0x1f) return man ? NaN : sign * Infinity;
  return sign * (1 + man / 1024) * 2 ** (exp - 15);
}

// bfloat16 is the top half of a float32: widen the bits and reinterpret. Both views share host
// byte order, so this is endian-independent.
const bfU32 = new Uint32Array(1);
const bfF32 = new Float32Array(bfU32.buffer);
/** bfloat16 bits to number. */
export function bf16ToFloat(b: number): number {
  bfU32[0] = b << 16;
  return bfF32[0]!;
}

// ---- writing ---------------------------------------------------------------------------------

/** Rounds x >= 0 to an integer, ties to even. */
function roundHalfEven(x: number): number {
  const r = Math.floor(x), d = x - r;
  return d > 0.5 || (d === 0.5 && r % 2 === 1) ? r + 1 : r;
}

/**
 * The bits of v in a binary float format with `expBits` exponent and `manBits` mantissa bits,
 * rounded to nearest even (subnormals included); null when a finite v overflows the format.
 * Every scaling below is by a power of two, so it is exact in double.
 */
export function encodeFloat(v: number, expBits: number, manBits: number): number | null {
  const bias = (1 << (expBits - 1)) - 1, maxField = (1 << expBits) - 1;
  const sign = v < 0 || Object.is(v, -0) ? 2 ** (expBits + manBits) : 0;
  if (Number.isNaN(v)) return (maxField * 2 ** manBits) + 2 ** (manBits - 1); // canonical quiet NaN
  const a = Math.abs(v);
  if (a === Infinity) return sign + maxField * 2 ** manBits;
  if (a === 0) return sign;
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  let field: number, man: number;
  if (e < 1 - bias) {
    field = 0;
    man = roundHalfEven(a * 2 ** (bias - 1 + manBits));
    if (man === 2 ** manBits) [field, man] = [1, 0]; // rounded up to the smallest normal
  } else {
    field = e + bias;
    man = roundHalfEven((a * 2 ** -e - 1) * 2 ** manBits);
    if (man === 2 ** manBits) [field, man] = [field + 1, 0];
  }
  if (field >= maxField) return null;
  return sign + field * 2 ** manBits + man;
}

export interface WriteSpec {
  size: number;
  /** the kiln dtypes this file dtype can be written from */
  from: readonly DType[];
  /** the largest magnitude (floats) or the range (integers), for error messages */
  range: string;
  /** Writes element i = v; false when v does not fit the format. */
  set: (dv: DataView, i: number, v: number) => boolean;
}

const FLOATS: readonly DType[] = ['float32', 'float64'];
const intIn = (lo: number, hi: number, put: (dv: DataView, i: number, v: number) => void) => (dv: DataView, i: number, v: number) => {
  if (v < lo || v > hi) return false;
  put(dv, i, v);
  return true;
};
const floatAs = (expBits: number, manBits: number) => (dv: DataView, i: number, v: number) => {
  const bits = encodeFloat(v, expBits, manBits);
  if (bits === null) return false;
  dv.setUint16(i * 2, bits, true);
  return true;
};

export const WRITE: Record<SafetensorsFileDType, WriteSpec> = {
  F64: { size: 8, from: FLOATS, range: 'float64', set: (dv, i, v) => (dv.setFloat64(i * 8, v, true), true) },
  F32: {
    size: 4, from: FLOATS, range: `|x| <= ${2 ** 127 * (2 - 2 ** -23)}`,
    set: (dv, i, v) => {
      const f = Math.fround(v);
      if (Number.isFinite(v) && !Number.isFinite(f)) return false;
      dv.setFloat32(i * 4, f, true);
      return true;
    },
  },
  F16: { size: 2, from: FLOATS, range: '|x| < 65520 (F16 max 65504)', set: floatAs(5, 10) },
  BF16: { size: 2, from: FLOATS, range: `|x| < ${2 ** 128 - 2 ** 119} (BF16 max ${2 ** 127 * (2 - 2 ** -7)})`, set: floatAs(8, 7) },
  I64: { size: 8, from: ['int32'], range: 'int64', set: (dv, i, v) => (dv.setBigInt64(i * 8, BigInt(v), true), true) },
  I32: { size: 4, from: ['int32'], range: 'int32', set: (dv, i, v) => (dv.setInt32(i * 4, v, true), true) },
  I16: { size: 2, from: ['int32'], range: '[-32768, 32767]', set: intIn(-32768, 32767, (dv, i, v) => dv.setInt16(i * 2, v, true)) },
  I8: { size: 1, from: ['int32'], range: '[-128, 127]', set: intIn(-128, 127, (dv, i, v) => dv.setInt8(i, v)) },
  U8: { size: 1, from: ['int32'], range: '[0, 255]', set: intIn(0, 255, (dv, i, v) => dv.setUint8(i, v)) },
  BOOL: { size: 1, from: ['bool'], range: 'bool', set: (dv, i, v) => (dv.setUint8(i, v !== 0 ? 1 : 0), true) },
};

export const FILE_DTYPES = Object.keys(WRITE) as SafetensorsFileDType[];
