// Pass: which nodes get a buffer. Inputs, constants, reductions, matmuls and opaque ops always
// do; so do the nodes whose values a consumer must read from memory (a matmul operand, an input
// of an opaque op), graph outputs and in-place values, and expensive pointwise values read by
// several kernels (the cost rule). Every other pointwise node and every view is inlined into
// its consumers. Each choice that is not implied by the node's own kind is a decision with its
// reason.

import type { PointwiseAttrs } from '../../ops/pointwise.js';
import type { Graph, GraphNode } from '../capture/graph.js';
import type { FusionDecision } from '../../ir/lowered.js';
import { consumersOf, isInlinable, isPointwiseNode, realConsumers, REDUCTIONS, VIEWS, viewRoot } from './node-kinds.js';
import { printDecisions } from './print.js';
import { isTranscendental } from '../../ir/scalar-expr.js';

/** How deep the cost rule looks through a pointwise chain for transcendental work. */
const EXPENSIVE_DEPTH = 12;

export interface BufferChoice {
  /** the nodes that get a buffer */
  readonly mat: ReadonlySet<number>;
  readonly decisions: FusionDecision[];
}

/** `forced`: nodes an earlier lowering attempt asked to materialize. */
export function chooseBuffers(graph: Graph, forced: ReadonlySet<number>): BufferChoice {
  const nodes = graph.nodes;
  const mat = new Set<number>(forced);
  const decisions: FusionDecision[] = [];
  const needBuffer = (id: number, why: string) => {
    const r = viewRoot(nodes, id); // a view reads its root's buffer
    if (!mat.has(r) && nodes[r]!.op !== 'input') decisions.push({ decision: 'materialized', nodes: [r], reason: why });
    mat.add(r);
  };
  for (const n of nodes) {
    if (n.op === 'input' || n.op === 'constant') mat.add(n.id);
    else if (REDUCTIONS.has(n.op) || n.op === 'matmul') mat.add(n.id);
    else if (!isInlinable(n)) {
      mat.add(n.id);
      n.inputs.forEach((i) => needBuffer(i, `input of opaque ${n.op} (%${n.id})`));
    }
    if (n.op === 'matmul') n.inputs.forEach((i) => needBuffer(i, `operand of matmul %${n.id}`));
  }
  for (const o of graph.outputs) if (!VIEWS.has(nodes[o]!.op)) mat.add(o);
  for (const m of graph.mutations) if (nodes[m.value]!.op !== 'input') mat.add(m.value);
  computeExpensiveOnce(nodes, mat, decisions);
  return { mat, decisions };
}

/** The cost rule: an expensive pointwise value read by several kernels is computed once. */
function computeExpensiveOnce(nodes: readonly GraphNode[], mat: Set<number>, decisions: FusionDecision[]): void {
  const consumers = consumersOf(nodes);
  for (const n of nodes) {
    if (!isPointwiseNode(n) || mat.has(n.id)) continue;
    const readers = realConsumers(n.id, nodes, consumers);
    if (readers.length > 1 && expensive(n.id, nodes, mat)) {
      mat.add(n.id);
      decisions.push({ decision: 'materialized', nodes: [n.id], reason: `${readers.length} consumers (%${readers.join(', %')}) and recomputing ${n.op} would repeat transcendental work` });
    }
  }
}

function expensive(id: number, nodes: readonly GraphNode[], mat: ReadonlySet<number>, depth = 0): boolean {
  const n = nodes[id]!;
  if (depth > 0 && mat.has(id)) return false;
  if (depth > EXPENSIVE_DEPTH) return true;
  const op = n.op === 'cast' || n.op === 'full' ? n.op : (n.attrs as PointwiseAttrs | undefined)?.op ?? n.op;
  if (isTranscendental(op)) return true;
  return n.inputs.some((i) => isInlinable(nodes[i]!) && expensive(i, nodes, mat, depth + 1));
}

/** The chosen buffers and the decisions behind them. */
export function printBufferChoice(c: BufferChoice): string {
  const ds = printDecisions(c.decisions);
  return `buffers for %${[...c.mat].sort((a, b) => a - b).join(', %')}${ds ? `\n${ds}` : ''}`;
}
