// Comparison with a PyTorch fixture tensor, shared by the parity tests: an element passes when
// |actual - expected| <= rtol * (|expected| + max|expected|), i.e. rtol relative to the element,
// plus rtol of the tensor's largest magnitude, so that elements formed by cancellation (near
// zero next to large ones) are judged at the tensor's scale, as float32 arithmetic in any
// summation order allows. NaN must meet NaN.

import assert from 'node:assert/strict';
import type * as kiln from 'kilnjs';

type Tensor = kiln.Tensor;

/** Throws (with the worst element) unless actual matches expected within rtol (see the header). */
export function assertClose(actual: Tensor | number[], expected: Tensor | number[], rtol: number, what: string): void {
  const a = Array.isArray(actual) ? Float64Array.from(actual) : Float64Array.from(actual.dataSync() as ArrayLike<number>);
  const e = Array.isArray(expected) ? Float64Array.from(expected) : Float64Array.from(expected.dataSync() as ArrayLike<number>);
  if (!Array.isArray(actual) && !Array.isArray(expected)) {
    // a 0-d loss against torch's loss.reshape(1) is fine; anything else must match in shape
    const sa = actual.shape.filter((s) => s !== 1), se = expected.shape.filter((s) => s !== 1);
    assert.deepEqual(sa, se, `${what}: shape [${actual.shape}] vs expected [${expected.shape}]`);
  }
  assert.equal(a.length, e.length, `${what}: ${a.length} elements vs expected ${e.length}`);
  let scale = 0;
  for (const v of e) if (Number.isFinite(v)) scale = Math.max(scale, Math.abs(v));
  let bad = 0, worst = -1, worstRatio = 0;
  for (let i = 0; i < a.length; i++) {
    if (!Number.isFinite(e[i]!)) {
      if (!Object.is(a[i], e[i]) && !(Number.isNaN(a[i]!) && Number.isNaN(e[i]!))) {
        bad++;
        worst = i;
        worstRatio = Infinity;
      }
      continue;
    }
    const tol = rtol * (Math.abs(e[i]!) + scale);
    const err = Math.abs(a[i]! - e[i]!);
    const ratio = err / (tol || Number.MIN_VALUE);
    if (!(err <= tol)) bad++; // NaN fails too
    if (!(ratio <= worstRatio)) {
      worstRatio = ratio;
      worst = i;
    }
  }
  if (bad > 0) {
    assert.fail(`${what}: ${bad} of ${a.length} elements differ beyond rtol ${rtol}; worst [${worst}] ${a[worst]} vs expected ${e[worst]} (max |expected| ${scale})`);
  }
}
