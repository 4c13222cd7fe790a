// Op-table cases of the torch API surface in docs/torch-api.md (math, activations, tensor ops,
// losses), appended to OP_TABLE: the eager, gradcheck and compiled (js, wasm, native, webgpu)
// harnesses run them like every other case. References: helpers/reference-api.ts (float64).
// op-table.ts hands in its builders (this file imports only its types: no import cycle).

import * as kiln from 'kilnjs';
import * as R from './helpers/reference.js';
import * as A from './helpers/reference-api.js';
import type { ND } from './helpers/reference.js';
import type * as OT from './op-table.js';
import type { Gen, OpCase, Rng, Tensor } from './op-table.js';

type Shape = readonly number[];

/** The builders and input generators of op-table.ts. */
export interface OpTableBuilders {
  readonly unary: typeof OT.unary;
  readonly binary: typeof OT.binary;
  readonly one: typeof OT.one;
  readonly N: Gen;
  readonly away0: Gen;
  readonly positive: Gen;
  readonly distinct: Gen;
}

const unitInterval: Gen = (r, s) => r.uniform(s, -0.9, 0.9);
/** values away from the kinks at `points` (scale: their spread) */
const awayFrom = (points: readonly number[], scale = 1, center = 0): Gen => (r, s) => r.away(s, points, 0.1, center, scale);
/** uniform values with about a third set to exactly 0 */
const withZeros = (r: Rng, s: Shape): Tensor => kiln.scope(() => kiln.where(r.mask([...s], 0.3), 0, r.uniform(s, 0.5, 1.5)));
const probs = (r: Rng, s: Shape, dim = 1): Tensor => kiln.scope(() => kiln.softmax(r.randn(s), dim));
const logProbs = (r: Rng, s: Shape, dim = 1): Tensor => kiln.scope(() => kiln.logSoftmax(r.randn(s), dim));

export function apiOpCases(b: OpTableBuilders): OpCase[] {
  return [...mathCases(b), ...activationCases(b), ...tensorOpCases(b), ...lossCases(b)];
}

function mathCases({ unary, binary, one, away0, positive }: OpTableBuilders): OpCase[] {
  return [
    ...unary('tan', (k, x) => k.tan(x), Math.tan, { gen: (r, s) => r.uniform(s, -1.2, 1.2) }),
    ...unary('atan', (k, x) => k.atan(x), Math.atan),
    ...unary('asin', (k, x) => k.asin(x), Math.asin, { gen: unitInterval }),
    ...unary('acos', (k, x) => k.acos(x), Math.acos, { gen: unitInterval }),
    ...unary('sinh', (k, x) => k.sinh(x), Math.sinh),
    ...unary('cosh', (k, x) => k.cosh(x), Math.cosh),
    ...unary('log2', (k, x) => k.log2(x), Math.log2, { gen: positive }),
    ...unary('log10', (k, x) => k.log10(x), Math.log10, { gen: positive }),
    ...unary('trunc', (k, x) => k.trunc(x), Math.trunc, { gen: (r, s) => r.randn(s, 3), grad: false }),
    ...binary('atan2', (k, a, b) => k.atan2(a, b), Math.atan2, { genB: (r, s) => r.away(s, [0], 0.3) }),
    ...binary('fmod', (k, a, b) => k.fmod(a, b), A.fmod, { genA: (r, s) => r.randn(s, 3), genB: (r, s) => r.away(s, [0], 0.5) }),
    ...binary('remainder', (k, a, b) => k.remainder(a, b), A.remainder, { genA: (r, s) => r.randn(s, 3), genB: (r, s) => r.away(s, [0], 0.5) }),
    ...binary('hypot', (k, a, b) => k.hypot(a, b), Math.hypot, { genA: away0, genB: away0 }),
    ...one({
      name: 'fmod/remainder int32 (signs, zero divisor gives 0)', op: 'fmod', grad: [], outDType: 'int32',
      make: () => [kiln.tensor([-7, 7, -7, 7, 5, 0, -3], { dtype: 'int32' }), kiln.tensor([3, 3, -3, -3, 0, 4, 5], { dtype: 'int32' })],
      run: (k, [a, b]) => [k.fmod(a!, b!), k.remainder(a!, b!)],
      reference: ([a, b]) => [R.zip(a!, b!, (x, y) => (y === 0 ? 0 : A.fmod(x, y))), R.zip(a!, b!, (x, y) => (y === 0 ? 0 : A.remainder(x, y)))],
    }),
    ...([0.3, 0.7] as const).map((w): OpCase => ({
      name: `lerp scalar weight ${w}`, op: 'lerp', grad: [0, 1], make: (r) => [r.randn([3, 4]), r.randn([4])],
      run: (k, [a, b]) => k.lerp(a!, b!, w), reference: ([a, b]) => R.zip(a!, b!, (x, y) => A.lerp(x, y, w)),
    })),
    ...one({
      name: 'lerp tensor weight broadcast', op: 'lerp', grad: [0, 1, 2], make: (r) => [r.randn([3, 4]), r.transposed([3, 4]), r.uniform([4], -0.2, 1.2)],
      run: (k, [a, b, w]) => k.lerp(a!, b!, w!), reference: ([a, b, w]) => R.zipN([a!, b!, w!], A.lerp),
    }),
    ...one({
      name: 'sign of NaN, -0, +-inf (torch: 0, 0, +-1)', op: 'sign', grad: [],
      make: (r) => [kiln.tensor([NaN, -0, 0, -2.5, 3, Infinity, -Infinity, 1e-30], { dtype: r.dtype })],
      run: (k, [x]) => k.sign(x!), reference: ([x]) => R.map(x!, A.sign),
    }),
  ];
}

