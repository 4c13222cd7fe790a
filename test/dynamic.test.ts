// Dynamic shapes (issue 7): symbolic sizes, automatic dynamic, markDynamic/markStatic,
// dynamic: false, bucketing, data-dependent sizes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { fitSym, symToString, symVar, symMul, symAdd, symConst, symEval } from '../src/ir/symbolic.js';
import { MlpBlock } from '../bench/workloads/w3.js';
import { freeze } from '../bench/workloads/types.js';
import { BATCHES, DECODER_LENS, checkBatchSizes, checkDecoderLengths, checkDynamicTrainingStep, decoder, maxRelDiff } from './helpers/dynamic.js';

test('symbolic: canonical forms, evaluation, fitting', () => {
  const s0 = symVar(0), s1 = symVar(1);
  const e = symAdd(symMul(symConst(768), s0), symMul(s0, symMul(s1, symConst(2))));
  assert.equal(symToString(e), '2*s0*s1 + 768*s0');
  assert.equal(symToString(symMul(symAdd(s0, symConst(1)), symAdd(s0, symConst(-1)))), 's0^2 - 1');
  assert.equal(symEval(e, [3, 5]), 768 * 3 + 30);
  const fit = fitSym([[17, 19, 23]], [17 * 17 * 12, 19 * 19 * 12, 23 * 23 * 12]);
  assert.equal(fit && symToString(fit), '12*s0^2');
  assert.equal(fitSym([[17, 19, 23]], [768 / 17, 768 / 19, 768 / 23]), null, 'not a polynomial');
});

