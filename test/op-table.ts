// The op table: one entry per (op, variant) as plain data, so the same cases drive the
// eager float32 tests (ops.test.ts), the float64 gradient checks (gradcheck.test.ts), and
// later the compiled-execution tests.
//
//   make(rng)          fresh random inputs (kiln tensors; may be non-contiguous views)
//   run(k, inputs)     the op under test, through the kiln namespace `k` it is given
//   reference(inputs)  the same result computed independently in float64 (helpers/reference.ts)
//   grad               indices of the inputs the op is differentiable in
//
// Inputs are made with kiln.rand/randn under the Rng's seed; float inputs have the Rng's
// dtype (float32 for the forward tests, float64 for gradcheck). Generators keep inputs away
// from kinks (relu/abs at 0, ties in max/min, clamp bounds) so finite differences are valid.

import * as kiln from 'kilnjs';
import * as R from './helpers/reference.js';
import * as RL from './helpers/reference-layers.js';
import type { ND } from './helpers/reference.js';
import { REQUIRED_API_OPS, apiOpCases } from './op-table-api.js';

export type Kiln = typeof kiln;
export type Tensor = kiln.Tensor;
export type DType = kiln.DType;
export type FloatDType = 'float32' | 'float64';

export interface Tol {
  readonly atol: number;
  readonly rtol: number;
}

export interface OpCase {
  /** unique, e.g. 'sum dim=1 keepdim' */
  readonly name: string;
  /** the public op it covers (coverage is checked against this) */
  readonly op: string;
  make(rng: Rng): Tensor[];
  run(k: Kiln, inputs: readonly Tensor[]): Tensor | readonly Tensor[];
  reference(inputs: readonly ND[]): ND | readonly ND[];
  /** indices of the inputs to check gradients for (empty: not differentiable) */
  readonly grad: readonly number[];
  /** dtype of every output when it is not the input float dtype (bool, int32) */
  readonly outDType?: DType;
  /** forward tolerance in float32 (default FLOAT32_TOL) */
  readonly tol?: Tol;
  /** gradcheck tolerance (default GRAD_TOL) */
  readonly gradTol?: Tol;
  /** float32 gradients (compiled forward, backward outside) against float64 ones (default in compiled-grad-case.ts) */
  readonly gradTol32?: Tol;
}

export const FLOAT32_TOL: Tol = { atol: 1e-5, rtol: 1e-5 };
export const FLOAT64_TOL: Tol = { atol: 1e-10, rtol: 1e-9 };
export const GRAD_TOL: Tol = { atol: 2e-7, rtol: 1e-6 };
/** for inputs of large magnitude, where finite differences lose digits to rounding of f */
const GRAD_TOL_LARGE: Tol = { atol: 1e-6, rtol: 1e-5 };
const LONG_REDUCTION: Tol = { atol: 3e-5, rtol: 3e-5 };

// ---- random inputs ----------------------------------------------------------------------

type Shape = readonly number[];
export type Gen = (rng: Rng, shape: Shape) => Tensor;

const values = (t: Tensor): Float64Array => Float64Array.from(t.dataSync() as ArrayLike<number>);

/** Seeded input factory over kiln's own generator (kiln.manualSeed), in one float dtype. */
export class Rng {
  constructor(
    readonly seed: number,
    readonly dtype: FloatDType = 'float32',
  ) {
    kiln.manualSeed(seed);
  }

  private fromValues(v: Float64Array, shape: Shape): Tensor {
    return kiln.tensor(v, [...shape], { dtype: this.dtype });
  }

  /** Reads a fresh float64 draw, transforms it in JS, and returns a new leaf of this dtype. */
  private transform(shape: Shape, draw: 'normal' | 'uniform', f: (v: Float64Array) => void): Tensor {
    const t = draw === 'normal' ? kiln.randn([...shape], { dtype: 'float64' }) : kiln.rand([...shape], { dtype: 'float64' });
    const v = values(t);
    t.dispose();
    f(v);
    return this.fromValues(v, shape);
  }

  randn(shape: Shape, scale = 1): Tensor {
    if (scale === 1) return kiln.randn([...shape], { dtype: this.dtype });
    return this.transform(shape, 'normal', (v) => v.forEach((x, i) => (v[i] = x * scale)));
  }

  uniform(shape: Shape, lo: number, hi: number): Tensor {
    return this.transform(shape, 'uniform', (v) => v.forEach((x, i) => (v[i] = lo + (hi - lo) * x)));
  }

  /** Normal values (mean `center`, std `scale`) pushed at least `margin` away from each of `points` (kinks). */
  away(shape: Shape, points: readonly number[] = [0], margin = 0.1, center = 0, scale = 1): Tensor {
    return this.transform(shape, 'normal', (v) =>
      v.forEach((x, i) => {
        x = center + scale * x;
        for (const p of points) if (Math.abs(x - p) < margin) x = p + (x >= p ? margin : -margin) + (x - p);
        v[i] = x;
      }),
    );
  }

  /** A random permutation of evenly spaced values in about [-2, 2]: no ties, gaps >= 0.01. */
  distinct(shape: Shape): Tensor {
    const n = R.numel(shape);
    const step = Math.min(0.25, 4 / Math.max(n, 1));
    return this.transform(shape, 'uniform', (v) => {
      const order = Array.from(v.keys()).sort((a, b) => v[a]! - v[b]!);
      order.forEach((src, rank) => (v[src] = (rank - (n - 1) / 2) * step));
    });
  }

  /** Values on the grid offset + 0.1 k (|k| <= 20): two grids with different offsets never tie. */
  grid(shape: Shape, offset: number): Tensor {
    return this.transform(shape, 'uniform', (v) => v.forEach((x, i) => (v[i] = Math.floor(x * 41 - 20) * 0.1 + offset)));
  }

  /** Floats holding small integers in [lo, hi) (many ties: for comparisons). */
  ints(shape: Shape, lo: number, hi: number): Tensor {
    return this.transform(shape, 'uniform', (v) => v.forEach((x, i) => (v[i] = lo + Math.floor(x * (hi - lo)))));
  }

  /** int32 indices uniform in [lo, hi). */
  index(lo: number, hi: number, shape: Shape): Tensor {
    return kiln.randint(lo, hi, [...shape]);
  }

  /** A bool tensor, true with probability p. */
  mask(shape: Shape, p = 0.5): Tensor {
    return kiln.scope(() => kiln.rand([...shape]).lt(p));
  }

  // non-contiguous layouts: gen makes the underlying memory, the view has logical `shape`

  /** Last two dims swapped in memory (a transpose view). */
  transposed(shape: Shape, gen: Gen = (r, s) => r.randn(s)): Tensor {
    const n = shape.length;
    const mem = [...shape];
    [mem[n - 2], mem[n - 1]] = [mem[n - 1]!, mem[n - 2]!];
    return gen(this, mem).transpose(-2, -1);
  }

  /** Every other element along dim of a larger tensor, from offset 1 (stride 2, offset > 0). */
  strided(shape: Shape, dim = -1, gen: Gen = (r, s) => r.randn(s)): Tensor {
    const d = dim < 0 ? dim + shape.length : dim;
    const mem = [...shape];
    mem[d] = 2 * shape[d]! + 1;
    return gen(this, mem).slice(d, 1, undefined, 2);
  }

  /** A size-1 dim broadcast to shape[dim] (stride 0). */
  expanded(shape: Shape, dim = 0, gen: Gen = (r, s) => r.randn(s)): Tensor {
    const mem = [...shape];
    mem[dim] = 1;
    return gen(this, mem).expand([...shape]);
  }

  /** base.permute(perm) with logical `shape`. */
  permuted(shape: Shape, perm: readonly number[], gen: Gen = (r, s) => r.randn(s)): Tensor {
    const mem = new Array<number>(shape.length);
    perm.forEach((p, i) => (mem[p] = shape[i]!));
    return gen(this, mem).permute([...perm]);
  }
}

const N: Gen = (r, s) => r.randn(s);
const away0: Gen = (r, s) => r.away(s, [0]);
const positive: Gen = (r, s) => r.uniform(s, 0.5, 2);
const distinct: Gen = (r, s) => r.distinct(s);

// ---- builders ---------------------------------------------------------------------------

type Run1 = (k: Kiln, x: Tensor) => Tensor;

/** A unary op on a contiguous 3-D tensor, a transposed view, a strided view and a 0-d tensor. */
export function unary(op: string, run: Run1, ref: (v: number) => number, o: { gen?: Gen; grad?: boolean; tol?: Tol; label?: string } = {}): OpCase[] {
  const gen = o.gen ?? N;
  const name = o.label ?? op;
  const grad = o.grad === false ? [] : [0];
  const base = { op, run: (k: Kiln, [x]: readonly Tensor[]) => run(k, x!), reference: ([x]: readonly ND[]) => R.map(x!, ref), grad, tol: o.tol };
  return [
    { ...base, name: `${name} [2,3,4]`, make: (r) => [gen(r, [2, 3, 4])] },
    { ...base, name: `${name} transposed [4,5]`, make: (r) => [r.transposed([4, 5], gen)] },
    { ...base, name: `${name} strided [3,4]`, make: (r) => [r.strided([3, 4], 0, gen)] },
    { ...base, name: `${name} 0-d`, make: (r) => [gen(r, [])] },
  ];
}

type Run2 = (k: Kiln, a: kiln.Tensor | number, b: kiln.Tensor | number) => Tensor;

