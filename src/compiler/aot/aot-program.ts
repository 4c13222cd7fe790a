// A compiled forward/backward pair (AOTAutograd): the forward program returns the results and
// what backward needs; each call attaches one CompiledGradNode to the differentiable results,
// and backward() runs the compiled backward program through it.

import { edgeOf } from '../../autograd/node.js';
import { alias, runtime } from '../../ops/dispatch.js';
import { checkOutputsFinite } from '../run/check-numerics.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { Graph } from '../capture/graph.js';
import type { Runnable } from '../run/runnable.js';
import { CompiledGradNode, type BackwardPlan } from './compiled-node.js';
import { isTangent, type Partition } from './partition.js';

export class AotProgram implements BackwardPlan {
  /** per backward output: the tangents (output slots) it depends on */
  readonly gradDeps: readonly (readonly number[])[];

  constructor(
    readonly name: string,
    readonly fwd: Runnable,
    readonly bwd: Runnable,
    readonly partition: Partition,
    /** forward outputs that are the function's results (the rest are saved intermediates) */
    readonly nResults: number,
    /** the result (forward output index) behind each output slot of the grad node */
    readonly slots: readonly number[],
    /** the forward input (index in input order) that receives each backward output */
    readonly gradInputs: readonly number[],
  ) {
    this.gradDeps = tangentDeps(partition.bwd);
  }

  get fwdGraph(): Graph {
    return this.partition.fwd;
  }
  get bwdGraph(): Graph {
    return this.partition.bwd;
  }

  /** Runs the forward on `inputs` (the forward graph's input order) and returns its results, differentiable ones attached to a new grad node. */
  run(inputs: readonly Tensor[]): Tensor[] {
    const outs = this.fwd.run(inputs);
    const results = outs.slice(0, this.nResults);
    // saved values are the node's own handles (outside scopes); intermediates are handed over
    const saved = this.partition.saved.map((s) => {
      if (s.from === 'input') return alias(inputs[s.index]!);
      const t = alias(outs[s.index]!);
      if (s.index >= this.nResults) outs[s.index]!.dispose();
      return t;
    });
    for (let i = this.nResults; i < outs.length; i++) if (!outs[i]!.isDisposed) outs[i]!.dispose();
    const node = new CompiledGradNode(this, saved, this.gradInputs.map((i) => edgeOf(inputs[i]!)), this.slots.map((r) => ({ shape: results[r]!.shape, dtype: results[r]!.dtype })));
    this.slots.forEach((r, k) => results[r]!.setGradFn(node, k));
    return results;
  }

  runBackward(inputs: readonly Tensor[]): Tensor[] {
    const grads = this.bwd.run(inputs);
    if (runtime.checkNumerics) checkOutputsFinite(`${this.name} (backward)`, grads, 'gradient');
    return grads;
  }

  /** Whether backward output `k` depends on a tangent that arrived (else it is null, as in eager). */
  reached(k: number, arrived: readonly boolean[]): boolean {
    return this.gradDeps[k]!.some((j) => arrived[j]);
  }

  print(): string {
    return `forward (${this.fwdGraph.name}):\n${this.fwd.print()}\n\nbackward (${this.bwdGraph.name}):\n${this.bwd.print()}\n\npartition:\n${this.partition.summary}`;
  }
}

/** For each output of a backward graph, the tangent inputs (by index) it is computed from. */
function tangentDeps(g: Graph): number[][] {
  const tangentOf = new Map<number, number>();
  g.inputNodes.filter(isTangent).forEach((n, j) => tangentOf.set(n.id, j));
  const deps = new Map<number, Set<number>>();
  for (const n of g.nodes) {
    const t = tangentOf.get(n.id);
    deps.set(n.id, t !== undefined ? new Set([t]) : new Set(n.inputs.flatMap((i) => [...deps.get(i)!])));
  }
  return g.outputs.map((id) => [...deps.get(id)!].sort((a, b) => a - b));
}
