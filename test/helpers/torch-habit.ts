// The torch-habit training loop (issue 17): `kiln.compile(model)`, then an unchanged loop
// whose loss, backward() and optimizer step run outside the compiled forward. Checked step by
// step against the same loop run eagerly from identical weights: losses and every parameter's
// gradient, and that the compiled pair really ran (no node-by-node replay, no fallback).

import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';

export interface HabitModel {
  readonly model: kiln.nn.Module;
  readonly opt: { zeroGrad(): void; step(): void };
}

export interface HabitCase {
  readonly name: string;
  /** builds the model and optimizer from a fixed seed (called twice: eager and compiled) */
  build(): HabitModel;
  /** the batches (kept) and the loss of the model's output on a batch */
  readonly batches: readonly (readonly kiln.Tensor[])[];
  loss(out: kiln.Tensor, batch: readonly kiln.Tensor[]): kiln.Tensor;
  /** the model's arguments of a batch (default: all but the last tensor, the labels) */
  inputs?(batch: readonly kiln.Tensor[]): kiln.Tensor[];
}

const relDiff = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let d = 0, m = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    m = Math.max(m, Math.abs(b[i]!));
  }
  return d / Math.max(m, 1e-30);
};

/**
 * Runs `steps` steps both ways and returns the largest relative differences seen. Throws when a
 * loss or a gradient differs by more than `tol` (max |diff| / max |eager|), or the compiled path
 * did not run as one compiled forward/backward pair replayed on every later step.
 */
export function checkTorchHabit(c: HabitCase, backend: string, steps: number, tol = 2e-4): { loss: number; grad: number } {
  kiln.compiler.reset();
  const eager = c.build(), comp = c.build();
  const cm = kiln.compile(comp.model, { backend });
  const args = c.inputs ?? ((b: readonly kiln.Tensor[]) => b.slice(0, -1) as kiln.Tensor[]);
  const eagerParams = eager.model.namedParameters(), compParams = comp.model.namedParameters();
  let worstLoss = 0, worstGrad = 0;
  for (let s = 0; s < steps; s++) {
    const batch = c.batches[s % c.batches.length]!;
    kiln.scope(() => {
      eager.opt.zeroGrad();
      const le = c.loss((eager.model as unknown as { call(...a: kiln.Tensor[]): kiln.Tensor }).call(...args(batch)), batch);
      le.backward();
      comp.opt.zeroGrad();
      const lc = c.loss((cm as unknown as (...a: kiln.Tensor[]) => kiln.Tensor)(...args(batch)), batch);
      lc.backward();
      const dl = Math.abs(le.item() - lc.item()) / Math.max(Math.abs(le.item()), 1e-30);
      worstLoss = Math.max(worstLoss, dl);
      assert.ok(dl <= tol, `${c.name} (${backend}) step ${s}: loss eager ${le.item()}, compiled ${lc.item()}`);
      eagerParams.forEach(([name, p], i) => {
        const q = compParams[i]![1];
        assert.ok(q.grad, `${c.name} (${backend}) step ${s}: ${name} received no gradient`);
        const d = relDiff(q.grad.dataSync() as ArrayLike<number>, p.grad!.dataSync() as ArrayLike<number>);
        worstGrad = Math.max(worstGrad, d);
        assert.ok(d <= tol, `${c.name} (${backend}) step ${s}: grad of ${name} differs by ${d.toExponential(2)} (relative to its largest element)`);
      });
      eager.opt.step();
      comp.opt.step();
    });
  }
  const st = kiln.stats();
  const label = `${c.name} (${backend})`;
  assert.equal(st.interpretedReplays, 0, `${label}: node-by-node replays: ${st.interpretedReasons.join('; ')}`);
  assert.equal(st.eagerFallbacks, 0, `${label}: eager fallbacks: ${st.fallbackReasons.join('; ')}`);
  assert.equal(st.fusionFallbacks, 0, `${label}: fusion fallbacks`);
  assert.equal(st.graphBreaks.length, 0, `${label}: graph breaks`);
  assert.equal(st.aotCompiles, 1, `${label}: one compiled forward/backward pair`);
  assert.equal(st.compiles, 1, `${label}: compiled once`);
  assert.equal(st.cacheHits, steps - 1, `${label}: every later step replays`);
  return { loss: worstLoss, grad: worstGrad };
}