/** A binary op: same shape, broadcasting both ways, non-contiguous operands, scalar operands. */
export function binary(op: string, run: Run2, ref: (a: number, b: number) => number, o: { genA?: Gen; genB?: Gen; scalar?: number; grad?: boolean; outDType?: DType; tol?: Tol; label?: string } = {}): OpCase[] {
  const gA = o.genA ?? N, gB = o.genB ?? N;
  const name = o.label ?? op;
  const s = o.scalar ?? 1.5;
  const g2 = o.grad === false ? [] : [0, 1];
  const g1 = o.grad === false ? [] : [0];
  const base = { op, outDType: o.outDType, tol: o.tol };
  const two = { ...base, run: (k: Kiln, [a, b]: readonly Tensor[]) => run(k, a!, b!), reference: ([a, b]: readonly ND[]) => R.zip(a!, b!, ref), grad: g2 };
  return [
    { ...two, name: `${name} [3,4] [3,4]`, make: (r) => [gA(r, [3, 4]), gB(r, [3, 4])] },
    { ...two, name: `${name} broadcast [2,3,1] [4]`, make: (r) => [gA(r, [2, 3, 1]), gB(r, [4])] },
    { ...two, name: `${name} broadcast [4,1] [1,3]`, make: (r) => [gA(r, [4, 1]), gB(r, [1, 3])] },
    { ...two, name: `${name} broadcast 0-d [] [2,3]`, make: (r) => [gA(r, []), gB(r, [2, 3])] },
    { ...two, name: `${name} transposed x expanded [4,3]`, make: (r) => [r.transposed([4, 3], gA), r.expanded([4, 3], 0, gB)] },
    { ...two, name: `${name} strided x transposed [3,4]`, make: (r) => [r.strided([3, 4], 1, gA), r.transposed([3, 4], gB)] },
    {
      ...base, name: `${name} tensor-scalar`, grad: g1,
      make: (r) => [gA(r, [3, 4])],
      run: (k, [a]) => run(k, a!, s),
      reference: ([a]) => R.map(a!, (v) => ref(v, s)),
    },
    {
      ...base, name: `${name} scalar-tensor`, grad: g1,
      make: (r) => [gB(r, [3, 4])],
      run: (k, [b]) => run(k, s, b!),
      reference: ([b]) => R.map(b!, (v) => ref(s, v)),
    },
  ];
}

type Dims = number | readonly number[] | undefined;

/** A reduction over several dim sets, with and without keepdim, on contiguous and strided inputs. */
function reduction(op: string, run: (k: Kiln, x: Tensor, dims: Dims, keepdim: boolean) => Tensor, ref: (x: ND, dims: Dims, keepdim: boolean) => ND, o: { gen?: Gen; grad?: boolean; outDType?: DType; tol?: Tol; variants?: readonly [Dims, boolean][] } = {}): OpCase[] {
  const gen = o.gen ?? N;
  const variants = o.variants ?? [[undefined, false], [1, false], [-1, true], [[0, 2], true], [[0, 2], false]];
  const fmt = (d: Dims, kd: boolean) => `${d === undefined ? 'all' : `dim=${JSON.stringify(d)}`}${kd ? ' keepdim' : ''}`;
  const cases: OpCase[] = variants.map(([d, kd]) => ({
    name: `${op} ${fmt(d, kd)} [3,4,5]`, op, outDType: o.outDType, tol: o.tol, grad: o.grad === false ? [] : [0],
    make: (r) => [gen(r, [3, 4, 5])],
    run: (k, [x]) => run(k, x!, d, kd),
    reference: ([x]) => ref(x!, d, kd),
  }));
  const [d, kd] = variants[1]!;
  cases.push({
    name: `${op} ${fmt(d, kd)} strided+transposed [3,4,5]`, op, outDType: o.outDType, tol: o.tol, grad: o.grad === false ? [] : [0],
    make: (r) => [r.strided([3, 5, 4], 0, gen).transpose(1, 2)],
    run: (k, [x]) => run(k, x!, d, kd),
    reference: ([x]) => ref(x!, d, kd),
  });
  return cases;
}

/** A single case. */
export function one(c: OpCase): OpCase[] {
  return [c];
}

const b2n = R.b2n;
const T = R.truthy;

// ---- the table --------------------------------------------------------------------------

