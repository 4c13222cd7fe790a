// Dynamic shapes (issue 7) on the wasm backend: dynamic kernels are rendered once and read
// their sizes at entry (src/backend/wasm/sizes.ts); the DynamicProgram launches them through
// the backend with no per-size specialization.
// The cases themselves are shared with the native tests (test/helpers/dynamic.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { checkDynamicTrainingStep, checkLargeDynamicSizes, checkSymbolicBatchSizes, checkSymbolicDecoder, oneSymbolicProgram } from './helpers/dynamic.js';

const WASM = { backend: 'wasm' } as const;

test('wasm: 20 batch sizes compile at most twice, each equal to eager, with no per-size specialization', () => {
  const kernelsBefore = kiln.wasmStats().kernels;
  const kernelsAfterDynamic = checkSymbolicBatchSizes(WASM, () => kiln.wasmStats().kernels);
  assert.ok(kernelsAfterDynamic > kernelsBefore, 'the dynamic kernels compiled once');
});

test('wasm: GPT-style decoder (causal mask), sequence length dynamic, equal to eager', () => {
  checkSymbolicDecoder(WASM);
});

test('wasm: a training step with a dynamic batch matches eager, without per-size specialization', () => {
  oneSymbolicProgram(checkDynamicTrainingStep(WASM, [4, 7, 10, 5, 9, 12, 33, 6]));
});

test('wasm: dynamic kernels split their dynamic extent across threads and grow a matmul accumulator with the size', () => {
  const launches = kiln.wasmStats().parallelLaunches;
  checkLargeDynamicSizes(WASM);
  if (kiln.wasmStats().threads > 1) assert.ok(kiln.wasmStats().parallelLaunches > launches, 'large sizes split across threads');
});
