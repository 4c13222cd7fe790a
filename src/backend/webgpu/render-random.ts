// Random numbers drawn on the GPU: Philox4x32-10 in WGSL, the same counter-based function as
// the CPU (src/core/random.ts), so a (seed, offset) pair gives the CPU's numbers:
//
//  - element i of a draw at `offset` is lane (offset + i) % 4 of the block for counter
//    (offset + i) / 4 under key (seed low 32 bits, seed high 32 bits); one invocation computes
//    one block and writes the (up to 4) elements it holds;
//  - uniform: (x >>> 8) * 2^-24, exact in f32: bit-identical to the CPU;
//  - integer on [low, high): the CPU computes floor(u * (high - low) + low) in float64. With
//    u = k * 2^-24 (k < 2^24), high - low <= 2^29 and |low|, |high| <= 2^29 that is exact in
//    float64 (k * (high - low) < 2^53; the sum is a multiple of 2^-24 below 2^29 in magnitude),
//    so it equals low + ((k * (high - low)) >> 24), computed here in integers (a 32x32 -> 64-bit
//    product from 16-bit halves): bit-identical. Outside that range (and float32 outputs beyond
//    2^24, bool and float64 outputs) the backend keeps the host path (`gpuIntegerExact`);
//  - normal: Box-Muller on the CPU's uniform pairs (element i uses uniforms 2(offset+i) and
//    2(offset+i)+1, i.e. lanes 0,1 or 2,3 of block (offset+i)/2), sqrt(-2 ln(1 - u1)) *
//    cos(2 pi u2), in f32 with a log and a cosine of our own (WGSL's builtins only promise an
//    absolute error of 2^-11 for cos and 2^-21 for log near 1): not bit-identical to the
//    CPU's float64 Box-Muller rounded to float32, within NORMAL_TOLERANCE of it (tested).
//
// WGSL has no 64-bit integers: counters are (lo, hi) pairs with the carry propagated, and the
// Philox multiplies are emulated with 16-bit halves, exactly as the CPU's mulhi.
//
// Seed, offset, size and the integer range are not constants of the shader: they arrive in a
// small parameter buffer (12 u32), so one pipeline per distribution and output type serves
// every draw (a compiled program draws at a new offset each call).

import type { WgslKernel } from './wgsl-common.js';
import { grid1d } from './wgsl-common.js';

export type RandomKind = 'uniform' | 'normal' | 'integer';

/** |gpu - cpu| for float32 normals, absolute (|z| <= 5.8: z of u1 = 2^-24); see the header. */
export const NORMAL_TOLERANCE = 4e-6;

const WG = 128;
/** u32 words in the parameter buffer */
export const RANDOM_PARAM_WORDS = 12;

const PHILOX = `fn mulhilo(a: u32, b: u32) -> vec2<u32> {
  let aL = a & 0xffffu; let aH = a >> 16u; let bL = b & 0xffffu; let bH = b >> 16u;
  let ll = aL * bL; let m1 = aH * bL; let m2 = aL * bH;
  let carry = ((ll >> 16u) + (m1 & 0xffffu) + (m2 & 0xffffu)) >> 16u;
  return vec2<u32>(aH * bH + (m1 >> 16u) + (m2 >> 16u) + carry, a * b);
}
fn philox(c0: u32, c1: u32, key0: u32, key1: u32) -> vec4<u32> {
  var x = vec4<u32>(c0, c1, 0u, 0u);
  var k0 = key0;
  var k1 = key1;
  for (var r = 0; r < 10; r = r + 1) {
    let p0 = mulhilo(0xd2511f53u, x.x);
    let p1 = mulhilo(0xcd9e8d57u, x.z);
    x = vec4<u32>(p1.x ^ x.y ^ k0, p1.y, p0.x ^ x.w ^ k1, p0.y);
    k0 = k0 + 0x9e3779b9u;
    k1 = k1 + 0xbb67ae85u;
  }
  return x;
}
fn unif(x: u32) -> f32 { return f32(x >> 8u) * 5.9604644775390625e-8; }`;

// ln(x) for x in (0, 1] (fdlibm's logf: x = m 2^e, m in [sqrt(1/2), sqrt(2)), ln(m) from s = f / (2 + f))
const LOG = `fn rlog(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  var e = i32(bits >> 23u) - 127;
  var m = bitcast<f32>((bits & 0x007fffffu) | 0x3f800000u);
  if (m > 1.41421356) { m = m * 0.5; e = e + 1; }
  let f = m - 1.0;
  let s = f / (2.0 + f);
  let z = s * s;
  let R = z * (0.66666668653 + z * (0.40000000596 + z * (0.28571429849 + z * (0.22222198546 + z * (0.18183572590 + z * (0.15313838422 + z * 0.14798198640))))));
  let hfsq = 0.5 * f * f;
  let fe = f32(e);
  return fe * 0.693138122558593750 + ((fe * 9.0580006145e-6 + s * (hfsq + R)) - hfsq + f);
}
fn rcos2pi(u: f32) -> f32 {
  let q = u * 4.0;
  let n = floor(q + 0.5);
  let t = (q - n) * 1.5707963267948966;
  let z = t * t;
  let c = 1.0 + z * (-0.5 + z * (4.1666666666666664e-2 + z * (-1.3888888888888889e-3 + z * (2.4801587301587302e-5 + z * (-2.7557319223985893e-7)))));
  let s = t + t * z * (-0.16666666666666666 + z * (8.3333333333333332e-3 + z * (-1.9841269841269841e-4 + z * 2.7557319223985888e-6)));
  let quadrant = u32(n) & 3u;
  if (quadrant == 0u) { return c; }
  if (quadrant == 1u) { return -s; }
  if (quadrant == 2u) { return -c; }
  return s;
}`;