export const OP_TABLE: readonly OpCase[] = [
  // -- pointwise: arithmetic --
  ...binary('add', (k, a, b) => k.add(a, b), (a, b) => a + b),
  ...one({
    name: 'add alpha=-2', op: 'add', grad: [0, 1], make: (r) => [r.randn([3, 4]), r.randn([4])],
    run: (k, [a, b]) => k.add(a!, b!, -2), reference: ([a, b]) => R.zip(a!, b!, (x, y) => x - 2 * y),
  }),
  ...one({
    name: 'add int32', op: 'add', grad: [], outDType: 'int32', make: (r) => [r.index(-50, 50, [3, 4]), r.index(-50, 50, [4])],
    run: (k, [a, b]) => k.add(a!, b!), reference: ([a, b]) => R.zip(a!, b!, (x, y) => x + y),
  }),
  ...one({
    name: 'add int32+float promotes', op: 'add', grad: [1], make: (r) => [r.index(-5, 5, [3, 4]), r.randn([3, 4])],
    run: (k, [a, b]) => k.add(a!, b!), reference: ([a, b]) => R.zip(a!, b!, (x, y) => x + y),
  }),
  ...binary('sub', (k, a, b) => k.sub(a, b), (a, b) => a - b),
  ...binary('mul', (k, a, b) => k.mul(a, b), (a, b) => a * b),
  ...one({
    name: 'mul int32', op: 'mul', grad: [], outDType: 'int32', make: (r) => [r.index(-50, 50, [3, 4]), r.index(-50, 50, [3, 4])],
    run: (k, [a, b]) => k.mul(a!, b!), reference: ([a, b]) => R.zip(a!, b!, (x, y) => x * y),
  }),
  ...binary('div', (k, a, b) => k.div(a, b), (a, b) => a / b, { genB: (r, s) => r.away(s, [0], 0.5) }),
  // an operand used twice and a zero scalar: C compilers fold these under fast math (x - x = 0, x * 0 = 0)
  ...one({
    name: 'mul by scalar 0', op: 'mul', grad: [0], make: (r) => [r.randn([3, 4])],
    run: (k, [a]) => k.mul(a!, 0), reference: ([a]) => R.map(a!, (x) => x * 0),
  }),
  ...one({
    name: 'sub self', op: 'sub', grad: [0], make: (r) => [r.randn([3, 4])],
    run: (k, [a]) => k.sub(a!, a!), reference: ([a]) => R.map(a!, (x) => x - x),
  }),
  ...one({
    name: 'div self', op: 'div', grad: [0], make: (r) => [r.away([3, 4], [0], 0.5)],
    run: (k, [a]) => k.div(a!, a!), reference: ([a]) => R.map(a!, (x) => x / x),
  }),
  ...one({
    name: 'div int32 -> float32', op: 'div', grad: [], outDType: 'float32', make: (r) => [r.index(-50, 50, [3, 4]), r.index(1, 9, [3, 4])],
    run: (k, [a, b]) => k.div(a!, b!), reference: ([a, b]) => R.zip(a!, b!, (x, y) => x / y),
  }),
  ...binary('pow', (k, a, b) => k.pow(a, b), (a, b) => a ** b, { genA: positive, scalar: 1.5 }),
  ...one({
    name: 'pow x^2 negative base', op: 'pow', grad: [0], make: (r) => [r.randn([3, 4])],
    run: (k, [a]) => k.pow(a!, 2), reference: ([a]) => R.map(a!, (x) => x * x),
  }),
  ...one({
    name: 'pow x^3 via tensor exponent', op: 'pow', grad: [0], make: (r) => [r.randn([3, 4]), r.ints([4], 3, 4)],
    run: (k, [a, b]) => k.pow(a!, b!), reference: ([a, b]) => R.zip(a!, b!, (x, y) => x ** y),
  }),
  ...unary('neg', (k, x) => k.neg(x), (v) => -v),
  ...unary('abs', (k, x) => k.abs(x), Math.abs, { gen: away0 }),
  ...unary('exp', (k, x) => k.exp(x), Math.exp),
  ...unary('log', (k, x) => k.log(x), Math.log, { gen: positive }),
  ...unary('log1p', (k, x) => k.log1p(x), Math.log1p, { gen: (r, s) => r.uniform(s, -0.5, 2) }),
  ...unary('sqrt', (k, x) => k.sqrt(x), Math.sqrt, { gen: positive }),
  ...unary('rsqrt', (k, x) => k.rsqrt(x), R.rsqrt, { gen: positive }),
  ...unary('sin', (k, x) => k.sin(x), Math.sin),
  ...unary('cos', (k, x) => k.cos(x), Math.cos),
  ...unary('tanh', (k, x) => k.tanh(x), Math.tanh),
  ...unary('sigmoid', (k, x) => k.sigmoid(x), R.sigmoid),
  ...unary('relu', (k, x) => k.relu(x), R.relu, { gen: away0 }),
  ...unary('gelu', (k, x) => k.gelu(x), R.gelu, { label: 'gelu exact' }),
  ...unary('gelu', (k, x) => k.gelu(x, 'tanh'), R.geluTanh, { label: 'gelu tanh' }),
  ...unary('silu', (k, x) => k.silu(x), R.silu),
  ...unary('softplus', (k, x) => k.softplus(x), (v) => R.softplus(v)),
  ...one({
    name: 'softplus beta=2 threshold=1', op: 'softplus', grad: [0], make: (r) => [r.away([4, 5], [0.5], 0.1)],
    run: (k, [x]) => k.softplus(x!, 2, 1), reference: ([x]) => R.map(x!, (v) => R.softplus(v, 2, 1)),
  }),
  ...one({
    name: 'softplus large inputs (threshold branch)', op: 'softplus', grad: [0], gradTol: GRAD_TOL_LARGE, make: (r) => [r.away([3, 4], [20], 0.5, 20, 5)],
    run: (k, [x]) => k.softplus(x!), reference: ([x]) => R.map(x!, (v) => R.softplus(v)),
  }),
  ...unary('clone', (k, x) => k.clone(x), (v) => v),
  ...unary('erf', (k, x) => k.erf(x), R.erf),
  // -- clamp / where / maximum / minimum --
  ...one({
    name: 'clamp min max', op: 'clamp', grad: [0], make: (r) => [r.away([3, 4, 5], [-0.5, 0.5], 0.05)],
    run: (k, [x]) => k.clamp(x!, -0.5, 0.5), reference: ([x]) => R.map(x!, (v) => Math.min(Math.max(v, -0.5), 0.5)),
  }),
  ...one({
    name: 'clamp min only transposed', op: 'clamp', grad: [0], make: (r) => [r.transposed([4, 5], (q, s) => q.away(s, [0.2], 0.05))],
    run: (k, [x]) => k.clamp(x!, 0.2), reference: ([x]) => R.map(x!, (v) => Math.max(v, 0.2)),
  }),
  ...one({
    name: 'clamp max only', op: 'clamp', grad: [0], make: (r) => [r.away([4, 5], [-0.3], 0.05)],
    run: (k, [x]) => k.clamp(x!, null, -0.3), reference: ([x]) => R.map(x!, (v) => Math.min(v, -0.3)),
  }),
  ...one({
    name: 'clamp tensor bounds broadcast', op: 'clamp', grad: [0, 1, 2],
    make: (r) => [r.grid([3, 4], 0.05), r.grid([4], 0), r.grid([3, 1], 0.025).add(2.5)],
    run: (k, [x, lo, hi]) => k.clamp(x!, lo!, hi!), reference: ([x, lo, hi]) => R.zipN([x!, lo!, hi!], (v, a, b) => Math.min(Math.max(v, a), b)),
  }),
  ...binary('maximum', (k, a, b) => k.maximum(a, b), Math.max, { genA: (r, s) => r.grid(s, 0.05), genB: (r, s) => r.grid(s, 0), scalar: 0.02 }),
  ...binary('minimum', (k, a, b) => k.minimum(a, b), Math.min, { genA: (r, s) => r.grid(s, 0.05), genB: (r, s) => r.grid(s, 0), scalar: 0.02 }),
  ...one({
    name: 'where broadcast', op: 'where', grad: [1, 2], make: (r) => [r.mask([3, 1]), r.randn([3, 4]), r.randn([4])],
    run: (k, [c, a, b]) => k.where(c!, a!, b!), reference: ([c, a, b]) => R.zipN([c!, a!, b!], (q, x, y) => (T(q) ? x : y)),
  }),
  ...one({
    name: 'where non-contiguous', op: 'where', grad: [1, 2], make: (r) => [r.transposed([4, 3], (q, s) => q.mask(s)), r.strided([4, 3], 0), r.expanded([4, 3], 0)],
    run: (k, [c, a, b]) => k.where(c!, a!, b!), reference: ([c, a, b]) => R.zipN([c!, a!, b!], (q, x, y) => (T(q) ? x : y)),
  }),
  ...one({
    name: 'where scalar other', op: 'where', grad: [1], make: (r) => [r.mask([3, 4]), r.randn([3, 4])],
    run: (k, [c, a]) => k.where(c!, a!, -2), reference: ([c, a]) => R.zip(c!, a!, (q, x) => (T(q) ? x : -2)),
  }),
  ...one({
    name: 'maskedFill', op: 'where', grad: [0], make: (r) => [r.randn([3, 4]), r.mask([4])],
    run: (_k, [x, m]) => x!.maskedFill(m!, 7), reference: ([x, m]) => R.zip(x!, m!, (v, q) => (T(q) ? 7 : v)),
  }),
  // -- comparisons and logical ops (exact) --
  ...(['eq', 'ne', 'lt', 'le', 'gt', 'ge'] as const).flatMap((op) =>
    binary(op, (k, a, b) => k[op](a, b), (a, b) => b2n({ eq: a === b, ne: a !== b, lt: a < b, le: a <= b, gt: a > b, ge: a >= b }[op]), {
      genA: (r, s) => r.ints(s, -2, 3), genB: (r, s) => r.ints(s, -2, 3), scalar: 1, grad: false, outDType: 'bool',
    }),
  ),
  ...(['logicalAnd', 'logicalOr', 'logicalXor'] as const).flatMap((op) => [
    ...binary(op, (k, a, b) => k[op](a, b), (a, b) => b2n({ logicalAnd: T(a) && T(b), logicalOr: T(a) || T(b), logicalXor: T(a) !== T(b) }[op]), {
      genA: (r, s) => r.mask(s), genB: (r, s) => r.mask(s), scalar: 1, grad: false, outDType: 'bool', label: `${op} bool`,
    }),
    {
      name: `${op} float operands`, op, grad: [], outDType: 'bool', make: (r) => [r.ints([3, 4], -1, 2), r.ints([4], -1, 2)],
      run: (k, [a, b]) => k[op](a!, b!),
      reference: ([a, b]) => R.zip(a!, b!, (x, y) => b2n({ logicalAnd: T(x) && T(y), logicalOr: T(x) || T(y), logicalXor: T(x) !== T(y) }[op])),
    } satisfies OpCase,
  ]),
  ...one({
    name: 'logicalNot bool transposed', op: 'logicalNot', grad: [], outDType: 'bool', make: (r) => [r.transposed([3, 4], (q, s) => q.mask(s))],
    run: (k, [a]) => k.logicalNot(a!), reference: ([a]) => R.map(a!, (v) => b2n(!T(v))),
  }),
  ...one({
    name: 'logicalNot float', op: 'logicalNot', grad: [], outDType: 'bool', make: (r) => [r.ints([3, 4], -1, 2)],
    run: (k, [a]) => k.logicalNot(a!), reference: ([a]) => R.map(a!, (v) => b2n(!T(v))),
  }),
  ...one({
    name: 'cast float -> int32 truncates', op: 'cast', grad: [], outDType: 'int32', make: (r) => [r.randn([3, 4], 5)],
    run: (k, [a]) => k.cast(a!, 'int32'), reference: ([a]) => R.map(a!, Math.trunc),
  }),
  ...one({
    name: 'cast float -> bool', op: 'cast', grad: [], outDType: 'bool', make: (r) => [r.ints([3, 4], -1, 2)],
    run: (k, [a]) => k.cast(a!, 'bool'), reference: ([a]) => R.map(a!, (v) => b2n(v !== 0)),
  }),

  // -- reductions --
  ...reduction('sum', (k, x, d, kd) => k.sum(x, d, kd), R.sum),
  ...one({
    name: 'sum long [4096]', op: 'sum', grad: [], tol: LONG_REDUCTION, make: (r) => [r.randn([4096])],
    run: (k, [x]) => k.sum(x!), reference: ([x]) => R.sum(x!),
  }),
  ...one({
    name: 'sum of expanded view', op: 'sum', grad: [0], make: (r) => [r.expanded([4, 3, 5], 1)],
    run: (k, [x]) => k.sum(x!, 1), reference: ([x]) => R.sum(x!, 1),
  }),
  ...reduction('mean', (k, x, d, kd) => k.mean(x, d, kd), R.mean),
  ...reduction('prod', (k, x, d, kd) => k.prod(x, d, kd), R.prod, { gen: (r, s) => r.uniform(s, 0.5, 1.5), variants: [[undefined, false], [1, false], [[0, 2], true]] }),
  ...reduction('amax', (k, x, d, kd) => k.amax(x, d, kd), R.amax, { gen: distinct }),
  ...reduction('amin', (k, x, d, kd) => k.amin(x, d, kd), R.amin, { gen: distinct }),
  ...reduction('argmax', (k, x, d, kd) => k.argmax(x, d as number | undefined, kd), (x, d, kd) => R.argmax(x, d as number | undefined, kd), {
    gen: distinct, grad: false, outDType: 'int32', variants: [[undefined, false], [1, false], [-1, true], [0, false]],
  }),
  ...reduction('argmin', (k, x, d, kd) => k.argmin(x, d as number | undefined, kd), (x, d, kd) => R.argmin(x, d as number | undefined, kd), {
    gen: distinct, grad: false, outDType: 'int32', variants: [[undefined, false], [1, false], [-1, true], [0, false]],
  }),
  ...one({
    name: 'argmax ties pick the first', op: 'argmax', grad: [], outDType: 'int32', make: (r) => [r.ints([6, 5], 0, 2)],
    run: (k, [x]) => k.argmax(x!, 1), reference: ([x]) => R.argmax(x!, 1),
  }),
  ...reduction('var', (k, x, d, kd) => k.var(x, d, kd), (x, d, kd) => R.variance(x, d, kd)),
  ...one({
    name: 'var correction=0 dim=1', op: 'var', grad: [0], make: (r) => [r.randn([3, 4, 5])],
    run: (k, [x]) => k.var(x!, 1, false, 0), reference: ([x]) => R.variance(x!, 1, false, 0),
  }),
  ...reduction('std', (k, x, d, kd) => k.std(x, d, kd), (x, d, kd) => R.std(x, d, kd)),
  ...one({
    name: 'std correction=0 all', op: 'std', grad: [0], make: (r) => [r.randn([3, 4, 5])],
    run: (k, [x]) => k.std(x!, undefined, false, 0), reference: ([x]) => R.std(x!, undefined, false, 0),
  }),
  ...reduction('logsumexp', (k, x, d, kd) => k.logsumexp(x, d, kd), R.logsumexp),
  ...one({
    name: 'logsumexp large values', op: 'logsumexp', grad: [0], gradTol: GRAD_TOL_LARGE, make: (r) => [r.uniform([3, 6], 80, 100)],
    run: (k, [x]) => k.logsumexp(x!, 1), reference: ([x]) => R.logsumexp(x!, 1),
  }),
  ...([-1, 0, 1] as const).flatMap((d): OpCase[] => [
    { name: `softmax dim=${d} [3,4,5]`, op: 'softmax', grad: [0], make: (r) => [r.randn([3, 4, 5], 2)], run: (k, [x]) => k.softmax(x!, d), reference: ([x]) => R.softmax(x!, d) },
    { name: `logSoftmax dim=${d} [3,4,5]`, op: 'logSoftmax', grad: [0], make: (r) => [r.randn([3, 4, 5], 2)], run: (k, [x]) => k.logSoftmax(x!, d), reference: ([x]) => R.logSoftmax(x!, d) },
  ]),
  ...one({
    name: 'softmax transposed, large logits', op: 'softmax', grad: [0], gradTol: GRAD_TOL_LARGE, make: (r) => [r.transposed([4, 6], (q, s) => q.uniform(s, 50, 60))],
    run: (k, [x]) => k.softmax(x!, -1), reference: ([x]) => R.softmax(x!, -1),
  }),
  ...one({
    name: 'logSoftmax strided', op: 'logSoftmax', grad: [0], make: (r) => [r.strided([4, 6], 0)],
    run: (k, [x]) => k.logSoftmax(x!, 1), reference: ([x]) => R.logSoftmax(x!, 1),
  }),
  ...([0, 1, -1] as const).map((d): OpCase => ({
    name: `cumsum dim=${d} [3,4,5]`, op: 'cumsum', grad: [0], make: (r) => [r.randn([3, 4, 5])],
    run: (k, [x]) => k.cumsum(x!, d), reference: ([x]) => R.cumsum(x!, d),
  })),
  ...one({
    name: 'cumsum transposed', op: 'cumsum', grad: [0], make: (r) => [r.transposed([4, 5])],
    run: (k, [x]) => k.cumsum(x!, 1), reference: ([x]) => R.cumsum(x!, 1),
  }),
  ...one({
    name: 'cumsum int32', op: 'cumsum', grad: [], outDType: 'int32', make: (r) => [r.index(-9, 10, [3, 5])],
    run: (k, [x]) => k.cumsum(x!, 1), reference: ([x]) => R.cumsum(x!, 1),
  }),

  // -- movement (views and copies) --
  ...one({
    name: 'reshape infer -1', op: 'reshape', grad: [0], make: (r) => [r.randn([2, 3, 4])],
    run: (k, [x]) => k.reshape(x!, [4, -1]), reference: ([x]) => R.reshape(x!, [4, -1]),
  }),
  ...one({
    name: 'reshape of transposed (copy)', op: 'reshape', grad: [0], make: (r) => [r.transposed([3, 4])],
    run: (k, [x]) => k.reshape(x!, [2, 6]), reference: ([x]) => R.reshape(x!, [2, 6]),
  }),
  ...one({
    name: 'view', op: 'view', grad: [0], make: (r) => [r.randn([2, 6])],
    run: (_k, [x]) => x!.view(3, 2, 2), reference: ([x]) => R.reshape(x!, [3, 2, 2]),
  }),
  ...one({
    name: 'flatten(1)', op: 'flatten', grad: [0], make: (r) => [r.randn([2, 3, 4])],
    run: (k, [x]) => k.flatten(x!, 1), reference: ([x]) => R.reshape(x!, [2, 12]),
  }),
  ...one({
    name: 'permute', op: 'permute', grad: [0], make: (r) => [r.randn([2, 3, 4])],
    run: (k, [x]) => k.permute(x!, [2, 0, 1]), reference: ([x]) => R.permute(x!, [2, 0, 1]),
  }),
  ...one({
    name: 'transpose(0, 2)', op: 'transpose', grad: [0], make: (r) => [r.randn([2, 3, 4])],
    run: (k, [x]) => k.transpose(x!, 0, 2), reference: ([x]) => R.transpose(x!, 0, 2),
  }),
  ...one({
    name: 'mT and contiguous', op: 'contiguous', grad: [0], make: (r) => [r.randn([2, 3, 4])],
    run: (k, [x]) => k.contiguous(x!.mT), reference: ([x]) => R.transpose(x!, -2, -1),
  }),
  ...one({
    name: 'expand', op: 'expand', grad: [0], make: (r) => [r.randn([3, 1])],
    run: (k, [x]) => k.expand(x!, [2, 3, 4]), reference: ([x]) => R.expandTo(x!, [2, 3, 4]),
  }),
  ...one({
    name: 'slice step 2', op: 'slice', grad: [0], make: (r) => [r.randn([4, 7])],
    run: (k, [x]) => k.slice(x!, 1, 1, 6, 2), reference: ([x]) => R.sliceDim(x!, 1, 1, 6, 2),
  }),
  ...one({
    name: 'slice negative start', op: 'slice', grad: [0], make: (r) => [r.randn([5, 3])],
    run: (k, [x]) => k.slice(x!, 0, -3), reference: ([x]) => R.sliceDim(x!, 0, -3),
  }),
  ...one({
    name: 'narrow', op: 'narrow', grad: [0], make: (r) => [r.transposed([5, 4])],
    run: (k, [x]) => k.narrow(x!, 1, 1, 2), reference: ([x]) => R.sliceDim(x!, 1, 1, 3),
  }),
  ...one({
    name: 'select', op: 'select', grad: [0], make: (r) => [r.randn([3, 4, 2])],
    run: (k, [x]) => k.select(x!, 1, -1), reference: ([x]) => R.reshape(R.sliceDim(x!, 1, 3, 4), [3, 2]),
  }),
  ...one({
    name: 'squeeze / unsqueeze', op: 'squeeze', grad: [0], make: (r) => [r.randn([3, 1, 4])],
    run: (k, [x]) => k.unsqueeze(k.squeeze(x!, 1), 0), reference: ([x]) => R.reshape(x!, [1, 3, 4]),
  }),
  ...one({
    name: 'pad last two dims', op: 'pad', grad: [0], make: (r) => [r.randn([2, 3, 4])],
    run: (k, [x]) => k.pad(x!, [1, 2, 0, 1], 0.5), reference: ([x]) => R.pad(x!, [1, 2, 0, 1], 0.5),
  }),
  ...one({
    name: 'pad negative crops', op: 'pad', grad: [0], make: (r) => [r.transposed([3, 5])],
    run: (k, [x]) => k.pad(x!, [-1, 2]), reference: ([x]) => R.pad(x!, [-1, 2]),
  }),

  // -- linear algebra --
  ...(
    [
      ['2-D', [3, 4], [4, 5]],
      ['batched', [2, 3, 4], [2, 4, 5]],
      ['broadcast batch', [2, 1, 3, 4], [3, 4, 2]],
      ['1-D @ 2-D', [4], [4, 5]],
      ['2-D @ 1-D', [3, 4], [4]],
      ['1-D @ 1-D', [4], [4]],
      ['1-D @ batched', [4], [2, 4, 3]],
      ['batched @ 1-D', [2, 3, 4], [4]],
      ['2-D @ batched', [3, 4], [2, 4, 5]],
    ] as const
  ).map(([label, sa, sb]): OpCase => ({
    name: `matmul ${label}`, op: 'matmul', grad: [0, 1], make: (r) => [r.randn(sa), r.randn(sb)],
    run: (k, [a, b]) => k.matmul(a!, b!), reference: ([a, b]) => R.matmul(a!, b!),
  })),
  ...one({
    name: 'matmul transposed operands', op: 'matmul', grad: [0, 1], make: (r) => [r.transposed([3, 4]), r.transposed([4, 5])],
    run: (k, [a, b]) => k.matmul(a!, b!), reference: ([a, b]) => R.matmul(a!, b!),
  }),
  ...one({
    name: 'matmul strided and expanded batch', op: 'matmul', grad: [0, 1], make: (r) => [r.strided([2, 3, 4], 2), r.expanded([2, 4, 3], 0)],
    run: (k, [a, b]) => k.matmul(a!, b!), reference: ([a, b]) => R.matmul(a!, b!),
  }),
  ...one({
    name: 'matmul long k=300', op: 'matmul', grad: [], tol: LONG_REDUCTION, make: (r) => [r.randn([5, 300]), r.randn([300, 9])],
    run: (k, [a, b]) => k.matmul(a!, b!), reference: ([a, b]) => R.matmul(a!, b!),
  }),
  ...one({
    name: 'matmul int32', op: 'matmul', grad: [], outDType: 'int32', make: (r) => [r.index(-50, 50, [6, 5]), r.index(-50, 50, [5, 6])],
    run: (k, [a, b]) => k.matmul(a!, b!), reference: ([a, b]) => R.matmul(a!, b!),
  }),
  ...one({
    name: 'matmul int32 batched, bias epilogue', op: 'matmul', grad: [], outDType: 'int32',
    make: (r) => [r.index(-50, 50, [2, 6, 5]), r.index(-50, 50, [5, 9]), r.index(-50, 50, [9])],
    run: (k, [a, b, c]) => k.matmul(a!, b!).add(c!), reference: ([a, b, c]) => R.zipN([R.matmul(a!, b!), c!], (x, y) => x + y),
  }),
  ...one({
    name: 'linear with bias', op: 'linear', grad: [0, 1, 2], make: (r) => [r.randn([5, 4]), r.randn([3, 4]), r.randn([3])],
    run: (k, [x, w, b]) => k.linear(x!, w!, b!), reference: ([x, w, b]) => R.linear(x!, w!, b!),
  }),
  ...one({
    name: 'linear 3-D input, no bias, transposed weight', op: 'linear', grad: [0, 1], make: (r) => [r.randn([2, 3, 4]), r.transposed([5, 4])],
    run: (k, [x, w]) => k.linear(x!, w!), reference: ([x, w]) => R.linear(x!, w!),
  }),

  // -- windows --
  ...(
    [
      ['basic + bias', [2, 3, 5, 5], [4, 3, 3, 3], true, {}],
      ['stride 2', [1, 2, 7, 6], [3, 2, 3, 3], false, { stride: 2 }],
      ['padding 1', [1, 2, 4, 5], [3, 2, 3, 3], true, { padding: 1 }],
      ['dilation 2', [1, 2, 7, 7], [2, 2, 3, 3], false, { dilation: 2 }],
      ['groups 2', [1, 4, 5, 5], [6, 2, 3, 3], true, { groups: 2 }],
      ['depthwise groups=C', [1, 3, 5, 4], [3, 1, 2, 2], true, { groups: 3 }],
      ['rect kernel, pair stride/padding', [1, 2, 6, 7], [3, 2, 2, 3], true, { stride: [1, 2], padding: [1, 0] }],
      ['all options', [2, 4, 7, 6], [4, 2, 3, 2], true, { stride: [2, 1], padding: [1, 2], dilation: [1, 2], groups: 2 }],
    ] as const
  ).map(([label, xs, ws, bias, opts]): OpCase => ({
    name: `conv2d ${label}`, op: 'conv2d', grad: bias ? [0, 1, 2] : [0, 1],
    make: (r) => [r.randn(xs), r.randn(ws), ...(bias ? [r.randn([ws[0]])] : [])],
    run: (k, [x, w, b]) => k.conv2d(x!, w!, b ?? null, opts),
    reference: ([x, w, b]) => R.conv2d(x!, w!, b, opts),
  })),
  ...one({
    name: 'conv2d channels-last input (permuted view)', op: 'conv2d', grad: [0, 1],
    make: (r) => [r.permuted([2, 3, 5, 4], [0, 3, 1, 2]), r.transposed([2, 3, 3, 3])],
    run: (k, [x, w]) => k.conv2d(x!, w!, null, { padding: 1 }), reference: ([x, w]) => R.conv2d(x!, w!, undefined, { padding: 1 }),
  }),
  ...(
    [
      ['k2', [2, 2, 6, 6], 2, {}],
      ['k3 s2 p1', [1, 3, 7, 7], 3, { stride: 2, padding: 1 }],
      ['rect k, pair stride', [1, 2, 6, 7], [2, 3], { stride: [2, 1] }],
      ['dilation 2', [1, 2, 7, 7], 2, { stride: 1, dilation: 2 }],
    ] as const
  ).map(([label, xs, kern, opts]): OpCase => ({
    name: `maxPool2d ${label}`, op: 'maxPool2d', grad: [0], make: (r) => [r.distinct(xs)],
    run: (k, [x]) => k.maxPool2d(x!, kern, opts), reference: ([x]) => R.maxPool2d(x!, kern, opts),
  })),
  ...one({
    name: 'maxPool2d transposed input', op: 'maxPool2d', grad: [0], make: (r) => [r.transposed([1, 2, 4, 6], distinct)],
    run: (k, [x]) => k.maxPool2d(x!, 2), reference: ([x]) => R.maxPool2d(x!, 2),
  }),
  ...(
    [
      ['k2', [2, 2, 6, 6], 2, {}],
      ['k3 s1 p1 (count_include_pad)', [1, 2, 5, 5], 3, { stride: 1, padding: 1 }],
      ['rect k, pair stride', [1, 2, 6, 7], [3, 2], { stride: [2, 1] }],
    ] as const
  ).map(([label, xs, kern, opts]): OpCase => ({
    name: `avgPool2d ${label}`, op: 'avgPool2d', grad: [0], make: (r) => [r.randn(xs)],
    run: (k, [x]) => k.avgPool2d(x!, kern, opts), reference: ([x]) => R.avgPool2d(x!, kern, opts),
  })),
  ...(
    [
      ['k3 s2 p1 ceil', [1, 2, 8, 9], 3, { stride: 2, padding: 1, ceilMode: true }],
      ['k3 s2 p1 ceil, exclude pad', [1, 2, 8, 9], 3, { stride: 2, padding: 1, ceilMode: true, countIncludePad: false }],
      ['k2 divisorOverride 3', [1, 2, 4, 5], 2, { divisorOverride: 3 }],
    ] as const
  ).map(([label, xs, kern, opts]): OpCase => ({
    name: `avgPool2d ${label}`, op: 'avgPool2d', grad: [0], make: (r) => [r.randn(xs)],
    run: (k, [x]) => k.avgPool2d(x!, kern, opts), reference: ([x]) => RL.pool2d('avg', x!, kern, opts),
  })),
  ...one({
    name: 'maxPool2d k3 s2 p1 ceil', op: 'maxPool2d', grad: [0], make: (r) => [r.distinct([1, 2, 8, 9])],
    run: (k, [x]) => k.maxPool2d(x!, 3, { stride: 2, padding: 1, ceilMode: true }), reference: ([x]) => RL.pool2d('max', x!, 3, { stride: 2, padding: 1, ceilMode: true }),
  }),
  ...(
    [
      ['groups 2 stride 2 padding 1', [2, 4, 9], [6, 2, 3], { stride: 2, padding: 1, groups: 2 }],
      ["'same' even kernel, dilation 2", [1, 3, 8], [2, 3, 4], { padding: 'same', dilation: 2 }],
    ] as const
  ).map(([label, xs, ws, opts]): OpCase => ({
    name: `conv1d ${label}`, op: 'conv1d', grad: [0, 1, 2], make: (r) => [r.randn(xs), r.randn(ws), r.randn([ws[0]])],
    run: (k, [x, w, b]) => k.conv1d(x!, w!, b!, opts), reference: ([x, w, b]) => RL.conv1d(x!, w!, b, opts),
  })),
  ...one({
    name: "conv2d padding 'same' even kernel [2, 4]", op: 'conv2d', grad: [0, 1], make: (r) => [r.randn([1, 2, 5, 6]), r.randn([3, 2, 2, 4])],
    run: (k, [x, w]) => k.conv2d(x!, w!, null, { padding: 'same' }), reference: ([x, w]) => RL.conv2d(x!, w!, undefined, { padding: 'same' }),
  }),
  ...(
    [
      ['stride 2 padding 1 outputPadding 1 groups 2 + bias', [2, 4, 3, 4], [4, 3, 3, 3], { stride: 2, padding: 1, outputPadding: 1, groups: 2 }],
      ['rect kernel, dilation [1, 2], stride [2, 1]', [1, 3, 4, 3], [3, 2, 2, 3], { stride: [2, 1], padding: [0, 1], dilation: [1, 2] }],
    ] as const
  ).map(([label, xs, ws, opts]): OpCase => ({
    name: `convTranspose2d ${label}`, op: 'convTranspose2d', grad: [0, 1, 2], make: (r) => [r.randn(xs), r.randn(ws), r.randn([ws[1] * ((opts as { groups?: number }).groups ?? 1)])],
    run: (k, [x, w, b]) => k.convTranspose2d(x!, w!, b!, opts), reference: ([x, w, b]) => RL.convTranspose2d(x!, w!, b, opts),
  })),
  ...one({
    name: 'adaptiveAvgPool2d [7, 11] -> [3, 5] (uneven windows)', op: 'adaptiveAvgPool2d', grad: [0], make: (r) => [r.randn([2, 2, 7, 11])],
    run: (k, [x]) => k.adaptiveAvgPool2d(x!, [3, 5]), reference: ([x]) => RL.adaptivePool('avg', x!, [3, 5]),
  }),
  ...one({
    name: 'adaptiveAvgPool2d [6, 8] -> [3, 2] (even windows)', op: 'adaptiveAvgPool2d', grad: [0], make: (r) => [r.randn([1, 3, 6, 8])],
    run: (k, [x]) => k.adaptiveAvgPool2d(x!, [3, 2]), reference: ([x]) => RL.adaptivePool('avg', x!, [3, 2]),
  }),
  ...one({
    name: 'adaptiveMaxPool2d [7, 9] -> [3, 4]', op: 'adaptiveMaxPool2d', grad: [0], make: (r) => [r.distinct([1, 2, 7, 9])],
    run: (k, [x]) => k.adaptiveMaxPool2d(x!, [3, 4]), reference: ([x]) => RL.adaptivePool('max', x!, [3, 4]),
  }),
  ...one({
    name: 'adaptiveAvgPool1d 10 -> 4', op: 'adaptiveAvgPool1d', grad: [0], make: (r) => [r.randn([2, 3, 10])],
    run: (k, [x]) => k.adaptiveAvgPool1d(x!, 4), reference: ([x]) => RL.adaptivePool('avg', x!, [4]),
  }),
  ...one({
    name: 'groupNorm 3 groups of [2, 6, 4, 5], affine', op: 'groupNorm', grad: [0, 1, 2], make: (r) => [r.randn([2, 6, 4, 5]), r.randn([6]), r.randn([6])],
    run: (k, [x, w, b]) => k.groupNorm(x!, 3, w!, b!), reference: ([x, w, b]) => RL.groupNorm(x!, 3, w, b),
  }),
  ...one({
    name: 'rmsNorm over the last dim, weight, eps 1e-6', op: 'rmsNorm', grad: [0, 1], make: (r) => [r.randn([3, 4, 6]), r.randn([6])],
    run: (k, [x, w]) => k.rmsNorm(x!, [6], w!, 1e-6), reference: ([x, w]) => RL.rmsNorm(x!, 6, w, 1e-6),
  }),
  ...(
    [
      ['nearest [4, 6] -> [7, 5]', [2, 2, 4, 6], [7, 5], 'nearest', false],
      ['bilinear [4, 6] -> [7, 9]', [1, 3, 4, 6], [7, 9], 'bilinear', false],
      ['bilinear alignCorners [4, 6] -> [7, 9]', [1, 2, 4, 6], [7, 9], 'bilinear', true],
      ['bilinear down [9, 7] -> [5, 4]', [1, 2, 9, 7], [5, 4], 'bilinear', false],
    ] as const
  ).map(([label, xs, size, mode, alignCorners]): OpCase => ({
    name: `interpolate ${label}`, op: 'interpolate', grad: [0], make: (r) => [r.randn(xs)],
    run: (k, [x]) => k.interpolate(x!, { size, mode, alignCorners: mode === 'bilinear' ? alignCorners : null }),
    reference: ([x]) => RL.interpolate2d(x!, size, mode, alignCorners),
  })),

  // -- indexing --
  ...one({
    name: 'gather dim=1', op: 'gather', grad: [0], make: (r) => [r.randn([3, 5]), r.index(0, 5, [3, 4])],
    run: (k, [x, i]) => k.gather(x!, 1, i!), reference: ([x, i]) => R.gather(x!, 1, i!),
  }),
  ...one({
    name: 'gather dim=0, index smaller than input', op: 'gather', grad: [0], make: (r) => [r.randn([4, 5]), r.index(0, 4, [6, 3])],
    run: (k, [x, i]) => k.gather(x!, 0, i!), reference: ([x, i]) => R.gather(x!, 0, i!),
  }),
  ...one({
    name: 'gather dim=-1 3-D transposed input', op: 'gather', grad: [0], make: (r) => [r.transposed([2, 3, 4]), r.index(0, 4, [2, 3, 2])],
    run: (k, [x, i]) => k.gather(x!, -1, i!), reference: ([x, i]) => R.gather(x!, 2, i!),
  }),
  ...one({
    name: 'indexSelect dim=0 repeats', op: 'indexSelect', grad: [0], make: (r) => [r.randn([5, 3]), r.index(0, 5, [7])],
    run: (k, [x, i]) => k.indexSelect(x!, 0, i!), reference: ([x, i]) => R.indexSelect(x!, 0, i!),
  }),
  ...one({
    name: 'indexSelect dim=1 non-contiguous input', op: 'indexSelect', grad: [0], make: (r) => [r.strided([3, 5, 2], 1), r.index(0, 5, [6])],
    run: (k, [x, i]) => k.indexSelect(x!, 1, i!), reference: ([x, i]) => R.indexSelect(x!, 1, i!),
  }),
  ...one({
    name: 'indexSelect strided index', op: 'indexSelect', grad: [0], make: (r) => [r.randn([4, 3]), r.index(0, 4, [9]).slice(0, 0, undefined, 2)],
    run: (k, [x, i]) => k.indexSelect(x!, 0, i!), reference: ([x, i]) => R.indexSelect(x!, 0, i!),
  }),
  ...one({
    name: 'embedding 2-D indices', op: 'embedding', grad: [1], make: (r) => [r.index(0, 6, [2, 3]), r.randn([6, 4])],
    run: (k, [i, w]) => k.embedding(i!, w!), reference: ([i, w]) => R.embedding(i!, w!),
  }),
  ...one({
    name: 'scatterAdd dim=0 duplicates', op: 'scatterAdd', grad: [0, 2], make: (r) => [r.randn([4, 5]), r.index(0, 4, [3, 5]), r.randn([3, 5])],
    run: (k, [s, i, src]) => k.scatterAdd(s!, 0, i!, src!), reference: ([s, i, src]) => R.scatterAdd(s!, 0, i!, src!),
  }),
  ...one({
    name: 'scatterAdd dim=1 transposed self', op: 'scatterAdd', grad: [0, 2], make: (r) => [r.transposed([3, 4]), r.index(0, 4, [3, 6]), r.randn([3, 6])],
    run: (k, [s, i, src]) => k.scatterAdd(s!, 1, i!, src!), reference: ([s, i, src]) => R.scatterAdd(s!, 1, i!, src!),
  }),
  ...one({
    name: 'cat dim=0 three inputs', op: 'cat', grad: [0, 1, 2], make: (r) => [r.randn([2, 3]), r.randn([4, 3]), r.randn([1, 3])],
    run: (k, xs) => k.cat([...xs], 0), reference: (xs) => R.cat(xs, 0),
  }),
  ...one({
    name: 'cat dim=-1 non-contiguous', op: 'cat', grad: [0, 1], make: (r) => [r.transposed([2, 3]), r.strided([2, 2], 1)],
    run: (k, xs) => k.cat([...xs], -1), reference: (xs) => R.cat(xs, 1),
  }),
  ...([0, 1, -1] as const).map((d): OpCase => ({
    name: `stack dim=${d}`, op: 'stack', grad: [0, 1, 2], make: (r) => [r.randn([2, 3]), r.transposed([2, 3]), r.randn([2, 3])],
    run: (k, xs) => k.stack([...xs], d), reference: (xs) => R.stack(xs, d),
  })),
  ...one({
    name: 'split size 3 dim=0', op: 'split', grad: [0], make: (r) => [r.randn([7, 3])],
    run: (k, [x]) => k.split(x!, 3, 0), reference: ([x]) => R.split(x!, 3, 0),
  }),
  ...one({
    name: 'split sections dim=1', op: 'split', grad: [0], make: (r) => [r.transposed([2, 5])],
    run: (k, [x]) => k.split(x!, [1, 3, 1], 1), reference: ([x]) => R.split(x!, [1, 3, 1], 1),
  }),
  ...one({
    name: 'chunk 3 uneven', op: 'chunk', grad: [0], make: (r) => [r.randn([3, 7])],
    run: (k, [x]) => k.chunk(x!, 3, 1), reference: ([x]) => R.chunk(x!, 3, 1),
  }),
  ...one({
    name: 'chunk 2 dim=0', op: 'chunk', grad: [0], make: (r) => [r.randn([4, 3])],
    run: (k, [x]) => k.chunk(x!, 2), reference: ([x]) => R.chunk(x!, 2, 0),
  }),
  ...([-1, 0, 1] as const).flatMap((d): OpCase[] => [
    { name: `triu diagonal=${d}`, op: 'triu', grad: [0], make: (r) => [r.randn([4, 5])], run: (k, [x]) => k.triu(x!, d), reference: ([x]) => R.triangle(x!, d, true) },
    { name: `tril diagonal=${d}`, op: 'tril', grad: [0], make: (r) => [r.randn([5, 4])], run: (k, [x]) => k.tril(x!, d), reference: ([x]) => R.triangle(x!, d, false) },
  ]),
  ...one({
    name: 'triu batched transposed', op: 'triu', grad: [0], make: (r) => [r.transposed([2, 3, 4])],
    run: (k, [x]) => k.triu(x!), reference: ([x]) => R.triangle(x!, 0, true),
  }),
  ...one({
    name: 'oneHot numClasses=6', op: 'oneHot', grad: [], outDType: 'int32', make: (r) => [r.index(0, 6, [5])],
    run: (k, [i]) => k.oneHot(i!, 6), reference: ([i]) => R.oneHot(i!, 6),
  }),
  ...one({
    name: 'oneHot inferred classes 2-D', op: 'oneHot', grad: [], outDType: 'int32', make: (r) => [r.index(0, 4, [2, 3])],
    run: (k, [i]) => k.oneHot(i!), reference: ([i]) => R.oneHot(i!),
  }),

  ...one({
    name: 'scatterAdd src larger than index', op: 'scatterAdd', grad: [0, 2], make: (r) => [r.randn([4, 5]), r.index(0, 5, [2, 3]), r.randn([3, 4])],
    run: (k, [s, i, src]) => k.scatterAdd(s!, 1, i!, src!), reference: ([s, i, src]) => R.scatterAdd(s!, 1, i!, src!),
  }),
  // -- edge cases: empty tensors, integer / bool reductions, 1-D and 0-d operands --
  ...one({
    name: 'sum over an empty dim', op: 'sum', grad: [0], make: (r) => [r.randn([0, 3])],
    run: (k, [x]) => k.sum(x!, 0), reference: ([x]) => R.sum(x!, 0),
  }),
  ...one({
    name: 'matmul k=0', op: 'matmul', grad: [0, 1], make: (r) => [r.randn([3, 0]), r.randn([0, 2])],
    run: (k, [a, b]) => k.matmul(a!, b!), reference: ([a, b]) => R.matmul(a!, b!),
  }),
  ...one({
    name: 'cat with an empty piece', op: 'cat', grad: [0, 1, 2], make: (r) => [r.randn([2, 3]), r.randn([0, 3]), r.randn([1, 3])],
    run: (k, xs) => k.cat([...xs], 0), reference: (xs) => R.cat(xs, 0),
  }),
  ...one({
    name: 'sum int32 -> int32', op: 'sum', grad: [], outDType: 'int32', make: (r) => [r.index(-100, 100, [3, 5])],
    run: (k, [x]) => k.sum(x!, 1), reference: ([x]) => R.sum(x!, 1),
  }),
  ...one({
    name: 'sum bool -> int32', op: 'sum', grad: [], outDType: 'int32', make: (r) => [r.mask([4, 6])],
    run: (k, [x]) => k.sum(x!, -1), reference: ([x]) => R.sum(x!, -1),
  }),
  ...one({
    name: 'mean int32 -> float32', op: 'mean', grad: [], outDType: 'float32', make: (r) => [r.index(-100, 100, [3, 5])],
    run: (k, [x]) => k.mean(x!, 0), reference: ([x]) => R.mean(x!, 0),
  }),
  ...one({
    name: 'max int32', op: 'max', grad: [], outDType: 'int32', make: (r) => [r.index(-100, 100, [3, 5])],
    run: (k, [x]) => k.max(x!, 1, true).values, reference: ([x]) => R.amax(x!, 1, true),
  }),
  ...one({
    name: 'linear 1-D input', op: 'linear', grad: [0, 1, 2], make: (r) => [r.randn([4]), r.randn([3, 4]), r.randn([3])],
    run: (k, [x, w, b]) => k.linear(x!, w!, b!), reference: ([x, w, b]) => R.linear(x!, w!, b!),
  }),
  ...one({
    name: 'where int32 / float promotion', op: 'where', grad: [2], make: (r) => [r.mask([3, 4]), r.index(-5, 5, [3, 4]), r.randn([4])],
    run: (k, [c, a, b]) => k.where(c!, a!, b!), reference: ([c, a, b]) => R.zipN([c!, a!, b!], (q, x, y) => (T(q) ? x : y)),
  }),
  ...one({
    name: 'expand with -1', op: 'expand', grad: [0], make: (r) => [r.randn([3, 1])],
    run: (k, [x]) => k.expand(x!, [2, -1, 4]), reference: ([x]) => R.expandTo(x!, [2, 3, 4]),
  }),
  ...one({
    name: 'stack non-contiguous', op: 'stack', grad: [0, 1], make: (r) => [r.strided([3, 2], 0), r.expanded([3, 2], 1)],
    run: (k, xs) => k.stack([...xs], 1), reference: (xs) => R.stack(xs, 1),
  }),
  ...one({
    name: 'avgPool2d k3 s2 p1', op: 'avgPool2d', grad: [0], make: (r) => [r.randn([2, 2, 6, 5])],
    run: (k, [x]) => k.avgPool2d(x!, 3, { stride: 2, padding: 1 }), reference: ([x]) => R.avgPool2d(x!, 3, { stride: 2, padding: 1 }),
  }),
  // -- nn functional --
  ...one({
    name: 'dropout p=0 is identity', op: 'dropout', grad: [0], make: (r) => [r.randn([3, 4])],
    run: (k, [x]) => k.dropout(x!, 0), reference: ([x]) => x!,
  }),
  ...one({
    name: 'dropout eval is identity', op: 'dropout', grad: [0], make: (r) => [r.transposed([3, 4])],
    run: (k, [x]) => k.dropout(x!, 0.5, false), reference: ([x]) => x!,
  }),
  ...one({
    name: 'layerNorm [5] affine', op: 'layerNorm', grad: [0, 1, 2], make: (r) => [r.randn([3, 4, 5]), r.randn([5]), r.randn([5])],
    run: (k, [x, w, b]) => k.layerNorm(x!, [5], w!, b!), reference: ([x, w, b]) => R.layerNorm(x!, [5], w!, b!),
  }),
  ...one({
    name: 'layerNorm [4,5] no affine, transposed input', op: 'layerNorm', grad: [0], make: (r) => [r.transposed([2, 4, 5])],
    run: (k, [x]) => k.layerNorm(x!, [4, 5]), reference: ([x]) => R.layerNorm(x!, [4, 5]),
  }),
  ...one({
    name: 'batchNorm train 4-D affine', op: 'batchNorm', grad: [0, 1, 2], make: (r) => [r.randn([4, 3, 2, 2]), r.randn([3]), r.randn([3])],
    run: (k, [x, w, b]) => k.batchNorm(x!, { weight: w, bias: b, training: true }).output,
    reference: ([x, w, b]) => R.batchNorm(x!, { weight: w, bias: b, training: true }).output,
  }),
  ...one({
    name: 'batchNorm train 2-D no affine', op: 'batchNorm', grad: [0], make: (r) => [r.transposed([6, 3])],
    run: (k, [x]) => k.batchNorm(x!, { training: true }).output, reference: ([x]) => R.batchNorm(x!, { training: true }).output,
  }),
  ...one({
    name: 'batchNorm train running stats', op: 'batchNorm', grad: [], make: (r) => [r.randn([5, 3, 2]), r.randn([3]), r.uniform([3], 0.5, 2)],
    run: (k, [x, m, v]) => {
      const o = k.batchNorm(x!, { runningMean: m, runningVar: v, training: true, momentum: 0.2 });
      return [o.output, o.runningMean!, o.runningVar!];
    },
    reference: ([x, m, v]) => {
      const o = R.batchNorm(x!, { runningMean: m, runningVar: v, training: true, momentum: 0.2 });
      return [o.output, o.runningMean!, o.runningVar!];
    },
  }),
  ...one({
    name: 'batchNorm eval', op: 'batchNorm', grad: [0, 1, 2, 3, 4],
    make: (r) => [r.randn([4, 3, 2, 2]), r.randn([3]), r.uniform([3], 0.5, 2), r.randn([3]), r.randn([3])],
    run: (k, [x, m, v, w, b]) => k.batchNorm(x!, { runningMean: m, runningVar: v, weight: w, bias: b, training: false }).output,
    reference: ([x, m, v, w, b]) => R.batchNorm(x!, { runningMean: m, runningVar: v, weight: w, bias: b, training: false }).output,
  }),
  ...(
    [
      ['mean', {}],
      ['sum', { reduction: 'sum' }],
      ['none', { reduction: 'none' }],
      ['labelSmoothing 0.1', { labelSmoothing: 0.1 }],
    ] as const
  ).map(([label, opts]): OpCase => ({
    name: `crossEntropy ${label}`, op: 'crossEntropy', grad: [0], make: (r) => [r.randn([5, 4], 2), r.index(0, 4, [5])],
    run: (k, [x, t]) => k.crossEntropy(x!, t!, opts), reference: ([x, t]) => R.crossEntropy(x!, t!, opts),
  })),
  ...one({
    name: 'crossEntropy class weights', op: 'crossEntropy', grad: [0, 2], make: (r) => [r.randn([6, 4]), r.index(0, 4, [6]), r.uniform([4], 0.2, 2)],
    run: (k, [x, t, w]) => k.crossEntropy(x!, t!, { weight: w }), reference: ([x, t, w]) => R.crossEntropy(x!, t!, { weight: w }),
  }),
  ...one({
    name: 'crossEntropy ignoreIndex', op: 'crossEntropy', grad: [0], make: (r) => [r.randn([8, 3]), ignoreSome(r, 3, [8])],
    run: (k, [x, t]) => k.crossEntropy(x!, t!, { ignoreIndex: -100 }), reference: ([x, t]) => R.crossEntropy(x!, t!, { ignoreIndex: -100 }),
  }),
  ...one({
    name: 'crossEntropy labelSmoothing + ignoreIndex', op: 'crossEntropy', grad: [0], make: (r) => [r.randn([8, 3]), ignoreSome(r, 3, [8])],
    run: (k, [x, t]) => k.crossEntropy(x!, t!, { ignoreIndex: -100, labelSmoothing: 0.2 }),
    reference: ([x, t]) => R.crossEntropy(x!, t!, { ignoreIndex: -100, labelSmoothing: 0.2 }),
  }),
  ...one({
    name: 'crossEntropy labelSmoothing + weights', op: 'crossEntropy', grad: [0, 2], make: (r) => [r.randn([6, 4]), r.index(0, 4, [6]), r.uniform([4], 0.2, 2)],
    run: (k, [x, t, w]) => k.crossEntropy(x!, t!, { weight: w, labelSmoothing: 0.3 }),
    reference: ([x, t, w]) => R.crossEntropy(x!, t!, { weight: w, labelSmoothing: 0.3 }),
  }),
  ...one({
    name: 'crossEntropy spatial [N,C,d]', op: 'crossEntropy', grad: [0], make: (r) => [r.randn([2, 4, 3]), r.index(0, 4, [2, 3])],
    run: (k, [x, t]) => k.crossEntropy(x!, t!), reference: ([x, t]) => R.crossEntropy(x!, t!),
  }),
  ...one({
    name: 'crossEntropy transposed logits', op: 'crossEntropy', grad: [0], make: (r) => [r.transposed([5, 4]), r.index(0, 4, [5])],
    run: (k, [x, t]) => k.crossEntropy(x!, t!), reference: ([x, t]) => R.crossEntropy(x!, t!),
  }),
  ...one({
    name: 'crossEntropy 1-D logits, 0-d target', op: 'crossEntropy', grad: [0], make: (r) => [r.randn([5]), r.index(0, 5, [])],
    run: (k, [x, t]) => k.crossEntropy(x!, t!), reference: ([x, t]) => R.crossEntropy(x!, t!),
  }),
  ...one({
    name: 'crossEntropy spatial, labelSmoothing + weights + ignoreIndex, sum', op: 'crossEntropy', grad: [0, 2],
    make: (r) => [r.randn([2, 4, 3]), ignoreSome(r, 4, [2, 3]), r.uniform([4], 0.2, 2)],
    run: (k, [x, t, w]) => k.crossEntropy(x!, t!, { weight: w, labelSmoothing: 0.2, reduction: 'sum' }),
    reference: ([x, t, w]) => R.crossEntropy(x!, t!, { weight: w, labelSmoothing: 0.2, reduction: 'sum' }),
  }),
  ...one({
    name: 'crossEntropy labelSmoothing + ignoreIndex, none', op: 'crossEntropy', grad: [0],
    make: (r) => [r.randn([6, 3]), ignoreSome(r, 3, [6])],
    run: (k, [x, t]) => k.crossEntropy(x!, t!, { labelSmoothing: 0.1, reduction: 'none' }),
    reference: ([x, t]) => R.crossEntropy(x!, t!, { labelSmoothing: 0.1, reduction: 'none' }),
  }),
  ...one({
    name: 'nllLoss spatial [N,C,d1,d2]', op: 'nllLoss', grad: [0], make: (r) => [r.randn([2, 3, 2, 2]), r.index(0, 3, [2, 2, 2])],
    run: (k, [x, t]) => k.nllLoss(x!, t!), reference: ([x, t]) => R.nllLoss(x!, t!),
  }),
  ...one({
    name: 'layerNorm eps=0.1', op: 'layerNorm', grad: [0, 1], make: (r) => [r.randn([3, 4]), r.randn([4])],
    run: (k, [x, w]) => k.layerNorm(x!, [4], w!, null, 0.1), reference: ([x, w]) => R.layerNorm(x!, [4], w!, undefined, 0.1),
  }),
  ...one({
    name: 'batchNorm eval no affine', op: 'batchNorm', grad: [0], make: (r) => [r.randn([3, 2, 4]), r.randn([2]), r.uniform([2], 0.5, 2)],
    run: (k, [x, m, v]) => k.batchNorm(x!, { runningMean: m, runningVar: v, training: false, eps: 1e-3 }).output,
    reference: ([x, m, v]) => R.batchNorm(x!, { runningMean: m, runningVar: v, training: false, eps: 1e-3 }).output,
  }),
  ...(
    [
      ['mean', {}],
      ['sum', { reduction: 'sum' }],
      ['none', { reduction: 'none' }],
    ] as const
  ).map(([label, opts]): OpCase => ({
    name: `nllLoss ${label}`, op: 'nllLoss', grad: [0], make: (r) => [r.randn([5, 4]), r.index(0, 4, [5])],
    run: (k, [x, t]) => k.nllLoss(x!, t!, opts), reference: ([x, t]) => R.nllLoss(x!, t!, opts),
  })),
  ...one({
    name: 'nllLoss weights + ignoreIndex', op: 'nllLoss', grad: [0, 2], make: (r) => [r.randn([8, 3]), ignoreSome(r, 3, [8], -1), r.uniform([3], 0.2, 2)],
    run: (k, [x, t, w]) => k.nllLoss(x!, t!, { weight: w, ignoreIndex: -1 }), reference: ([x, t, w]) => R.nllLoss(x!, t!, { weight: w, ignoreIndex: -1 }),
  }),
  ...(['mean', 'sum', 'none'] as const).map((red): OpCase => ({
    name: `mseLoss ${red}`, op: 'mseLoss', grad: [0, 1], make: (r) => [r.randn([3, 4]), r.transposed([3, 4])],
    run: (k, [a, b]) => k.mseLoss(a!, b!, { reduction: red }), reference: ([a, b]) => R.mseLoss(a!, b!, red),
  })),
  ...(['mean', 'sum', 'none'] as const).map((red): OpCase => ({
    name: `binaryCrossEntropyWithLogits ${red}`, op: 'binaryCrossEntropyWithLogits', grad: [0, 1],
    make: (r) => [r.away([3, 4], [0], 0.05), r.uniform([3, 4], 0, 1)],
    run: (k, [x, y]) => k.binaryCrossEntropyWithLogits(x!, y!, { reduction: red }), reference: ([x, y]) => R.bceWithLogits(x!, y!, red),
  })),
  ...one({
    name: 'binaryCrossEntropyWithLogits posWeight, large logits', op: 'binaryCrossEntropyWithLogits', grad: [0, 2],
    make: (r) => [r.away([5, 3], [0], 0.05).mul(8), r.mask([5, 3]).float(), r.uniform([3], 0.5, 3)],
    run: (k, [x, y, pw]) => k.binaryCrossEntropyWithLogits(x!, k.cast(y!, x!.dtype), { posWeight: pw }),
    reference: ([x, y, pw]) => R.bceWithLogits(x!, y!, 'mean', pw),
  }),
  ...one({
    name: 'sdpa [2,3,4] x [2,5,4]', op: 'scaledDotProductAttention', grad: [0, 1, 2], make: (r) => [r.randn([2, 3, 4]), r.randn([2, 5, 4]), r.randn([2, 5, 3])],
    run: (k, [q, kk, v]) => k.scaledDotProductAttention(q!, kk!, v!), reference: ([q, kk, v]) => R.sdpa(q!, kk!, v!),
  }),
  ...one({
    name: 'sdpa causal 4-D heads', op: 'scaledDotProductAttention', grad: [0, 1, 2], make: (r) => [r.randn([1, 2, 4, 3]), r.randn([1, 2, 4, 3]), r.randn([1, 2, 4, 3])],
    run: (k, [q, kk, v]) => k.scaledDotProductAttention(q!, kk!, v!, { isCausal: true }), reference: ([q, kk, v]) => R.sdpa(q!, kk!, v!, { causal: true }),
  }),
  ...one({
    name: 'sdpa causal Lq != Lk, transposed k', op: 'scaledDotProductAttention', grad: [0, 1, 2], make: (r) => [r.randn([2, 3, 4]), r.transposed([2, 5, 4]), r.randn([2, 5, 2])],
    run: (k, [q, kk, v]) => k.scaledDotProductAttention(q!, kk!, v!, { isCausal: true }), reference: ([q, kk, v]) => R.sdpa(q!, kk!, v!, { causal: true }),
  }),
  ...one({
    name: 'sdpa bool mask', op: 'scaledDotProductAttention', grad: [0, 1, 2],
    make: (r) => [r.randn([2, 3, 4]), r.randn([2, 5, 4]), r.randn([2, 5, 3]), kiln.scope(() => kiln.logicalOr(r.mask([3, 5]), kiln.eq(kiln.arange(5), 0)))],
    run: (k, [q, kk, v, m]) => k.scaledDotProductAttention(q!, kk!, v!, { attnMask: m }), reference: ([q, kk, v, m]) => R.sdpa(q!, kk!, v!, { mask: m, boolMask: true }),
  }),
  ...one({
    name: 'sdpa float mask + scale', op: 'scaledDotProductAttention', grad: [0, 1, 2, 3], make: (r) => [r.randn([2, 3, 4]), r.randn([2, 5, 4]), r.randn([2, 5, 3]), r.randn([3, 5])],
    run: (k, [q, kk, v, m]) => k.scaledDotProductAttention(q!, kk!, v!, { attnMask: m, scale: 0.3 }), reference: ([q, kk, v, m]) => R.sdpa(q!, kk!, v!, { mask: m, scale: 0.3 }),
  }),
  // the torch API surface of docs/torch-api.md (math, activations, tensor ops, losses)
  ...apiOpCases({ unary, binary, one, N, away0, positive, distinct }),
];

