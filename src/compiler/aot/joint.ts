// The joint trace of AOTAutograd. When a compiled function's results require grad and the
// function did not run backward itself, its backward is traced into the same graph right
// after the forward: one tangent input per differentiable result flows back through the
// autograd nodes the forward recorded, and the gradients that reach the function's inputs
// (parameters, arguments, captured tensors that have autograd history) become outputs.
// partition.ts then splits the joint graph into a forward and a backward program.

import { walkBackward, type GradSink } from '../../autograd/engine.js';
import { GRAD_MATH } from '../../ops/backward.js';
import type { AutogradNode } from '../../autograd/node.js';
import { noGrad } from '../../autograd/grad-mode.js';
import { runtime } from '../../ops/dispatch.js';
import { add } from '../../ops/math.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { Tracer } from '../capture/tracer.js';

/** Argument paths of a backward graph's inputs: values the forward saved, gradients of the results. */
export const SAVED_ARG = '@saved';
export const TANGENT_ARG = '@tangent';

export interface JointTrace {
  /** node of each differentiable result (distinct), in output-slot order */
  readonly diffResults: readonly number[];
  /** the tangent input node of each slot */
  readonly tangents: readonly number[];
  /** the gradients that reached the function's inputs: input node -> gradient node */
  readonly grads: readonly { readonly input: number; readonly value: number }[];
  /** leaves made inside the function whose gradients were dropped (eager would set their .grad) */
  readonly dropped: number;
}

/**
 * Traces the backward of `results` (proxies of this trace that require grad) into the
 * tracer's graph, with grad mode off as backward does.
 */
export function traceJoint(tracer: Tracer, results: readonly Tensor[]): JointTrace {
  const diffResults: number[] = [];
  const roots: { tensor: Tensor; seed: Tensor }[] = [];
  const tangents: number[] = [];
  for (const r of results) {
    const id = r.trace!.id;
    if (diffResults.includes(id)) continue;
    const seed = tracer.extraInput(`${TANGENT_ARG}[${diffResults.length}]`, r.shape, r.dtype);
    diffResults.push(id);
    tangents.push(seed.trace!.id);
    roots.push({ tensor: r, seed });
  }
  const byInput = new Map<number, Tensor>();
  let dropped = 0;
  const collect = (input: number | undefined, g: Tensor) => {
    if (input === undefined) {
      dropped++;
      g.dispose();
      return;
    }
    const prev = byInput.get(input);
    if (!prev) byInput.set(input, g);
    else {
      byInput.set(input, add(prev, g));
      prev.dispose();
      g.dispose();
    }
  };
  const boundaries = tracer.capturedWithHistory();
  const sink: GradSink = {
    leaf: (leaf, g) => collect(tracer.inputNodeOf(leaf), g),
    // a node recorded outside this trace (eager code before the call, an earlier segment's
    // compiled backward): the gradient is handed to it by the compiled backward at run time
    stopsAt: (node: AutogradNode) => node.tracer !== tracer,
    boundary: (node, slot, g) => collect(boundaries.find((b) => b.tensor.gradFn === node && b.tensor.gradSlot === slot)?.input, g),
  };
  // a generator's trace is resumed between stretches: the backward records into it all the same
  const prev = runtime.tracer;
  runtime.tracer = tracer;
  try {
    noGrad(() => walkBackward(roots, { retainGraph: false }, sink, GRAD_MATH));
  } finally {
    runtime.tracer = prev;
  }
  const grads = [...byInput].map(([input, g]) => ({ input, value: tracer.nodeOf(g) }));
  for (const g of byInput.values()) g.dispose();
  return { diffResults, tangents, grads, dropped };
}
