// Philox4x32-10, a counter-based generator: element i of a draw depends only on
// (seed, offset + i), so every backend that implements the same function produces
// the same numbers for the same seed, in any order and on any number of threads.

import { ArgumentError } from './errors.js';

const M0 = 0xd2511f53;
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9;
const W1 = 0xbb67ae85;

function mulhi(a: number, b: number): number {
  // high 32 bits of the 64-bit product of two uint32s
  const aHi = a >>> 16, aLo = a & 0xffff, bHi = b >>> 16, bLo = b & 0xffff;
  const lolo = aLo * bLo;
  const mid1 = aHi * bLo;
  const mid2 = aLo * bHi;
  const carry = ((lolo >>> 16) + (mid1 & 0xffff) + (mid2 & 0xffff)) >>> 16;
  return (aHi * bHi + (mid1 >>> 16) + (mid2 >>> 16) + carry) >>> 0;
}

/** Fills out[0..3] with the Philox4x32-10 block for counter (c0, c1) under key (k0, k1). */
export function philox(c0: number, c1: number, k0: number, k1: number, out: Uint32Array): void {
  let x0 = c0 >>> 0, x1 = c1 >>> 0, x2 = 0, x3 = 0;
  let key0 = k0 >>> 0, key1 = k1 >>> 0;
  for (let r = 0; r < 10; r++) {
    const hi0 = mulhi(M0, x0), lo0 = Math.imul(M0, x0) >>> 0;
    const hi1 = mulhi(M1, x2), lo1 = Math.imul(M1, x2) >>> 0;
    const n0 = (hi1 ^ x1 ^ key0) >>> 0;
    const n2 = (hi0 ^ x3 ^ key1) >>> 0;
    x0 = n0; x1 = lo1; x2 = n2; x3 = lo0;
    key0 = (key0 + W0) >>> 0;
    key1 = (key1 + W1) >>> 0;
  }
  out[0] = x0; out[1] = x1; out[2] = x2; out[3] = x3;
}


/** Uniform floats in [0, 1) for element indices [offset, offset + n). */
export function uniformStream(seed: number, offset: number, n: number, out: Float64Array | Float32Array): void {
  const block = new Uint32Array(4);
  const k0 = seed >>> 0, k1 = Math.floor(seed / 2 ** 32) >>> 0;
  let i = 0;
  while (i < n) {
    const idx = offset + i;
    const counter = Math.floor(idx / 4);
    philox(counter >>> 0, Math.floor(counter / 2 ** 32) >>> 0, k0, k1, block);
    for (let lane = idx % 4; lane < 4 && i < n; lane++, i++) {
      // 24 random bits keep the value strictly below 1 in float32
      out[i] = (block[lane]! >>> 8) * (1 / 16777216);
    }
  }
}

/**
 * Integers uniform on [low, high) for element indices [offset, offset + n): floor(u * (high -
 * low) + low) of the uniform stream in float64, so every backend (and a float64 composite of
 * the same ops) draws the same integers from the same seed.
 */
export function integerStream(seed: number, offset: number, n: number, low: number, high: number, out: Float64Array | Float32Array | Int32Array | Uint8Array): void {
  const u = new Float64Array(n);
  uniformStream(seed, offset, n, u);
  for (let i = 0; i < n; i++) out[i] = Math.floor(u[i]! * (high - low) + low);
}

/** Standard normals by Box-Muller over pairs of uniforms, element i from counters 2i and 2i+1. */
export function normalStream(seed: number, offset: number, n: number, out: Float64Array | Float32Array): void {
  const u = new Float64Array(2 * n);
  uniformStream(seed, 2 * offset, 2 * n, u);
  for (let i = 0; i < n; i++) {
    const u1 = 1 - u[2 * i]!; // (0, 1]
    const u2 = u[2 * i + 1]!;
    out[i] = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }
}

/** The state of a generator: its seed and how many counters its draws have used. */
export interface GeneratorState {
  seed: number;
  offset: number;
}

/**
 * A random generator (torch.Generator): a seed and an offset that every draw advances. The
 * global one (defaultGenerator) serves kiln.rand and friends; pass your own to DataLoader
 * shuffling or randomSplit for a stream of its own.
 */
export class Generator {
  private seed = 0x5eed;
  private offset = 0;
  /** Seeds the generator and restarts its stream; returns it (torch's manual_seed). */
  manualSeed(seed: number): this {
    if (!Number.isSafeInteger(seed) || seed < 0) throw new ArgumentError(`seed must be a non-negative integer, got ${seed}`, 'manualSeed');
    this.seed = seed;
    this.offset = 0;
    return this;
  }
  /** The seed of the stream (torch's initial_seed). */
  initialSeed(): number {
    return this.seed;
  }
  /** Reserves n counters and returns (seed, offset) for them. */
  reserve(n: number): { seed: number; offset: number } {
    const r = { seed: this.seed, offset: this.offset };
    this.offset += n;
    return r;
  }
  getState(): GeneratorState {
    return { seed: this.seed, offset: this.offset };
  }
  setState(s: GeneratorState): void {
    if (!s || !Number.isSafeInteger(s.seed) || s.seed < 0 || !Number.isSafeInteger(s.offset) || s.offset < 0) {
      throw new ArgumentError(`a generator state is { seed, offset } with non-negative integers, got ${JSON.stringify(s)}`, 'Generator.setState');
    }
    this.seed = s.seed;
    this.offset = s.offset;
  }
  /** n uniforms in [0, 1) from this generator's stream (advancing it), in float64. */
  uniforms(n: number): Float64Array {
    const out = new Float64Array(n);
    const { seed, offset } = this.reserve(n);
    uniformStream(seed, offset, n, out);
    return out;
  }
}

export const defaultGenerator = new Generator();
