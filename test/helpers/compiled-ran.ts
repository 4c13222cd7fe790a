// The check every compiled test makes besides its numbers: that the compiled path really ran.
// A test that passes with the fuser broken tests nothing (issue 18): no graph fell back to
// recorded eager kernels, no call ran eagerly, no replay ran node by node.

import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';

/** Asserts kiln.stats() since the last kiln.compiler.reset() shows compiled execution, and only that. */
export function assertCompiledRan(label: string): void {
  const s = kiln.stats();
  // zero fallbacks prove nothing if nothing compiled (a stance, a disabled compile, a reset between)
  assert.ok(s.graphsCompiled > 0, `${label}: no graph was compiled since kiln.compiler.reset(): what ran was eager`);
  assert.equal(s.fusionFallbacks, 0, `${label}: ${s.fusionFallbacks} graph(s) fell back to recorded eager kernels (KILN_LOGS=fusion says why)`);
  assert.equal(s.eagerFallbacks, 0, `${label}: eager fallbacks: ${s.fallbackReasons.join('; ')}`);
  assert.equal(s.interpretedReplays, 0, `${label}: node-by-node replays: ${s.interpretedReasons.join('; ')}`);
}
