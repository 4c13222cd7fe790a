// The eager kernel set: a fixed list of loop-IR kernels with dynamic sizes (src/compiler/dynamic/DYNAMIC.md),
// rendered by the wasm backend's own code generator (the compiler's kernels, not a second
// implementation) once per process, into one module per family. Every size, stride and
// offset is a symbol the kernel reads from its sizes buffer at entry, so one function serves
// every shape; what is static is what decides vectorization: which operands walk the inner
// loop contiguously (f32x4 loads) and which are broadcast along it (splat).
//
// Sizes layouts (sN: slot N of the float64 sizes buffer, the last buffer of each kernel):
//   pointwise  [rows, cols] over out (buf 0) and leaves (bufs 1..n):
//              s0 rows, s1 cols, s2 out row stride, s3 out offset, s(4+2j) leaf j row stride, s(5+2j) leaf j offset
//   copy       as pointwise with one leaf, plus s6 leaf inner stride, s7 out inner stride
//   reduce     out (buf 0) [keep] from in (buf 1) [keep, reduce outer, reduce inner]:
//              s0 keep, s1 reduce outer, s2 reduce inner, s3 / s4 / s8 in strides (keep, outer, inner),
//              s5 in offset, s6 out stride, s7 out offset
//   matmul     C (buf 0) = A (buf 1) @ B (buf 2), optionally over one batch dim:
//              s0 m, s1 n, s2 k, s3 / s4 / s5 A / B / C offsets, s6 C row stride, s7 / s8 A row / col stride,
//              s9 / s10 B row / col stride, s11 batch, s12 / s13 / s14 A / B / C batch strides

import type { DType } from '../../../core/dtype.js';
import type { ReduceOp } from '../../../ir/kernel-spec.js';
import { BINARY_OPS, TERNARY_OPS, UNARY_OPS, arity, isBoolResult, type ScalarOp } from '../../../ir/scalar-expr.js';
import type { Affine, LExpr, LoopKernel, MatmulKernel, MatmulOperand, PointwiseKernel, RowKernel } from '../../../ir/loop-ir.js';
import { symVar, type Sym } from '../../../ir/symbolic.js';

const S = (i: number): Sym => symVar(i);
/**
 * The value every symbolic number holds in the IR: renderers read it only as "not 0" (a
 * pointer moves) and "not 1" (an inner loop over it is not contiguous, so it stays scalar).
 */
const HINT = 2;

/** o + sum c[v] var_v where a coefficient is either static (0 or 1, the inner loop) or a size. */
function affine(coef: readonly (number | Sym)[], offset: Sym): Affine {
  const c = coef.map((x) => (typeof x === 'number' ? x : HINT));
  const cSym = coef.map((x) => (typeof x === 'number' ? null : x));
  return { c, o: HINT, cSym, oSym: offset };
}

const load = (buf: number, at: Affine, dtype: DType): LExpr => ({ k: 'load', buf, at, dtype });

/**
 * How a leaf walks the inner loop: 'v' contiguous, 's' broadcast (the same element along it),
 * 'd' a float64 scalar (a JS number that float32 cannot hold: see EXACT_SCALAR_OPS).
 */
export type Inner = 'v' | 's' | 'd';

/** Key of a pointwise kernel: op, output dtype, each leaf's inner walk. */
export const pointwiseKey = (op: ScalarOp, out: DType, inner: readonly Inner[]): string => `${op}|${out}|${inner.join('')}`;

/** Binary ops whose float32 result is the same whether a number operand is rounded to float32 first or not. */
const ROUNDING_SAFE: ReadonlySet<ScalarOp> = new Set(['maximum', 'minimum', 'logicalAnd', 'logicalOr', 'logicalXor']);

/**
 * Binary ops whose result can change when a JS-number operand is first rounded to float32 (the
 * JS kernels use it in double: 1 - pow(0.999, t) loses digits if 0.999 is rounded first, x < 0.1
 * differs at x = fround(0.1), fmod(x, 0.1) jumps near multiples): every binary op but the
 * ROUNDING_SAFE ones, so a new op is exact by default. With such a number they compute in
 * float64 and round once, as the JS kernels do.
 */
