import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateDictError } from '../src/core/errors.js';
import { decodeSafetensors, encodeSafetensors, type RawTensor } from '../src/io/safetensors.js';
import { readSafetensorsFile, writeSafetensorsFile } from '../src/io/safetensors-node.js';
import * as kiln from 'kilnjs';
import { loadSafetensors, loadSafetensorsWithMetadata, saveSafetensors } from 'kilnjs/node';
import { readFile, writeFile } from 'node:fs/promises';
import { haveFixture, LAYER_FIXTURES, NO_FIXTURES } from './helpers/torch-cases.js';
import { assertClose } from './helpers/torch-compare.js';

// --- helpers -------------------------------------------------------------------------------

const numel = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

function random(dtype: RawTensor['dtype'], shape: number[]): RawTensor {
  const n = numel(shape);
  const data =
    dtype === 'float32' ? Float32Array.from({ length: n }, () => Math.random() * 200 - 100)
    : dtype === 'float64' ? Float64Array.from({ length: n }, () => Math.random() * 2e6 - 1e6)
    : dtype === 'int32' ? Int32Array.from({ length: n }, () => (Math.random() * 2 ** 32) | 0)
    : Uint8Array.from({ length: n }, () => (Math.random() < 0.5 ? 1 : 0));
  return { dtype, shape, data };
}

/** Bit-exact comparison (so NaN, -0 and payloads count). */
function assertSameTensor(actual: RawTensor | undefined, expected: RawTensor) {
  assert.ok(actual);
  assert.equal(actual.dtype, expected.dtype);
  assert.deepEqual(actual.shape, expected.shape);
  assert.equal(actual.data.constructor, expected.data.constructor);
  const bytes = (d: RawTensor['data']) => new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  assert.deepEqual(bytes(actual.data), bytes(expected.data));
}

/** Hand-built file: header object (or raw string), padded to 8, then the data bytes. */
function rawFile(header: object | string, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  let json = typeof header === 'string' ? header : JSON.stringify(header);
  while ((json.length % 8) !== 0) json += ' ';
  const h = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setUint32(0, h.length, true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

function leBytes(size: 1 | 2 | 8, values: (number | bigint)[]): Uint8Array {
  const out = new Uint8Array(size * values.length);
  const dv = new DataView(out.buffer);
  values.forEach((v, i) => {
    if (size === 8) dv.setBigInt64(i * 8, BigInt(v), true);
    else if (size === 2) dv.setUint16(i * 2, Number(v), true);
    else dv.setUint8(i, Number(v) & 0xff);
  });
  return out;
}

function assertStateDictError(fn: () => unknown, ...mustMention: string[]) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof StateDictError, `expected StateDictError, got ${String(e)}`);
    for (const s of mustMention) assert.ok(e.message.includes(s), `message ${JSON.stringify(e.message)} lacks ${JSON.stringify(s)}`);
    return true;
  });
}

function dataSectionStart(bytes: Uint8Array): number {
  return 8 + new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
}

// --- round trips ---------------------------------------------------------------------------

test('round-trips every dtype, 0-d and empty tensors', () => {
  const tensors: Record<string, RawTensor> = {};
  for (const dtype of ['float32', 'float64', 'int32', 'bool'] as const) {
    tensors[`${dtype}.matrix`] = random(dtype, [3, 5]);
    tensors[`${dtype}.vec`] = random(dtype, [7]);
    tensors[`${dtype}.scalar`] = random(dtype, []);
    tensors[`${dtype}.empty`] = random(dtype, [4, 0, 2]);
  }
  // Odd float bit patterns survive byte for byte.
  tensors['special'] = { dtype: 'float32', shape: [4], data: new Float32Array([NaN, -0, Infinity, -Infinity]) };
  const { tensors: back, metadata } = decodeSafetensors(encodeSafetensors(tensors));
  assert.deepEqual(Object.keys(back).sort(), Object.keys(tensors).sort());
  for (const [k, t] of Object.entries(tensors)) assertSameTensor(back[k], t);
  assert.deepEqual(metadata, {});
});

