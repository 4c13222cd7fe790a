// Pass (before lowering): shared sums of a matmul's output are computed once, in its epilogue.
// Lowering inlines a pointwise value into every kernel that reads it, which is right for cheap
// values of one buffer but not for a residual stream: h = x + proj(..) (+ bias) is read by the
// next layer norm (both of its passes) and by the next residual add, so every later kernel
// recomputed the whole chain of sums from each earlier matmul's raw product (the last layer
// norm of a 2-layer decoder read five buffers per element, a 12-layer one would read 25). A
// pointwise node is materialized when (1) it has more than one consumer, (2) computing it reads
// at least two full-size buffers, and (3) one of them is a matmul output used only to compute
// it, so the matmul's epilogue computes and stores it and each consumer reads one buffer.
// Each choice is a fusion decision with its reason.

import { numel } from '../../core/shape.js';
import type { Graph } from '../capture/graph.js';
import type { FusionDecision } from '../../ir/lowered.js';
import { consumersOf, isInlinable, isPointwiseNode, realConsumers, REDUCTIONS } from './node-kinds.js';

export function sharedMatmulSums(graph: Graph): { forced: number[]; decisions: FusionDecision[] } {
  const nodes = graph.nodes;
  const consumers = consumersOf(nodes);
  const readers = (id: number): number[] => realConsumers(id, nodes, consumers);
  const forced: number[] = [];
  const decisions: FusionDecision[] = [];
  const chosen = new Set<number>();
  for (const n of nodes) {
    if (!isPointwiseNode(n) || graph.outputs.includes(n.id)) continue;
    const rs = readers(n.id);
    if (rs.length < 2) continue;
    // read as a matmul operand or by an opaque op: lowering gives it a buffer anyway
    if (rs.some((r) => !isPointwiseNode(nodes[r]!) && !REDUCTIONS.has(nodes[r]!.op))) continue;
    // the buffers computing n reads: the non-inlined nodes under its pointwise / view tree
    const tree = new Set<number>();
    const leaves = new Set<number>();
    const walk = (id: number) => {
      const x = nodes[id]!;
      if (!isInlinable(x) || chosen.has(id) || (id !== n.id && graph.outputs.includes(id))) return void leaves.add(id);
      if (tree.has(id)) return;
      tree.add(id);
      x.inputs.forEach(walk);
    };
    walk(n.id);
    const size = numel(n.meta.shape);
    const full = [...leaves].filter((id) => numel(nodes[id]!.meta.shape) >= size);
    if (full.length < 2) continue;
    // a matmul output whose every reader is inside n's tree: its epilogue can produce n
    const mm = full.find((id) => nodes[id]!.op === 'matmul' && readers(id).every((r) => tree.has(r)));
    if (mm === undefined) continue;
    chosen.add(n.id);
    forced.push(n.id);
    decisions.push({ decision: 'materialized', nodes: [n.id], reason: `${n.op} %${n.id} reads ${full.length} full-size buffers (%${full.join(', %')}) and has ${rs.length} consumers (%${rs.join(', %')}): computed once in matmul %${mm}'s epilogue instead of in each consumer` });
  }
  return { forced, decisions };
}