function activationCases({ unary, one, away0 }: OpTableBuilders): OpCase[] {
  const lineOf = (op: string, run: (k: typeof kiln, x: Tensor) => Tensor, ref: (v: number) => number, gen: Gen, label = op) => unary(op, run, ref, { gen, label });
  return [
    ...lineOf('elu', (k, x) => k.elu(x), (v) => A.elu(v), away0),
    ...lineOf('elu', (k, x) => k.elu(x, 0.5), (v) => A.elu(v, 0.5), away0, 'elu alpha=0.5'),
    ...lineOf('selu', (k, x) => k.selu(x), A.selu, away0),
    ...lineOf('celu', (k, x) => k.celu(x, 2), (v) => A.celu(v, 2), away0, 'celu alpha=2'),
    ...lineOf('hardtanh', (k, x) => k.hardtanh(x), (v) => A.hardtanh(v), awayFrom([-1, 1], 1.5)),
    ...lineOf('hardtanh', (k, x) => k.hardtanh(x, -0.5, 2), (v) => A.hardtanh(v, -0.5, 2), awayFrom([-0.5, 2], 1.5), 'hardtanh [-0.5, 2]'),
    ...lineOf('relu6', (k, x) => k.relu6(x), A.relu6, awayFrom([0, 6], 4, 2)),
    ...lineOf('hardsigmoid', (k, x) => k.hardsigmoid(x), A.hardsigmoid, awayFrom([-3, 3], 3)),
    ...lineOf('hardswish', (k, x) => k.hardswish(x), A.hardswish, awayFrom([-3, 3], 3)),
    ...lineOf('mish', (k, x) => k.mish(x), A.mish, (r, s) => r.randn(s, 3)),
    ...lineOf('logsigmoid', (k, x) => k.logsigmoid(x), A.logsigmoid, (r, s) => r.randn(s, 3)),
    ...lineOf('leakyRelu', (k, x) => k.leakyRelu(x, 0.2), (v) => A.leakyRelu(v, 0.2), away0, 'leakyRelu 0.2'),
    ...one({
      name: 'prelu per channel [2,3,4]', op: 'prelu', grad: [0, 1], make: (r) => [r.away([2, 3, 4], [0]), r.uniform([3], 0.1, 0.5)],
      run: (k, [x, w]) => k.prelu(x!, w!), reference: ([x, w]) => A.prelu(x!, w!),
    }),
    ...one({
      name: 'prelu shared slope, transposed', op: 'prelu', grad: [0, 1], make: (r) => [r.transposed([4, 3], away0), r.uniform([1], 0.1, 0.5)],
      run: (k, [x, w]) => k.prelu(x!, w!), reference: ([x, w]) => A.prelu(x!, w!),
    }),
    ...one({
      name: 'prelu 1-D input', op: 'prelu', grad: [0, 1], make: (r) => [r.away([5], [0]), r.uniform([1], 0.1, 0.5)],
      run: (k, [x, w]) => k.prelu(x!, w!), reference: ([x, w]) => A.prelu(x!, w!),
    }),
    ...([-1, 0] as const).map((d): OpCase => ({
      name: `glu dim=${d}`, op: 'glu', grad: [0], make: (r) => [r.randn([4, 6])],
      run: (k, [x]) => k.glu(x!, d), reference: ([x]) => A.glu(x!, d),
    })),
  ];
}

