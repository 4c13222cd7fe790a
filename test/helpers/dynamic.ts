// Shared cases of the dynamic-shape tests (js in dynamic.test.ts, wasm and native in their own
// files): the same checks on every backend, so a backend cannot pass an easier version.

import assert from 'node:assert/strict';
import * as kiln from 'kiln';
import { DynamicProgram } from '../../src/compiler/dynamic-program.js';

/** 20 batch sizes, in an order that changes the size on every call. */
export const BATCHES = [3, 5, 8, 2, 13, 7, 21, 4, 9, 30, 6, 17, 11, 64, 10, 12, 33, 15, 19, 40];

/** max |a - b| over max |b| (shapes must match). */
export function maxRelDiff(a: kiln.Tensor, b: kiln.Tensor): number {
  assert.deepEqual(a.shape, b.shape);
  const x = a.dataSync(), y = b.dataSync();
  let m = 0, scale = 1e-12;
  for (let i = 0; i < x.length; i++) {
    m = Math.max(m, Math.abs(x[i]! - y[i]!));
    scale = Math.max(scale, Math.abs(y[i]!));
  }
  return m / scale;
}

/** The dynamic programs of a compiled function's entries. */
export function dynamicPrograms(c: unknown): DynamicProgram[] {
  const entries = (c as { compiled: { compiledEntries: readonly { program: unknown }[] } }).compiled.compiledEntries;
  return entries.flatMap((e) => (e.program instanceof DynamicProgram ? [e.program] : []));
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
