// kiln.customOp: a user op with a forward, an optional backward and a shape rule. Inside a
// compiled graph it is an opaque node (it runs the user's forward on real tensors) instead
// of a graph break.

import type { DType } from '../../core/dtype.js';
import { ArgumentError } from '../../core/errors.js';
import { apply, type PrimDef } from '../../ops/dispatch.js';
import { assign } from '../../ops/inplace.js';
import type { Tensor } from '../../tensor/tensor.js';

export interface CustomOpDef {
  name: string;
  /** eager implementation on real tensors */
  forward: (...inputs: Tensor[]) => Tensor;
  /** gradients of the inputs given the output's gradient (omit for a non-differentiable op) */
  backward?: (grad: Tensor, inputs: readonly Tensor[], output: Tensor) => (Tensor | null)[];
  /** output shape and dtype from the inputs' (default: same as input 0) */
  shape?: (...inputs: { shape: readonly number[]; dtype: DType }[]) => { shape: readonly number[]; dtype: DType };
}

export interface OpaquePrim<A> extends PrimDef<A> {
  readonly opaque: true;
}

export function customOp(def: CustomOpDef): (...inputs: Tensor[]) => Tensor {
  if (!def || typeof def.name !== 'string' || typeof def.forward !== 'function') {
    throw new ArgumentError('customOp needs { name, forward }', 'customOp');
  }
  const prim: OpaquePrim<Record<string, never>> = {
    name: `custom:${def.name}`,
    opaque: true,
    meta(inputs) {
      const r = def.shape ? def.shape(...inputs.map((t) => ({ shape: t.shape, dtype: t.dtype }))) : { shape: inputs[0]!.shape, dtype: inputs[0]!.dtype };
      return { shape: r.shape, dtype: r.dtype };
    },
    run(inputs, out) {
      const r = def.forward(...inputs);
      try {
        assign(out, r);
      } finally {
        if (!inputs.includes(r)) r.dispose();
      }
    },
    backward: def.backward ? (g, ctx) => def.backward!(g, ctx.inputs as Tensor[], ctx.output!) : undefined,
    saveOutput: true,
  };
  return (...inputs: Tensor[]) => apply(prim, inputs, {});
}

export function isOpaque(p: PrimDef<unknown>): p is OpaquePrim<unknown> {
  return (p as { opaque?: boolean }).opaque === true;
}
