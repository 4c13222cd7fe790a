// The autograd node of a compiled function's results (AOTAutograd): one node with a slot per
// differentiable result. It holds what the forward program saved, and its backward runs the
// compiled backward program; the engine then accumulates the gradients into `.grad` exactly
// as for eager ops (edges to parameters, arguments, and the autograd history of captured
// tensors). While another function is being traced (a backward() inside compiled code reaching
// this node), the backward graph is traced into that trace instead of run.

import type { AutogradNode, Edge } from '../../autograd/node.js';
import { AutogradError, fmtShape } from '../../core/errors.js';
import { apply, runtime } from '../../ops/dispatch.js';
import { zeros } from '../../ops/creation.js';
import { contiguous } from '../../ops/movement.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { Graph } from '../graph.js';

/** What the node needs of its compiled pair (aot-program.ts). */
export interface BackwardPlan {
  readonly name: string;
  readonly bwdGraph: Graph;
  runBackward(inputs: readonly Tensor[]): Tensor[];
}

export class CompiledGradNode implements AutogradNode {
  readonly tracer = null;
  private refs = 0;
  private saved: Tensor[] | null;
  private readonly versions: number[];

  constructor(
    private readonly plan: BackwardPlan,
    saved: Tensor[],
    readonly next: readonly Edge[],
    readonly nOutputs: number,
  ) {
    this.saved = saved;
    this.versions = saved.map((t) => t.storage.version);
    for (const e of next) if (e && 'node' in e) e.node.retain();
  }

  get name(): string {
    return `compiled ${this.plan.name}`;
  }

  retain(): void {
    this.refs++;
  }

  release(): void {
    if (--this.refs === 0) {
      this.freeSaved();
      for (const e of this.next) if (e && 'node' in e) e.node.release();
    }
  }

  freeSaved(): void {
    if (!this.saved) return;
    for (const t of this.saved) t.dispose();
    this.saved = null;
  }

  backward(grads: readonly (Tensor | null)[]): readonly (Tensor | null)[] {
    const saved = this.saved;
    if (!saved) throw new AutogradError('the graph was already freed by an earlier backward()', `${this.name}.backward`, 'pass { retainGraph: true } to the first backward() to run backward twice');
    saved.forEach((t, i) => {
      if (t.storage.version !== this.versions[i]) {
        throw new AutogradError(
          `a tensor ${fmtShape(t.shape)} saved by ${this.name} for backward was modified by an in-place operation (version ${this.versions[i]}, now ${t.storage.version})`,
          `${this.name}.backward`,
          'clone the tensor before writing into it, or make the in-place update after backward()',
        );
      }
    });
    const inputs = this.plan.bwdGraph.inputNodes;
    // tangents arrive in any layout (a sum's gradient is an expanded view): the program reads them contiguous, as torch's AOTAutograd does
    const tangents = grads.map((g, k) => {
      const m = inputs[saved.length + k]!.meta;
      if (!g) return zeros(m.shape, { dtype: m.dtype });
      return g.hasStorage && !(g.isContiguous && g.offset === 0) ? contiguous(g) : g;
    });
    const all = [...saved.map((t, i) => matchLayout(t, inputs[i]!.meta)), ...tangents];
    if (runtime.tracer && tangents.some((g) => !g.hasStorage)) return traceGraph(this.plan.bwdGraph, all);
    return this.plan.runBackward(all);
  }
}

/** A saved intermediate in the layout the backward graph was compiled for (contiguous unless it is an input). */
function matchLayout(t: Tensor, meta: { strides: readonly number[]; offset: number }): Tensor {
  if (t.offset === meta.offset && t.strides.every((s, d) => s === meta.strides[d] || t.shape[d] === 1)) return t;
  return contiguous(t);
}

/** Records a graph's nodes into the running trace (a backward() inside compiled code reached this node). */
function traceGraph(g: Graph, inputs: readonly Tensor[]): Tensor[] {
  const values = new Map<number, Tensor>();
  let k = 0;
  for (const n of g.nodes) values.set(n.id, n.op === 'input' ? inputs[k++]! : apply(n.prim!, n.inputs.map((i) => values.get(i)!), n.attrs));
  return g.outputs.map((id) => values.get(id)!);
}