export const EXACT_SCALAR_OPS: ReadonlySet<ScalarOp> = new Set((BINARY_OPS as readonly ScalarOp[]).filter((op) => !ROUNDING_SAFE.has(op)));

function pointwiseKernel(op: ScalarOp, out: DType, inner: readonly Inner[]): PointwiseKernel {
  const n = inner.length;
  const leaves = inner.map((w, j) => load(j + 1, affine([S(4 + 2 * j), w === 'v' ? 1 : 0], S(5 + 2 * j)), w === 'd' ? 'float64' : 'float32'));
  const dtype: DType = inner.includes('d') ? 'float64' : 'float32';
  return {
    kind: 'pointwise', name: `eager_${op}_${out}_${inner.join('')}`, shape: [HINT, HINT], shapeSym: [S(0), S(1)], body: [],
    stores: [{ buf: 0, at: affine([S(2), 1], S(3)), value: { k: 'op', op, a: leaves, dtype }, dtype: out, node: 0 }],
    sizes: { buf: n + 1, count: 4 + 2 * n },
  };
}

/** Every inner-walk combination of n leaves but all-broadcast (a row that is one value is a fill). */
function walks(n: number): Inner[][] {
  const out: Inner[][] = [];
  for (let m = 0; m < 1 << n; m++) {
    const w = Array.from({ length: n }, (_, j): Inner => ((m >> (n - 1 - j)) & 1 ? 's' : 'v'));
    if (w.includes('v')) out.push(w);
  }
  return out;
}

/**
 * Pointwise: every ScalarOp (so an op added to scalar-expr.ts is here too) over float32 leaves,
 * computing in float32; ops with a bool result store bool.
 */
export function pointwiseFamily(): Map<string, LoopKernel> {
  const out = new Map<string, LoopKernel>();
  for (const op of [...UNARY_OPS, ...BINARY_OPS, ...TERNARY_OPS] as ScalarOp[]) {
    const dt: DType = isBoolResult(op) ? 'bool' : 'float32';
    for (const w of walks(arity(op))) out.set(pointwiseKey(op, dt, w), pointwiseKernel(op, dt, w));
    if (EXACT_SCALAR_OPS.has(op)) for (const w of [['v', 'd'], ['d', 'v']] as Inner[][]) out.set(pointwiseKey(op, dt, w), pointwiseKernel(op, dt, w));
  }
  return out;
}

export const copyKey = (from: DType, to: DType): string => `copy|${from}|${to}`;

const DTYPES: readonly DType[] = ['float32', 'float64', 'int32', 'bool'];

/** Copies and casts between any two dtypes over any strides (scalar loops): contiguous(), casts, in-place writes. */
export function copyFamily(): Map<string, LoopKernel> {
  const out = new Map<string, LoopKernel>();
  for (const from of DTYPES) {
    for (const to of DTYPES) {
      const src = load(1, affine([S(4), S(6)], S(5)), from);
      const k: PointwiseKernel = {
        kind: 'pointwise', name: `eager_copy_${from}_${to}`, shape: [HINT, HINT], shapeSym: [S(0), S(1)], body: [],
        stores: [{ buf: 0, at: affine([S(2), S(7)], S(3)), value: from === to ? src : { k: 'cast', a: src, dtype: to }, dtype: to, node: 0 }],
        sizes: { buf: 2, count: 8 },
      };
      out.set(copyKey(from, to), k);
    }
  }
  return out;
}

export const REDUCE_OPS: readonly ReduceOp[] = ['sum', 'prod', 'max', 'min', 'argmax', 'argmin'];
export const reduceKey = (op: ReduceOp, inner: 'v' | 'g'): string => `${op}|${inner}`;