/** int32 class targets in [0, classes) with about a third replaced by `ignore` (at least one kept). */
function ignoreSome(r: Rng, classes: number, shape: Shape, ignore = -100): Tensor {
  return kiln.scope(() => {
    const t = r.index(0, classes, shape);
    const drop = r.mask(shape, 0.35);
    const first = kiln.eq(kiln.arange(R.numel(shape)).reshape([...shape]), 0);
    return kiln.where(kiln.logicalAnd(drop, kiln.logicalNot(first)), ignore, t);
  });
}

/** Ops the table must cover (the issue's list). */
export const REQUIRED_OPS: readonly string[] = [
  'add', 'sub', 'mul', 'div', 'pow', 'neg', 'abs', 'exp', 'log', 'log1p', 'sqrt', 'rsqrt', 'sin', 'cos', 'tanh', 'sigmoid',
  'relu', 'gelu', 'silu', 'softplus', 'clamp', 'where', 'maximum', 'minimum', 'eq', 'ne', 'lt', 'le', 'gt', 'ge',
  'logicalAnd', 'logicalOr', 'logicalXor', 'logicalNot',
  'sum', 'mean', 'max', 'min', 'argmax', 'argmin', 'var', 'std', 'logsumexp', 'softmax', 'logSoftmax', 'cumsum',
  'matmul', 'linear', 'conv2d', 'maxPool2d', 'avgPool2d',
  'gather', 'indexSelect', 'embedding', 'scatterAdd', 'cat', 'stack', 'split', 'chunk', 'triu', 'tril', 'oneHot', 'dropout',
  'layerNorm', 'batchNorm', 'crossEntropy', 'nllLoss', 'mseLoss', 'binaryCrossEntropyWithLogits', 'scaledDotProductAttention',
  ...REQUIRED_API_OPS,
];

