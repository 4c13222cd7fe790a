// Lowering + scheduling: Graph -> a list of fused loop kernels and opaque steps over planned
// buffers, as named passes over one explicit state (lower-state.ts). Every fusion decision is
// recorded with its reason (KILN_LOGS=fusion; printers in print.ts and beside each pass).
//
//  1. sharedMatmulSums (materialize-shared.ts): residual streams are computed once, in a matmul's epilogue;
//  2. chooseBuffers: which nodes get a buffer; views and the other pointwise nodes are inlined
//     into their consumers (views are index arithmetic, access.ts);
//  3. allocateBuffers: the buffers and their layouts;
//  4. scheduleKernels: each materialized node by the rules of its kind: pointwise-rules.ts (into
//     a recent kernel of the same shape, a row kernel's or a matmul's epilogue), reduce-rules.ts
//     (reductions over the same input shape and dims share one row kernel), matmul-rules.ts;
//     everything else (gather, scatter, im2col, cumsum, random, custom ops) is an opaque step
//     that runs the eager kernel on planned buffers;
//  5. writeMutations: in-place writes, straight into the target's buffer when safe;
//  then the outputs' strided views. After lowering, the compiler runs dropDeadStores
//  (dead-stores.ts), fuseAttention and groupHorizontally (horizontal.ts).
//
// A rule answers with its reason or a refusal (verdict.ts); a refusal to materialize a node
// starts lowering over with that node materialized.

import type { Graph } from '../capture/graph.js';
import type { BufferView } from '../../ir/lowered.js';
import type { Lowered } from './lowered.js';
import { allocateBuffers } from './allocate-buffers.js';
import { chooseBuffers } from './choose-buffers.js';
import { newLowerState } from './lower-state.js';
import { sharedMatmulSums } from './materialize-shared.js';
import { stridedView } from './buffer-reads.js';
import { scheduleKernels } from './schedule-kernels.js';
import { blockedMessage, isBlocked, type Blocked } from './verdict.js';
import { writeMutations } from './write-mutations.js';

/**
 * Lowers a graph. A refusal to materialize a node (a kernel needed its value from a buffer) is
 * answered by lowering again with that node materialized; each node is asked for once at most.
 */
export function lower(graph: Graph): Lowered {
  const shared = sharedMatmulSums(graph);
  const forced = new Set<number>(shared.forced);
  for (let attempt = 0; attempt <= graph.nodes.length; attempt++) {
    const l = lowerOnce(graph, forced);
    if (!isBlocked(l)) {
      l.decisions.unshift(...shared.decisions);
      return l;
    }
    if (l.kind !== 'materialize' || forced.has(l.node)) throw new Error(blockedMessage(l));
    forced.add(l.node);
  }
  throw new Error('kiln internal: lowering did not converge');
}

/** The passes, in order: buffers, kernels, in-place writes, the outputs' views. */
function lowerOnce(graph: Graph, forced: ReadonlySet<number>): Lowered | Blocked {
  const choice = chooseBuffers(graph, forced);
  const st = newLowerState(graph, choice.mat, allocateBuffers(graph.nodes, choice.mat), choice.decisions);
  const blocked = scheduleKernels(st) ?? writeMutations(st);
  if (blocked) return blocked;
  const outputs: BufferView[] = [];
  for (const o of graph.outputs) {
    const v = stridedView(st, o);
    if (isBlocked(v)) return v;
    outputs.push(v);
  }
  return { steps: st.steps, buffers: st.buffers, inputBuffers: st.inputBuffers, outputs, decisions: st.decisions, nodeOps: graph.nodes.map((n) => n.op) };
}
