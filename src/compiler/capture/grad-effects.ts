// What a compiled training step does to `.grad`: the guards its trace relies on, and, on every
// replay, the grads it replaces (released first) and the ones it sets.

import { copy } from '../../ops/pointwise.js';
import { keep } from '../../core/scope.js';
import type { Tensor } from '../../tensor/tensor.js';
import { argLeaves, type Guard } from './guards.js';
import type { Tracer } from './tracer.js';

/** A leaf whose .grad a graph sets: to its output `outputIndex`, or to null. */
export interface GradEffectOf {
  readonly leaf: Tensor;
  readonly outputIndex: number | null;
}

/** An argument (at `path`) whose .grad a graph sets: each call's own argument receives it. */
export interface ArgGradEffect {
  readonly path: string;
  readonly outputIndex: number | null;
}

/** The arguments' grad effects of one call, as effects on its tensors. */
export function bindArgGrads(effects: readonly ArgGradEffect[], args: readonly unknown[], names: readonly string[]): GradEffectOf[] {
  const leaves = new Map(argLeaves(args, names).map((l) => [l.path, l.value]));
  return effects.map((e) => ({ leaf: leaves.get(e.path) as Tensor, outputIndex: e.outputIndex }));
}

/**
 * A backward that accumulated into a leaf whose .grad was null (not cleared first) assumed
 * it was null: if a later call finds a grad there, replay would overwrite instead of add.
 */
export function gradStateGuards(tracer: Tracer, args: readonly unknown[], names: readonly string[]): Guard[] {
  const out: Guard[] = [];
  const readers = new Map(argLeaves(args, names).map((l) => [l.path, l.read]));
  for (const [leaf, w] of tracer.gradWrites) {
    if (w.initial !== null || w.first === null) continue;
    const path = tracer.argPathOf(leaf);
    if (path !== undefined) {
      // an argument's .grad: checked on each call's own argument
      const read = readers.get(path)!;
      out.push({ text: `arg ${path}.grad is null`, check: (a) => ((read(a) as Tensor | undefined)?.grad ? `arg ${path}.grad is no longer null (backward would accumulate into it)` : null) });
      continue;
    }
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

