// examples/denoiser.ts: the conv denoiser raises held-out PSNR in a short run, the compiled
// training step follows the eager one, and the PNG encoder writes valid files.

import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { nativeUnavailableReason } from 'kilnjs/node';
import { Denoiser, makeImages, trainDenoiser, writeDenoiserPngs } from '../examples/denoiser.js';
import { crc32, encodePng, imageGrid } from '../examples/lib/png.js';
import { psnr } from '../src/advisor/examples/lib/metrics.js';
import { assertCompiledFollowsEager } from './helpers/compiled-training.js';

/** Parses a PNG written by encodePng (8-bit, filter 0 rows), checking every chunk's CRC. */
function decodePng(buf: Buffer): { width: number; height: number; colorType: number; data: Uint8Array } {
  assert.deepEqual([...buf.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  let pos = 8, width = 0, height = 0, colorType = -1;
  const idat: Buffer[] = [];
  const types: string[] = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos), type = buf.toString('ascii', pos + 4, pos + 8);
    const body = buf.subarray(pos + 8, pos + 8 + len);
    assert.equal(buf.readUInt32BE(pos + 8 + len), crc32(buf.subarray(pos + 4, pos + 8 + len)), `CRC of ${type}`);
    types.push(type);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      assert.equal(body[8], 8);
      colorType = body[9]!;
    } else if (type === 'IDAT') idat.push(body);
    pos += 12 + len;
  }
  assert.deepEqual([types[0], types[types.length - 1]], ['IHDR', 'IEND']);
  const channels = colorType === 0 ? 1 : colorType === 2 ? 3 : 4;
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  assert.equal(raw.length, height * (stride + 1));
  const data = new Uint8Array(width * height * channels);
  for (let y = 0; y < height; y++) {
    assert.equal(raw[y * (stride + 1)], 0, 'filter byte');
    data.set(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)), y * stride);
  }
  return { width, height, colorType, data };
}

test('crc32 matches the standard check value (and zlib.crc32 where Node has it)', () => {
  assert.equal(crc32(new TextEncoder().encode('123456789')), 0xcbf43926);
  const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 37) & 0xff);
  const z = (zlib as { crc32?: (d: Uint8Array) => number }).crc32;
  if (z) assert.equal(crc32(bytes), z(bytes));
});

test('encodePng round-trips grayscale, RGB and RGBA pixels', () => {
  for (const channels of [1, 3, 4] as const) {
    const width = 7, height = 5;
    const data = Uint8Array.from({ length: width * height * channels }, (_, i) => (i * 29 + channels) & 0xff);
    const png = decodePng(encodePng({ width, height, channels, data }));
    assert.equal(png.width, width);
    assert.equal(png.height, height);
    assert.equal(png.colorType, { 1: 0, 3: 2, 4: 6 }[channels]);
    assert.deepEqual(png.data, data);
  }
  assert.throws(() => encodePng({ width: 2, height: 2, channels: 1, data: new Uint8Array(3) }));
  const grid = imageGrid([[new Float32Array([0, 1, 0.5, 2])]], 2, 2, 1, { scale: 2, gap: 1 });
  assert.equal(grid.width, 6);
  assert.deepEqual([...grid.data.subarray(6 + 1, 6 + 5)], [0, 0, 255, 255]); // row 1: first tile row, scaled x2
});

test('makeImages is reproducible, in [0, 1], and not flat', () => {
  const a = makeImages({ count: 6, seed: 4 }), b = makeImages({ count: 6, seed: 4 }), rgb = makeImages({ count: 2, channels: 3 });
  assert.deepEqual(a.shape, [6, 1, 32, 32]);
  assert.deepEqual(rgb.shape, [2, 3, 32, 32]);
  const pa = a.dataSync(), pb = b.dataSync();
  assert.deepEqual(pa, pb);
  let lo = Infinity, hi = -Infinity;
  for (const v of pa) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  assert.ok(lo >= 0 && hi <= 1 && hi - lo > 0.3, `range ${lo}..${hi}`);
  for (const t of [a, b, rgb]) t.dispose();
});

test('psnr: 20 dB for an RMS error of 0.1, infinite for identical images', () => {
  const ref = new Float32Array(100).fill(0.5), x = ref.map((v, i) => v + (i % 2 ? 0.1 : -0.1));
  assert.ok(Math.abs(psnr(x, ref) - 20) < 1e-4);
  assert.equal(psnr(ref, ref), Infinity);
});

test('a short training run raises held-out PSNR by > 3 dB, with flat memory, and writes PNGs', () => {
  const r = trainDenoiser({ steps: 25, batch: 8, lr: 5e-3, trainImages: 128, testImages: 16, evalEvery: 0 });
  assert.ok(r.psnrNoisy > 15 && r.psnrNoisy < 19, `noisy PSNR ${r.psnrNoisy}`); // sigma 0.15: about 16.5 dB before clamping
  assert.ok(r.psnrDenoised > r.psnrNoisy + 3, `PSNR ${r.psnrNoisy} -> ${r.psnrDenoised}`);
  assert.equal(r.losses.length, 25);
  assert.equal(r.memoryAfter.tensors, r.memoryBefore.tensors);
  assert.equal(r.memoryAfter.bytes, r.memoryBefore.bytes);
  const dir = mkdtempSync(join(tmpdir(), 'kiln-denoiser-test-'));
  try {
    const files = writeDenoiserPngs(r.test, dir, 4, 2);
    assert.deepEqual(files.map((f) => f.slice(dir.length + 1)), ['noisy.png', 'denoised.png', 'clean.png', 'comparison.png']);
    const cmp = decodePng(readFileSync(files[3]!));
    assert.equal(cmp.colorType, 0);
    assert.equal(cmp.width, 4 * 64 + 5 * 2);
    assert.equal(cmp.height, 3 * 64 + 4 * 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const curveOpts = { steps: 10, batch: 4, trainImages: 32, testImages: 4, evalEvery: 0 };
let eagerCurve: ReturnType<typeof trainDenoiser> | undefined;

function checkCompiledFollowsEager(backend: 'js' | 'native', t: TestContext): void {
  const eager = (eagerCurve ??= trainDenoiser(curveOpts));
  const compiled = assertCompiledFollowsEager(t, backend, eager, () => trainDenoiser({ ...curveOpts, compile: true, fullgraph: true, backend }));
  assert.ok(Math.abs(eager.psnrDenoised - compiled.psnrDenoised) < 0.01);
  assert.ok(compiled.model instanceof Denoiser);
}

test('the compiled training step (fullgraph) follows the eager loss curve within 1e-4 for 10 steps, no graph breaks', (t) => {
  checkCompiledFollowsEager('js', t);
});

const unavailable = nativeUnavailableReason();
test('the same with the native backend', { skip: unavailable ? `native backend unavailable: ${unavailable}` : false }, (t) => {
  checkCompiledFollowsEager('native', t);
});