function tensorOpCases({ one, distinct }: OpTableBuilders): OpCase[] {
  const sortLike = (name: string, op: string, run: (k: typeof kiln, x: Tensor) => { values: Tensor; indices: Tensor }, ref: (x: ND) => { values: ND; indices: ND }, shape: Shape, gen: Gen = distinct): OpCase[] => [
    { name: `${name} values`, op, grad: [0], make: (r) => [gen(r, shape)], run: (k, [x]) => run(k, x!).values, reference: ([x]) => ref(x!).values },
    { name: `${name} indices`, op, grad: [], outDType: 'int32', make: (r) => [gen(r, shape)], run: (k, [x]) => run(k, x!).indices, reference: ([x]) => ref(x!).indices },
  ];
  return [
    // -- reordering --
    ...([[0], [0, 2], [-1]] as const).map((d): OpCase => ({
      name: `flip dims=${JSON.stringify(d)}`, op: 'flip', grad: [0], make: (r) => [r.randn([2, 3, 4])],
      run: (k, [x]) => k.flip(x!, d), reference: ([x]) => A.flip(x!, d),
    })),
    ...one({
      name: 'flip transposed, then added', op: 'flip', grad: [0, 1], make: (r) => [r.transposed([3, 4]), r.randn([3, 4])],
      run: (k, [x, y]) => k.flip(x!, [1]).add(y!), reference: ([x, y]) => R.zip(A.flip(x!, [1]), y!, (a, b) => a + b),
    }),
    ...one({
      name: 'roll one dim', op: 'roll', grad: [0], make: (r) => [r.randn([3, 5])],
      run: (k, [x]) => k.roll(x!, 2, 1), reference: ([x]) => A.roll(x!, [2], [1]),
    }),
    ...one({
      name: 'roll two dims, negative shift', op: 'roll', grad: [0], make: (r) => [r.randn([3, 2, 4])],
      run: (k, [x]) => k.roll(x!, [1, -3], [0, 2]), reference: ([x]) => A.roll(x!, [1, -3], [0, 2]),
    }),
    ...one({
      name: 'roll flattened', op: 'roll', grad: [0], make: (r) => [r.transposed([3, 4])],
      run: (k, [x]) => k.roll(x!, 5), reference: ([x]) => A.roll(x!, [5]),
    }),
    ...one({
      name: 'repeat with a new leading dim', op: 'repeat', grad: [0], make: (r) => [r.randn([2, 3])],
      run: (k, [x]) => k.repeat(x!, [2, 1, 3]), reference: ([x]) => A.repeat(x!, [2, 1, 3]),
    }),
    ...one({
      name: 'tile fewer dims', op: 'tile', grad: [0], make: (r) => [r.strided([2, 3])],
      run: (k, [x]) => k.tile(x!, [2]), reference: ([x]) => A.repeat(x!, [1, 2]),
    }),
    ...one({
      name: 'repeatInterleave number dim=1', op: 'repeatInterleave', grad: [0], make: (r) => [r.randn([2, 3])],
      run: (k, [x]) => k.repeatInterleave(x!, 2, 1), reference: ([x]) => A.repeatInterleave(x!, 2, 1),
    }),
    ...one({
      name: 'repeatInterleave flattened', op: 'repeatInterleave', grad: [0], make: (r) => [r.randn([2, 2])],
      run: (k, [x]) => k.repeatInterleave(x!, 3), reference: ([x]) => A.repeatInterleave(x!, 3),
    }),
    ...one({
      name: 'repeatInterleave counts list dim=0', op: 'repeatInterleave', grad: [0], make: (r) => [r.randn([3, 2])],
      run: (k, [x]) => k.repeatInterleave(x!, [1, 0, 2], 0), reference: ([x]) => A.repeatInterleave(x!, [1, 0, 2], 0),
    }),
    ...one({
      name: 'repeatInterleave counts tensor (reads data)', op: 'repeatInterleave', grad: [0], make: (r) => [r.randn([3, 2])],
      run: (k, [x]) => k.repeatInterleave(x!, k.tensor([2, 1, 0], { dtype: 'int32' }), 0), reference: ([x]) => A.repeatInterleave(x!, [2, 1, 0], 0),
    }),
    // -- sorting and searching --
    ...sortLike('sort dim=1', 'sort', (k, x) => k.sort(x, 1), (x) => A.sort(x, 1), [3, 5, 2]),
    ...sortLike('sort descending transposed', 'sort', (k, x) => k.sort(x, -1, true), (x) => A.sort(x, -1, true), [4, 6], (r, s) => r.transposed(s, distinct)),
    ...one({
      name: 'sort ties stable, NaN last', op: 'sort', grad: [], outDType: 'int32',
      make: (r) => [kiln.tensor([[3, NaN, 1, 2, 1], [0.5, -1, 4, 4, NaN]], { dtype: r.dtype })],
      run: (k, [x]) => [k.sort(x!, 1).indices, k.sort(x!, 1, true).indices],
      reference: ([x]) => [A.sort(x!, 1).indices, A.sort(x!, 1, true).indices],
    }),
    ...one({
      name: 'argsort dim=0', op: 'argsort', grad: [], outDType: 'int32', make: (r) => [r.distinct([5, 3])],
      run: (k, [x]) => k.argsort(x!, 0), reference: ([x]) => A.sort(x!, 0).indices,
    }),
    ...sortLike('topk k=3', 'topk', (k, x) => k.topk(x, 3), (x) => A.topk(x, 3), [4, 7]),
    ...sortLike('topk smallest dim=0', 'topk', (k, x) => k.topk(x, 2, 0, false), (x) => A.topk(x, 2, 0, false), [5, 3]),
    ...sortLike('kthvalue k=2', 'kthvalue', (k, x) => k.kthvalue(x, 2), (x) => A.kthvalue(x, 2), [3, 5]),
    ...sortLike('kthvalue keepdim dim=0', 'kthvalue', (k, x) => k.kthvalue(x, 4, 0, true), (x) => A.kthvalue(x, 4, 0, true), [5, 3]),
    ...sortLike('max dim=1', 'max', (k, x) => k.max(x, 1), (x) => A.maxDim(x, 1), [3, 5, 2]),
    ...sortLike('max dim=0 keepdim', 'max', (k, x) => k.max(x, 0, true), (x) => A.maxDim(x, 0, true), [4, 3]),
    ...sortLike('min dim=-1', 'min', (k, x) => k.min(x, -1), (x) => A.maxDim(x, -1, false, true), [3, 5]),
    ...one({
      name: 'max of all, max with a tensor', op: 'max', grad: [0, 1], make: (r) => [r.grid([3, 4], 0.05), r.grid([4], 0)],
      run: (k, [a, b]) => [k.max(a!).reshape([1]), k.max(a!, b!)], reference: ([a, b]) => [R.reshape(R.amax(a!), [1]), R.zip(a!, b!, Math.max)],
    }),
    ...one({
      name: 'max dim ties: first index, gradient to it', op: 'max', grad: [], outDType: 'int32', make: (r) => [r.ints([6, 5], 0, 2)],
      run: (k, [x]) => k.max(x!, 1).indices, reference: ([x]) => A.maxDim(x!, 1).indices,
    }),
    // -- scans --
    ...([0, 1] as const).map((d): OpCase => ({
      name: `cumprod dim=${d}`, op: 'cumprod', grad: [0], make: (r) => [r.uniform([3, 4], 0.5, 1.5)],
      run: (k, [x]) => k.cumprod(x!, d), reference: ([x]) => A.cumprod(x!, d),
    })),
    ...one({
      name: 'cumprod with zeros (exact gradient)', op: 'cumprod', grad: [0], make: (r) => [withZeros(r, [4, 6])],
      run: (k, [x]) => k.cumprod(x!, 1), reference: ([x]) => A.cumprod(x!, 1),
    }),
    ...one({
      name: 'cumprod int32', op: 'cumprod', grad: [], outDType: 'int32', make: (r) => [r.index(-3, 4, [3, 4])],
      run: (k, [x]) => k.cumprod(x!, 1), reference: ([x]) => A.cumprod(x!, 1),
    }),
    ...sortLike('cummax dim=1', 'cummax', (k, x) => k.cummax(x, 1), (x) => A.cumExtreme(x, 1), [3, 6]),
    ...sortLike('cummin dim=0', 'cummin', (k, x) => k.cummin(x, 0), (x) => A.cumExtreme(x, 0, true), [5, 3]),
    ...one({
      name: 'cummax/cummin ties take the later index', op: 'cummax', grad: [], outDType: 'int32', make: (r) => [r.ints([4, 6], 0, 3)],
      run: (k, [x]) => [k.cummax(x!, 1).indices, k.cummin(x!, 1).indices], reference: ([x]) => [A.cumExtreme(x!, 1).indices, A.cumExtreme(x!, 1, true).indices],
    }),
    // -- norms and distances --
    ...([
      ['2 all', 'fro', undefined, false], ['fro dim=1 keepdim', 'fro', 1, true], ['1 dims=[0,2]', 1, [0, 2], false],
      ['inf dim=1', Infinity, 1, false], ['-inf dim=-1', -Infinity, -1, false], ['3 dim=1', 3, 1, false], ['0.5 dim=2', 0.5, 2, false],
    ] as const).map(([label, p, d, kd]): OpCase => ({
      name: `norm p=${label}`, op: 'norm', grad: [0], make: (r) => [typeof p === 'number' && !Number.isFinite(p) ? r.distinct([3, 4, 2]) : r.away([3, 4, 2], [0], 0.05)],
      run: (k, [x]) => k.norm(x!, p, d, kd), reference: ([x]) => A.vectorNorm(x!, p === 'fro' ? 2 : p, d, kd),
    })),
    ...one({
      name: 'norm p=0 counts non-zeros', op: 'norm', grad: [], make: (r) => [withZeros(r, [3, 5])],
      run: (k, [x]) => k.norm(x!, 0, 1), reference: ([x]) => A.vectorNorm(x!, 0, 1),
    }),
    ...one({
      name: 'norm of zeros has gradient 0', op: 'norm', grad: [0], make: (r) => [kiln.scope(() => kiln.cat([kiln.zeros([1, 3], { dtype: r.dtype }), r.randn([2, 3])]))],
      run: (k, [x]) => k.norm(x!, 2, 1), reference: ([x]) => A.vectorNorm(x!, 2, 1),
    }),
    ...one({
      name: 'normalize dim=1', op: 'normalize', grad: [0], make: (r) => [r.randn([3, 4])],
      run: (k, [x]) => k.normalize(x!), reference: ([x]) => A.normalize(x!),
    }),
    ...one({
      name: 'normalize p=1 dim=0', op: 'normalize', grad: [0], make: (r) => [r.away([4, 3], [0])],
      run: (k, [x]) => k.normalize(x!, 1, 0), reference: ([x]) => A.normalize(x!, 1, 0),
    }),
    ...one({
      name: 'cosineSimilarity dim=1', op: 'cosineSimilarity', grad: [0, 1], make: (r) => [r.randn([4, 5]), r.randn([4, 5])],
      run: (k, [a, b]) => k.cosineSimilarity(a!, b!), reference: ([a, b]) => A.cosineSimilarity(a!, b!),
    }),
    ...one({
      name: 'cosineSimilarity broadcast dim=-1', op: 'cosineSimilarity', grad: [0, 1], make: (r) => [r.randn([2, 3, 4]), r.randn([4])],
      run: (k, [a, b]) => k.cosineSimilarity(a!, b!, -1), reference: ([a, b]) => A.cosineSimilarity(a!, b!, -1),
    }),
    ...one({
      name: 'cosineSimilarity tiny vector (eps)', op: 'cosineSimilarity', grad: [],
      make: (r) => [kiln.tensor([[1e-5, 0], [1, 2]], { dtype: r.dtype }), kiln.tensor([[1e-5, 0], [0.5, -2]], { dtype: r.dtype })],
      run: (k, [a, b]) => k.cosineSimilarity(a!, b!, 1, 1e-4), reference: ([a, b]) => A.cosineSimilarity(a!, b!, 1, 1e-4),
    }),
    ...([2, 1, 3] as const).map((p): OpCase => ({
      name: `cdist p=${p}`, op: 'cdist', grad: [0, 1], make: (r) => [r.randn([5, 3]), r.randn([4, 3])],
      run: (k, [a, b]) => k.cdist(a!, b!, p), reference: ([a, b]) => A.cdist(a!, b!, p),
    })),
    ...one({
      name: 'cdist batched broadcast', op: 'cdist', grad: [0, 1], make: (r) => [r.randn([2, 3, 4]), r.randn([1, 5, 4])],
      run: (k, [a, b]) => k.cdist(a!, b!), reference: ([a, b]) => A.cdist(a!, b!),
    }),
    // -- einsum, diagonals, grids --
    ...([
      ['ij,jk->ik', [[3, 4], [4, 5]]], ['bij,bjk->bik', [[2, 3, 4], [2, 4, 2]]], ['ii->i', [[4, 4]]], ['ii', [[3, 3]]],
      ['...ij->...ji', [[2, 3, 4]]], ['i,j->ij', [[3], [4]]], ['ij,ij->', [[3, 4], [3, 4]]], ['ba', [[3, 2]]],
      ['bn,anm,bm->ba', [[2, 3], [4, 3, 5], [2, 5]]], ['bij,jk', [[1, 2, 3], [3, 4]]], ['i,i', [[3], [1]]],
    ] as const).map(([eq, shapes]): OpCase => ({
      name: `einsum '${eq}'`, op: 'einsum', grad: shapes.map((_, i) => i), make: (r) => shapes.map((s) => r.randn(s)),
      run: (k, xs) => k.einsum(eq, ...xs), reference: (xs) => A.einsum(eq, ...xs),
    })),
    ...([0, 1, -2] as const).map((d): OpCase => ({
      name: `diag of a vector, diagonal=${d}`, op: 'diag', grad: [0], make: (r) => [r.randn([3])],
      run: (k, [x]) => k.diag(x!, d), reference: ([x]) => A.diag(x!, d),
    })),
    ...([0, 1, -1, 5] as const).map((d): OpCase => ({
      name: `diag of a matrix, diagonal=${d}`, op: 'diag', grad: d === 5 ? [] : [0], make: (r) => [r.transposed([3, 4])],
      run: (k, [x]) => k.diag(x!, d), reference: ([x]) => A.diag(x!, d),
    })),
    ...one({
      name: 'trace', op: 'trace', grad: [0], make: (r) => [r.randn([4, 3])],
      run: (k, [x]) => k.trace(x!), reference: ([x]) => A.trace(x!),
    }),
    ...(['ij', 'xy'] as const).map((ix): OpCase => ({
      name: `meshgrid indexing=${ix}`, op: 'meshgrid', grad: [0, 1, 2], make: (r) => [r.randn([2]), r.randn([3]), r.randn([4])],
      run: (k, xs) => k.meshgrid([...xs], { indexing: ix }), reference: (xs) => A.meshgrid(xs, ix),
    })),
    ...([false, true] as const).map((right): OpCase => ({
      name: `bucketize right=${right} (ties at boundaries)`, op: 'bucketize', grad: [], outDType: 'int32',
      make: (r) => [r.ints([3, 5], -2, 3), kiln.tensor([-1, 0, 0.5, 1], { dtype: r.dtype })],
      run: (k, [x, b]) => k.bucketize(x!, b!, { right }), reference: ([x, b]) => A.bucketize(x!, b!, right),
    })),
    ...one({
      name: 'bucketize NaN past the last boundary', op: 'bucketize', grad: [], outDType: 'int32',
      make: (r) => [kiln.tensor([NaN, -Infinity, Infinity, 0.25], { dtype: r.dtype }), kiln.tensor([0, 0.5], { dtype: r.dtype })],
      run: (k, [x, b]) => k.bucketize(x!, b!), reference: ([x, b]) => A.bucketize(x!, b!),
    }),
    ...one({
      name: 'unique values (reads data)', op: 'unique', grad: [], make: (r) => [r.ints([3, 4], -2, 3)],
      run: (k, [x]) => k.unique(x!), reference: ([x]) => A.unique(x!).values,
    }),
    ...one({
      name: 'unique inverse and counts (reads data)', op: 'unique', grad: [], outDType: 'int32', make: (r) => [r.ints([3, 4], -2, 3)],
      run: (k, [x]) => { const u = k.unique(x!, { returnInverse: true, returnCounts: true }); return [u.inverse!, u.counts!]; },
      reference: ([x]) => { const u = A.unique(x!); return [u.inverse, u.counts]; },
    }),
    // -- sampling: outputs fixed by the weights, whatever the draws --
    ...one({
      name: 'multinomial one-hot weights, with replacement', op: 'multinomial', grad: [], outDType: 'int32',
      make: (r) => [kiln.tensor([[0, 0, 2, 0], [0.5, 0, 0, 0], [0, 0, 0, 1]], { dtype: r.dtype })],
      run: (k, [p]) => k.multinomial(p!, 6, true), reference: () => R.nd([3, 6], [...new Array(6).fill(2), ...new Array(6).fill(0), ...new Array(6).fill(3)]),
    }),
    ...one({
      name: 'multinomial without replacement draws every positive category once', op: 'multinomial', grad: [], outDType: 'int32',
      make: (r) => [kiln.tensor([[0.1, 0, 0.5, 0.4], [0, 3, 1, 0]], { dtype: r.dtype })],
      run: (k, [p]) => [k.sort(k.multinomial(p!.narrow(0, 0, 1), 3), 1).values, k.sort(k.multinomial(p!.narrow(0, 1, 1), 2), 1).values],
      reference: () => [R.nd([1, 3], [0, 2, 3]), R.nd([1, 2], [1, 2])],
    }),
    ...one({
      name: 'randperm is a permutation', op: 'randperm', grad: [], outDType: 'int32', make: (r) => [r.randn([1])],
      run: (k) => k.sort(k.randperm(50)).values, reference: () => R.nd([50], Array.from({ length: 50 }, (_, i) => i)),
    }),
  ];
}

