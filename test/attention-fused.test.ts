// Attention as one kernel (src/compiler/fuse-attention.ts): the cases of
// test/helpers/attention-cases.ts on every backend that renders the kernel, against float64
// references (causal and masked, odd and unequal sequence lengths, several key blocks, W7's
// layout, NaN / Inf, fully masked rows), with the kernel count and no fusion fallback asserted.

import { test } from 'node:test';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import { nativeUnavailableReason } from 'kilnjs/node';
import { checkAttentionCases } from './helpers/attention-cases.js';

process.env.KILN_CACHE_DIR ??= join(tmpdir(), 'kiln-test-cache');
const seed = Math.floor(Math.random() * 2 ** 31);
console.log(`# attention: seed ${seed}`);
const nativeWhy = nativeUnavailableReason();

test('fused attention on js equals the float64 reference', () => checkAttentionCases('js', true, seed));
test('fused attention on wasm equals the float64 reference', { skip: kiln.wasmUnavailableReason() ?? false }, () => checkAttentionCases('wasm', true, seed));
test('fused attention on native equals the float64 reference', { skip: nativeWhy ? `native backend unavailable: ${nativeWhy}` : false }, () => checkAttentionCases('native', true, seed));