/** Pointwise ops: their cases also run on special values (helpers/compiled-op-case.ts, edge pass). */
export const POINTWISE_OPS: ReadonlySet<string> = new Set([
  'add', 'sub', 'mul', 'div', 'pow', 'neg', 'abs', 'exp', 'log', 'log1p', 'sqrt', 'rsqrt', 'sin', 'cos', 'tanh', 'sigmoid',
  'relu', 'gelu', 'silu', 'softplus', 'clone', 'erf', 'clamp', 'where', 'maximum', 'minimum', 'eq', 'ne', 'lt', 'le', 'gt', 'ge',
  'logicalAnd', 'logicalOr', 'logicalXor', 'logicalNot', 'cast',
  'tan', 'atan', 'asin', 'acos', 'sinh', 'cosh', 'log2', 'log10', 'trunc', 'atan2', 'fmod', 'hypot', 'remainder', 'lerp', 'sign',
  'elu', 'selu', 'celu', 'hardtanh', 'relu6', 'hardsigmoid', 'hardswish', 'mish', 'logsigmoid', 'leakyRelu',
]);

// ---- running and checking a case --------------------------------------------------------

export const asList = <T>(x: T | readonly T[]): readonly T[] => (Array.isArray(x) ? (x as readonly T[]) : [x as T]);

