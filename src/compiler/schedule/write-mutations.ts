// Pass: in-place writes (parameters, optimizer state). The kernel that computes the new value
// writes it straight into the target's buffer when that is safe; otherwise a final copy kernel
// writes it back.

import { numel } from '../../core/shape.js';
import { flattenAccess, sameAff } from '../../ir/affine.js';
import { kernelLoadExprs, kernelLoads, kernelStores, type PointwiseKernel } from '../../ir/loop-ir.js';
import { isContiguousLayout, shapeAccess } from './access.js';
import { exprOf } from './expr.js';
import type { Step } from './lowered.js';
import { kernelName, nextCtx, type LowerState } from './lower-state.js';
import { viewRoot } from './node-kinds.js';
import { newStage } from './stage.js';
import { isBlocked, type Blocked } from './verdict.js';

export function writeMutations(st: LowerState): Blocked | null {
  for (const m of st.graph.mutations) {
    if (writeInPlace(st, m.target, m.value)) {
      st.decisions.push({ decision: 'fused', nodes: [m.value, m.target], reason: `in-place update: %${m.value} is written straight into %${m.target}'s buffer` });
      continue;
    }
    const r = writeBack(st, m.target, m.value);
    if (r) return r;
  }
  return null;
}

/** A copy kernel from the value into the target, after everything else. */
function writeBack(st: LowerState, targetId: number, valueId: number): Blocked | null {
  const target = st.nodes[targetId]!;
  const shape = target.meta.shape;
  const acc = shapeAccess(shape);
  const body = newStage();
  const kernel: PointwiseKernel = { kind: 'pointwise', name: kernelName(st, 'writeback'), shape, body: body.stmts, stores: [] };
  const v = exprOf(st, valueId, acc, nextCtx(st, shape.length), body);
  if (isBlocked(v)) return v;
  const l = st.layoutOf.get(targetId)!;
  kernel.stores.push({ buf: st.bufOf.get(targetId)!, at: flattenAccess(acc, l.strides, l.offset, shape.length), value: v, dtype: target.meta.dtype, node: targetId });
  st.steps.push({ kind: 'kernel', kernel });
  return null;
}

/** Redirects the store of the value into the target's buffer when no one would notice; whether it did. */
function writeInPlace(st: LowerState, targetId: number, valueId: number): boolean {
  const target = st.nodes[targetId]!;
  const bt = st.bufOf.get(targetId)!, bv = st.bufOf.get(valueId);
  const lt = st.layoutOf.get(targetId)!;
  if (bv === undefined || st.buffers[bv]!.kind !== 'scratch') return false;
  if (lt.offset !== 0 || !isContiguousLayout(target.meta.shape, lt.strides) || st.buffers[bv]!.dtype !== target.meta.dtype || st.buffers[bv]!.size !== numel(target.meta.shape)) return false;
  const { graph } = st;
  if (graph.outputs.some((o) => viewRoot(st.nodes, o) === valueId) || graph.mutations.some((m) => m.target !== targetId && m.value === valueId)) return false;
  const at = st.steps.findIndex((s) => s.kind === 'kernel' && kernelStores(s.kernel).some((x) => x.buf === bv));
  if (at < 0) return false;
  const k = (st.steps[at] as Extract<Step, { kind: 'kernel' }>).kernel;
  const store = kernelStores(k).find((x) => x.buf === bv)!;
  if (kernelStores(k).some((x) => x.buf === bt)) return false;
  if (k.kind === 'matmul' && (k.a.buf === bt || k.b.buf === bt)) return false;
  if (!kernelLoadExprs(k).every((l) => l.buf !== bt || sameAff(l.at, store.at))) return false;
  if (readAfter(st.steps, at, bt) || readAfter(st.steps, at, bv)) return false;
  (store as { buf: number }).buf = bt;
  return true;
}

/** Whether a step after `at` reads buffer b. */
function readAfter(steps: readonly Step[], at: number, b: number): boolean {
  for (let i = at + 1; i < steps.length; i++) {
    const s = steps[i]!;
    const reads = s.kind === 'kernel' ? kernelLoads(s.kernel) : new Set(s.inputs.map((v) => v.buf));
    if (reads.has(b)) return true;
  }
  return false;
}
