// Loop IR: what a fused kernel computes, independent of the language it is rendered in.
// Indices are affine in the loop variables, so movement ops (transpose, broadcast, slice,
// reshape of contiguous data) are index arithmetic, never copies.

import type { DType } from '../core/dtype.js';
import type { ReduceOp } from './kernel-spec.js';
import type { ScalarOp } from './scalar-expr.js';
import type { Sym } from './symbolic.js';
import type { Affine } from './affine.js';
import { specializeTree } from './sym-tree.js';
import { symAdd, symConst, symMul, symToString } from './symbolic.js';

// Dynamic shapes (issue 7): a kernel of a dynamic program carries, next to any number that
// depends on a size, an optional `<field>Sym` (a polynomial in the size symbols s0, s1, ...;
// see sym-tree.ts). The number itself then holds the value at hint sizes, used only for
// keys and `!== 0` tests. Static kernels have none of these fields and look exactly as before.
// Renderers that read symbols (JS, wasm, native C: `Backend.symbolicKernels`) render the
// kernel once; the others (WebGPU for now) run `specializeKernel(kernel, sizes)`.

export type { Affine } from './affine.js';

/** Where a dynamic kernel reads its sizes at call time: buffer `buf` holds s0, s1, ... (float64). */
export interface KernelSizes {
  readonly buf: number;
  readonly count: number;
}

export type LExpr =
  | { readonly k: 'load'; readonly buf: number; readonly at: Affine; readonly dtype: DType }
  | { readonly k: 'const'; readonly v: number; readonly vSym?: Sym }
  | { readonly k: 'op'; readonly op: ScalarOp; readonly a: readonly LExpr[]; readonly dtype: DType }
  | { readonly k: 'cast'; readonly a: LExpr; readonly dtype: DType }
  /** a value computed earlier in the same loop body */
  | { readonly k: 'tmp'; readonly id: number }
  /** the result of a reduction of the current row (row kernels) */
  | { readonly k: 'red'; readonly id: number }
  /** the matmul accumulator at this output element (matmul epilogues) */
  | { readonly k: 'acc' };

export interface Stmt {
  readonly id: number;
  readonly e: LExpr;
}

export interface Store {
  readonly buf: number;
  readonly at: Affine;
  readonly value: LExpr;
  readonly dtype: DType;
  /** the graph node whose value this stores (for printing) */
  readonly node: number;
}

export interface Reduction {
  readonly id: number;
  readonly op: ReduceOp;
  /** statements of the reduction loop; `value` is accumulated */
  readonly body: Stmt[];
  value: LExpr;
  readonly node: number;
  /**
   * Computed in the same loop as the reduction before it, in one pass:
   *  - 'softmax': this is sum(exp(v - g(max))) over the values v the previous max reduces;
   *    `shift` is g, an expression of that max (online softmax: rescale when the max grows);
   *  - 'welford': this is sum((v - sum/n)^2) over the values v the previous sum reduces
   *    (Welford's running mean and squared deviations).
   */
  online?: { readonly kind: 'softmax'; readonly shift: LExpr } | { readonly kind: 'welford'; readonly n: number; readonly nSym?: Sym } | { readonly kind: 'sibling' };
}

export interface PointwiseKernel {
  readonly kind: 'pointwise';
  readonly name: string;
  readonly shape: readonly number[];
  readonly body: Stmt[];
  readonly stores: Store[];
  readonly shapeSym?: readonly (Sym | null)[];
  sizes?: KernelSizes;
}

/** Reductions over the inner dims of each outer index, then an epilogue per row and per element. */
export interface RowKernel {
  readonly kind: 'row';
  readonly name: string;
  readonly outer: readonly number[];
  readonly inner: readonly number[];
  readonly reductions: Reduction[];
  /** per row, after the reductions (vars: outer only) */
  readonly outerBody: Stmt[];
  readonly outerStores: Store[];
  /** per element of the row, after the reductions (vars: outer + inner) */
  readonly rowBody: Stmt[];
  readonly rowStores: Store[];
  readonly outerSym?: readonly (Sym | null)[];
  readonly innerSym?: readonly (Sym | null)[];
  sizes?: KernelSizes;
}

