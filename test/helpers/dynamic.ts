// Shared cases of the dynamic-shape tests (js in dynamic.test.ts, wasm and native in their own
// files): the same checks on every backend, so a backend cannot pass an easier version.

import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { DynamicProgram } from '../../src/compiler/run/dynamic-program.js';
import { compiledFunctionOf } from '../../src/compiler/compiled-info.js';
import { MlpBlock } from '../../bench/workloads/w3.js';
import { Decoder } from '../../bench/workloads/w7.js';
import { freeze } from '../../bench/workloads/types.js';
import { maxRelDiff } from '../../bench/lib/compare.js';
import { assertCompiledRan } from './compiled-ran.js';

type Fn = (x: kiln.Tensor) => kiln.Tensor;

/** 20 batch sizes, in an order that changes the size on every call. */
export const BATCHES = [3, 5, 8, 2, 13, 7, 21, 4, 9, 30, 6, 17, 11, 64, 10, 12, 33, 15, 19, 40];

export { maxRelDiff };

/** The dynamic programs of a compiled function's entries. */
export function dynamicPrograms(c: unknown): DynamicProgram[] {
  const entries = compiledFunctionOf(c).compiledEntries;
  return entries.flatMap((e) => (e.program instanceof DynamicProgram ? [e.program] : []));
}

/** One dynamic program, never specialized per size (a backend with symbolic kernels). Returns it. */
export function oneSymbolicProgram(c: unknown): DynamicProgram {
  const progs = dynamicPrograms(c);
  assert.equal(progs.length, 1);
  assert.equal(progs[0]!.specializations, 0, 'no per-size program');
  return progs[0]!;
}

// ---- MlpBlock(32, 64) over 20 batch sizes ----

/**
 * MlpBlock(32, 64) (seed 3, frozen) compiled with `opts` and called with every size in BATCHES,
 * each output equal to eager's; at most two compiles (static, then dynamic), one dynamic, no
 * eager fallback. `afterCall(i)` runs after the i-th size. Returns the compiled function.
 */
export function checkBatchSizes(opts: kiln.CompileOptions, afterCall?: (i: number) => void): kiln.Compiled<Fn> {
  kiln.compiler.reset();
  kiln.manualSeed(3);
  const block = freeze(new MlpBlock(32, 64));
  const f = (x: kiln.Tensor) => block.call(x);
  const c = kiln.compile(f, opts);
  kiln.noGrad(() => {
    BATCHES.forEach((n, i) => {
      kiln.scope(() => {
        const x = kiln.randn([n, 32]);
        const r = c(x) as kiln.Tensor;
        assert.ok(maxRelDiff(r, f(x)) < 1e-5, `batch ${n}`);
      });
      afterCall?.(i);
    });
  });
  const s = kiln.stats();
  assert.ok(c.compiled.entryCount <= 2 && s.compiles <= 2, `compiles ${s.compiles}`);
  assert.equal(s.dynamicCompiles.length, 1);
  assertCompiledRan(`dynamic (${opts.backend ?? 'default'})`);
  return c;
}

/**
 * checkBatchSizes on a backend with symbolic kernels (`opts.backend`): one dynamic program,
 * never specialized, printed as symbolic on that backend; and `built()` (code built so far: C
 * units, wasm kernels) unchanged once the second call has built the dynamic program. Returns
 * built() after the second call.
 */
export function checkSymbolicBatchSizes(opts: kiln.CompileOptions & { backend: string }, built: () => number): number {
  let afterDynamic = -1;
  // the second call changes the size: the dynamic program is built (and compiled) there
  const c = checkBatchSizes(opts, (i) => { if (i === 1) afterDynamic = built(); });
  assert.match(oneSymbolicProgram(c).print(), new RegExp(`symbolic kernels on ${opts.backend}`));
  assert.equal(built(), afterDynamic, `no ${opts.backend} code built after the dynamic program was built`);
  return afterDynamic;
}

// ---- a GPT-style decoder over sequence lengths ----

/** Sequence lengths of the decoder cases, changing on every call. */
export const DECODER_LENS = [8, 12, 20, 5, 33, 17, 9, 26];

/** The W7 decoder (2 layers, width 32, 4 heads, causal mask), seed 7, frozen: its eager forward. */
export function decoder(): Fn {
  kiln.manualSeed(7);
  const model = freeze(new Decoder(2, 32, 4));
  return (x: kiln.Tensor) => model.call(x);
}

/**
 * Resets the compiler, compiles `f` with `opts` and calls it with every length in DECODER_LENS
 * (dim 1 marked dynamic when `mode` is 'mark'), each output equal to eager's. `afterCall(i)`
 * runs after the i-th length. Returns the compiled function.
 */
