// FLOP counts for the reference workloads (WORKLOADS.md). Only matmul work is counted
// (2·m·n·k); bias adds, activations and the loss are a rounding error at these sizes.

export const matmulFlops = (m: number, n: number, k: number): number => 2 * m * n * k;

/** Forward pass of an MLP with layer widths dims (dims[0] = input features). */
export function mlpForwardFlops(batch: number, dims: readonly number[]): number {
  let f = 0;
  for (let i = 0; i + 1 < dims.length; i++) f += matmulFlops(batch, dims[i + 1]!, dims[i]!);
  return f;
}

/**
 * One training step: forward, then per layer the weight gradient (same cost as its forward
 * matmul) and the input gradient (same again), except the first layer's input gradient
 * when the input does not require grad.
 */
export function mlpTrainStepFlops(batch: number, dims: readonly number[], inputNeedsGrad = false): number {
  const fwd = mlpForwardFlops(batch, dims);
  const firstInputGrad = matmulFlops(batch, dims[0]!, dims[1]!);
  return 3 * fwd - (inputNeedsGrad ? 0 : firstInputGrad);
}