export interface MatmulOperand {
  readonly buf: number;
  /** offset as a function of the batch vars */
  readonly base: Affine;
  /** element stride along the row (m or k) and column (k or n) */
  readonly sRow: number;
  readonly sCol: number;
  readonly sRowSym?: Sym;
  readonly sColSym?: Sym;
  /** the element type when it is not the kernel's (eager kernels accumulate float32 data in float64) */
  readonly dtype?: DType;
}

/** C = A·B with a fused epilogue; epilogue vars are batch..., i, j. */
export interface MatmulKernel {
  readonly kind: 'matmul';
  readonly name: string;
  readonly dtype: DType;
  readonly batch: readonly number[];
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly a: MatmulOperand;
  readonly b: MatmulOperand;
  readonly body: Stmt[];
  readonly stores: Store[];
  /** cache blocking chosen by max-autotune (default blocking when absent) */
  tiles?: { readonly kc: number; readonly mc: number; readonly nc: number };
  readonly batchSym?: readonly (Sym | null)[];
  readonly mSym?: Sym;
  readonly nSym?: Sym;
  readonly kSym?: Sym;
  sizes?: KernelSizes;
}

/**
 * Horizontal fusion: independent (or ordered) pointwise loops launched as one kernel, e.g.
 * the optimizer's update of every parameter of a training step.
 */
export interface GroupKernel {
  readonly kind: 'group';
  readonly name: string;
  readonly parts: readonly PointwiseKernel[];
  sizes?: KernelSizes;
}

/**
 * Attention as one kernel (flash-attention style; fuse-attention.ts makes it from a score
 * matmul, its softmax row kernel and the matmul by V): per batch entry and block of query rows,
 * the scores s = f(q_i·k_j) (the score statements, vars batch..., i, j, `acc` the dot product:
 * scaling, masking), a running max m, the shift g(m) of the softmax (`shift`, an expression of
 * `red` `maxId`), l = sum exp(s - g(m)) and o = sum exp(s - g(m)) v_j, rescaled by
 * exp(g(m_old) - g(m_new)) when the max grows; then the epilogue with `acc` = o / l at
 * (batch..., i, c). The same values as softmax(s)·V (the eager formula), NaN and Inf included.
 */
export interface AttentionKernel {
  readonly kind: 'attention';
  readonly name: string;
  readonly dtype: DType;
  readonly batch: readonly number[];
  /** query rows, keys, q·k depth, value width */
  readonly rows: number;
  readonly keys: number;
  readonly depth: number;
  readonly width: number;
  /** q (rows x depth), kᵀ (depth x keys: the B of q·kᵀ), v (keys x width) */
  readonly query: MatmulOperand;
  readonly key: MatmulOperand;
  readonly value: MatmulOperand;
  readonly score: { readonly body: Stmt[]; readonly value: LExpr };
  readonly maxId: number;
  readonly shift: LExpr;
  /** per output element (vars batch..., i, c) */
  readonly body: Stmt[];
  readonly stores: Store[];
  sizes?: KernelSizes;
}

/** Largest q·k depth and value width an attention kernel keeps per row in registers / on the stack (the renderers size arrays by them). */
export const ATTENTION_MAX_DEPTH = 512;
export const ATTENTION_MAX_WIDTH = 512;

export type LoopKernel = PointwiseKernel | RowKernel | MatmulKernel | GroupKernel | AttentionKernel;

// ---- how a kernel splits across threads (the backends' `lo, hi` range) ----