test('20 batch sizes compile at most twice (static, then automatic dynamic), each equal to eager', () => {
  const c = checkBatchSizes({});
  const s = kiln.stats();
  assert.equal(s.recompiles.length, 1);
  assert.match(s.recompiles[0]!.reason, /arg x dim 0 becomes dynamic \(automatic dynamic/);
  // the dynamic graph prints its symbols
  assert.match(c.compiled.report!.graphs[0]!.text, /f32\[s0,32\]/);
  assert.match(c.compiled.report!.guards.join('\n'), /arg x: float32\[s0, 32\] contiguous \(2 <= s0\)/);
});

test('markDynamic compiles once; sizes 0/1 stay specialized; min/max are guarded', () => {
  kiln.compiler.reset();
  const w = kiln.keep(kiln.randn([8, 4]));
  const f = (x: kiln.Tensor) => x.matmul(w).relu().mul(2);
  const c = kiln.compile(f);
  kiln.noGrad(() => {
    for (const n of [5, 9, 2, 31]) {
      const x = kiln.markDynamic(kiln.randn([n, 8]), 0, { max: 40 });
      assert.ok(maxRelDiff(c(x) as kiln.Tensor, f(x)) < 1e-6);
    }
    assert.equal(kiln.stats().compiles, 1);
    // outside [2, 40]: a new entry, with the reason
    c(kiln.randn([41, 8]));
    assert.match(kiln.stats().recompiles[0]!.reason, /dim 0 = 41 is outside the range/);
    // a size-1 trace stays static even when marked
    kiln.compiler.reset();
    const d = kiln.compile(f, { dynamic: true });
    d(kiln.randn([1, 8]));
    assert.equal(kiln.stats().dynamicCompiles.length, 0, '1 is specialized');
    // markStatic keeps a dim static under dynamic: true
    kiln.compiler.reset();
    const e = kiln.compile(f, { dynamic: true });
    e(kiln.markStatic(kiln.randn([6, 8]), 0));
    e(kiln.markStatic(kiln.randn([7, 8]), 0));
    assert.equal(kiln.stats().dynamicCompiles.length, 0);
    assert.equal(kiln.stats().compiles, 2);
  });
});

test('dynamic: false recompiles up to the limit, then reports the eager fallback', () => {
  kiln.compiler.reset();
  const w = kiln.keep(kiln.randn([8, 8]));
  const f = (x: kiln.Tensor) => x.matmul(w).tanh();
  const c = kiln.compile(f, { dynamic: false, recompileLimit: 4 });
  kiln.noGrad(() => {
    for (const n of BATCHES.slice(0, 8)) {
      const x = kiln.randn([n, 8]);
      assert.ok(maxRelDiff(c(x) as kiln.Tensor, f(x)) < 1e-6);
    }
  });
  const s = kiln.stats();
  assert.equal(s.compiles, 4);
  assert.equal(s.dynamicCompiles.length, 0);
  assert.equal(s.eagerFallbacks, 4);
  assert.match(s.fallbackReasons[0]!, /recompile limit 4 reached: arg x dim 0 changed/);
});

test('GPT-style decoder (W7 config, causal mask): sequence length dynamic, equal to eager', () => {
  const f = decoder();
  for (const mode of ['auto', 'mark', 'static'] as const) {
    checkDecoderLengths(f, mode, mode === 'static' ? { dynamic: false, recompileLimit: 3 } : {});
    const s = kiln.stats();
    if (mode === 'auto') assert.equal(s.compiles, 2);
    if (mode === 'mark') assert.equal(s.compiles, 1);
    if (mode === 'static') {
      assert.equal(s.compiles, 3);
      assert.equal(s.eagerFallbacks, DECODER_LENS.length - 3);
    }
  }
});

test('bucketing pads to powers of two and slices back: equal to the unpadded eager result; explain and stats show the buckets', () => {
  kiln.compiler.reset();
  kiln.manualSeed(5);
  const block = freeze(new MlpBlock(16, 32));
  const f = (x: kiln.Tensor) => block.call(x);
  const c = kiln.compile(f, { buckets: { arg: 0, dim: 0, sizes: 'pow2' } });
  kiln.noGrad(() => {
    for (const n of [3, 5, 6, 7, 8, 12, 2, 16, 9]) {
      kiln.scope(() => {
        const x = kiln.randn([n, 16]);
        const r = c(x) as kiln.Tensor;
        assert.deepEqual(r.shape, [n, 16]);
        assert.ok(maxRelDiff(r, f(x)) < 1e-5, `n=${n}`);
      });
    }
  });
  const s = kiln.stats();
  assert.deepEqual(s.buckets.map((b) => b.bucket).sort((a, b) => a - b), [2, 4, 8, 16]);
  assert.equal(s.compiles, 4, 'one static program per bucket');
  assert.equal(s.dynamicCompiles.length, 0);
  const ex = kiln.explain(f, { print: false, buckets: { arg: 0, dim: 0, sizes: [8, 32] } });
  const r = kiln.noGrad(() => ex(kiln.randn([5, 16])));
  assert.match(r.text, /buckets: .*8 \(sizes 5\)/);
});

test('bucketing refuses (with a reason) when a reduction mixes padded rows into real ones, and stays exact', () => {
  kiln.compiler.reset();
  const f = (x: kiln.Tensor) => x.sum(0).mul(x.mean());
  const c = kiln.compile(f, { buckets: { dim: 0, sizes: 'pow2' } });
  for (const n of [3, 5, 6]) {
    const x = kiln.randn([n, 4]);
    assert.ok(maxRelDiff(c(x) as kiln.Tensor, f(x)) < 1e-5);
  }
  const s = kiln.stats();
  assert.match(s.dynamicFailures.map((d) => d.reason).join('\n'), /bucketing refused: .*reduces over the bucketed axis/);
  assert.equal(s.buckets.length, 0);
});

test('a training step with a dynamic batch matches eager', () => {
  checkDynamicTrainingStep({}, [4, 7, 10, 5, 9, 12]);
});

test('data-dependent sizes (nonzero, maskedSelect) are reported graph breaks with a location, not crashes', () => {
  kiln.compiler.reset();
  const f = (x: kiln.Tensor) => {
    const idx = kiln.nonzero(x.gt(0)); // DATA_DEPENDENT
    return kiln.maskedSelect(x, x.gt(0)).sum().add(idx.shape[0]!);
  };
  const x = kiln.tensor([[1, -2, 3], [-4, 5, 6]]);
  const r = kiln.compile(f)(x) as kiln.Tensor;
  assert.equal(r.item(), 15 + 4);
  const s = kiln.stats();
  assert.ok(s.graphBreaks.length >= 1);
  assert.match(s.graphBreaks[0]!.reason, /nonzero \(its output size depends on the data\)/);
  assert.match(s.graphBreaks[0]!.location, /dynamic\.test\.ts:\d+/);
  assert.throws(() => kiln.compile(f, { fullgraph: true })(x), kiln.GraphBreakError);
});
