// Dynamic shapes (issue 7) on the wasm backend: dynamic kernels are rendered once and read
// their sizes at entry (src/backend/wasm/sizes.ts); the DynamicProgram launches them through
// the backend with no per-size specialization.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kiln';
import { MlpBlock } from '../bench/workloads/w3.js';
import { Decoder } from '../bench/workloads/w7.js';
import { freeze } from '../bench/workloads/types.js';
import { BATCHES, checkDynamicTrainingStep, dynamicPrograms, maxRelDiff } from './helpers/dynamic.js';

const WASM = { backend: 'wasm' } as const;



test('wasm: 20 batch sizes compile at most twice, each equal to eager, with no per-size specialization', () => {
  kiln.compiler.reset();
  kiln.manualSeed(3);
  const block = freeze(new MlpBlock(32, 64));
  const f = (x: kiln.Tensor) => block.call(x);
  const c = kiln.compile(f, WASM);
  const kernelsBefore = kiln.wasmStats().kernels;
  let kernelsAfterDynamic = -1;
  kiln.noGrad(() => {
    BATCHES.forEach((n, i) => {
      kiln.scope(() => {
        const x = kiln.randn([n, 32]);
        const r = c(x) as kiln.Tensor;
        assert.ok(maxRelDiff(r, f(x)) < 1e-5, `batch ${n}`);
      });
      if (i === 1) kernelsAfterDynamic = kiln.wasmStats().kernels;
    });
  });
  const s = kiln.stats();
  assert.ok(c.compiled.entryCount <= 2 && s.compiles <= 2, `compiles ${s.compiles}`);
  assert.equal(s.dynamicCompiles.length, 1);
  assert.equal(s.eagerFallbacks, 0);
  const progs = dynamicPrograms(c);
  assert.equal(progs.length, 1);
  assert.equal(progs[0]!.specializations, 0, 'no per-size program');
  assert.match(progs[0]!.print(), /symbolic kernels on wasm/);
  assert.ok(kernelsAfterDynamic > kernelsBefore, 'the dynamic kernels compiled once');
  assert.equal(kiln.wasmStats().kernels, kernelsAfterDynamic, 'no wasm kernel compiled after the dynamic program was built');
});

test('wasm: GPT-style decoder (causal mask), sequence length dynamic, equal to eager', () => {
  kiln.manualSeed(7);
  const model = freeze(new Decoder(2, 32, 4));
  const f = (x: kiln.Tensor) => model.call(x);
  const lens = [8, 12, 20, 5, 33, 17, 9, 26];
  for (const mode of ['auto', 'mark'] as const) {
    kiln.compiler.reset();
    const c = kiln.compile(f, WASM);
    kiln.noGrad(() => {
      for (const t of lens) {
        kiln.scope(() => {
          const x = kiln.randn([1, t, 32]);
          if (mode === 'mark') kiln.markDynamic(x, 1);
          assert.ok(maxRelDiff(c(x) as kiln.Tensor, f(x)) < 1e-5, `${mode} T=${t}`);
        });
      }
    });
    const s = kiln.stats();
    assert.equal(s.compiles, mode === 'auto' ? 2 : 1);
    assert.equal(s.eagerFallbacks, 0);
    const progs = dynamicPrograms(c);
    assert.equal(progs.length, 1);
    assert.equal(progs[0]!.specializations, 0);
  }
});

test('wasm: a training step with a dynamic batch matches eager, without per-size specialization', () => {
  const progs = dynamicPrograms(checkDynamicTrainingStep(WASM, [4, 7, 10, 5, 9, 12, 33, 6]));
  assert.equal(progs.length, 1);
  assert.equal(progs[0]!.specializations, 0);
});

test('wasm: dynamic kernels split their dynamic extent across threads and grow a matmul accumulator with the size', () => {
  kiln.compiler.reset();
  kiln.manualSeed(5);
  const block = freeze(new MlpBlock(64, 128));
  // integer-valued data: the matmul is exact, so the mask compares exactly with eager
  const w = kiln.keep(kiln.randint(-2, 3, [64, 24]).float());
  // the bool epilogue keeps no float32 matmul output: the accumulator is the kernel's aux scratch
  const f = (x: kiln.Tensor) => [block.call(x), x.matmul(w).gt(0.5)];
  const c = kiln.compile(f, WASM);
  const launches = kiln.wasmStats().parallelLaunches;
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
  if (kiln.wasmStats().threads > 1) assert.ok(kiln.wasmStats().parallelLaunches > launches, 'large sizes split across threads');
});
