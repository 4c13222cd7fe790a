// Pass: every materialized node, in graph order, becomes part of a kernel (by the rules for its
// kind) or an opaque step that runs its eager kernel on planned buffers (gather, scatter, im2col,
// cumsum, random, custom ops). Views and inlined pointwise nodes need no step of their own.

import { contiguousStrides } from '../../core/shape.js';
import type { GraphNode } from '../capture/graph.js';
import { stridedView } from './buffer-reads.js';
import type { BufferView } from '../../ir/lowered.js';
import type { LowerState } from './lower-state.js';
import { scheduleMatmul } from './matmul-rules.js';
import { isInlinable, REDUCTIONS } from './node-kinds.js';
import { schedulePointwise } from './pointwise-rules.js';
import { scheduleReduction } from './reduce-rules.js';
import { isBlocked, type Blocked } from './verdict.js';

export function scheduleKernels(st: LowerState): Blocked | null {
  for (const n of st.nodes) {
    if (n.op === 'input' || n.op === 'constant') continue;
    if (!st.mat.has(n.id)) continue; // inlined where used, or a view
    const r = scheduleNode(st, n);
    if (r) return r;
  }
  st.open = null;
  return null;
}

function scheduleNode(st: LowerState, n: GraphNode): Blocked | null {
  if (REDUCTIONS.has(n.op)) return scheduleReduction(st, n);
  if (n.op === 'matmul') return scheduleMatmul(st, n);
  if (isInlinable(n)) return schedulePointwise(st, n); // a materialized view is a copy
  return scheduleOpaque(st, n);
}

function scheduleOpaque(st: LowerState, n: GraphNode): Blocked | null {
  st.open = null;
  const inputs: BufferView[] = [];
  for (const i of n.inputs) {
    const v = stridedView(st, i);
    if (isBlocked(v)) return v;
    inputs.push(v);
  }
  st.producedAt.set(n.id, st.steps.length);
  st.steps.push({ kind: 'opaque', node: n, inputs, out: { buf: st.bufOf.get(n.id)!, shape: n.meta.shape, strides: contiguousStrides(n.meta.shape), offset: 0, dtype: n.meta.dtype } });
  st.decisions.push({ decision: 'opaque', nodes: [n.id], reason: `${n.op} runs its eager kernel (no loop IR lowering)` });
  return null;
}