/** Length of the loop a kernel splits across threads (its outermost loop). */
export function kernelExtent(k: LoopKernel): number {
  if (k.kind === 'group') return 1; // parts are split one by one (see the JS backend)
  if (k.kind === 'pointwise') return k.shape[0] ?? 1;
  if (k.kind === 'row') return k.outer[0] ?? 1;
  if (k.kind === 'attention') return k.batch.reduce((a, b) => a * b, 1) * k.rows; // (batch entry, query row) pairs, flattened
  return splitsBatch(k) ? k.batch[0]! : k.m;
}

/** A batched matmul splits its first batch dim across threads when it has more than one entry, else its rows. */
export function splitsBatch(k: MatmulKernel): boolean {
  return k.batch.length > 0 && k.batch[0]! > 1;
}

/** Rough work of a kernel (elements or multiply-adds), to decide whether threads pay off. */
export function kernelWork(k: LoopKernel): number {
  if (k.kind === 'group') return k.parts.reduce((a, p) => a + kernelWork(p), 0);
  if (k.kind === 'pointwise') return k.shape.reduce((a, b) => a * b, 1);
  if (k.kind === 'row') return [...k.outer, ...k.inner].reduce((a, b) => a * b, 1) * Math.max(1, k.reductions.length);
  if (k.kind === 'attention') return k.batch.reduce((a, b) => a * b, 1) * k.rows * k.keys * (k.depth + k.width);
  return k.batch.reduce((a, b) => a * b, 1) * k.m * k.n * k.k;
}

const symOr = (x: number, s?: Sym | null): Sym => s ?? symConst(x);

/** Product of symbolic sizes (1 for none). */
export const symProd = (xs: readonly Sym[]): Sym => xs.reduce((a, b) => symMul(a, b), symConst(1));

/**
 * kernelExtent / kernelWork as polynomials in the sizes (a dynamic kernel's launch evaluates
 * them per size: wasm/dynamic.ts, native/sizes-c.ts).
 */
export function kernelExtentWorkSym(k: LoopKernel): [Sym, Sym] {
  if (k.kind === 'group') return [symConst(1), k.parts.map((p) => kernelExtentWorkSym(p)[1]).reduce(symAdd, symConst(0))];
  if (k.kind === 'pointwise') {
    const sh = k.shape.map((x, i) => symOr(x, k.shapeSym?.[i]));
    return [sh[0] ?? symConst(1), symProd(sh)];
  }
  if (k.kind === 'row') {
    const o = k.outer.map((x, i) => symOr(x, k.outerSym?.[i]));
    const inner = k.inner.map((x, i) => symOr(x, k.innerSym?.[i]));
    return [o[0] ?? symConst(1), symMul(symProd([...o, ...inner]), symConst(Math.max(1, k.reductions.length)))];
  }
  if (k.kind === 'attention') return [symConst(kernelExtent(k)), symConst(kernelWork(k))]; // static only (fuse-attention.ts skips dynamic programs)
  const b = k.batch.map((x, i) => symOr(x, k.batchSym?.[i]));
  const m = symOr(k.m, k.mSym);
  // the renderer chose batch or rows at code generation (from the hint sizes): split the same
  return [splitsBatch(k) ? b[0]! : m, symProd([...b, m, symOr(k.n, k.nSym), symOr(k.k, k.kSym)])];
}

// ---- printer ----

function fmtAffine(a: Affine, names: readonly string[]): string {
  const terms = a.c.map((c, v) => (c === 0 ? '' : a.cSym?.[v] ? `(${symToString(a.cSym[v]!)})*${names[v]}` : c === 1 ? names[v]! : `${c}*${names[v]}`)).filter(Boolean);
  if (a.oSym) terms.push(symToString(a.oSym));
  else if (a.o !== 0 || terms.length === 0) terms.push(String(a.o));
  return terms.join(' + ');
}

