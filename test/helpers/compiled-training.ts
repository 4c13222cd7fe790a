// A compiled training run checked against the eager run of the same example from the same
// seed: the check of every example whose train function takes `compile` (denoiser,
// recommender), kept in one place so all of them meet the same bound.

import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';

/**
 * Resets the compiler, runs `trainCompiled`, and asserts: every step's loss within 1e-4
 * (relative) of `eager`'s, no graph breaks, no fusion fallbacks on 'js' (on other backends
 * a fallback is reported as a diagnostic, not failed), and at least 7 steps replayed.
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
  if (backend === 'js') assert.equal(s.fusionFallbacks, 0, 'fusion fallbacks');
  else if (s.fusionFallbacks > 0) t.diagnostic(`${backend}: ${s.fusionFallbacks} graph(s) fell back to recorded eager kernels (KILN_LOGS=fusion says why)`);
  // every step but the trace and a few warm-up calls replays
  assert.ok(s.cacheHits >= eager.losses.length - 3, `replayed ${s.cacheHits} of ${eager.losses.length} steps`);
  return compiled;
}
