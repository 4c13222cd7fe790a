// The autograd node of a compiled function's results (AOTAutograd): one node with a slot per
// differentiable result. It holds what the forward program saved, and its backward runs the
// compiled backward program; the engine then accumulates the gradients into `.grad` exactly
// as for eager ops (edges to parameters, arguments, and the autograd history of captured
// tensors). While another function is being traced (a backward() inside compiled code reaching
// this node), the backward graph is traced into that trace instead of run.

import { checkSavedVersion, CountedNode, type AutogradNode, type Edge } from '../../autograd/node.js';
import { AutogradError } from '../../core/errors.js';
import { apply, runtime } from '../../ops/dispatch.js';
import { zeros } from '../../ops/creation.js';
import { copy } from '../../ops/pointwise.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { Graph, TensorMeta } from '../capture/graph.js';
import { isContiguous } from '../../core/shape.js';

/** What the node needs of its compiled pair (aot-program.ts). */
export interface BackwardPlan {
  readonly name: string;
  readonly bwdGraph: Graph;
  runBackward(inputs: readonly Tensor[]): Tensor[];
  /** whether backward output `k` depends on a tangent that arrived */
  reached(k: number, arrived: readonly boolean[]): boolean;
}

export class CompiledGradNode extends CountedNode implements AutogradNode {
  readonly tracer = null;
  private saved: Tensor[] | null;
  private readonly versions: number[];

  constructor(
    private readonly plan: BackwardPlan,
    saved: Tensor[],
    next: readonly Edge[],
    /** shape and dtype of each differentiable result (a missing gradient is zeros of it) */
    private readonly slots: readonly { readonly shape: readonly number[]; readonly dtype: Tensor['dtype'] }[],
  ) {
    super(next);
    this.saved = saved;
    this.versions = saved.map((t) => t.storage.version);
  }

  get nOutputs(): number {
    return this.slots.length;
  }

  get name(): string {
    return `compiled ${this.plan.name}`;
  }

  freeSaved(): void {
    if (!this.saved) return;
    for (const t of this.saved) t.dispose();
    this.saved = null;
  }

  backward(incoming: readonly (Tensor | null)[]): readonly (Tensor | null)[] {
    const saved = this.saved;
    if (!saved) throw new AutogradError('the graph was already freed by an earlier backward()', `${this.name}.backward`, 'pass { retainGraph: true } to the first backward() to run backward twice');
    saved.forEach((t, i) => checkSavedVersion(this.name, t, this.versions[i]!));
    const inputs = this.plan.bwdGraph.inputNodes;
    // tangents arrive in any layout (a sum's gradient is an expanded view): the program reads them contiguous, as torch's AOTAutograd does
    const tangents = incoming.map((g, k) => {
      if (!g) return zeros(this.slots[k]!.shape, { dtype: this.slots[k]!.dtype });
      return g.hasStorage && !(g.isContiguous && g.offset === 0) ? copy(g) : g;
    });
    const all = [...saved.map((t, i) => matchLayout(t, inputs[i]!.meta)), ...tangents];
    const grads = runtime.tracer && tangents.some((g) => !g.hasStorage) ? traceGraph(this.plan.bwdGraph, all) : this.plan.runBackward(all);
    // an input whose gradient only missing tangents feed gets none, as eager leaves its .grad
    const arrived = incoming.map((g) => g !== null);
    return grads.map((g, k) => (this.plan.reached(k, arrived) ? g : (g.dispose(), null)));
  }
}

/**
 * A saved value in the layout the backward graph was compiled for: contiguous (computed values,
 * and every input of a dynamic program), or an input's own guarded strides.
 */
function matchLayout(t: Tensor, meta: TensorMeta): Tensor {
  if (isContiguous(meta.shape, meta.strides) && meta.offset === 0) return t.isContiguous && t.offset === 0 ? t : copy(t);
  if (t.offset === meta.offset && t.strides.every((s, d) => s === meta.strides[d] || t.shape[d] === 1)) return t;
  return copy(t);
}

/** Records a graph's nodes into the running trace (a backward() inside compiled code reached this node). */
function traceGraph(g: Graph, inputs: readonly Tensor[]): Tensor[] {
  const values = new Map<number, Tensor>();
  let k = 0;
  for (const n of g.nodes) values.set(n.id, n.op === 'input' ? inputs[k++]! : apply(n.prim!, n.inputs.map((i) => values.get(i)!), n.attrs));
  return g.outputs.map((id) => values.get(id)!);
}