/** Sizes as text, symbolic where a dynamic kernel has symbols. */
export const dims = (xs: readonly number[], sym?: readonly (Sym | null)[]): string => xs.map((x, i) => (sym?.[i] ? symToString(sym[i]!) : String(x))).join(', ');
const one = (x: number, sym?: Sym): string => (sym ? symToString(sym) : String(x));

export function fmtExpr(e: LExpr, names: readonly string[]): string {
  switch (e.k) {
    case 'load': return `buf${e.buf}[${fmtAffine(e.at, names)}]`;
    case 'const': return e.vSym ? symToString(e.vSym) : String(e.v);
    case 'tmp': return `t${e.id}`;
    case 'red': return `r${e.id}`;
    case 'acc': return 'acc';
    case 'cast': return `${e.dtype}(${fmtExpr(e.a, names)})`;
    case 'op': return `${e.op}(${e.a.map((x) => fmtExpr(x, names)).join(', ')})`;
  }
}

function fmtStmts(body: readonly Stmt[], names: readonly string[], indent: string): string[] {
  return body.map((s) => `${indent}t${s.id} = ${fmtExpr(s.e, names)}`);
}

function fmtStores(stores: readonly Store[], names: readonly string[], indent: string): string[] {
  return stores.map((s) => `${indent}buf${s.buf}[${fmtAffine(s.at, names)}] = ${fmtExpr(s.value, names)}   (%${s.node})`);
}

/** The loop IR of a kernel as readable text (the `loop IR` stage printer). */
export function printKernel(k: LoopKernel): string {
  const L: string[] = [];
  if (k.kind === 'group') {
    L.push(`kernel ${k.name}: horizontal group of ${k.parts.length} pointwise loops`);
    for (const p of k.parts) L.push(...printKernel(p).split('\n').map((l) => `  ${l}`));
  } else if (k.kind === 'pointwise') {
    const names = k.shape.map((_, d) => `i${d}`);
    L.push(`kernel ${k.name}: pointwise over [${dims(k.shape, k.shapeSym)}]`);
    L.push(...fmtStmts(k.body, names, '  '), ...fmtStores(k.stores, names, '  '));
  } else if (k.kind === 'row') {
    const names = [...k.outer.map((_, d) => `o${d}`), ...k.inner.map((_, d) => `r${d}`)];
    L.push(`kernel ${k.name}: row reduction, outer [${dims(k.outer, k.outerSym)}] x inner [${dims(k.inner, k.innerSym)}]`);
    for (const r of k.reductions) {
      if (r.online && r.online.kind !== 'sibling') {
        L.push(`  r${r.id} = ${r.online.kind === 'softmax' ? `sum of exp(v - ${fmtExpr(r.online.shift, names)}) with the max above, online (same pass)` : 'sum of squared deviations from the mean, Welford (same pass)'}   (%${r.node})`);
        continue;
      }
      if (r.online) {
        L.push(`  r${r.id} = ${r.op} over inner, in the same loop as the reduction above (sibling)   (%${r.node})`);
        L.push(...fmtStmts(r.body, names, '    '), `    ${fmtExpr(r.value, names)}`);
        continue;
      }
      L.push(`  r${r.id} = ${r.op} over inner of:   (%${r.node})`);
      L.push(...fmtStmts(r.body, names, '    '), `    ${fmtExpr(r.value, names)}`);
    }
    if (k.outerBody.length || k.outerStores.length) L.push('  per row:', ...fmtStmts(k.outerBody, names, '    '), ...fmtStores(k.outerStores, names, '    '));
    if (k.rowBody.length || k.rowStores.length) L.push('  per element:', ...fmtStmts(k.rowBody, names, '    '), ...fmtStores(k.rowStores, names, '    '));
  } else if (k.kind === 'attention') {
    const names = [...k.batch.map((_, d) => `b${d}`), 'i', 'j'];
    L.push(`kernel ${k.name}: attention [${dims(k.batch)}${k.batch.length ? ', ' : ''}${k.rows} queries x ${k.keys} keys], q·k depth ${k.depth}, v width ${k.width} ${k.dtype}, online softmax`);
    L.push(`  q = buf${k.query.buf}, kᵀ = buf${k.key.buf}, v = buf${k.value.buf}`);
    L.push('  score (acc = q_i·k_j):', ...fmtStmts(k.score.body, names, '    '), `    ${fmtExpr(k.score.value, names)}`);
    L.push(`  softmax shift: ${fmtExpr(k.shift, names)} (r${k.maxId}: the running max)`);
    L.push('  epilogue (acc = softmax(s)·v at b..., i, c):', ...fmtStmts(k.body, [...names.slice(0, -1), 'c'], '    '), ...fmtStores(k.stores, [...names.slice(0, -1), 'c'], '    '));
  } else {
    const names = [...k.batch.map((_, d) => `b${d}`), 'i', 'j'];
    L.push(`kernel ${k.name}: matmul [${dims(k.batch, k.batchSym)}${k.batch.length ? ', ' : ''}${one(k.m, k.mSym)}x${one(k.k, k.kSym)}] @ [${one(k.k, k.kSym)}x${one(k.n, k.nSym)}] ${k.dtype}`);
    L.push(`  A = buf${k.a.buf}, B = buf${k.b.buf}${k.tiles ? `; tiles kc=${k.tiles.kc} mc=${k.tiles.mc} nc=${k.tiles.nc} (autotuned)` : ''}`);
    L.push('  epilogue:', ...fmtStmts(k.body, names, '    '), ...fmtStores(k.stores, names, '    '));
  }
  return L.join('\n');
}

