// A small, dependency-free safetensors codec (https://github.com/huggingface/safetensors).
// Browser-safe: no Node imports. File/disk helpers live in ./safetensors-node.ts.
//
// Layout: u64 little-endian header length N | N bytes of UTF-8 JSON header | raw data.
// Header: {"__metadata__": {str: str}, "name": {"dtype", "shape", "data_offsets": [begin, end]}, ...}
// with offsets relative to the start of the data section.

import { StateDictError, fmtShape } from '../core/errors.js';

export type SafetensorsDType = 'float32' | 'float64' | 'int32' | 'bool';

export interface RawTensor {
  dtype: SafetensorsDType;
  shape: number[];
  data: Float32Array | Float64Array | Int32Array | Uint8Array;
}

type Data = RawTensor['data'];

const LOAD = 'loadSafetensors';
const SAVE = 'saveSafetensors';
const META = '__metadata__';

// Typed-array views use host byte order; the file is little-endian. On a (rare) big-endian
// host every element goes through a DataView instead of a byte copy.
const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

// ---------------------------------------------------------------------------------------------
// dtype tables

interface WriteSpec {
  tag: string;
  size: number;
  ctor: { new (n: number): Data; readonly name: string };
  set: (dv: DataView, i: number, v: number) => void;
}

const WRITE: Record<SafetensorsDType, WriteSpec> = {
  float32: { tag: 'F32', size: 4, ctor: Float32Array, set: (dv, i, v) => dv.setFloat32(i * 4, v, true) },
  float64: { tag: 'F64', size: 8, ctor: Float64Array, set: (dv, i, v) => dv.setFloat64(i * 8, v, true) },
  int32: { tag: 'I32', size: 4, ctor: Int32Array, set: (dv, i, v) => dv.setInt32(i * 4, v, true) },
  bool: { tag: 'BOOL', size: 1, ctor: Uint8Array, set: (dv, i, v) => dv.setUint8(i, v !== 0 ? 1 : 0) },
};

interface ReadSpec {
  dtype: SafetensorsDType;
  size: number;
  /** Reads `n` elements from `dv` (already positioned at the tensor) into a fresh array. */
  read: (dv: DataView, n: number, where: string) => Data;
}

/** Fresh array filled element by element through a DataView (any alignment, any host). */
function readEach<T extends Data>(out: T, dv: DataView, get: (dv: DataView, i: number) => number): T {
  for (let i = 0; i < out.length; i++) out[i] = get(dv, i);
  return out;
}

/** Native-width dtype: on LE hosts a byte copy (into a new, aligned buffer), else per element. */
function native<T extends Float32Array | Float64Array | Int32Array>(
  ctor: { new (buf: ArrayBuffer): T; new (n: number): T },
  get: (dv: DataView, i: number) => number,
) {
  return (dv: DataView, n: number): Data =>
    HOST_LE ? new ctor(copyBytes(dv)) : readEach(new ctor(n), dv, get);
}

function copyBytes(dv: DataView): ArrayBuffer {
  // new Uint8Array(...) over the ArrayBuffer is a plain view (not a Node Buffer, whose slice()
  // aliases), so .slice() really copies; the copy starts at offset 0, hence is aligned.
  return new Uint8Array(dv.buffer, dv.byteOffset, dv.byteLength).slice().buffer;
}