/** A tensor's logical values (row-major, through its strides) as a float64 reference array. */
export function toND(t: Tensor): ND {
  return R.nd(t.shape, t.dataSync() as ArrayLike<number>);
}

/** The base seed of this run: KILN_TEST_SEED, else random (printed with every failure). */
export function baseSeed(): number {
  const env = typeof process !== 'undefined' ? process.env.KILN_TEST_SEED : undefined;
  if (env !== undefined && env !== '') return Number(env) >>> 0;
  return Math.floor(Math.random() * 2 ** 31);
}

/** A per-case seed from the base seed and the case name (independent of test order). */
export function caseSeed(base: number, name: string): number {
  let h = 0x811c9dc5 ^ base;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return (h >>> 0) % 2 ** 31;
}

/** Runs fn; a failure is rethrown with the seeds needed to reproduce it. */
export function withSeed<T>(base: number, seed: number, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    const err = e as Error;
    err.message = `${err.message}\n  [case seed ${seed}; reproduce the whole run with KILN_TEST_SEED=${base}]`;
    throw err;
  }
}

/** null when every |actual - expected| <= atol + rtol |expected| (NaN/Inf must match exactly), else a description. */
export function mismatch(actual: ArrayLike<number>, expected: ND, tol: Tol | 'exact'): string | null {
  if (actual.length !== expected.data.length) return `has ${actual.length} elements, expected ${expected.data.length}`;
  let worst = -1;
  let worstExcess = 0;
  let bad = 0;
  for (let i = 0; i < actual.length; i++) {
    const a = Number(actual[i]), e = expected.data[i]!;
    let excess: number;
    if (tol === 'exact' || !Number.isFinite(e)) excess = Object.is(a, e) || (a === e) ? 0 : Infinity;
    else excess = Number.isNaN(a) ? Infinity : Math.abs(a - e) - (tol.atol + tol.rtol * Math.abs(e));
    if (excess > 0) {
      bad++;
      if (excess > worstExcess) {
        worstExcess = excess;
        worst = i;
      }
    }
  }
  if (bad === 0) return null;
  const at = R.unravel(worst, expected.shape);
  const tolText = tol === 'exact' ? 'exact' : `atol ${tol.atol}, rtol ${tol.rtol}`;
  return `${bad} of ${actual.length} elements differ (${tolText}); worst at [${at.join(', ')}]: got ${Number(actual[worst])}, expected ${expected.data[worst]}`;
}

