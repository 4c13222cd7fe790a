// Dynamic shapes (issue 7) on the native backend: dynamic kernels are rendered as C once and
// read their sizes at entry (src/backend/native/sizes-c.ts); the DynamicProgram launches them
// through the backend with no per-size specialization and no C compile per size.
// Skipped (with the reason printed) where no C compiler or koffi is available.
// The cases themselves are shared with the wasm tests (test/helpers/dynamic.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nativeStats, nativeUnavailableReason } from 'kilnjs/node';
import { checkDynamicTrainingStep, checkLargeDynamicSizes, checkSymbolicBatchSizes, checkSymbolicDecoder, dynamicPrograms, oneSymbolicProgram } from './helpers/dynamic.js';

process.env.KILN_CACHE_DIR ??= join(tmpdir(), 'kiln-test-cache');
const unavailable = nativeUnavailableReason();
if (unavailable) console.log(`# dynamic native tests skipped: ${unavailable}`);
const skip = unavailable ? `native backend unavailable: ${unavailable}` : false;

const NATIVE = { backend: 'native' } as const;

/** C translation units compiled or loaded from the disk cache so far. */
const units = () => nativeStats().compiles + nativeStats().diskHits;

test('native: 20 batch sizes compile at most twice, each equal to eager, with no C compile per size', { skip }, () => {
  checkSymbolicBatchSizes(NATIVE, units);
});

test('native: GPT-style decoder (causal mask), sequence length dynamic, equal to eager', { skip }, () => {
  checkSymbolicDecoder(NATIVE, units);
});

test('native: a training step with a dynamic batch matches eager, without per-size specialization', { skip }, () => {
  oneSymbolicProgram(checkDynamicTrainingStep(NATIVE, [4, 7, 10, 5, 9, 12, 33, 6]));
});

test('native: dynamic kernels split large sizes across threads and grow a matmul accumulator with the size', { skip }, () => {
  const c = checkLargeDynamicSizes(NATIVE);
  // the C text reads the sizes and tests the work at run time
  assert.match(dynamicPrograms(c)[0]!.source(), /const int64_t s0 = \(int64_t\)b\d+\[0\];/);
  assert.match(dynamicPrograms(c)[0]!.source(), /#pragma omp parallel for schedule\(static\) if \(/);
});