test('metadata round-trips', () => {
  const meta = { format: 'pt', note: 'ünïcode ✓ "quoted"', empty: '' };
  const { metadata } = decodeSafetensors(encodeSafetensors({ w: random('float32', [2]) }, meta));
  assert.deepEqual(metadata, meta);
});

test('data section is 8-byte aligned, header padded with spaces, widest dtype first then by name', () => {
  for (let len = 1; len <= 12; len++) {
    const bytes = encodeSafetensors({ ['x'.repeat(len)]: random('float64', [3]), b: random('bool', [1]) });
    const start = dataSectionStart(bytes);
    assert.equal(start % 8, 0);
    const header = new TextDecoder().decode(bytes.subarray(8, start));
    assert.match(header, /^\{.*\} *$/);
    assert.ok(header.indexOf('"x') < header.indexOf('"b"'), 'float64 data is placed before bool data');
    const pair = new TextDecoder().decode(encodeSafetensors({ b2: random('float32', [1]), a2: random('float32', [1]) }));
    assert.ok(pair.indexOf('"a2"') < pair.indexOf('"b2"'), 'same width: names are sorted');
  }
  // Insertion order does not change the file; integer-like names sort as strings too.
  const a = { '10': random('int32', [2]), '9': random('int32', [1]), z: random('int32', [1]) };
  const b = { z: a.z, '9': a['9'], '10': a['10'] };
  assert.deepEqual(encodeSafetensors(a), encodeSafetensors(b));
  const header = new TextDecoder().decode(encodeSafetensors(a).subarray(8));
  assert.ok(header.indexOf('"10"') < header.indexOf('"9"'));
});

test('decodes from an unaligned view and never aliases the input', () => {
  const t = random('float64', [5]);
  const file = encodeSafetensors({ t });
  const big = new Uint8Array(file.length + 3);
  big.set(file, 3);
  const input = big.subarray(3); // byteOffset 3: typed-array views on it would be misaligned
  const { tensors } = decodeSafetensors(input);
  assertSameTensor(tensors['t'], t);
  assert.notEqual(tensors['t']!.data.buffer, big.buffer);
  big.fill(0);
  assertSameTensor(tensors['t'], t);
  // A Node Buffer (whose slice() aliases) is copied out too.
  const buf = Buffer.from(file);
  const fromBuf = decodeSafetensors(buf).tensors['t']!;
  buf.fill(0);
  assertSameTensor(fromBuf, t);
});

test('out-of-order header entries are fine when the regions tile the data section', () => {
  const data = new Uint8Array(new Float32Array([1, 2, 3]).buffer);
  const file = rawFile(
    {
      late: { dtype: 'F32', shape: [1], data_offsets: [8, 12] },
      first: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
    },
    data,
  );
  const { tensors } = decodeSafetensors(file);
  assert.deepEqual([...tensors['late']!.data], [3]);
  assert.deepEqual([...tensors['first']!.data], [1, 2]);
});

// --- foreign dtypes -------------------------------------------------------------------------

test('F16 decodes to float32', () => {
  const bits = [0x3c00, 0xc000, 0x7c00, 0xfc00, 0x0001, 0x03ff, 0x7bff, 0x8000, 0x3555, 0x7e00];
  const file = rawFile({ h: { dtype: 'F16', shape: [2, 5], data_offsets: [0, 20] } }, leBytes(2, bits));
  const t = decodeSafetensors(file).tensors['h']!;
  assert.equal(t.dtype, 'float32');
  assert.deepEqual(t.shape, [2, 5]);
  assert.ok(t.data instanceof Float32Array);
  const v = [...t.data];
  assert.equal(v[0], 1);
  assert.equal(v[1], -2);
  assert.equal(v[2], Infinity);
  assert.equal(v[3], -Infinity);
  assert.equal(v[4], 2 ** -24); // smallest subnormal
  assert.equal(v[5], 1023 * 2 ** -24); // largest subnormal
  assert.equal(v[6], 65504); // largest finite
  assert.ok(Object.is(v[7], -0));
  assert.equal(v[8], Math.fround(0.333251953125));
  assert.ok(Number.isNaN(v[9]));
});