/** Checks output tensors against reference arrays: count, shapes, dtypes and values. */
export function checkOutputs(label: string, outs: readonly Tensor[], refs: readonly ND[], dtype: DType, tol: Tol): void {
  if (outs.length !== refs.length) throw new Error(`${label}: ${outs.length} outputs, reference has ${refs.length}`);
  outs.forEach((o, k) => {
    const which = outs.length > 1 ? `${label} output ${k}` : label;
    if (!(o instanceof kiln.Tensor)) throw new Error(`${which}: not a Tensor`);
    if (o.shape.length !== refs[k]!.shape.length || o.shape.some((s, d) => s !== refs[k]!.shape[d])) {
      throw new Error(`${which}: shape [${o.shape.join(', ')}], expected [${refs[k]!.shape.join(', ')}]`);
    }
    if (o.dtype !== dtype) throw new Error(`${which}: dtype ${o.dtype}, expected ${dtype}`);
    const m = mismatch(o.dataSync() as ArrayLike<number>, refs[k]!, dtype === 'bool' || dtype === 'int32' ? 'exact' : tol);
    if (m) throw new Error(`${which}: ${m}`);
  });
}

/**
 * The forward check of one case in one float dtype: make inputs, run through `k`, compare with
 * the reference, and check that the op left its inputs untouched. Run inside kiln.scope.
 */
