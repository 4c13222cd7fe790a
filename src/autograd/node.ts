// A node of the autograd graph: how to turn the gradient of one op's output into
// gradients of its inputs. Nodes are reference counted so that the tensors they save
// for backward are released as soon as nothing can reach them any more.

import type { DType } from '../core/dtype.js';
import { AutogradError, fmtShape } from '../core/errors.js';
import { Tensor, type GradFnRef } from '../tensor/tensor.js';

/**
 * A node of the autograd graph as the engine sees it. An op's GradNode has one output; a
 * compiled function's backward (src/compiler/aot) has one output slot per differentiable result.
 */
export interface AutogradNode extends GradFnRef {
  readonly next: readonly Edge[];
  readonly nOutputs: number;
  /** gradients per output slot (null where none arrived) -> gradients per next edge */
  backward(grads: readonly (Tensor | null)[]): readonly (Tensor | null)[];
  /** drops what the node saved for backward (after backward unless retainGraph, or when unreachable) */
  freeSaved(): void;
  /** the compiler's tracer that recorded this node, when it was made while tracing */
  readonly tracer: unknown;
}

/** Where an input's gradient goes: output `slot` of the node that produced it, or a leaf to accumulate into. */
export type Edge = { readonly node: AutogradNode; readonly slot: number } | { readonly leaf: Tensor } | null;

/** The edge to the gradient of `t` (which requires grad). */
export function edgeOf(t: Tensor): Edge {
  const fn = t.gradFn as AutogradNode | null;
  return fn ? { node: fn, slot: t.gradSlot } : { leaf: t };
}

export interface BackwardContext<A> {
  /** saved inputs (aliases; null where the op did not save them) */
  readonly inputs: readonly (Tensor | null)[];
  readonly output: Tensor | null;
  readonly inputShapes: readonly (readonly number[])[];
  readonly inputDTypes: readonly DType[];
  readonly attrs: A;
  /** which inputs need a gradient; backward may skip the others */
  readonly needsGrad: readonly boolean[];
}

export type BackwardFn<A> = (grad: Tensor, ctx: BackwardContext<A>) => readonly (Tensor | null)[];

/**
 * The reference counting every node shares: it keeps the nodes it feeds alive while it lives,
 * and frees what it saved once nothing refers to it.
 */
export abstract class CountedNode {
  private refs = 0;
  constructor(readonly next: readonly Edge[]) {
    for (const e of next) if (e && 'node' in e) e.node.retain();
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

  abstract freeSaved(): void;
}

/** Throws when `t`, saved by node `name` for backward at storage version `version`, was written in place since. */
export function checkSavedVersion(name: string, t: Tensor, version: number): void {
  if (t.storage.version === version) return;
  throw new AutogradError(
    `a tensor ${fmtShape(t.shape)} saved by ${name} for backward was modified by an in-place operation (version ${version}, now ${t.storage.version})`,
    `${name}.backward`,
    'clone the tensor before writing into it, or make the in-place update after backward()',
  );
}

export class GradNode<A = unknown> extends CountedNode implements AutogradNode {
  private freed = false;
  readonly nOutputs = 1;
  constructor(
    readonly name: string,
    private readonly backwardFn: BackwardFn<A>,
    next: readonly Edge[],
    private ctx: BackwardContext<A> | null,
    readonly tracer: unknown = null,
  ) {
    super(next);
  }

  /** Drops the tensors saved for backward (after backward, or when unreachable). */
  freeSaved(): void {
    if (!this.ctx) return;
    for (const t of this.ctx.inputs) t?.dispose();
    this.ctx.output?.dispose();
    this.ctx = null;
    this.freed = true;
  }

  /** storage versions of the saved tensors when they were saved */
  savedVersions: number[] = [];

  backward(grads: readonly (Tensor | null)[]): readonly (Tensor | null)[] {
    return this.apply(grads[0]!);
  }

  apply(grad: Tensor): readonly (Tensor | null)[] {
    if (this.ctx) this.checkVersions(this.ctx);
    if (!this.ctx) {
      throw new AutogradError(
        this.freed ? 'the graph was already freed by an earlier backward()' : 'node has no saved state',
        `${this.name}.backward`,
        'pass { retainGraph: true } to the first backward() to run backward twice',
      );
    }
    return this.backwardFn(grad, this.ctx);
  }

  private checkVersions(ctx: BackwardContext<A>): void {
    const saved = [...ctx.inputs, ctx.output];
    saved.forEach((t, i) => {
      if (!t || !t.hasStorage || this.savedVersions[i] === undefined || this.savedVersions[i]! < 0) return;
      checkSavedVersion(this.name, t, this.savedVersions[i]!);
    });
  }
}
