// Rules for a reduction: it joins the open row kernel when that kernel reduces an input of the
// same shape over the same dims (softmax, layer norm, cross-entropy: all their reductions in
// one kernel, in the same pass where online.ts finds a formulation), else it opens a row kernel.

import { flattenAccess, sameAff, unitAff, zeroAff, type Affine } from '../../ir/affine.js';
import type { ReduceOp } from '../../ir/kernel-spec.js';
import type { RowKernel } from '../../ir/loop-ir.js';
import type { GraphNode } from '../capture/graph.js';
import { keptDims, outerAccess, sameList } from './access.js';
import { exprOf } from './expr.js';
import { hostStages, storedLocal, type RowHost } from './host.js';
import { kernelName, nextCtx, openHost, storeTo, type LowerState } from './lower-state.js';
import { detectOnline } from './online.js';
import { markStages, newStage, rewindStages } from './stage.js';
import { isBlocked, noFuse, type Blocked, type Built } from './verdict.js';

interface ReduceAttrs {
  readonly dims: number[];
  readonly keepdim: boolean;
}

/** Schedules reduction n: into the open row kernel when it fits, else a row kernel of its own. */
export function scheduleReduction(st: LowerState, n: GraphNode): Blocked | null {
  const full = st.nodes[n.inputs[0]!]!.meta.shape;
  const reduced = (n.attrs as ReduceAttrs).dims;
  const h = st.open;
  if (h?.kind === 'row' && sameList(h.full, full) && sameList(h.reduced, reduced)) {
    const mark = markStages(st, hostStages(h));
    const r = addReduction(st, h, n);
    if (!r) {
      const online = detectOnline(h.kernel, h.kernel.inner.reduce((x, y) => x * y, 1));
      st.decisions.push({ decision: 'fused', nodes: [n.id], reason: `${n.op} joins row kernel ${h.kernel.name} (same input shape and dims)${online ? `, in the same pass as the reduction before it (${online} formulation)` : ''}` });
      st.producedAt.set(n.id, h.ctx.seq);
      return null;
    }
    rewindStages(st, mark);
    if (r.kind === 'materialize') return r;
  }
  const own = openRow(st, n, full, reduced);
  const r = addReduction(st, own, n);
  if (r) return r;
  st.producedAt.set(n.id, own.ctx.seq);
  return null;
}

/** Adds reduction n (over the host's dims) to row kernel h, with a store of its value (dropped later if nobody reads it). */
function addReduction(st: LowerState, h: RowHost, n: GraphNode): Blocked | null {
  const { full, reduced, dimsToVar } = h;
  const nv = h.ctx.nv;
  const body = newStage();
  const value = exprOf(st, n.inputs[0]!, full.map((_, d) => unitAff(nv, dimsToVar[d]!)), h.ctx, body);
  if (isBlocked(value)) return value;
  const rid = st.tmpId++;
  h.kernel.reductions.push({ id: rid, op: n.op as ReduceOp, body: body.stmts, value, node: n.id });
  h.reds.set(n.id, rid);
  const outAcc = outerAccess(full, reduced, (n.attrs as ReduceAttrs).keepdim, dimsToVar, nv);
  h.kernel.outerStores.push(storeTo(st, n, flattenAccess(outAcc, st.layoutOf.get(n.id)!.strides, 0, nv), { k: 'red', id: rid }, h.ctx));
  return null;
}

/** A row kernel over `full`: the kept dims are the outer loop vars, the reduced dims the inner ones. */
function openRow(st: LowerState, n: GraphNode, full: readonly number[], reduced: readonly number[]): RowHost {
  const kept = keptDims(full, reduced);
  const dimsToVar = full.map((_, d) => (reduced.includes(d) ? kept.length + reduced.indexOf(d) : kept.indexOf(d)));
  const outer = newStage();
  const row = newStage(outer, reduced.map((_, i) => kept.length + i));
  const kernel: RowKernel = {
    kind: 'row', name: kernelName(st, n.op), outer: kept.map((d) => full[d]!), inner: reduced.map((d) => full[d]!),
    reductions: [], outerBody: outer.stmts, outerStores: [], rowBody: row.stmts, rowStores: [],
  };
  const h: RowHost = {
    kind: 'row', kernel, outer, row, full, reduced, dimsToVar, reds: new Map(), stored: new Map(),
    ctx: nextCtx(st, full.length, (id, acc, stage) => (h.reds.has(id) ? reductionValue(st, h, id, acc) : storedLocal(h, id, acc, stage))),
  };
  return openHost(st, h);
}

/** A reduction this kernel computes, read at the index it is computed for (elsewhere: not in registers). */
function reductionValue(st: LowerState, h: RowHost, id: number, acc: readonly Affine[]): Built {
  const { full, dimsToVar } = h;
  const nv = h.ctx.nv;
  const ra = st.nodes[id]!.attrs as ReduceAttrs;
  const at = (d: number) => (full[d] === 1 ? zeroAff(nv) : unitAff(nv, dimsToVar[d]!));
  const want = ra.keepdim ? full.map((_, d) => (ra.dims.includes(d) ? null : at(d))) : keptDims(full, ra.dims).map(at);
  if (want.length === acc.length && want.every((w, i) => w === null || sameAff(w, acc[i]!))) return { k: 'red', id: h.reds.get(id)! };
  return noFuse(`reduction %${id} read at another index`);
}