function lossCases({ one }: OpTableBuilders): OpCase[] {
  const reds = ['mean', 'sum', 'none'] as const;
  return [
    ...reds.map((red): OpCase => ({
      name: `l1Loss ${red}`, op: 'l1Loss', grad: [0, 1], make: (r) => [r.randn([3, 4]), r.transposed([3, 4])],
      run: (k, [a, b]) => k.l1Loss(a!, b!, { reduction: red }), reference: ([a, b]) => A.l1Loss(a!, b!, red),
    })),
    ...([[1, 'mean'], [0.5, 'sum'], [0, 'mean']] as const).map(([beta, red]): OpCase => ({
      name: `smoothL1Loss beta=${beta} ${red}`, op: 'smoothL1Loss', grad: [0, 1], make: (r) => [r.randn([4, 5]), r.randn([4, 5])],
      run: (k, [a, b]) => k.smoothL1Loss(a!, b!, { beta, reduction: red }), reference: ([a, b]) => A.smoothL1Loss(a!, b!, red, beta),
    })),
    ...([[1, 'mean'], [2, 'none']] as const).map(([delta, red]): OpCase => ({
      name: `huberLoss delta=${delta} ${red}`, op: 'huberLoss', grad: [0, 1], make: (r) => [r.randn([4, 5], 2), r.randn([4, 5])],
      run: (k, [a, b]) => k.huberLoss(a!, b!, { delta, reduction: red }), reference: ([a, b]) => A.huberLoss(a!, b!, red, delta),
    })),
    ...(['mean', 'batchmean', 'sum', 'none'] as const).map((red): OpCase => ({
      name: `klDiv ${red}`, op: 'klDiv', grad: [0, 1], make: (r) => [logProbs(r, [3, 4]), probs(r, [3, 4])],
      run: (k, [x, t]) => k.klDiv(x!, t!, { reduction: red }), reference: ([x, t]) => A.klDiv(x!, t!, red),
    })),
    ...one({
      name: 'klDiv zero targets', op: 'klDiv', grad: [0], make: (r) => [logProbs(r, [3, 4]), kiln.scope(() => kiln.where(r.mask([3, 4]), 0, probs(r, [3, 4])))],
      run: (k, [x, t]) => k.klDiv(x!, t!, { reduction: 'sum' }), reference: ([x, t]) => A.klDiv(x!, t!, 'sum'),
    }),
    ...one({
      name: 'klDiv logTarget batchmean', op: 'klDiv', grad: [0, 1], make: (r) => [logProbs(r, [3, 4]), logProbs(r, [3, 4])],
      run: (k, [x, t]) => k.klDiv(x!, t!, { reduction: 'batchmean', logTarget: true }), reference: ([x, t]) => A.klDiv(x!, t!, 'batchmean', true),
    }),
    ...reds.map((red): OpCase => ({
      name: `binaryCrossEntropy ${red}`, op: 'binaryCrossEntropy', grad: [0, 1], make: (r) => [r.uniform([3, 4], 0.05, 0.95), r.uniform([3, 4], 0, 1)],
      run: (k, [x, t]) => k.binaryCrossEntropy(x!, t!, { reduction: red }), reference: ([x, t]) => A.binaryCrossEntropy(x!, t!, red),
    })),
    ...one({
      name: 'binaryCrossEntropy weight, log clamped at -100', op: 'binaryCrossEntropy', grad: [2],
      make: (r) => [kiln.tensor([[0, 0.5, 1], [0.2, 1, 0]], { dtype: r.dtype }), kiln.tensor([[1, 1, 0], [0, 1, 0]], { dtype: r.dtype }), r.uniform([3], 0.5, 2)],
      run: (k, [x, t, w]) => k.binaryCrossEntropy(x!, t!, { weight: w }), reference: ([x, t, w]) => A.binaryCrossEntropy(x!, t!, 'mean', w),
    }),
    ...one({
      name: 'binaryCrossEntropyWithLogits weight', op: 'binaryCrossEntropyWithLogits', grad: [0, 2],
      make: (r) => [r.randn([3, 4], 2), r.uniform([3, 4], 0, 1), r.uniform([4], 0.5, 2)],
      run: (k, [x, t, w]) => k.binaryCrossEntropyWithLogits(x!, t!, { weight: w, reduction: 'sum' }), reference: ([x, t, w]) => A.bceWithLogitsWeighted(x!, t!, w!, 'sum'),
    }),
    ...([
      ['mean', {}], ['sum', { reduction: 'sum' }], ['none', { reduction: 'none' }], ['labelSmoothing 0.2', { labelSmoothing: 0.2 }],
    ] as const).map(([label, opts]): OpCase => ({
      name: `crossEntropy probability targets ${label}`, op: 'crossEntropy', grad: [0, 1], make: (r) => [r.randn([5, 4], 2), probs(r, [5, 4])],
      run: (k, [x, t]) => k.crossEntropy(x!, t!, opts), reference: ([x, t]) => A.crossEntropyProbs(x!, t!, opts),
    })),
    ...one({
      name: 'crossEntropy probability targets, weights + labelSmoothing', op: 'crossEntropy', grad: [0, 1, 2],
      make: (r) => [r.randn([5, 4]), probs(r, [5, 4]), r.uniform([4], 0.2, 2)],
      run: (k, [x, t, w]) => k.crossEntropy(x!, t!, { weight: w, labelSmoothing: 0.1 }), reference: ([x, t, w]) => A.crossEntropyProbs(x!, t!, { weight: w, labelSmoothing: 0.1 }),
    }),
    ...one({
      name: 'crossEntropy probability targets spatial [N,C,d]', op: 'crossEntropy', grad: [0, 1], make: (r) => [r.randn([2, 3, 4]), probs(r, [2, 3, 4])],
      run: (k, [x, t]) => k.crossEntropy(x!, t!), reference: ([x, t]) => A.crossEntropyProbs(x!, t!),
    }),
  ];
}

