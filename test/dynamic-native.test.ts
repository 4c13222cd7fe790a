// Dynamic shapes (issue 7) on the native backend: dynamic kernels are rendered as C once and
// read their sizes at entry (src/backend/native/sizes-c.ts); the DynamicProgram launches them
// through the backend with no per-size specialization and no C compile per size.
// Skipped (with the reason printed) where no C compiler or koffi is available.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kiln';
import { nativeStats, nativeUnavailableReason } from 'kiln/node';
import { MlpBlock } from '../bench/workloads/w3.js';
import { Decoder } from '../bench/workloads/w7.js';
import { freeze } from '../bench/workloads/types.js';
import { BATCHES, checkDynamicTrainingStep, dynamicPrograms, maxRelDiff } from './helpers/dynamic.js';

process.env.KILN_CACHE_DIR ??= join(tmpdir(), 'kiln-test-cache');
const unavailable = nativeUnavailableReason();
if (unavailable) console.log(`# dynamic native tests skipped: ${unavailable}`);
const skip = unavailable ? `native backend unavailable: ${unavailable}` : false;

const NATIVE = { backend: 'native' } as const;



/** C translation units compiled or loaded from the disk cache so far. */
const units = () => nativeStats().compiles + nativeStats().diskHits;

test('native: 20 batch sizes compile at most twice, each equal to eager, with no C compile per size', { skip }, () => {
  kiln.compiler.reset();
  kiln.manualSeed(3);
  const block = freeze(new MlpBlock(32, 64));
  const f = (x: kiln.Tensor) => block.call(x);
  const c = kiln.compile(f, NATIVE);
  let unitsAfterDynamic = -1;
  kiln.noGrad(() => {
    BATCHES.forEach((n, i) => {
      kiln.scope(() => {
        const x = kiln.randn([n, 32]);
        const r = c(x) as kiln.Tensor;
        assert.ok(maxRelDiff(r, f(x)) < 1e-5, `batch ${n}`);
      });
      // the second call changes the size: the dynamic program is built (and compiled) there
      if (i === 1) unitsAfterDynamic = units();
    });
  });
  const s = kiln.stats();
  assert.ok(c.compiled.entryCount <= 2 && s.compiles <= 2, `compiles ${s.compiles}`);
  assert.equal(s.dynamicCompiles.length, 1);
  assert.equal(s.eagerFallbacks, 0);
  const progs = dynamicPrograms(c);
  assert.equal(progs.length, 1);
  assert.equal(progs[0]!.specializations, 0, 'no per-size program');
  assert.match(progs[0]!.print(), /symbolic kernels on native/);
  assert.equal(units(), unitsAfterDynamic, 'no C unit compiled or loaded after the dynamic program was built');
});

test('native: GPT-style decoder (causal mask), sequence length dynamic, equal to eager', { skip }, () => {
  kiln.manualSeed(7);
  const model = freeze(new Decoder(2, 32, 4));
  const f = (x: kiln.Tensor) => model.call(x);
  const lens = [8, 12, 20, 5, 33, 17, 9, 26];
  for (const mode of ['auto', 'mark'] as const) {
    kiln.compiler.reset();
    const c = kiln.compile(f, NATIVE);
    let before = -1;
    kiln.noGrad(() => {
      lens.forEach((t, i) => {
        kiln.scope(() => {
          const x = kiln.randn([1, t, 32]);
          if (mode === 'mark') kiln.markDynamic(x, 1);
          assert.ok(maxRelDiff(c(x) as kiln.Tensor, f(x)) < 1e-5, `${mode} T=${t}`);
        });
        if (i === 1) before = units();
      });
    });
    const s = kiln.stats();
    assert.equal(s.compiles, mode === 'auto' ? 2 : 1);
    assert.equal(s.eagerFallbacks, 0);
    const progs = dynamicPrograms(c);
    assert.equal(progs.length, 1);
    assert.equal(progs[0]!.specializations, 0);
    assert.equal(units(), before, `${mode}: no C unit after the second length`);
  }
});

test('native: a training step with a dynamic batch matches eager, without per-size specialization', { skip }, () => {
  const progs = dynamicPrograms(checkDynamicTrainingStep(NATIVE, [4, 7, 10, 5, 9, 12, 33, 6]));
  assert.equal(progs.length, 1);
  assert.equal(progs[0]!.specializations, 0);
});

test('native: dynamic kernels split large sizes across threads and grow a matmul accumulator with the size', { skip }, () => {
  kiln.compiler.reset();
  kiln.manualSeed(5);
  const block = freeze(new MlpBlock(64, 128));
  // integer-valued data: the matmul is exact, so the mask compares exactly with eager
  const w = kiln.keep(kiln.randint(-2, 3, [64, 24]).float());
  // the bool epilogue keeps no float32 matmul output: the accumulator is the kernel's scratch
  const f = (x: kiln.Tensor) => [block.call(x), x.matmul(w).gt(0.5)];
  const c = kiln.compile(f, NATIVE);
  kiln.noGrad(() => {
    for (const n of [37, 1500, 6, 2051, 700]) {
      kiln.scope(() => {
        const x = kiln.markDynamic(kiln.randint(-3, 4, [n, 64]).float(), 0);
        const [a, b] = c(x) as kiln.Tensor[];
        const [ea, eb] = f(x);
        assert.ok(maxRelDiff(a!, ea!) < 1e-5, `block, batch ${n}`);
        assert.deepEqual(Array.from(b!.dataSync()), Array.from(eb!.dataSync()), `mask, batch ${n}`);
      });
    }
  });
  assert.equal(kiln.stats().compiles, 1);
  assert.equal(dynamicPrograms(c)[0]!.specializations, 0);
  // the C text reads the sizes and tests the work at run time
  assert.match(dynamicPrograms(c)[0]!.source(), /const int64_t s0 = \(int64_t\)b\d+\[0\];/);
  assert.match(dynamicPrograms(c)[0]!.source(), /#pragma omp parallel for schedule\(static\) if \(/);
});
