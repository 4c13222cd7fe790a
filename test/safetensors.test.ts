import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateDictError } from '../src/core/errors.js';
import { decodeSafetensors, encodeSafetensors, type RawTensor } from '../src/io/safetensors.js';
import { readSafetensorsFile, writeSafetensorsFile } from '../src/io/safetensors-node.js';

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

test('overlapping and out-of-order regions are allowed', () => {
  const data = new Uint8Array(new Float32Array([1, 2, 3]).buffer);
  const file = rawFile(
    {
      late: { dtype: 'F32', shape: [1], data_offsets: [8, 12] },
      all: { dtype: 'F32', shape: [3], data_offsets: [0, 12] },
      mid: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
    },
    data,
  );
  const { tensors } = decodeSafetensors(file);
  assert.deepEqual([...tensors['late']!.data], [3]);
  assert.deepEqual([...tensors['all']!.data], [1, 2, 3]);
  assert.deepEqual([...tensors['mid']!.data], [2, 3]);
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
