// backward(): walks the graph from a root in reverse topological order, calling each
// node's backward once all gradients flowing into it have been summed.

import { AutogradError, fmtShape } from '../core/errors.js';
import { numel, shapesEqual } from '../core/shape.js';
import { Tensor } from '../tensor/tensor.js';
import { keep, scope } from '../tensor/scope.js';
import { alias } from '../ops/dispatch.js';
import { add } from '../ops/math.js';
import { copy } from '../ops/pointwise.js';
import { onesLike } from '../ops/creation.js';
import { enableGrad, isGradEnabled, noGrad } from './grad-mode.js';
import type { AutogradNode } from './node.js';
import { publicOp } from '../core/user-op.js';

export interface BackwardOptions {
  /** keep saved tensors so backward can run again through the same graph */
  retainGraph?: boolean;
  /** record the backward pass itself for higher-order gradients */
  createGraph?: boolean;
}

export const backward = publicOp('backward', function backward(root: Tensor, gradient?: Tensor, opts: BackwardOptions = {}): void {
  root.assertAlive('backward');
  if (!root.requiresGrad) {
    throw new AutogradError(
      `tensor ${fmtShape(root.shape)} does not require grad and has no grad_fn`,
      'backward',
      'set requiresGrad on the leaf tensors (parameters) before computing the loss, and do not compute it under noGrad',
    );
  }
  if (!gradient && numel(root.shape) !== 1) {
    throw new AutogradError(
      `grad can be implicitly created only for scalar outputs, got shape ${fmtShape(root.shape)}`,
      'backward',
      'reduce the output to a scalar (e.g. .sum() or .mean()), or pass a gradient of the same shape',
    );
  }
  if (gradient && !shapesEqual(gradient.shape, root.shape)) {
    throw new AutogradError(`gradient ${fmtShape(gradient.shape)} does not match output ${fmtShape(root.shape)}`, 'backward');
  }
  const run = () => runBackward(root, gradient, opts);
  if (opts.createGraph) enableGrad(run);
  else noGrad(run);
});

function runBackward(root: Tensor, gradient: Tensor | undefined, opts: BackwardOptions): void {
  const seed = gradient ? alias(gradient, false) : onesLike(root);
  walkBackward([{ tensor: root, seed }], opts, ACCUMULATE);
}

/**
 * Where the gradients that reach the end of the walk go. The default accumulates into
 * leaves' .grad; the compiler's joint trace (src/compiler/aot) collects them instead, and
 * stops at nodes of other traces (their gradients become outputs of its backward graph).
 */
export interface GradSink {
  leaf(leaf: Tensor, g: Tensor): void;
  /** true: the walk does not enter `node`; its gradient goes to `boundary` */
  stopsAt?(node: AutogradNode): boolean;
  boundary?(node: AutogradNode, slot: number, g: Tensor): void;
}

const ACCUMULATE: GradSink = { leaf: accumulateLeaf };

/** One root of a backward walk: a tensor and the gradient flowing into it (handed over). */
export interface BackwardRoot {
  readonly tensor: Tensor;
  readonly seed: Tensor;
}

/**
 * Calls each reachable node's backward once every gradient flowing into it has been summed,
 * in reverse topological order, from several roots at once.
 */
export function walkBackward(roots: readonly BackwardRoot[], opts: BackwardOptions, sink: GradSink): void {
  const grads = new Map<AutogradNode, (Tensor | null)[]>();
  const give = (node: AutogradNode, slot: number, g: Tensor) => {
    let slots = grads.get(node);
    if (!slots) grads.set(node, (slots = new Array<Tensor | null>(node.nOutputs).fill(null)));
    const prev = slots[slot];
    if (prev) {
      slots[slot] = add(prev, g);
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
      if (incoming.has(gi) || handed.has(gi)) gi = alias(gi, false); // one handle per destination
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

function accumulateLeaf(leaf: Tensor, g: Tensor): void {
  if (leaf.isDisposed) {
    g.dispose();
    return;
  }
  keep(g);
  if (leaf.grad && !leaf.grad.isDisposed) {
    const sum = keep(isGradEnabled() ? add(leaf.grad, g) : noGrad(() => add(leaf.grad!, g)));
    leaf.grad.dispose();
    g.dispose();
    leaf.grad = sum;
  } else {
    leaf.grad = ownedGrad(g);
  }
}

/**
 * torch's layout contract for .grad: dense, contiguous, and sharing memory with nothing
 * else. A gradient that arrives as a view (an expanded seed from sum, a slice from cat) or
 * as an alias (add hands the same gradient to both operands, a user-supplied gradient) is
 * copied, so in-place updates of one grad (g.add_, g.mul_) cannot corrupt another.
 */
function ownedGrad(g: Tensor): Tensor {
  if (!g.hasStorage) return g; // traced
  const s = g.storage;
  if (g.isContiguous && g.offset === 0 && s.refCount === 1 && s.buf.size === g.size) return g;
  const c = keep(copy(g));
  g.dispose();
  return c;
}

function isTensorLike(x: unknown): x is Tensor {
  return x instanceof Tensor;
}
