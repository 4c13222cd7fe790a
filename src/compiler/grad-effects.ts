// What a compiled training step does to `.grad`: the guards its trace relies on, and, on every
// replay, the grads it replaces (released first) and the ones it sets.

import { copy } from '../ops/pointwise.js';
import { keep } from '../tensor/scope.js';
import type { Tensor } from '../tensor/tensor.js';
import type { Guard } from './guards.js';
import type { Tracer } from './tracer.js';

/** A leaf whose .grad a graph sets: to its output `outputIndex`, or to null. */
export interface GradEffectOf {
  readonly leaf: Tensor;
  readonly outputIndex: number | null;
}

/**
 * A backward that accumulated into a leaf whose .grad was null (not cleared first) assumed
 * it was null: if a later call finds a grad there, replay would overwrite instead of add.
 */
export function gradStateGuards(tracer: Tracer): Guard[] {
  const out: Guard[] = [];
  for (const [leaf, w] of tracer.gradWrites) {
    if (w.initial !== null || w.first === null) continue;
    const label = leaf.name ?? `tensor#${leaf.id}`;
    out.push({ text: `${label}.grad is null`, check: () => (leaf.grad === null ? null : `${label}.grad is no longer null (backward would accumulate into it)`) });
  }
  return out;
}

/**
 * The grads a step replaces (its zeroGrad, in eager order) are disposed before the program runs,
 * not after: their memory (wasm heap regions, recycled outputs) then holds the new grads, so a
 * training step does not hold two sets of grads at its peak, and its second call does not touch
 * fresh memory for them (W6: 18 MB). A grad the program reads stays until afterwards.
 */
export function releaseReplacedGrads(effects: readonly GradEffectOf[], inputs: readonly Tensor[]): void {
  let read: Set<unknown> | null = null;
  for (const e of effects) {
    const old = e.leaf.grad;
    if (!old || old.isDisposed) continue;
    read ??= new Set(inputs.map((t) => t.storage));
    if (read.has(old.storage)) continue;
    e.leaf.grad = null;
    old.dispose();
  }
}

export function applyGradEffects(effects: readonly GradEffectOf[], outs: Tensor[]): void {
  const given = new Set<Tensor>();
  for (const e of effects) {
    const old = e.leaf.grad;
    let next = e.outputIndex === null ? null : outs[e.outputIndex]!;
    // two leaves whose gradients CSE merged still get private grads (as eager gives them)
    if (next && given.has(next)) next = copy(next);
    if (next) given.add(keep(next));
    if (old === next) continue;
    e.leaf.grad = next;
    old?.dispose();
  }
}

