// kiln.backward (and Tensor.backward): seeds the walk of autograd/engine.ts from one root and
// accumulates the gradients reaching the leaves into their .grad. Here, not in autograd/,
// because it is written with ops (the seed, sums, copies), and ops/ sits above autograd/.

import { AutogradError, fmtShape } from '../core/errors.js';
import { numel, shapesEqual } from '../core/shape.js';
import { publicOp } from '../core/user-op.js';
import type { Tensor } from '../tensor/tensor.js';
import { keep } from '../core/scope.js';
import { enableGrad, isGradEnabled, noGrad } from '../autograd/grad-mode.js';
import { walkBackward, type BackwardOptions, type GradMath, type GradSink } from '../autograd/engine.js';
import { alias } from './dispatch.js';
import { add } from './math.js';
import { copy } from './pointwise.js';
import { onesLike } from './creation.js';

/** The walk's sums and handles, as ops: for every caller of walkBackward. */
export const GRAD_MATH: GradMath = { add, alias: (g) => alias(g, false) };

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
  walkBackward([{ tensor: root, seed }], opts, ACCUMULATE, GRAD_MATH);
}

/** The default sink: gradients accumulate into the leaves' .grad. */
const ACCUMULATE: GradSink = { leaf: accumulateLeaf };

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
