// What one launch of a loop kernel moves and computes, for the profiler's achieved rates:
//  - bytes: the compulsory traffic, every element the kernel reads or writes counted once
//    (what a kernel with perfect caching moves; a matmul's operands once each, not once per
//    use). Per buffer: the distinct affine accesses, each touching the product of the extents of
//    the loop variables it depends on, capped at the buffer's size;
//  - flops: a matmul's 2·M·N·K per batch entry plus its epilogue, and one per scalar op the
//    loop IR evaluates per element (a transcendental such as exp or tanh counts as one; casts,
//    copies and loads count zero).
// Static kernels only (a dynamic program's kernels are specialized to the call's sizes first).

import { itemSize, type DType } from '../../core/dtype.js';
import type { Affine, LExpr, LoopKernel, MatmulOperand, Stmt, Store } from '../../ir/loop-ir.js';
import { bufferDTypes, exprLoads } from '../../ir/loop-ir.js';
import type { BufferInfo } from '../../ir/lowered.js';

export interface KernelCost {
  readonly bytes: number;
  readonly flops: number;
}

const prod = (xs: readonly number[]): number => xs.reduce((a, b) => a * b, 1);

/** Elements an affine access touches over loops of these extents (the vars it depends on). */
function footprint(at: Affine, extents: readonly number[]): number {
  let n = 1;
  at.c.forEach((c, v) => {
    if (c !== 0) n *= extents[v] ?? 1;
  });
  return n;
}

/** Accumulates distinct accesses per buffer: key -> elements. */
class Traffic {
  private readonly per = new Map<number, Map<string, number>>();
  add(buf: number, key: string, elements: number): void {
    let m = this.per.get(buf);
    if (!m) this.per.set(buf, (m = new Map()));
    m.set(key, Math.max(m.get(key) ?? 0, elements));
  }
  access(buf: number, at: Affine, extents: readonly number[]): void {
    this.add(buf, `${at.c.map((c, v) => (c !== 0 && (extents[v] ?? 1) > 1 ? c : 0)).join(',')}+${at.o}`, footprint(at, extents));
  }
  bytes(dtypes: ReadonlyMap<number, DType>, buffers: readonly BufferInfo[]): number {
    let total = 0;
    for (const [buf, m] of this.per) {
      const elems = [...m.values()].reduce((a, b) => a + b, 0);
      const cap = buffers[buf]?.size ?? elems;
      total += Math.min(elems, cap) * itemSize(dtypes.get(buf) ?? buffers[buf]?.dtype ?? 'float32');
    }
    return total;
  }
}

/** Scalar ops in an expression (op nodes, identities excluded). */
function opCount(e: LExpr): number {
  if (e.k === 'op') return (e.op === 'identity' ? 0 : 1) + e.a.reduce((a, x) => a + opCount(x), 0);
  if (e.k === 'cast') return opCount(e.a);
  return 0;
}
const stmtOps = (body: readonly Stmt[]): number => body.reduce((a, s) => a + opCount(s.e), 0);
const storeOps = (stores: readonly Store[]): number => stores.reduce((a, s) => a + opCount(s.value), 0);

function loadsOf(t: Traffic, exprs: readonly LExpr[], extents: readonly number[]): void {
  for (const e of exprs) for (const l of exprLoads(e)) t.access(l.buf, l.at, extents);
}
function storesOf(t: Traffic, stores: readonly Store[], extents: readonly number[]): void {
  for (const s of stores) t.access(s.buf, s.at, extents);
}

/** A matmul operand read once: batch vars it moves with, times its rows x cols. */
function operandElements(op: MatmulOperand, batch: readonly number[], rows: number, cols: number): number {
  return footprint(op.base, batch) * rows * cols;
}

function costInto(k: LoopKernel, t: Traffic): number {
  if (k.kind === 'group') return k.parts.reduce((a, p) => a + costInto(p, t), 0);
  if (k.kind === 'pointwise') {
    const ext = k.shape;
    loadsOf(t, [...k.body.map((s) => s.e), ...k.stores.map((s) => s.value)], ext);
    storesOf(t, k.stores, ext);
    return prod(ext) * (stmtOps(k.body) + storeOps(k.stores));
  }
  if (k.kind === 'row') {
    const ext = [...k.outer, ...k.inner];
    const rows = prod(k.outer), all = prod(ext);
    let flops = 0;
    for (const r of k.reductions) {
      loadsOf(t, [...r.body.map((s) => s.e), r.value], ext);
      // the accumulation itself, and an online pair's rescale / running-mean update
      flops += all * (stmtOps(r.body) + opCount(r.value) + 1 + (r.online && r.online.kind !== 'sibling' ? 2 : 0));
    }
    loadsOf(t, [...k.outerBody.map((s) => s.e), ...k.outerStores.map((s) => s.value)], ext);
    loadsOf(t, [...k.rowBody.map((s) => s.e), ...k.rowStores.map((s) => s.value)], ext);
    storesOf(t, k.outerStores, ext);
    storesOf(t, k.rowStores, ext);
    return flops + rows * (stmtOps(k.outerBody) + storeOps(k.outerStores)) + all * (stmtOps(k.rowBody) + storeOps(k.rowStores));
  }
  if (k.kind === 'attention') {
    const ext = [...k.batch, k.rows, k.keys], out = [...k.batch, k.rows, k.width];
    t.add(k.query.buf, 'Q', operandElements(k.query, k.batch, k.rows, k.depth));
    t.add(k.key.buf, 'K', operandElements(k.key, k.batch, k.depth, k.keys));
    t.add(k.value.buf, 'V', operandElements(k.value, k.batch, k.keys, k.width));
    loadsOf(t, [...k.score.body.map((s) => s.e), k.score.value], ext);
    loadsOf(t, [...k.body.map((s) => s.e), ...k.stores.map((s) => s.value)], out);
    storesOf(t, k.stores, out);
    const scores = prod(ext), outs = prod(out);
    // q·k and p·v, the score statements, and per score the max, exp, sum (the online rescale per block is not counted)
    return 2 * scores * (k.depth + k.width) + scores * (stmtOps(k.score.body) + opCount(k.score.value) + 3) + outs * (1 + stmtOps(k.body) + storeOps(k.stores));
  }
  const ext = [...k.batch, k.m, k.n];
  t.add(k.a.buf, 'A', operandElements(k.a, k.batch, k.m, k.k));
  t.add(k.b.buf, 'B', operandElements(k.b, k.batch, k.k, k.n));
  loadsOf(t, [...k.body.map((s) => s.e), ...k.stores.map((s) => s.value)], ext);
  storesOf(t, k.stores, ext);
  const outs = prod(ext);
  return 2 * outs * k.k + outs * (stmtOps(k.body) + storeOps(k.stores));
}

/** Bytes and FLOPs of one launch of `k` over the program's buffers. */
export function kernelCost(k: LoopKernel, buffers: readonly BufferInfo[]): KernelCost {
  const t = new Traffic();
  const flops = costInto(k, t);
  return { bytes: t.bytes(bufferDTypes(k), buffers), flops };
}
