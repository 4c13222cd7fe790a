// Rules for a materialized pointwise node (or a view that needs a copy): it joins a recent
// kernel as another output when the shapes line up (a pointwise kernel of the same shape, a row
// kernel's per-row or per-element epilogue, a matmul's epilogue), else it opens a pointwise
// kernel of its own. Each rule answers with its reason, or why not.

import { flattenAccess, unitAff, type Affine } from '../../ir/affine.js';
import type { PointwiseKernel, Store } from '../../ir/loop-ir.js';
import type { GraphNode } from '../capture/graph.js';
import { keptDims, outerAccess, sameList, shapeAccess } from './access.js';
import { defineExpr } from './expr.js';
import { hostStages, rememberStored, storedLocal, type Host, type PointwiseHost, type RowHost } from './host.js';
import { kernelName, nextCtx, openHost, storeTo, type LowerState } from './lower-state.js';
import { markStages, newStage, rewindStages, type Stage } from './stage.js';
import { isBlocked, noFuse, type Blocked } from './verdict.js';

/**
 * How many of the latest kernels a pointwise node tries to join, newest first. Not only the
 * last: a backward matmul's epilogue often comes after an unrelated kernel in graph order. Eight
 * covers the kernels of one layer's backward; the bound keeps each node's search constant, so
 * scheduling stays linear in the graph's size.
 */
export const EPILOGUE_SEARCH_WINDOW = 8;

/** Where a node's value goes in a host: the access it is computed at, in which stage, stored to which list. */
interface Placement {
  readonly acc: Affine[];
  readonly nv: number;
  readonly stage: Stage;
  readonly stores: Store[];
  readonly reason: string;
}

/** A shape mismatch: the host does not loop over this node's elements (not a decision worth logging). */
interface Mismatch {
  readonly kind: 'shape';
  readonly why: string;
}

type Fused = { readonly ok: true; readonly reason: string } | Blocked | Mismatch;

function placeIn(h: Host, n: GraphNode): Placement | Mismatch {
  const mismatch = (shape: readonly number[]): Mismatch => ({ kind: 'shape', why: `shape [${n.meta.shape.join(', ')}] is not the kernel's [${shape.join(', ')}]` });
  if (h.kind === 'pointwise') {
    const k = h.kernel;
    if (!sameList(k.shape, n.meta.shape)) return mismatch(k.shape);
    return { acc: shapeAccess(k.shape), nv: k.shape.length, stage: h.body, stores: k.stores, reason: `pointwise into ${k.name} (same shape, another output)` };
  }
  if (h.kind === 'row') return placeInRow(h, n) ?? { kind: 'shape', why: `shape [${n.meta.shape.join(', ')}] is neither the rows' [${h.full.join(', ')}] nor the reduction's` };
  const k = h.kernel;
  const shape = [...k.batch, k.m, k.n];
  if (!sameList(shape, n.meta.shape)) return mismatch(shape);
  return { acc: shapeAccess(shape), nv: shape.length, stage: h.body, stores: k.stores, reason: `epilogue of matmul ${k.name}` };
}

/** Per element of the row (the reduced input's shape) or per row (the reduction's shape, with or without keepdim). */
function placeInRow(h: RowHost, n: GraphNode): Placement | null {
  const { full, reduced, dimsToVar } = h;
  const nv = h.ctx.nv;
  const reason = `epilogue of row kernel ${h.kernel.name}`;
  if (sameList(n.meta.shape, full)) return { acc: full.map((_, d) => unitAff(nv, dimsToVar[d]!)), nv, stage: h.row, stores: h.kernel.rowStores, reason };
  const keepdim = sameList(n.meta.shape, full.map((s, d) => (reduced.includes(d) ? 1 : s)));
  if (!keepdim && !sameList(n.meta.shape, keptDims(full, reduced).map((d) => full[d]!))) return null;
  return { acc: outerAccess(full, reduced, keepdim, dimsToVar, nv), nv, stage: h.outer, stores: h.kernel.outerStores, reason };
}

/** Computes n in host h and stores it there; a refusal leaves h as it was. */
function fuseInto(st: LowerState, h: Host, n: GraphNode): Fused {
  const p = placeIn(h, n);
  if ('kind' in p) return p;
  const mark = markStages(st, hostStages(h));
  const v = defineExpr(st, n, p.acc, h.ctx, p.stage);
  if (isBlocked(v)) {
    rewindStages(st, mark);
    return v;
  }
  p.stores.push(storeTo(st, n, flattenAccess(p.acc, st.layoutOf.get(n.id)!.strides, 0, p.nv), v, h.ctx));
  rememberStored(h, n, p.acc, v, p.stage);
  return { ok: true, reason: p.reason };
}

function openPointwise(st: LowerState, n: GraphNode): PointwiseHost {
  const body = newStage();
  const kernel: PointwiseKernel = { kind: 'pointwise', name: kernelName(st, n.op), shape: n.meta.shape, body: body.stmts, stores: [] };
  const h: PointwiseHost = { kind: 'pointwise', kernel, body, stored: new Map(), ctx: nextCtx(st, n.meta.shape.length, (id, acc, stage) => storedLocal(h, id, acc, stage)) };
  return openHost(st, h);
}

/** Schedules pointwise node n: into one of the latest kernels, else a kernel of its own. */
export function schedulePointwise(st: LowerState, n: GraphNode): Blocked | null {
  const latest = st.hosts[st.hosts.length - 1];
  for (const h of st.hosts.slice(-EPILOGUE_SEARCH_WINDOW).reverse()) {
    const r = fuseInto(st, h, n);
    if ('ok' in r) {
      st.decisions.push({ decision: 'fused', nodes: [n.id], reason: r.reason });
      st.producedAt.set(n.id, h.ctx.seq);
      return null;
    }
    if (r.kind === 'materialize') return r;
    if (r.kind === 'no-fuse' && h === latest) st.decisions.push({ decision: 'materialized', nodes: [n.id], reason: `not fused into ${h.kernel.name}: ${r.why}` });
  }
  const own = openPointwise(st, n);
  const r = fuseInto(st, own, n);
  if ('ok' in r) {
    st.producedAt.set(n.id, own.ctx.seq);
    return null;
  }
  return r.kind === 'shape' ? noFuse(r.why) : r; // (its own kernel has its shape)
}
