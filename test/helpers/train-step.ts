// The training step most tests compile: zero the grads, cross-entropy, backward, optimizer step.
// Browser-safe (the WebGPU browser test bundles it), backend-neutral.

import * as kiln from 'kilnjs';

/** One training step of `model` with `optim` on a batch; returns the loss. */
export function crossEntropyStep(model: { call(x: kiln.Tensor): kiln.Tensor }, optim: { zeroGrad(): void; step(): void }) {
  return (xb: kiln.Tensor, yb: kiln.Tensor): kiln.Tensor => {
    optim.zeroGrad();
    const loss = kiln.crossEntropy(model.call(xb), yb);
    loss.backward();
    optim.step();
    return loss;
  };
}
