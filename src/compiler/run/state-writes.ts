// Before a compiled program runs, the driver can announce what it is about to change outside
// itself: tensors it writes in place (parameter updates, running statistics) and leaves whose
// .grad it sets. compiled.warmup listens, to save exactly those and write them back; with no
// listener (every other call) announcing costs one check.

import type { Tensor } from '../../tensor/tensor.js';
import type { Graph } from '../capture/graph.js';

export interface StateWrite {
  readonly tensor: Tensor;
  /** e.g. the captured tensor's label, or 'weight.grad' */
  readonly label: string;
  /** true: the write replaces tensor.grad; false: it writes tensor's values in place */
  readonly grad: boolean;
}

let listener: ((w: StateWrite) => void) | null = null;

/** Runs fn with `onWrite` told of every state write a compiled program is about to make. */
export function observeStateWrites<T>(onWrite: (w: StateWrite) => void, fn: () => T): T {
  const prev = listener;
  listener = onWrite;
  try {
    return fn();
  } finally {
    listener = prev;
  }
}

/** Called by the driver just before running `graph` on `inputs` (its input nodes' tensors). */
export function announceStateWrites(graph: Graph, inputs: readonly Tensor[], gradLeaves: readonly { leaf: Tensor }[]): void {
  if (!listener) return;
  const nodes = graph.inputNodes;
  for (const m of graph.mutations) {
    const i = nodes.findIndex((n) => n.id === m.target);
    const src = nodes[i]?.source;
    if (i >= 0) listener({ tensor: inputs[i]!, label: src && src.kind !== 'arg' ? src.label : `argument ${src?.path ?? i}`, grad: false });
  }
  for (const { leaf } of gradLeaves) listener({ tensor: leaf, label: `${leaf.name ?? `tensor#${leaf.id}`}.grad`, grad: true });
}