// ---- walking a kernel's expressions (the one walker: renderers and passes use these) ----

/** A leaf of an expression: what `op` and `cast` nodes combine. */
export type LLeaf = Exclude<LExpr, { readonly k: 'op' | 'cast' }>;
export type LLoad = Extract<LExpr, { readonly k: 'load' }>;

/** Whether `p` holds for some leaf of `e` (loads, constants, temporaries, ...), in evaluation order; stops at the first. */
export function someLeaf(e: LExpr, p: (leaf: LLeaf) => boolean): boolean {
  if (e.k === 'op') return e.a.some((x) => someLeaf(x, p));
  if (e.k === 'cast') return someLeaf(e.a, p);
  return p(e);
}

/** Calls `f` on every leaf of `e`, in evaluation order. */
export function forEachLeaf(e: LExpr, f: (leaf: LLeaf) => void): void {
  someLeaf(e, (x) => (f(x), false));
}

/** Every load of `e`, in evaluation order, appended to `out`. */
export function exprLoads(e: LExpr, out: LLoad[] = []): LLoad[] {
  forEachLeaf(e, (x) => {
    if (x.k === 'load') out.push(x);
  });
  return out;
}

/**
 * Every expression a kernel evaluates: statements, reduced values and stored values (a group's
 * parts in order). A matmul's operands A and B (an attention's q, k, v) are read by the engine,
 * not by an expression.
 */
export function kernelExprs(k: LoopKernel): LExpr[] {
  if (k.kind === 'group') return k.parts.flatMap(kernelExprs);
  const stmts = (b: readonly Stmt[]) => b.map((s) => s.e);
  const values = (st: readonly Store[]) => st.map((x) => x.value);
  if (k.kind === 'row') {
    return [...k.reductions.flatMap((r) => [...stmts(r.body), r.value]), ...stmts(k.outerBody), ...values(k.outerStores), ...stmts(k.rowBody), ...values(k.rowStores)];
  }
  if (k.kind === 'attention') return [...stmts(k.score.body), k.score.value, k.shift, ...stmts(k.body), ...values(k.stores)];
  return [...stmts(k.body), ...values(k.stores)];
}

/** Every load a kernel's expressions make (see kernelExprs). */
export function kernelLoadExprs(k: LoopKernel): LLoad[] {
  const out: LLoad[] = [];
  for (const e of kernelExprs(k)) exprLoads(e, out);
  return out;
}