export function checkForward(c: OpCase, k: Kiln, dtype: FloatDType, seed: number, tol?: Tol): void {
  const rng = new Rng(seed, dtype);
  const inputs = c.make(rng);
  const before = inputs.map(toND);
  const floats = before.filter((_, i) => inputs[i]!.dtype === dtype).flatMap((x) => Array.from(x.data));
  if (floats.length > 1 && floats.every((v) => v === 0)) throw new Error(`${c.name}: the random float inputs are all zeros`);
  const outs = asList(c.run(k, inputs));
  const refs = asList(c.reference(before));
  const outDType = c.outDType ?? dtype;
  checkOutputs(c.name, outs, refs, outDType, tol ?? (dtype === 'float64' ? FLOAT64_TOL : (c.tol ?? FLOAT32_TOL)));
  checkInputsUnchanged(c.name, inputs, before);
}

/** Throws if an op wrote into one of its inputs (`before`: their values before it ran). */
export function checkInputsUnchanged(label: string, inputs: readonly Tensor[], before: readonly ND[]): void {
  inputs.forEach((t, i) => {
    const m = mismatch(t.dataSync() as ArrayLike<number>, before[i]!, 'exact');
    if (m) throw new Error(`${label}: input ${i} was modified by the op: ${m}`);
  });
}