/**
 * WGSL of a draw. Bindings: 0 the output (array<f32> or array<i32>), 1 the parameters:
 * [key0, key1, block lo, block hi, phase, size, out offset, low, range, -, -, -]; `phase` is the
 * position of element 0 inside the first block (offset % 4; normals: offset % 2).
 */
export function randomWgsl(kind: RandomKind, out: 'f32' | 'i32'): string {
  const per = kind === 'normal' ? 2 : 4;
  const value = kind === 'uniform'
    ? (j: number) => `unif(x[${j}])`
    : kind === 'integer'
      ? (j: number) => {
        const v = `(bitcast<i32>(p[7]) + bitcast<i32>(((pr${j}.x << 8u) | (pr${j}.y >> 24u))))`;
        return out === 'f32' ? `f32${v}` : v;
      }
      : (j: number) => `sqrt(-2.0 * rlog(1.0 - unif(x[${2 * j}]))) * rcos2pi(unif(x[${2 * j + 1}]))`;
  const lanes: string[] = [];
  for (let j = 0; j < per; j++) {
    if (kind === 'integer') lanes.push(`  let pr${j} = mulhilo(x[${j}] >> 8u, p[8]);`);
    lanes.push(`  if (base + ${j} >= p[4] && base + ${j} - p[4] < p[5]) { o[p[6] + base + ${j} - p[4]] = ${value(j)}; }`);
  }
  return [
    PHILOX,
    ...(kind === 'normal' ? [LOG] : []),
    `@group(0) @binding(0) var<storage, read_write> o: array<${out}>;`,
    '@group(0) @binding(1) var<storage, read> p: array<u32>;',
    '',
    `@compute @workgroup_size(${WG})`,
    'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nw: vec3<u32>) {',
    `  let t = (wg.y * nw.x + wg.x) * ${WG}u + lid;`,
    `  let base = t * ${per}u;`,
    // blocks needed: ceil((phase + size) / per)
    `  if (base >= p[4] + p[5]) { return; }`,
    '  let lo = p[2] + t;',
    '  let x = philox(lo, p[3] + select(0u, 1u, lo < t), p[0], p[1]);',
    ...lanes,
    '}',
  ].join('\n');
}

/** Whether the GPU draws randint(low, high) into `dtype` bit-identically to the CPU (see the header). */
export function gpuIntegerExact(low: number, high: number, dtype: string): boolean {
  const lim = 2 ** 29;
  if (dtype !== 'int32' && dtype !== 'float32') return false;
  if (!(high - low <= lim && Math.abs(low) <= lim && Math.abs(high) <= lim)) return false;
  // float32 outputs: integers of magnitude <= 2^24 convert exactly
  return dtype === 'int32' || (Math.abs(low) <= 2 ** 24 && Math.abs(high) <= 2 ** 24);
}

/** The kernel of every draw of `kind` into `out` (its grid is each draw's: see randomLaunch). */
export function randomKernel(kind: RandomKind, out: 'f32' | 'i32'): WgslKernel {
  return { code: randomWgsl(kind, out), bindings: [0, 1], writable: [true, false], grid: [1, 1, 1], name: `random_${kind}` };
}

/** The parameter words and the dispatch grid of one draw (its kernel depends only on kind and output type: randomKernel). */
export function randomLaunch(kind: RandomKind, a: { seed: number; offset: number; size: number; outOffset: number; low?: number; high?: number }): { params: Uint32Array; grid: [number, number, number] } {
  const per = kind === 'normal' ? 2 : 4;
  const block = Math.floor(a.offset / per);
  const phase = a.offset - block * per;
  const params = new Uint32Array(RANDOM_PARAM_WORDS);
  params[0] = a.seed >>> 0;
  params[1] = Math.floor(a.seed / 2 ** 32) >>> 0;
  params[2] = block >>> 0;
  params[3] = Math.floor(block / 2 ** 32) >>> 0;
  params[4] = phase;
  params[5] = a.size;
  params[6] = a.outOffset;
  if (kind === 'integer') {
    params[7] = a.low! | 0;
    params[8] = a.high! - a.low!;
  }
  const blocks = Math.ceil((phase + a.size) / per);
  return { params, grid: grid1d(Math.ceil(blocks / WG)) };
}