/** Reductions of float32 (sums in float64), the reduced inner dim contiguous ('v', f32x4) or strided ('g'). */
export function reduceFamily(): Map<string, LoopKernel> {
  const out = new Map<string, LoopKernel>();
  for (const op of REDUCE_OPS) {
    for (const inner of ['v', 'g'] as const) {
      const arg = op === 'argmax' || op === 'argmin';
      const k: RowKernel = {
        kind: 'row', name: `eager_${op}_${inner}`, outer: [HINT], inner: [HINT, HINT], outerSym: [S(0)], innerSym: [S(1), S(2)],
        reductions: [{ id: 0, op, body: [], value: load(1, affine([S(3), S(4), inner === 'v' ? 1 : S(8)], S(5)), 'float32'), node: 0 }],
        outerBody: [], rowBody: [], rowStores: [],
        outerStores: [{ buf: 0, at: affine([S(6), 0, 0], S(7)), value: { k: 'red', id: 0 }, dtype: arg ? 'int32' : 'float32', node: 0 }],
        sizes: { buf: 2, count: 9 },
      };
      out.set(reduceKey(op, inner), k);
    }
  }
  return out;
}

/** How a matmul operand is laid out: 'r' rows contiguous (column stride 1), 'c' columns contiguous, 'g' any strides. */
export type Layout = 'r' | 'c' | 'g';
/** `acc`: what the products accumulate in (float64: short reductions, see matmul.ts) */
export const matmulKey = (a: Layout, b: Layout, batched: boolean, acc: 'float32' | 'float64' = 'float32'): string => `${a}${b}|${batched ? 'b' : '2d'}|${acc}`;
/** The layouts with kernels: each operand row or column contiguous (f32x4 packing), or both general. */
export const MATMUL_LAYOUTS: readonly (readonly [Layout, Layout])[] = [['r', 'r'], ['r', 'c'], ['c', 'r'], ['c', 'c'], ['g', 'g']];

function operand(buf: number, layout: Layout, offset: number, row: number, col: number, batch: number | null): MatmulOperand {
  const base = batch === null ? affine([], S(offset)) : affine([S(batch)], S(offset));
  return {
    buf, base, dtype: 'float32',
    sRow: layout === 'c' ? 1 : HINT, sCol: layout === 'r' ? 1 : HINT,
    ...(layout === 'c' ? {} : { sRowSym: S(row) }),
    ...(layout === 'r' ? {} : { sColSym: S(col) }),
  };
}

/**
 * float32 matmul C = A·B: the packed micro-kernel engine with every size dynamic, 2-D or over
 * one batch dim; products accumulate in float32 (every layout) or, for short reductions, in
 * float64 (general layout: packing is cheap there; C goes through a float64 accumulator).
 */
export function matmulFamily(): Map<string, LoopKernel> {
  const out = new Map<string, LoopKernel>();
  const variants = [...MATMUL_LAYOUTS.map(([a, b]) => [a, b, 'float32'] as const), ['g', 'g', 'float64'] as const];
  for (const batched of [false, true]) {
    for (const [la, lb, acc] of variants) {
      const k: MatmulKernel = {
        kind: 'matmul', name: `eager_matmul_${la}${lb}${batched ? '_batched' : ''}_${acc}`, dtype: acc,
        batch: batched ? [HINT] : [], batchSym: batched ? [S(11)] : [],
        m: HINT, n: HINT, k: HINT, mSym: S(0), nSym: S(1), kSym: S(2),
        a: operand(1, la, 3, 7, 8, batched ? 12 : null),
        b: operand(2, lb, 4, 9, 10, batched ? 13 : null),
        body: [],
        stores: [{ buf: 0, at: affine(batched ? [S(14), S(6), 1] : [S(6), 1], S(5)), value: { k: 'acc' }, dtype: 'float32', node: 0 }],
        sizes: { buf: 3, count: 15 },
      };
      out.set(matmulKey(la, lb, batched, acc), k);
    }
  }
  return out;
}