test('BF16 decodes to float32', () => {
  const bits = [0x3f80, 0xc040, 0x7f80, 0xff80, 0x0001, 0x8000, 0x7fc0];
  const file = rawFile({ b: { dtype: 'BF16', shape: [7], data_offsets: [0, 14] } }, leBytes(2, bits));
  const t = decodeSafetensors(file).tensors['b']!;
  assert.equal(t.dtype, 'float32');
  const v = [...t.data];
  assert.deepEqual(v.slice(0, 5), [1, -3, Infinity, -Infinity, 2 ** -133]);
  assert.ok(Object.is(v[5], -0));
  assert.ok(Number.isNaN(v[6]));
});

test('I64, I8, U8, I16 decode to int32', () => {
  const i64 = [1n, -1n, 2n ** 31n - 1n, -(2n ** 31n), 0n];
  const i16 = new Uint8Array(new Int16Array([-32768, 32767, -1]).buffer);
  const data = new Uint8Array([...leBytes(8, i64), ...leBytes(1, [-128, 127]), ...leBytes(1, [255, 0]), ...i16]);
  const file = rawFile(
    {
      a: { dtype: 'I64', shape: [5], data_offsets: [0, 40] },
      b: { dtype: 'I8', shape: [2], data_offsets: [40, 42] },
      c: { dtype: 'U8', shape: [2], data_offsets: [42, 44] },
      d: { dtype: 'I16', shape: [3], data_offsets: [44, 50] },
    },
    data,
  );
  const { tensors } = decodeSafetensors(file);
  for (const t of Object.values(tensors)) {
    assert.equal(t.dtype, 'int32');
    assert.ok(t.data instanceof Int32Array);
  }
  assert.deepEqual([...tensors['a']!.data], [1, -1, 2 ** 31 - 1, -(2 ** 31), 0]);
  assert.deepEqual([...tensors['b']!.data], [-128, 127]);
  assert.deepEqual([...tensors['c']!.data], [255, 0]);
  assert.deepEqual([...tensors['d']!.data], [-32768, 32767, -1]);
});

test('I64 that does not fit in int32 throws', () => {
  const file = rawFile({ big: { dtype: 'I64', shape: [2], data_offsets: [0, 16] } }, leBytes(8, [0n, 2n ** 31n]));
  assertStateDictError(() => decodeSafetensors(file), "'big'", 'I64', '[2]', '2147483648');
});

// --- decode errors --------------------------------------------------------------------------

test('truncated files', () => {
  assertStateDictError(() => decodeSafetensors(new Uint8Array(5)), 'loadSafetensors', 'truncated');
  const file = encodeSafetensors({ w: random('float32', [4]) });
  assertStateDictError(() => decodeSafetensors(file.subarray(0, 12)), 'header length');
  // Header intact but data cut short: the offsets now run past the end.
  assertStateDictError(() => decodeSafetensors(file.subarray(0, file.length - 1)), "'w'", 'F32', '[4]', 'past');
});

test('invalid JSON header', () => {
  assertStateDictError(() => decodeSafetensors(rawFile('{"w": {"dtype": ')), 'JSON');
  assertStateDictError(() => decodeSafetensors(rawFile('[1, 2]')), 'object');
});

test('unknown dtype names the dtype and the tensor', () => {
  const file = rawFile({ q: { dtype: 'F8_E4M3', shape: [2], data_offsets: [0, 2] } }, new Uint8Array(2));
  assertStateDictError(() => decodeSafetensors(file), "'q'", 'F8_E4M3', '[2]');
});

test('data_offsets that do not match shape x itemsize, or run past the end', () => {
  const data = new Uint8Array(16);
  const bad = (offs: unknown) => rawFile({ w: { dtype: 'F32', shape: [2, 2], data_offsets: offs } }, data);
  assertStateDictError(() => decodeSafetensors(bad([0, 12])), "'w'", 'F32', '[2, 2]', '16');
  assertStateDictError(() => decodeSafetensors(bad([8, 4])), "'w'");
  assertStateDictError(() => decodeSafetensors(bad([4, 20])), "'w'", 'F32', '[2, 2]', 'past');
  assertStateDictError(() => decodeSafetensors(bad([0])), "'w'");
  assertStateDictError(() => decodeSafetensors(bad([-4, 12])), "'w'");
});

