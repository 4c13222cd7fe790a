// How lowering classifies graph nodes: views (index arithmetic over their input), pointwise
// nodes (scalar expressions, inlined into their consumers), reductions and the rest.

import { BINARY_OPS, TERNARY_OPS, UNARY_OPS } from '../../ir/scalar-expr.js';
import type { GraphNode } from '../capture/graph.js';

const SCALAR_OPS = new Set<string>([...UNARY_OPS, ...BINARY_OPS, ...TERNARY_OPS]);
export const VIEWS: ReadonlySet<string> = new Set(['reshape', 'permute', 'expand', 'slice']);
export const REDUCTIONS: ReadonlySet<string> = new Set(['sum', 'prod', 'max', 'min', 'argmax', 'argmin']);

export function isPointwiseNode(n: GraphNode): boolean {
  return SCALAR_OPS.has(n.op) || n.op === 'cast' || n.op === 'full';
}

/** A node a kernel can compute from its inputs (a view or a pointwise node). */
export function isInlinable(n: GraphNode): boolean {
  return isPointwiseNode(n) || VIEWS.has(n.op);
}

/** The node whose buffer a view reads (the node itself when it is not a view). */
export function viewRoot(nodes: readonly GraphNode[], id: number): number {
  let r = id;
  while (VIEWS.has(nodes[r]!.op)) r = nodes[r]!.inputs[0]!;
  return r;
}

/** The consumers of each node, by node id. */
export function consumersOf(nodes: readonly GraphNode[]): number[][] {
  const consumers = nodes.map(() => [] as number[]);
  for (const n of nodes) for (const i of n.inputs) consumers[i]!.push(n.id);
  return consumers;
}

/** The nodes that read `id`, looking through views, each once. */
export function realConsumers(id: number, nodes: readonly GraphNode[], consumers: readonly number[][]): number[] {
  const out: number[] = [];
  const walk = (i: number) => {
    for (const c of consumers[i]!) {
      if (VIEWS.has(nodes[c]!.op)) walk(c);
      else out.push(c);
    }
  };
  walk(id);
  return [...new Set(out)];
}
