// Tensor methods of the torch API surface in docs/torch-api.md (math, reordering, sorting,
// scans, norms, diagonals, sampling), attached like those of tensor-methods.ts: thin wrappers over
// the op functions. (torch's x.trace() is kiln.trace(x): `trace` is the tracer's field of a Tensor.)

import { Tensor } from '../tensor/tensor.js';
import * as m from './math.js';
import * as ro from './reorder.js';
import * as so from './sorting.js';
import * as sc from './scan.js';
import * as nm from './norms.js';
import * as mx from './matrix.js';
import { multinomial } from './sampling.js';
import type { ValuesIndices } from './reduce.js';
import type { Operand } from './pointwise.js';

type Dims = number | readonly number[] | undefined;

declare module '../tensor/tensor.js' {
  interface Tensor {
    tan(): Tensor;
    atan(): Tensor;
    asin(): Tensor;
    acos(): Tensor;
    sinh(): Tensor;
    cosh(): Tensor;
    log2(): Tensor;
    log10(): Tensor;
    trunc(): Tensor;
    atan2(other: Operand): Tensor;
    fmod(other: Operand): Tensor;
    remainder(other: Operand): Tensor;
    hypot(other: Operand): Tensor;
    lerp(end: Tensor, weight: Operand): Tensor;

    flip(dims: number | readonly number[]): Tensor;
    roll(shifts: number | readonly number[], dims?: number | readonly number[]): Tensor;
    repeat(...sizes: number[] | [readonly number[]]): Tensor;
    tile(dims: readonly number[]): Tensor;
    repeatInterleave(repeats: number | readonly number[] | Tensor, dim?: number): Tensor;
    sort(dim?: number, descending?: boolean, stable?: boolean): ValuesIndices;
    argsort(dim?: number, descending?: boolean, stable?: boolean): Tensor;
    topk(k: number, dim?: number, largest?: boolean, sorted?: boolean): ValuesIndices;
    kthvalue(k: number, dim?: number, keepdim?: boolean): ValuesIndices;
    cumprod(dim: number): Tensor;
    cummax(dim: number): ValuesIndices;
    cummin(dim: number): ValuesIndices;
    norm(p?: nm.NormOrder, dim?: Dims, keepdim?: boolean): Tensor;
    diag(diagonal?: number): Tensor;
    multinomial(numSamples: number, replacement?: boolean): Tensor;
  }
}

const P = Tensor.prototype as unknown as Record<string, unknown>;

const unary = { tan: m.tan, atan: m.atan, asin: m.asin, acos: m.acos, sinh: m.sinh, cosh: m.cosh, log2: m.log2, log10: m.log10, trunc: m.trunc };
for (const [name, f] of Object.entries(unary)) P[name] = function (this: Tensor) { return f(this); };
const binary = { atan2: m.atan2, fmod: m.fmod, remainder: m.remainder, hypot: m.hypot };
for (const [name, f] of Object.entries(binary)) P[name] = function (this: Tensor, o: Operand) { return f(this, o); };

Object.assign(P, {
  lerp(this: Tensor, end: Tensor, w: Operand) { return m.lerp(this, end, w); },
  flip(this: Tensor, dims: number | readonly number[]) { return ro.flip(this, dims); },
  roll(this: Tensor, s: number | readonly number[], d?: number | readonly number[]) { return ro.roll(this, s, d); },
  repeat(this: Tensor, ...s: unknown[]) { return ro.repeat(this, (s.length === 1 && Array.isArray(s[0]) ? s[0] : s) as number[]); },
  tile(this: Tensor, d: readonly number[]) { return ro.tile(this, d); },
  repeatInterleave(this: Tensor, r: number | readonly number[] | Tensor, d?: number) { return ro.repeatInterleave(this, r, d); },
  sort(this: Tensor, d?: number, desc?: boolean, st?: boolean) { return so.sort(this, d, desc, st); },
  argsort(this: Tensor, d?: number, desc?: boolean, st?: boolean) { return so.argsort(this, d, desc, st); },
  topk(this: Tensor, k: number, d?: number, l?: boolean, s?: boolean) { return so.topk(this, k, d, l, s); },
  kthvalue(this: Tensor, k: number, d?: number, kd?: boolean) { return so.kthvalue(this, k, d, kd); },
  cumprod(this: Tensor, d: number) { return sc.cumprod(this, d); },
  cummax(this: Tensor, d: number) { return sc.cummax(this, d); },
  cummin(this: Tensor, d: number) { return sc.cummin(this, d); },
  norm(this: Tensor, p?: nm.NormOrder, d?: Dims, kd?: boolean) { return nm.norm(this, p, d, kd); },
  diag(this: Tensor, k?: number) { return mx.diag(this, k); },
  multinomial(this: Tensor, n: number, r?: boolean) { return multinomial(this, n, r); },
});