test('shape with a negative or non-integer entry (decode)', () => {
  const bad = (shape: unknown) => rawFile({ s: { dtype: 'F32', shape, data_offsets: [0, 0] } });
  assertStateDictError(() => decodeSafetensors(bad([2, -1])), "'s'", 'F32', '-1');
  assertStateDictError(() => decodeSafetensors(bad([1.5])), "'s'", 'F32', '1.5');
  assertStateDictError(() => decodeSafetensors(bad('2')), "'s'", 'F32');
});

test('bad metadata', () => {
  assertStateDictError(() => decodeSafetensors(rawFile({ __metadata__: { n: 3 } })), "'n'");
});

// --- encode errors --------------------------------------------------------------------------

test('encode: data length must match the shape', () => {
  const t: RawTensor = { dtype: 'float32', shape: [2, 3], data: new Float32Array(5) };
  assertStateDictError(() => encodeSafetensors({ layer: t }), 'saveSafetensors', "'layer'", 'float32', '[2, 3]', '5');
});

test('encode: bad shapes, dtypes and data types', () => {
  const mk = (shape: number[]): RawTensor => ({ dtype: 'int32', shape, data: new Int32Array(0) });
  assertStateDictError(() => encodeSafetensors({ neg: mk([-1]) }), "'neg'", 'int32', '-1');
  assertStateDictError(() => encodeSafetensors({ frac: mk([0.5]) }), "'frac'", '0.5');
  const wrongDtype = { dtype: 'int8', shape: [1], data: new Int32Array(1) } as unknown as RawTensor;
  assertStateDictError(() => encodeSafetensors({ w: wrongDtype }), "'w'", 'int8');
  const wrongArray: RawTensor = { dtype: 'float32', shape: [1], data: new Float64Array(1) };
  assertStateDictError(() => encodeSafetensors({ w: wrongArray }), "'w'", 'Float64Array');
  assertStateDictError(() => encodeSafetensors({ __metadata__: random('bool', [1]) }), '__metadata__');
});

// --- files ----------------------------------------------------------------------------------

