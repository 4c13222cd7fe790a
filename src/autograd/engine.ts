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
import type { GradNode } from './node.js';

export interface BackwardOptions {
  /** keep saved tensors so backward can run again through the same graph */
  retainGraph?: boolean;
  /** record the backward pass itself for higher-order gradients */
  createGraph?: boolean;
}

export function backward(root: Tensor, gradient?: Tensor, opts: BackwardOptions = {}): void {
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
}

function runBackward(root: Tensor, gradient: Tensor | undefined, opts: BackwardOptions): void {
  const seed = gradient ? alias(gradient, false) : onesLike(root);
  if (root.isLeaf) {
    accumulateLeaf(root, seed);
    return;
  }
  const rootNode = root.gradFn as GradNode;
  // dependency counts: how many edges point at each node from the reachable graph
  const deps = new Map<GradNode, number>();
  const stack: GradNode[] = [rootNode];
  const seen = new Set<GradNode>([rootNode]);
  while (stack.length) {
    const n = stack.pop()!;
    for (const e of n.next) {
      if (!e || !('node' in e)) continue;
      deps.set(e.node, (deps.get(e.node) ?? 0) + 1);
      if (!seen.has(e.node)) {
        seen.add(e.node);
        stack.push(e.node);
      }
    }
  }
  const grads = new Map<GradNode, Tensor>([[rootNode, seed]]);
  const ready: GradNode[] = [rootNode];
  while (ready.length) {
    const node = ready.pop()!;
    const g = grads.get(node)!;
    grads.delete(node);
    const inGrads = scope(() => node.apply(g), isTensorLike);
    const handed = new Set<Tensor>();
    node.next.forEach((edge, i) => {
      let gi = inGrads[i];
      if (!edge) {
        if (gi && gi !== g) gi.dispose();
        return;
      }
      if (gi && (gi === g || handed.has(gi))) gi = alias(gi, false); // one handle per destination
      if ('node' in edge) {
        if (gi) {
          handed.add(gi);
          const prev = grads.get(edge.node);
          if (prev) {
            grads.set(edge.node, add(prev, gi));
            prev.dispose();
            gi.dispose();
          } else grads.set(edge.node, gi);
        }
        const left = deps.get(edge.node)! - 1;
        deps.set(edge.node, left);
        if (left === 0) {
          if (grads.has(edge.node)) ready.push(edge.node);
          else skipBranch(edge.node, deps, ready, grads, opts);
        }
      } else if (gi) {
        handed.add(gi);
        accumulateLeaf(edge.leaf, gi);
      }
    });
    if (!handed.has(g)) g.dispose();
    if (!opts.retainGraph) node.freeSaved();
  }
}

/** A node that received no gradient still releases its dependents' counts. */
function skipBranch(node: GradNode, deps: Map<GradNode, number>, ready: GradNode[], grads: Map<GradNode, Tensor>, opts: BackwardOptions): void {
  if (!opts.retainGraph) node.freeSaved();
  for (const e of node.next) {
    if (!e || !('node' in e)) continue;
    const left = deps.get(e.node)! - 1;
    deps.set(e.node, left);
    if (left === 0) {
      if (grads.has(e.node)) ready.push(e.node);
      else skipBranch(e.node, deps, ready, grads, opts);
    }
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