const READ: Record<string, ReadSpec> = {
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
          throw new StateDictError(
            `${where}: element ${i} = ${v} does not fit in int32`,
            LOAD,
            'kiln has no int64 dtype; store the tensor as I32 (or F64 for larger integers)',
          );
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

// ---------------------------------------------------------------------------------------------
// helpers

function describe(key: string, dtype: unknown, shape: unknown): string {
  const s = Array.isArray(shape) ? fmtShape(shape as number[]) : JSON.stringify(shape);
  return `tensor '${key}' (dtype ${String(dtype)}, shape ${s})`;
}

function checkShape(shape: unknown, where: string, op: string): number {
  if (!Array.isArray(shape)) throw new StateDictError(`${where}: shape is not an array`, op);
  let n = 1;
  for (const d of shape) {
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) {
      throw new StateDictError(`${where}: shape entry ${JSON.stringify(d)} is not a non-negative integer`, op);
    }
    n *= d;
  }
  return n;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------------------------------------
// encode

export function encodeSafetensors(tensors: Record<string, RawTensor>, metadata?: Record<string, string>): Uint8Array {
  // Widest dtype first (so every tensor's data is aligned to its item size, as the reference
  // writer does), then code-unit name order (not localeCompare): identical files everywhere.
  const width = (n: string) => tensors[n]!.data.BYTES_PER_ELEMENT;
  const names = Object.keys(tensors).sort((a, b) => width(b) - width(a) || (a < b ? -1 : a > b ? 1 : 0));
  const entries: string[] = [];
  if (metadata !== undefined) {
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw new StateDictError(`metadata '${k}' is a ${typeof v}, not a string`, SAVE);
    }
    entries.push(`${JSON.stringify(META)}:${JSON.stringify(metadata)}`);
  }

  const layout: { t: RawTensor; spec: WriteSpec; begin: number }[] = [];
  let offset = 0;
  for (const name of names) {
    const t = tensors[name]!;
    const where = describe(name, t.dtype, t.shape);
    if (name === META) throw new StateDictError(`${where}: '${META}' is reserved for metadata`, SAVE, 'rename the tensor');
    const spec = WRITE[t.dtype];
    if (!spec) {
      throw new StateDictError(`${where}: unknown dtype`, SAVE, `use one of ${Object.keys(WRITE).join(', ')}`);
    }
    const n = checkShape(t.shape, where, SAVE);
    if (!(t.data instanceof spec.ctor)) {
      throw new StateDictError(`${where}: data is a ${t.data?.constructor?.name}, expected ${spec.ctor.name}`, SAVE);
    }
    if (t.data.length !== n) {
      throw new StateDictError(`${where}: data has ${t.data.length} elements, shape needs ${n}`, SAVE);
    }
    // Build the JSON by hand: JSON.stringify on an object would move integer-like keys first.
    const end = offset + n * spec.size;
    entries.push(`${JSON.stringify(name)}:${JSON.stringify({ dtype: spec.tag, shape: t.shape, data_offsets: [offset, end] })}`);
    layout.push({ t, spec, begin: offset });
    offset = end;
  }

  const json = new TextEncoder().encode(`{${entries.join(',')}}`);
  // Pad with spaces (valid JSON whitespace) so the data section starts 8-byte aligned, as the
  // reference writer does: that lets readers map F64 data in place.
  const headerLen = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + headerLen + offset);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, headerLen % 2 ** 32, true);
  dv.setUint32(4, Math.floor(headerLen / 2 ** 32), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + headerLen);

  const dataStart = 8 + headerLen;
  for (const { t, spec, begin } of layout) {
    const at = dataStart + begin;
    if (HOST_LE && t.dtype !== 'bool') {
      out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), at);
    } else {
      const tv = new DataView(out.buffer, at, t.data.byteLength);
      for (let i = 0; i < t.data.length; i++) spec.set(tv, i, t.data[i]!);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// decode

export function decodeSafetensors(bytes: Uint8Array): {
  tensors: Record<string, RawTensor>;
  metadata: Record<string, string>;
} {
  if (bytes.length < 8) {
    throw new StateDictError(`file is ${bytes.length} bytes, too short for the 8-byte header length`, LOAD, 'the file is truncated or not safetensors');
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = dv.getUint32(0, true) + dv.getUint32(4, true) * 2 ** 32;
  if (headerLen > bytes.length - 8) {
    throw new StateDictError(
      `header length ${headerLen} runs past the end of the ${bytes.length}-byte file`,
      LOAD,
      'the file is truncated or not safetensors',
    );
  }

  let header: unknown;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + headerLen));
    header = JSON.parse(text);
  } catch (e) {
    throw new StateDictError(`header is not valid UTF-8 JSON (${(e as Error).message})`, LOAD, 'the file is corrupt or not safetensors');
  }
  if (!isObject(header)) throw new StateDictError('header is not a JSON object', LOAD);

  const metadata: Record<string, string> = {};
  const rawMeta = header[META];
  if (rawMeta !== undefined && rawMeta !== null) {
    if (!isObject(rawMeta)) throw new StateDictError(`'${META}' is not an object`, LOAD);
    for (const [k, v] of Object.entries(rawMeta)) {
      if (typeof v !== 'string') throw new StateDictError(`metadata '${k}' is not a string`, LOAD);
      metadata[k] = v;
    }
  }

  const dataStart = 8 + headerLen;
  const dataLen = bytes.length - dataStart;
  const tensors: Record<string, RawTensor> = {};
  for (const [key, entry] of Object.entries(header)) {
    if (key === META) continue;
    if (!isObject(entry)) throw new StateDictError(`tensor '${key}': header entry is not an object`, LOAD);
    const { dtype, shape, data_offsets: offs } = entry;
    const where = describe(key, dtype, shape);
    const spec = typeof dtype === 'string' && Object.hasOwn(READ, dtype) ? READ[dtype]! : undefined;
    if (!spec) {
      throw new StateDictError(`${where}: unsupported dtype ${JSON.stringify(dtype)}`, LOAD, `kiln reads ${Object.keys(READ).join(', ')}`);
    }
    const n = checkShape(shape, where, LOAD);
    if (
      !Array.isArray(offs) || offs.length !== 2 ||
      !offs.every((o) => typeof o === 'number' && Number.isSafeInteger(o) && o >= 0)
    ) {
      throw new StateDictError(`${where}: data_offsets ${JSON.stringify(offs)} is not a pair of non-negative integers`, LOAD);
    }
    const [begin, end] = offs as [number, number];
    if (end - begin !== n * spec.size) {
      throw new StateDictError(`${where}: data_offsets [${begin}, ${end}] span ${end - begin} bytes, expected ${n} x ${spec.size} = ${n * spec.size}`, LOAD);
    }
    // Overlapping or out-of-order regions are tolerated (each tensor gets its own copy);
    // only reads outside the data section are rejected.
    if (end > dataLen) {
      throw new StateDictError(`${where}: data_offsets [${begin}, ${end}] run past the ${dataLen}-byte data section`, LOAD, 'the file is truncated');
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset + dataStart + begin, end - begin);
    tensors[key] = { dtype: spec.dtype, shape: (shape as number[]).slice(), data: spec.read(view, n, where) };
  }
  return { tensors, metadata };
}
