// A compiled training run checked against the eager run of the same example from the same
// seed: the check of every example whose train function takes `compile` (denoiser,
// recommender), kept in one place so all of them meet the same bound.

import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { assertCompiledRan } from './compiled-ran.js';

/**
 * Resets the compiler, runs `trainCompiled`, and asserts: every step's loss within 1e-4
 * (relative) of `eager`'s, no graph breaks, the compiled path ran (no fusion or eager fallback,
 * no node-by-node replay), and at least 7 steps replayed.
 * Returns the compiled run for the example's own checks.
 */
export function assertCompiledFollowsEager<R extends { losses: readonly number[] }>(t: TestContext, backend: string, eager: R, trainCompiled: () => R): R {
  kiln.compiler.reset();
  const compiled = trainCompiled();
  const s = kiln.stats();
  eager.losses.forEach((le, i) => {
    const lc = compiled.losses[i]!;
    assert.ok(Math.abs(le - lc) <= 1e-4 * Math.abs(le), `step ${i}: eager ${le}, compiled ${lc}`);
  });
  assert.equal(s.graphBreaks.length, 0, 'graph breaks');
  assertCompiledRan(`compiled training (${backend})`);
  // every step but the trace and a few warm-up calls replays
  assert.ok(s.cacheHits >= eager.losses.length - 3, `replayed ${s.cacheHits} of ${eager.losses.length} steps`);
  return compiled;
}