/** Every buffer a kernel reads (a matmul's operands included). */
export function kernelLoads(k: LoopKernel): Set<number> {
  const out = new Set<number>();
  if (k.kind === 'matmul') (out.add(k.a.buf), out.add(k.b.buf));
  if (k.kind === 'attention') (out.add(k.query.buf), out.add(k.key.buf), out.add(k.value.buf));
  for (const l of kernelLoadExprs(k)) out.add(l.buf);
  return out;
}

export function kernelStores(k: LoopKernel): Store[] {
  if (k.kind === 'group') return k.parts.flatMap((p) => p.stores);
  if (k.kind === 'row') return [...k.outerStores, ...k.rowStores];
  return k.stores;
}

// ---- dynamic kernels ----

/**
 * The static kernel a dynamic one is at concrete sizes (`sizes[i]` is s_i): for renderers
 * without symbolic support (WebGPU), which then compile one kernel per size.
 */
export function specializeKernel<K extends LoopKernel>(k: K, sizes: readonly number[]): K {
  const out = specializeTree(k, sizes) as K & { sizes?: KernelSizes };
  delete out.sizes;
  if (out.kind === 'group') for (const p of out.parts) delete (p as { sizes?: KernelSizes }).sizes;
  return out;
}

/** Every buffer's dtype in a kernel (from its loads and stores; a matmul's operands are its dtype). */
export function bufferDTypes(k: LoopKernel): Map<number, DType> {
  const out = new Map<number, DType>();
  for (const l of kernelLoadExprs(k)) out.set(l.buf, l.dtype);
  if (k.kind === 'matmul') for (const o of [k.a, k.b]) if (!out.has(o.buf)) out.set(o.buf, o.dtype ?? k.dtype);
  if (k.kind === 'attention') for (const b of [k.query.buf, k.key.buf, k.value.buf]) if (!out.has(b)) out.set(b, k.dtype);
  for (const s of kernelStores(k)) out.set(s.buf, s.dtype);
  return out;
}

/**
 * Statements that read no loop variable (e.g. Adam's bias corrections from a 0-d step count):
 * every renderer computes them once before the loops, not once per element.
 */
export function splitInvariant(body: readonly Stmt[]): { invariant: Stmt[]; variant: Stmt[] } {
  const inv = new Set<number>();
  const invariant: Stmt[] = [];
  const variant: Stmt[] = [];
  const isInv = (e: LExpr): boolean => {
    switch (e.k) {
      case 'load': return e.at.c.every((c) => c === 0);
      case 'tmp': return inv.has(e.id);
      case 'op': return e.a.every(isInv);
      case 'cast': return isInv(e.a);
      case 'const': return true;
      default: return false;
    }
  };
  for (const st of body) {
    if (isInv(st.e)) (inv.add(st.id), invariant.push(st));
    else variant.push(st);
  }
  return { invariant, variant };
}

/**
 * Values another reduction's body computes that `group` uses (the one-pass pairs of the JS
 * renderer share them): renderers that give each reduction group its own loop compute them again
 * there. In dependency order.
 */
export function sharedStmts(group: readonly Reduction[], all: readonly Reduction[]): Stmt[] {
  const own = new Set(group.flatMap((r) => r.body.map((s) => s.id)));
  const defs = new Map(all.flatMap((r) => r.body.map((s) => [s.id, s] as const)));
  const need = new Map<number, Stmt>();
  const visit = (e: LExpr): void =>
    forEachLeaf(e, (x) => {
      if (x.k !== 'tmp' || own.has(x.id) || need.has(x.id) || !defs.has(x.id)) return;
      const st = defs.get(x.id)!;
      visit(st.e);
      need.set(x.id, st);
    });
  group.forEach((r) => (r.body.forEach((s) => visit(s.e)), visit(r.value)));
  return [...need.values()];
}