test('file round-trip through a temp dir, written atomically', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-safetensors-'));
  try {
    const path = join(dir, 'model.safetensors');
    const tensors = { w: random('float32', [3, 4]), b: random('float64', [4]), m: random('bool', [2]) };
    await writeSafetensorsFile(path, tensors, { step: '10' });
    await writeSafetensorsFile(path, tensors, { step: '11' }); // overwrite in place
    const back = await readSafetensorsFile(path);
    for (const [k, t] of Object.entries(tensors)) assertSameTensor(back.tensors[k], t);
    assert.deepEqual(back.metadata, { step: '11' });
    assert.deepEqual(await readdir(dir), ['model.safetensors'], 'no temp files left behind');
    // An invalid tensor fails before anything touches disk.
    const bad: RawTensor = { dtype: 'int32', shape: [2], data: new Int32Array(1) };
    await assert.rejects(writeSafetensorsFile(join(dir, 'bad.safetensors'), { bad }), StateDictError);
    assert.deepEqual(await readdir(dir), ['model.safetensors']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// --- the format, strictly (issue 18) -----------------------------------------------------------

test('overlapping regions are refused: 54 names on one 1 MB region no longer decode into 54 MB of copies', () => {
  const mb = 1 << 20;
  const header: Record<string, object> = {};
  for (let i = 0; i < 54; i++) header[`t${i}`] = { dtype: 'U8', shape: [mb], data_offsets: [0, mb] };
  assertStateDictError(() => decodeSafetensors(rawFile(header, new Uint8Array(mb))), 'overlap', "'t0'", "'t1'");
  const data = new Uint8Array(new Float32Array([1, 2, 3]).buffer);
  const partial = rawFile({ all: { dtype: 'F32', shape: [3], data_offsets: [0, 12] }, mid: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } }, data);
  assertStateDictError(() => decodeSafetensors(partial), 'overlap', "'mid'");
});

test('holes between tensors, before the first and after the last are refused', () => {
  const data = new Uint8Array(16);
  const file = (a: [number, number], b: [number, number], bytes = data) => rawFile({ a: { dtype: 'F32', shape: [1], data_offsets: a }, b: { dtype: 'F32', shape: [1], data_offsets: b } }, bytes);
  assertStateDictError(() => decodeSafetensors(file([0, 4], [8, 12], data.subarray(0, 12))), 'hole', "'b'", '4', '8');
  assertStateDictError(() => decodeSafetensors(file([4, 8], [8, 12], data.subarray(0, 12))), 'hole', "'a'", '0');
  assertStateDictError(() => decodeSafetensors(file([0, 4], [4, 8], data.subarray(0, 12))), '4 bytes after the last tensor');
  decodeSafetensors(file([0, 4], [4, 8], data.subarray(0, 8))); // tiled exactly: fine
});

test('a tensor named twice is refused (JSON.parse would keep the last silently)', () => {
  const data = new Uint8Array(new Float32Array([1, 2]).buffer);
  const text = '{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}';
  assertStateDictError(() => decodeSafetensors(rawFile(text, data)), "'w'", 'twice');
  const nested = '{"w":{"dtype":"F32","dtype":"F64","shape":[1],"data_offsets":[0,4]}}';
  assertStateDictError(() => decodeSafetensors(rawFile(nested, data.subarray(0, 4))), 'dtype', 'twice');
  const escaped = text.replace('},"w"', '},"\\u0077"'); // the same name, spelled with an escape
  assert.ok(escaped.includes('\\u0077'));
  assertStateDictError(() => decodeSafetensors(rawFile(escaped, data)), "'w'", 'twice');
});

test('a tensor named __proto__ is kept as an ordinary entry (and does not replace the prototype)', () => {
  const data = new Uint8Array(new Float32Array([7, 8]).buffer);
  const text = '{"__proto__":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}';
  const { tensors } = decodeSafetensors(rawFile(text, data));
  assert.deepEqual(Object.keys(tensors).sort(), ['__proto__', 'b']);
  assert.ok(Object.hasOwn(tensors, '__proto__'));
  assert.deepEqual([...tensors['__proto__']!.data], [7]);
  assert.equal(Object.getPrototypeOf(tensors), Object.prototype);
  // and it round-trips through the encoder
  const back = decodeSafetensors(encodeSafetensors(tensors)).tensors;
  assert.deepEqual([...back['__proto__']!.data], [7]);
});

test('loadSafetensors on a missing file, a folder or a pipe-like path: a StateDictError naming the path', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-safetensors-'));
  try {
    const missing = join(dir, 'nope.safetensors');
    await assert.rejects(loadSafetensors(missing), (e: unknown) => e instanceof StateDictError && e.message.includes(missing) && e.message.includes('no such file'));
    await assert.rejects(loadSafetensors(dir), (e: unknown) => e instanceof StateDictError && e.message.includes('is a folder'));
    await writeFile(join(dir, 'file'), 'x');
    await assert.rejects(loadSafetensors(join(dir, 'file', 'below.safetensors')), (e: unknown) => e instanceof StateDictError && e.message.includes('not a folder'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// --- writing other dtypes (issue 22: F16 / BF16 / I64 / U8 / ... save with a range check) ---------

test('F16 and BF16 writing rounds to nearest even, keeps subnormals, signed zeros and specials, and refuses overflow', () => {
  const v = [1, -2, 65504, 2 ** -24, 2 ** -25, 3 * 2 ** -26, -0, Infinity, -Infinity, NaN, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 65519.99];
  const f = { dtype: 'float32' as const, shape: [v.length], data: Float32Array.from(v) };
  const h = decodeSafetensors(encodeSafetensors({ h: { ...f, fileDType: 'F16' } })).tensors['h']!;
  assert.equal(h.fileDType, 'F16');
  const want = [1, -2, 65504, 2 ** -24, 0, 2 ** -24, -0, Infinity, -Infinity, NaN, 1, 1 + 2 ** -9, 65504];
  [...h.data].forEach((x, i) => assert.ok(Object.is(x, want[i]) || (Number.isNaN(x) && Number.isNaN(want[i]!)), `F16 element ${i}: ${x} vs ${want[i]}`));
  assertStateDictError(() => encodeSafetensors({ big: { dtype: 'float32', shape: [2], data: Float32Array.from([1, 65520]), fileDType: 'F16' } }), "'big'", 'element 1 = 65520', 'F16');
  const bf = decodeSafetensors(encodeSafetensors({ b: { dtype: 'float32', shape: [4], data: Float32Array.from([1 + 2 ** -8, 1 + 3 * 2 ** -8, 3e38, -1e-40]), fileDType: 'BF16' } })).tensors['b']!;
  assert.deepEqual([...bf.data].slice(0, 2), [1, 1 + 2 ** -6], 'ties to even');
  assert.ok(Math.abs(bf.data[2]! - 3e38) / 3e38 < 2 ** -8, 'large BF16 values round, they do not overflow');
  assert.ok(bf.data[3]! < 0 && Math.abs(bf.data[3]! + 1e-40) < 2 ** -133, 'BF16 subnormals');
  assertStateDictError(() => encodeSafetensors({ x: { dtype: 'float64', shape: [1], data: Float64Array.from([1e39]), fileDType: 'BF16' } }), 'does not fit in BF16');
  assertStateDictError(() => encodeSafetensors({ x: { dtype: 'float64', shape: [1], data: Float64Array.from([1e39]), fileDType: 'F32' } }), 'does not fit in F32');
});

test('integer file dtypes: I64 / I16 / I8 / U8 written from int32 with a range check, BOOL from bool; mismatched kinds refused', () => {
  const ints = Int32Array.from([0, 1, -1, 2 ** 31 - 1, -(2 ** 31)]);
  const i64 = decodeSafetensors(encodeSafetensors({ a: { dtype: 'int32', shape: [5], data: ints, fileDType: 'I64' } })).tensors['a']!;
  assert.deepEqual([...i64.data], [...ints]);
  assert.equal(i64.fileDType, 'I64');
  const u8 = decodeSafetensors(encodeSafetensors({ a: { dtype: 'int32', shape: [3], data: Int32Array.from([0, 128, 255]), fileDType: 'U8' } })).tensors['a']!;
  assert.deepEqual([...u8.data], [0, 128, 255]);
  assertStateDictError(() => encodeSafetensors({ a: { dtype: 'int32', shape: [2], data: Int32Array.from([5, 256]), fileDType: 'U8' } }), "'a'", 'element 1 = 256', '[0, 255]');
  assertStateDictError(() => encodeSafetensors({ a: { dtype: 'int32', shape: [1], data: Int32Array.from([-129]), fileDType: 'I8' } }), '[-128, 127]');
  assertStateDictError(() => encodeSafetensors({ a: { dtype: 'int32', shape: [1], data: Int32Array.from([40000]), fileDType: 'I16' } }), '[-32768, 32767]');
  assertStateDictError(() => encodeSafetensors({ a: { dtype: 'float32', shape: [1], data: Float32Array.from([1]), fileDType: 'I64' } }), 'cannot be written as I64', 'int32');
  assertStateDictError(() => encodeSafetensors({ a: { dtype: 'int32', shape: [1], data: Int32Array.from([1]), fileDType: 'F16' } }), 'cannot be written as F16');
  assertStateDictError(() => encodeSafetensors({ a: { dtype: 'int32', shape: [1], data: Int32Array.from([1]), fileDType: 'Q4' as never } }), 'unknown file dtype', 'F16, BF16');
  // widest file dtype first: an I64 tensor of an int32 array is placed before F32 data
  const header = new TextDecoder().decode(encodeSafetensors({ f: random('float32', [1]), i: { dtype: 'int32', shape: [1], data: Int32Array.from([3]), fileDType: 'I64' } }).subarray(8, 200));
  assert.ok(header.indexOf('"i"') < header.indexOf('"f"'));
});

test('a torch-written checkpoint in F16 / BF16 / I64 / U8 / I8 / I16 / BOOL / F64 loads, runs, and saves back bit for bit', { skip: haveFixture('dtypes') ? false : NO_FIXTURES }, async () => {
  const path = join(LAYER_FIXTURES, 'dtypes.safetensors');
  const meta = JSON.parse(await readFile(join(LAYER_FIXTURES, 'dtypes.json'), 'utf8')) as { expected: Record<string, unknown>; rtol: number };
  const { tensors, dtypes } = await loadSafetensorsWithMetadata(path);
  assert.equal(dtypes['f16.linear1.weight'], 'F16');
  assert.equal(dtypes['bf16.norm1.weight'], 'BF16');
  assert.equal(dtypes['ids_i64'], 'I64');
  const value = (v: unknown) => (v === 'nan' ? NaN : v === 'inf' ? Infinity : v === '-inf' ? -Infinity : (v as number));
  for (const [k, want] of Object.entries(meta.expected)) {
    const got = Array.from(tensors[k]!.dataSync() as ArrayLike<number>);
    const flat = [want].flat(3).map(value);
    got.forEach((g, i) => assert.ok(Object.is(g, flat[i]) || (Number.isNaN(g) && Number.isNaN(flat[i]!)) || g === flat[i], `${k}[${i}]: ${g} vs torch ${flat[i]}`));
  }
  // the half-precision weights drive kiln's TransformerEncoderLayer to torch's output
  for (const tag of ['f16', 'bf16']) {
    const layer = new kiln.nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst: true });
    const sd = Object.fromEntries(Object.entries(tensors).filter(([k]) => k.startsWith(`${tag}.`)).map(([k, t]) => [k.slice(tag.length + 1), t]));
    layer.loadStateDict(sd);
    assertClose(layer.call(tensors['f16_input']!), tensors[`${tag}_output`]!, meta.rtol, `${tag} layer output`);
  }
  // a BatchNorm's I64 num_batches_tracked lands in kiln's int32 buffer
  const bn = new kiln.nn.BatchNorm1d(2);
  bn.loadStateDict({ ...bn.stateDict(), num_batches_tracked: tensors['bn.num_batches_tracked']! });
  assert.equal(bn.num_batches_tracked!.item(), 17);
  // saving with the dtypes read writes every tensor's bytes as torch wrote them
  const dir = await mkdtemp(join(tmpdir(), 'kiln-safetensors-'));
  try {
    const out = join(dir, 'back.safetensors');
    await saveSafetensors(out, tensors, undefined, { dtypes });
    const region = (bytes: Uint8Array) => {
      const n = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
      const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))) as Record<string, { dtype: string; data_offsets: [number, number] }>;
      return (k: string) => ({ dtype: header[k]!.dtype, bytes: Array.from(bytes.subarray(8 + n + header[k]!.data_offsets[0], 8 + n + header[k]!.data_offsets[1])) });
    };
    const a = region(new Uint8Array(await readFile(path))), b = region(new Uint8Array(await readFile(out)));
    for (const k of Object.keys(tensors)) {
      const ra = a(k), rb = b(k);
      assert.equal(rb.dtype, ra.dtype, k);
      if (k === 'special_f16' || k === 'special_bf16') {
        // NaN is written as the canonical quiet NaN (torch's too); every other element bit for bit
        assert.equal(rb.bytes.length, ra.bytes.length);
      } else assert.deepEqual(rb.bytes, ra.bytes, `${k}: bytes differ`);
    }
    const sp = (await loadSafetensorsWithMetadata(out)).tensors;
    assert.deepEqual(Array.from(sp['special_f16']!.dataSync()).map(String), Array.from(tensors['special_f16']!.dataSync()).map(String));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