/** Ops of this file the op table must cover (checked by ops.test.ts with REQUIRED_OPS). */
export const REQUIRED_API_OPS: readonly string[] = [
  'tan', 'atan', 'asin', 'acos', 'sinh', 'cosh', 'log2', 'log10', 'trunc', 'atan2', 'remainder', 'fmod', 'lerp', 'hypot', 'sign',
  'elu', 'selu', 'celu', 'hardtanh', 'hardswish', 'hardsigmoid', 'mish', 'logsigmoid', 'relu6', 'prelu', 'glu', 'leakyRelu',
  'flip', 'roll', 'repeat', 'tile', 'repeatInterleave', 'sort', 'argsort', 'topk', 'kthvalue', 'cumprod', 'cummax', 'cummin',
  'norm', 'normalize', 'cosineSimilarity', 'cdist', 'einsum', 'diag', 'trace', 'meshgrid', 'multinomial', 'randperm',
  'bucketize', 'unique', 'max', 'min', 'amax', 'amin',
  'l1Loss', 'smoothL1Loss', 'huberLoss', 'klDiv', 'binaryCrossEntropy', 'crossEntropy', 'mseLoss', 'binaryCrossEntropyWithLogits',
];
/** Of those, the ones without a gradient (integer outputs, data reads, zero-gradient steps). */
export const NON_DIFFERENTIABLE_API_OPS: readonly string[] = ['trunc', 'sign', 'argsort', 'bucketize', 'unique', 'multinomial', 'randperm'];
