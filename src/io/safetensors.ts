// A small, dependency-free safetensors codec (https://github.com/huggingface/safetensors).
// Browser-safe: no Node imports. File/disk helpers live in ./safetensors-node.ts; the dtype
// tables and conversions in ./safetensors-dtypes.ts.
//
// Layout: u64 little-endian header length N | N bytes of UTF-8 JSON header | raw data.
// Header: {"__metadata__": {str: str}, "name": {"dtype", "shape", "data_offsets": [begin, end]}, ...}
// with offsets relative to the start of the data section. Decoding follows the format strictly,
// as the reference implementation validates it: every name once, and the tensors' regions tile
// the data section exactly (no overlap, no hole, nothing after the last), checked before any
// data is copied.

import type { DType } from '../core/dtype.js';
import { StateDictError, fmtShape } from '../core/errors.js';
import { duplicateKey } from './json-keys.js';
import { FILE_DTYPES, HOST_LE, LOAD, NATIVE, READ, SAVE, WRITE, type SafetensorsFileDType, type TypedData } from './safetensors-dtypes.js';

export { halfToFloat, bf16ToFloat, type SafetensorsFileDType } from './safetensors-dtypes.js';

export type SafetensorsDType = DType;

export interface RawTensor {
  dtype: SafetensorsDType;
  shape: number[];
  data: TypedData;
  /** the dtype in the file: set by decode; encode writes this one (default: the dtype's own) */
  fileDType?: SafetensorsFileDType;
}

const META = '__metadata__';
/** the reference implementation's header limit */
const MAX_HEADER = 100_000_000;

const CTOR: Record<DType, { new (n: number): TypedData; readonly name: string }> = { float32: Float32Array, float64: Float64Array, int32: Int32Array, bool: Uint8Array };

