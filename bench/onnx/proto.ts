// A tiny protobuf encoder for the subset of onnx.proto that the benchmark's graphs use
// (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto), so the
// ONNX graphs are built in-process without a protobuf dependency. Field numbers are those
// of onnx/onnx.proto (IR version 9). Only encoding: onnxruntime parses the result.

/** Bytes of one message, built field by field. */
export class Writer {
  private chunks: Uint8Array[] = [];
  private len = 0;

  private push(b: Uint8Array): void {
    this.chunks.push(b);
    this.len += b.length;
  }

  /** Varint of a non-negative number or any int64 (negatives take 10 bytes, two's complement). */
  private varint(v: number | bigint): void {
    let x = BigInt.asUintN(64, BigInt(v));
    const out: number[] = [];
    do {
      let byte = Number(x & 0x7fn);
      x >>= 7n;
      if (x !== 0n) byte |= 0x80;
      out.push(byte);
    } while (x !== 0n);
    this.push(Uint8Array.from(out));
  }

  private tag(field: number, wire: 0 | 1 | 2 | 5): void {
    this.varint((field << 3) | wire);
  }

  int(field: number, v: number | bigint): this {
    this.tag(field, 0);
    this.varint(v);
    return this;
  }

  float(field: number, v: number): this {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.push(b);
    return this;
  }

  bytes(field: number, b: Uint8Array): this {
    this.tag(field, 2);
    this.varint(b.length);
    this.push(b);
    return this;
  }

  string(field: number, s: string): this {
    return this.bytes(field, new TextEncoder().encode(s));
  }

  message(field: number, m: Writer): this {
    return this.bytes(field, m.finish());
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.len);
    let o = 0;
    for (const c of this.chunks) {
      out.set(c, o);
      o += c.length;
    }
    return out;
  }
}

// ---------------------------------------------------------------- onnx.proto messages

/** TensorProto.DataType values used here */
export const DT = { FLOAT: 1, INT32: 6, INT64: 7 } as const;

export type AttrValue = number | string | number[] | { ints: number[] } | { floats: number[] } | FloatAttr;

export interface NodeSpec {
  op: string;
  inputs: string[];
  outputs: string[];
  attrs?: Record<string, AttrValue>;
  name?: string;
}

export interface InitializerSpec {
  name: string;
  dims: number[];
  data: Float32Array | BigInt64Array | Int32Array;
}

export interface ValueInfoSpec {
  name: string;
  /** numbers are fixed sizes; strings are symbolic dims (dim_param) */
  dims: (number | string)[];
  elemType?: number;
}

export interface ModelSpec {
  name: string;
  nodes: NodeSpec[];
  initializers: InitializerSpec[];
  inputs: ValueInfoSpec[];
  outputs: ValueInfoSpec[];
  opset: number;
  irVersion?: number;
}

// AttributeProto.AttributeType
const AT = { FLOAT: 1, INT: 2, STRING: 3, FLOATS: 6, INTS: 7 } as const;

/**
 * A plain number is an INT when integral, else a FLOAT; a float attribute that may hold an
 * integral value (epsilon, alpha) must be wrapped with attrFloat().
 */
function attribute(name: string, v: AttrValue): Writer {
  const w = new Writer().string(1, name);
  if (v instanceof FloatAttr) return w.float(2, v.value).int(20, AT.FLOAT);
  if (typeof v === 'string') return w.bytes(4, new TextEncoder().encode(v)).int(20, AT.STRING);
  if (typeof v === 'number') return Number.isInteger(v) ? w.int(3, v).int(20, AT.INT) : w.float(2, v).int(20, AT.FLOAT);
  if (Array.isArray(v) || 'ints' in v) {
    for (const x of Array.isArray(v) ? v : v.ints) w.int(8, x);
    return w.int(20, AT.INTS);
  }
  for (const x of v.floats) w.float(7, x);
  return w.int(20, AT.FLOATS);
}

/** A float attribute whose value may be integral (epsilon = 1 would otherwise encode as INT). */
export class FloatAttr {
  constructor(readonly value: number) {}
}
export const attrFloat = (v: number): FloatAttr => new FloatAttr(v);

function tensorProto(t: InitializerSpec): Writer {
  const w = new Writer();
  for (const d of t.dims) w.int(1, d);
  const dt = t.data instanceof Float32Array ? DT.FLOAT : t.data instanceof BigInt64Array ? DT.INT64 : DT.INT32;
  w.int(2, dt).string(8, t.name);
  // raw_data is little-endian, which typed arrays are on every platform Node runs on here
  w.bytes(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  return w;
}

function valueInfo(v: ValueInfoSpec): Writer {
  const shape = new Writer();
  for (const d of v.dims) shape.message(1, typeof d === 'number' ? new Writer().int(1, d) : new Writer().string(2, d));
  const tensorType = new Writer().int(1, v.elemType ?? DT.FLOAT).message(2, shape);
  return new Writer().string(1, v.name).message(2, new Writer().message(1, tensorType));
}

function nodeProto(n: NodeSpec, i: number): Writer {
  const w = new Writer();
  for (const s of n.inputs) w.string(1, s);
  for (const s of n.outputs) w.string(2, s);
  w.string(3, n.name ?? `${n.op}_${i}`).string(4, n.op);
  for (const [k, v] of Object.entries(n.attrs ?? {})) w.message(5, attribute(k, v));
  return w;
}

/** Serialized ModelProto bytes, ready for InferenceSession.create(bytes). */
export function encodeModel(m: ModelSpec): Uint8Array {
  const g = new Writer();
  m.nodes.forEach((n, i) => g.message(1, nodeProto(n, i)));
  g.string(2, m.name);
  for (const t of m.initializers) g.message(5, tensorProto(t));
  for (const v of m.inputs) g.message(11, valueInfo(v));
  for (const v of m.outputs) g.message(12, valueInfo(v));
  return new Writer()
    .int(1, m.irVersion ?? 9)
    .string(2, 'kiln-bench')
    .message(7, g)
    .message(8, new Writer().string(1, '').int(2, m.opset))
    .finish();
}
