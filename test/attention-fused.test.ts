// Attention as one kernel (src/compiler/schedule/fuse-attention.ts): the cases of
// test/helpers/attention-cases.ts on every backend that renders the kernel, against float64
// references (causal and masked, odd and unequal sequence lengths, several key blocks, W7's
// layout, NaN / Inf, fully masked rows), with the kernel count and no fusion fallback asserted.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
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

test('an attention program goes through the compile cache: checked against the schema when stored, read back, equal to eager (js, wasm, native)', () => {
  const backends = ['js', ...(kiln.wasmUnavailableReason() ? [] : ['wasm']), ...(nativeWhy ? [] : ['native'])];
  const before = process.env.KILN_CACHE_DIR;
  const dir = mkdtempSync(join(tmpdir(), 'kiln-attention-cache-'));
  process.env.KILN_CACHE_DIR = dir;
  try {
    const f = (q: kiln.Tensor, k: kiln.Tensor, v: kiln.Tensor) => kiln.scaledDotProductAttention(q, k, v, { isCausal: true });
    kiln.manualSeed(seed);
    const [q, k, v] = [[2, 9, 8], [2, 9, 8], [2, 9, 12]].map((s) => kiln.randn(s));
    const eager = kiln.noGrad(() => Array.from(f(q!, k!, v!).dataSync()));
    for (const backend of backends) {
      kiln.compiler.reset();
      kiln.noGrad(() => kiln.compile(f, { backend, fullgraph: true })(q!, k!, v!));
      assert.equal(kiln.stats().cache.writes, 1, `${backend}: the program is stored (it passed the schema)`);
      kiln.compiler.reset();
      const ex = kiln.explain(f, { backend, fullgraph: true, print: false })(q!, k!, v!);
      assert.equal(ex.graphs[0]!.kernels, 1, `${backend}: one attention kernel\n${ex.graphs[0]!.program}`);
      const got = kiln.noGrad(() => Array.from(kiln.compile(f, { backend, fullgraph: true })(q!, k!, v!).dataSync()));
      const s = kiln.stats();
      assert.ok(s.cache.hits >= 1, `${backend}: read back from the cache`);
      assert.equal(s.cache.invalid + s.cache.corrupt + s.cache.untrusted, 0, backend);
      assert.equal(s.fusionFallbacks + s.eagerFallbacks, 0, backend);
      got.forEach((g, i) => assert.ok(Math.abs(g - eager[i]!) <= 1e-5 * (1 + Math.abs(eager[i]!)), `${backend} [${i}]: ${g} vs eager ${eager[i]}`));
    }
  } finally {
    if (before === undefined) delete process.env.KILN_CACHE_DIR;
    else process.env.KILN_CACHE_DIR = before;
    rmSync(dir, { recursive: true, force: true });
  }
});