/** Sets an own, enumerable property, even for names like '__proto__' that assignment would not make. */
export function setOwn<T>(o: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

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

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------------------------------------
// encode

export function encodeSafetensors(tensors: Record<string, RawTensor>, metadata?: Record<string, string>): Uint8Array {
  const plan = Object.keys(tensors).map((name) => {
    const t = tensors[name]!;
    const where = describe(name, t.dtype, t.shape);
    if (name === META) throw new StateDictError(`${where}: '${META}' is reserved for metadata`, SAVE, 'rename the tensor');
    if (!Object.hasOwn(CTOR, t.dtype)) throw new StateDictError(`${where}: unknown dtype`, SAVE, `use one of ${Object.keys(CTOR).join(', ')}`);
    const tag = t.fileDType ?? NATIVE[t.dtype];
    const spec = Object.hasOwn(WRITE, tag) ? WRITE[tag] : undefined;
    if (!spec) throw new StateDictError(`${where}: unknown file dtype ${JSON.stringify(tag)}`, SAVE, `use one of ${FILE_DTYPES.join(', ')}`);
    if (!spec.from.includes(t.dtype)) {
      throw new StateDictError(`${where}: cannot be written as ${tag}`, SAVE, `${tag} holds ${spec.from.join(' or ')} tensors; cast the tensor first, or pick another file dtype`);
    }
    const n = checkShape(t.shape, where, SAVE);
    if (!(t.data instanceof CTOR[t.dtype])) {
      throw new StateDictError(`${where}: data is a ${t.data?.constructor?.name}, expected ${CTOR[t.dtype].name}`, SAVE);
    }
    if (t.data.length !== n) throw new StateDictError(`${where}: data has ${t.data.length} elements, shape needs ${n}`, SAVE);
    return { name, t, tag, spec, where, bytes: n * spec.size };
  });
  // Widest file dtype first (so every tensor's data is aligned to its item size, as the reference
  // writer does), then code-unit name order (not localeCompare): identical files everywhere.
  plan.sort((a, b) => b.spec.size - a.spec.size || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const entries: string[] = [];
  if (metadata !== undefined) {
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw new StateDictError(`metadata '${k}' is a ${typeof v}, not a string`, SAVE);
    }
    entries.push(`${JSON.stringify(META)}:${JSON.stringify(metadata)}`);
  }
  let offset = 0;
  const layout = plan.map((p) => {
    // Build the JSON by hand: JSON.stringify on an object would move integer-like keys first.
    entries.push(`${JSON.stringify(p.name)}:${JSON.stringify({ dtype: p.tag, shape: p.t.shape, data_offsets: [offset, offset + p.bytes] })}`);
    const begin = offset;
    offset += p.bytes;
    return { ...p, begin };
  });

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
  for (const { t, tag, spec, where, begin } of layout) {
    const at = dataStart + begin;
    if (HOST_LE && tag === NATIVE[t.dtype] && t.dtype !== 'bool') {
      out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), at);
      continue;
    }
    const tv = new DataView(out.buffer, at, t.data.length * spec.size);
    for (let i = 0; i < t.data.length; i++) {
      if (!spec.set(tv, i, t.data[i]!)) {
        throw new StateDictError(`${where}: element ${i} = ${t.data[i]} does not fit in ${tag} (${spec.range})`, SAVE, `write the tensor as ${t.dtype === 'int32' ? 'I32 or I64' : 'F32'} instead, or rescale it`);
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// decode

interface Entry { key: string; where: string; spec: (typeof READ)[SafetensorsFileDType]; tag: SafetensorsFileDType; shape: number[]; n: number; begin: number; end: number }

export function decodeSafetensors(bytes: Uint8Array): { tensors: Record<string, RawTensor>; metadata: Record<string, string> } {
  if (bytes.length < 8) {
    throw new StateDictError(`file is ${bytes.length} bytes, too short for the 8-byte header length`, LOAD, 'the file is truncated or not safetensors');
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = dv.getUint32(0, true) + dv.getUint32(4, true) * 2 ** 32;
  if (headerLen > bytes.length - 8) {
    throw new StateDictError(`header length ${headerLen} runs past the end of the ${bytes.length}-byte file`, LOAD, 'the file is truncated or not safetensors');
  }
  if (headerLen > MAX_HEADER) throw new StateDictError(`header length ${headerLen} exceeds the format's limit of ${MAX_HEADER} bytes`, LOAD, 'the file is corrupt or not safetensors');

  let header: unknown;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + headerLen));
    header = JSON.parse(text);
  } catch (e) {
    throw new StateDictError(`header is not valid UTF-8 JSON (${(e as Error).message})`, LOAD, 'the file is corrupt or not safetensors');
  }
  if (!isObject(header)) throw new StateDictError('header is not a JSON object', LOAD);
  const dup = duplicateKey(text);
  if (dup) {
    throw new StateDictError(dup.parent === null ? `tensor '${dup.key}' appears twice in the header` : `key '${dup.key}' appears twice in the entry of '${dup.parent}'`, LOAD, 'the file is corrupt: every name must appear once');
  }

  const metadata: Record<string, string> = {};
  const rawMeta = header[META];
  if (rawMeta !== undefined && rawMeta !== null) {
    if (!isObject(rawMeta)) throw new StateDictError(`'${META}' is not an object`, LOAD);
    for (const [k, v] of Object.entries(rawMeta)) {
      if (typeof v !== 'string') throw new StateDictError(`metadata '${k}' is not a string`, LOAD);
      setOwn(metadata, k, v);
    }
  }

  const dataStart = 8 + headerLen;
  const dataLen = bytes.length - dataStart;
  const entries: Entry[] = [];
  for (const [key, entry] of Object.entries(header)) {
    if (key === META) continue;
    if (!isObject(entry)) throw new StateDictError(`tensor '${key}': header entry is not an object`, LOAD);
    const { dtype, shape, data_offsets: offs } = entry;
    const where = describe(key, dtype, shape);
    const tag = typeof dtype === 'string' && Object.hasOwn(READ, dtype) ? (dtype as SafetensorsFileDType) : undefined;
    if (!tag) throw new StateDictError(`${where}: unsupported dtype ${JSON.stringify(dtype)}`, LOAD, `kiln reads ${Object.keys(READ).join(', ')}`);
    const spec = READ[tag];
    const n = checkShape(shape, where, LOAD);
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((o) => typeof o === 'number' && Number.isSafeInteger(o) && o >= 0)) {
      throw new StateDictError(`${where}: data_offsets ${JSON.stringify(offs)} is not a pair of non-negative integers`, LOAD);
    }
    const [begin, end] = offs as [number, number];
    if (end - begin !== n * spec.size) {
      throw new StateDictError(`${where}: data_offsets [${begin}, ${end}] span ${end - begin} bytes, expected ${n} x ${spec.size} = ${n * spec.size}`, LOAD);
    }
    if (end > dataLen) throw new StateDictError(`${where}: data_offsets [${begin}, ${end}] run past the ${dataLen}-byte data section`, LOAD, 'the file is truncated');
    entries.push({ key, where, spec, tag, shape: (shape as number[]).slice(), n, begin, end });
  }
  checkTiling(entries, dataLen);

  const tensors: Record<string, RawTensor> = {};
  for (const e of entries) {
    const view = new DataView(bytes.buffer, bytes.byteOffset + dataStart + e.begin, e.end - e.begin);
    setOwn(tensors, e.key, { dtype: e.spec.dtype, shape: e.shape, data: e.spec.read(view, e.n, e.where), fileDType: e.tag });
  }
  return { tensors, metadata };
}

/** The regions, in offset order, must cover [0, dataLen) exactly once (the reference's validate). */
function checkTiling(entries: readonly Entry[], dataLen: number): void {
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  let prev: Entry | null = null;
  for (const e of sorted) {
    if (e.begin < at) {
      throw new StateDictError(`tensors '${prev!.key}' [${prev!.begin}, ${prev!.end}] and '${e.key}' [${e.begin}, ${e.end}] overlap`, LOAD, 'the file is corrupt: every tensor needs a region of its own');
    }
    if (e.begin > at) throw new StateDictError(`a hole of ${e.begin - at} bytes before tensor '${e.key}' (data from ${at} to ${e.begin} belongs to no tensor)`, LOAD, 'the file is corrupt: regions must follow each other');
    at = e.end;
    prev = e;
  }
  if (at !== dataLen) throw new StateDictError(`${dataLen - at} bytes after the last tensor belong to no tensor`, LOAD, 'the file is corrupt or was appended to');
}