export function checkDecoderLengths(f: Fn, mode: string, opts: kiln.CompileOptions, afterCall?: (i: number) => void): kiln.Compiled<Fn> {
  kiln.compiler.reset();
  const c = kiln.compile(f, opts);
  kiln.noGrad(() => {
    DECODER_LENS.forEach((t, i) => {
      kiln.scope(() => {
        const x = kiln.randn([1, t, 32]);
        if (mode === 'mark') kiln.markDynamic(x, 1);
        assert.ok(maxRelDiff(c(x) as kiln.Tensor, f(x)) < 1e-5, `${mode} T=${t}`);
      });
      afterCall?.(i);
    });
  });
  return c;
}

/**
 * The decoder on a backend with symbolic kernels, sizes automatic dynamic ('auto': two compiles)
 * and marked ('mark': one): no eager fallback, one dynamic program never specialized; with
 * `built`, no code built after the second length.
 */
export function checkSymbolicDecoder(opts: kiln.CompileOptions, built?: () => number): void {
  const f = decoder();
  for (const mode of ['auto', 'mark'] as const) {
    let before = -1;
    const c = checkDecoderLengths(f, mode, opts, (i) => { if (i === 1 && built) before = built(); });
    const s = kiln.stats();
    assert.equal(s.compiles, mode === 'auto' ? 2 : 1);
    assertCompiledRan(`dynamic (${opts.backend ?? 'default'})`);
    oneSymbolicProgram(c);
    if (built) assert.equal(built(), before, `${mode}: no ${opts.backend} code built after the second length`);
  }
}

// ---- large dynamic sizes ----

/**
 * Sizes up to 2051 rows (split across threads) through MlpBlock(64, 128) (seed 5, frozen) and
 * a matmul whose bool epilogue keeps no float32 output, so its accumulator is the kernel's
 * scratch and grows with the size: equal to eager (integer data: the mask compares exactly),
 * one compile, never specialized. Returns the compiled function.
 */
export function checkLargeDynamicSizes(opts: kiln.CompileOptions): kiln.Compiled<(x: kiln.Tensor) => kiln.Tensor[]> {
  kiln.compiler.reset();
  kiln.manualSeed(5);
  const block = freeze(new MlpBlock(64, 128));
  const w = kiln.keep(kiln.randint(-2, 3, [64, 24]).float());
  const f = (x: kiln.Tensor) => [block.call(x), x.matmul(w).gt(0.5)];
  const c = kiln.compile(f, opts);
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
  return c;
}

/**
 * A two-layer training step (cross-entropy, backward, SGD) compiled with `opts` and called with
 * varying batch sizes: every loss and the final parameters equal eager's, at most two compiles
 * (static, then dynamic), and x dim 0 and y dim 0 share one symbol. Returns the compiled step.
 */
export function checkDynamicTrainingStep(opts: kiln.CompileOptions, sizes: readonly number[]): unknown {
  const make = () => {
    kiln.manualSeed(11);
    const lin1 = new kiln.nn.Linear(6, 16), lin2 = new kiln.nn.Linear(16, 3);
    const params = [...lin1.parameters(), ...lin2.parameters()];
    const step = (x: kiln.Tensor, y: kiln.Tensor) => {
      for (const p of params) { p.grad?.dispose(); p.grad = null; }
      const loss = kiln.crossEntropy(lin2.call(lin1.call(x).relu()), y);
      loss.backward();
      kiln.noGrad(() => { for (const p of params) p.sub_(p.grad!.mul(0.1)); });
      return loss;
    };
    return { params, step };
  };
  kiln.compiler.reset();
  const e = make(), c = make();
  const cstep = kiln.compile(c.step, opts);
  kiln.manualSeed(12);
  for (const n of sizes) {
    kiln.scope(() => {
      const x = kiln.randn([n, 6]);
      const y = kiln.randint(0, 3, [n]);
      const le = e.step(x, y).item();
      const lc = (cstep(x, y) as kiln.Tensor).item();
      assert.ok(Math.abs(le - lc) <= 1e-5 * Math.max(1, Math.abs(le)), `batch ${n}: ${le} vs ${lc}`);
    });
  }
  e.params.forEach((p, i) => assert.ok(maxRelDiff(c.params[i]!, p) < 1e-5));
  const s = kiln.stats();
  assert.ok(s.compiles <= 2, `compiles ${s.compiles} (${s.dynamicFailures.map((f) => f.reason).join('; ')})`);
  assert.equal(s.dynamicCompiles.length, 1, 'x dim 0 and y dim 0 share s0');
  return cstep;
}
