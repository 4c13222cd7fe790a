// The backward walk: from its roots in reverse topological order, calling each node's backward
// once all gradients flowing into it have been summed. kiln.backward (ops/backward.ts) and the
// compiler's joint trace (src/compiler/aot) run it; the tensor ops it needs come from them as
// GradMath, since ops/ records into autograd and so sits above it.

import { Tensor } from '../tensor/tensor.js';
import { scope } from '../core/scope.js';
import type { AutogradNode } from './node.js';

export interface BackwardOptions {
  /** keep saved tensors so backward can run again through the same graph */
  retainGraph?: boolean;
  /** record the backward pass itself for higher-order gradients */
  createGraph?: boolean;
}

/**
 * Where the gradients that reach the end of the walk go. kiln.backward's accumulates into
 * leaves' .grad; the compiler's joint trace (src/compiler/aot) collects them instead, and
 * stops at nodes of other traces (their gradients become outputs of its backward graph).
 */
export interface GradSink {
  leaf(leaf: Tensor, g: Tensor): void;
  /** true: the walk does not enter `node`; its gradient goes to `boundary` */
  stopsAt?(node: AutogradNode): boolean;
  boundary?(node: AutogradNode, slot: number, g: Tensor): void;
}

/** The tensor ops of the walk itself (ops/backward.ts's GRAD_MATH). */
export interface GradMath {
  /** the sum of two gradients flowing into one slot */
  add(a: Tensor, b: Tensor): Tensor;
  /** a second handle on a gradient (not an autograd-internal one), for a second destination */
  alias(g: Tensor): Tensor;
}

/** One root of a backward walk: a tensor and the gradient flowing into it (handed over). */
export interface BackwardRoot {
  readonly tensor: Tensor;
  readonly seed: Tensor;
}

/**
 * Calls each reachable node's backward once every gradient flowing into it has been summed,
 * in reverse topological order, from several roots at once.
 */
export function walkBackward(roots: readonly BackwardRoot[], opts: BackwardOptions, sink: GradSink, math: GradMath): void {
  const grads = new Map<AutogradNode, (Tensor | null)[]>();
  const give = (node: AutogradNode, slot: number, g: Tensor) => {
    let slots = grads.get(node);
    if (!slots) grads.set(node, (slots = new Array<Tensor | null>(node.nOutputs).fill(null)));
    const prev = slots[slot];
    if (prev) {
      slots[slot] = math.add(prev, g);
      prev.dispose();
      g.dispose();
    } else slots[slot] = g;
  };
  const stops = (n: AutogradNode) => sink.stopsAt?.(n) ?? false;
  const rootNodes: AutogradNode[] = [];
  for (const r of roots) {
    const fn = r.tensor.gradFn as AutogradNode | null;
    if (!fn) sink.leaf(r.tensor, r.seed);
    else if (stops(fn)) sink.boundary!(fn, r.tensor.gradSlot, r.seed);
    else {
      give(fn, r.tensor.gradSlot, r.seed);
      if (!rootNodes.includes(fn)) rootNodes.push(fn);
    }
  }
  // dependency counts: how many edges point at each node from the reachable graph
  const deps = new Map<AutogradNode, number>();
  const stack = [...rootNodes];
  const seen = new Set<AutogradNode>(rootNodes);
  while (stack.length) {
    const n = stack.pop()!;
    for (const e of n.next) {
      if (!e || !('node' in e) || stops(e.node)) continue;
      deps.set(e.node, (deps.get(e.node) ?? 0) + 1);
      if (!seen.has(e.node)) {
        seen.add(e.node);
        stack.push(e.node);
      }
    }
  }
  const ready = rootNodes.filter((n) => !deps.has(n));
  const release = (node: AutogradNode) => {
    for (const e of node.next) {
      if (!e || !('node' in e) || stops(e.node)) continue;
      const left = deps.get(e.node)! - 1;
      deps.set(e.node, left);
      if (left > 0) continue;
      if (grads.has(e.node)) ready.push(e.node);
      else skipBranch(e.node);
    }
  };
  // a node that received no gradient still releases its dependents' counts
  const skipBranch = (node: AutogradNode) => {
    if (!opts.retainGraph) node.freeSaved();
    release(node);
  };
  while (ready.length) {
    const node = ready.pop()!;
    const gs = grads.get(node)!;
    grads.delete(node);
    const inGrads = scope(() => node.backward(gs), isTensorLike);
    const handed = new Set<Tensor>();
    const incoming = new Set(gs.filter((g): g is Tensor => g !== null));
    node.next.forEach((edge, i) => {
      let gi = inGrads[i];
      if (!edge) {
        if (gi && !incoming.has(gi)) gi.dispose();
        return;
      }
      if (!gi) return;
      if (incoming.has(gi) || handed.has(gi)) gi = math.alias(gi); // one handle per destination
      handed.add(gi);
      if (!('node' in edge)) sink.leaf(edge.leaf, gi);
      else if (stops(edge.node)) sink.boundary!(edge.node, edge.slot, gi);
      else give(edge.node, edge.slot, gi);
    });
    for (const g of incoming) if (!handed.has(g)) g.dispose();
    if (!opts.retainGraph) node.freeSaved();
    release(node);
  }
}

function isTensorLike(x: unknown): x is Tensor {
  return x instanceof Tensor;
}
