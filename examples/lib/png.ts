// A minimal PNG encoder (8-bit grayscale, RGB or RGBA, no filtering, zlib deflate from
// node:zlib) and helpers to lay out float images in a grid. Enough for examples to write
// what they produced; see https://www.w3.org/TR/png/ for the format.

import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (ISO 3309, the one PNG and zlib's crc32 use) of `bytes`. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

export type PngChannels = 1 | 3 | 4;

export interface PngImage {
  width: number;
  height: number;
  /** 1 gray, 3 RGB, 4 RGBA */
  channels: PngChannels;
  /** row-major, interleaved channels, width * height * channels bytes */
  data: Uint8Array;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'ascii');
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** The bytes of a PNG file holding `img`. */
export function encodePng(img: PngImage): Buffer {
  const { width, height, channels, data } = img;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) throw new Error(`bad PNG size ${width}x${height}`);
  if (data.length !== width * height * channels) throw new Error(`PNG data has ${data.length} bytes, expected ${width}x${height}x${channels}`);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = channels === 1 ? 0 : channels === 3 ? 2 : 6; // color type
  ihdr[10] = 0; // deflate
  ihdr[11] = 0; // adaptive filtering (we use filter type 0 on every row)
  ihdr[12] = 0; // no interlace
  const stride = width * channels;
  const raw = new Uint8Array(height * (stride + 1));
  for (let y = 0; y < height; y++) {
    raw[y * (stride + 1)] = 0; // filter: none
    raw.set(data.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1);
  }
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', new Uint8Array(0))]);
}

export function writePng(path: string, img: PngImage): void {
  writeFileSync(path, encodePng(img));
}

/** Float values (nominally [0, 1]) to bytes, clamped and rounded. */
export function toBytes(values: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = Math.round(Math.min(1, Math.max(0, values[i]!)) * 255);
  return out;
}

/**
 * Lays out planar float images ([channels, h, w] each, values in [0, 1]) as a grid of
 * `rows` x `cols` tiles, each enlarged `scale` times (nearest neighbour), `gap` pixels
 * apart on a white background. tiles[r][c] is the tile in row r, column c.
 */
export function imageGrid(tiles: ArrayLike<number>[][], h: number, w: number, channels: 1 | 3, opts: { scale?: number; gap?: number } = {}): PngImage {
  const scale = opts.scale ?? 1, gap = opts.gap ?? 2;
  const rows = tiles.length, cols = Math.max(...tiles.map((r) => r.length));
  const width = cols * w * scale + (cols + 1) * gap, height = rows * h * scale + (rows + 1) * gap;
  const data = new Uint8Array(width * height * channels).fill(255);
  tiles.forEach((row, r) =>
    row.forEach((tile, c) => {
      if (tile.length !== channels * h * w) throw new Error(`tile ${r},${c} has ${tile.length} values, expected ${channels}x${h}x${w}`);
      const x0 = gap + c * (w * scale + gap), y0 = gap + r * (h * scale + gap);
      for (let y = 0; y < h * scale; y++) {
        for (let x = 0; x < w * scale; x++) {
          const src = Math.floor(y / scale) * w + Math.floor(x / scale);
          for (let ch = 0; ch < channels; ch++) {
            const v = tile[ch * h * w + src]!;
            data[((y0 + y) * width + x0 + x) * channels + ch] = Math.round(Math.min(1, Math.max(0, v)) * 255);
          }
        }
      }
    }),
  );
  return { width, height, channels, data };
}
