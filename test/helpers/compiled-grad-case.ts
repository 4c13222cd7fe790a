// One differentiable op-table case compiled the torch-habit way: the compiled function is
// called in grad mode and backward() runs outside it (AOTAutograd: a compiled forward/backward
// pair). loss = sum_k <out_k, W_k> with fixed random weights; the inputs' .grad after the first
// call (trace) and the second (replay) are compared with float64 eager autograd (itself checked
// against finite differences by gradcheck.test.ts). Shared by the js, wasm and native tests.

import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { Rng, asList, baseSeed, caseSeed, mismatch, toND, withSeed, type OpCase, type Tol } from '../op-table.js';
import { READS_DATA } from './compiled-op-case.js';

const base = baseSeed();
const RANDOM = /dropout/;
/** float32 gradients against float64 ones: a backward adds a few roundings per element */
const GRAD32_TOL: Tol = { atol: 5e-5, rtol: 5e-4 };

/** The float64 gradients of loss = sum_k <out_k, W_k> at `inputs` (cast to float64), by eager autograd. */
function referenceGrads(c: OpCase, inputs: readonly kiln.Tensor[], weights: readonly kiln.Tensor[]): kiln.Tensor[] {
  const xs = kiln.noGrad(() => inputs.map((t) => (t.dtype === 'float32' ? t.to('float64') : t.clone())));
  for (const i of c.grad) xs[i]!.requiresGrad = true;
  const outs = asList(c.run(kiln, xs));
  let loss: kiln.Tensor | null = null;
  outs.forEach((o, k) => {
    const term = kiln.sum(kiln.mul(o, weights[k]!.to('float64')));
    loss = loss ? kiln.add(loss, term) : term;
  });
  loss!.backward();
  return c.grad.map((i) => xs[i]!.grad!);
}

/**
 * Compiles case `c` with `opts` and checks the gradients of two calls with backward outside.
 * `check` false: one call, unchecked (a trace inside nativeBatch). Also asserts the compiled
 * pair ran: one forward/backward compile, no node-by-node replay, no fallback.
 */
export function checkCompiledGradCase(c: OpCase, opts: kiln.CompileOptions, check = true): void {
  if (c.grad.length === 0) return;
  const seed = caseSeed(base, `${c.name} aot`);
  withSeed(base, seed, () => {
    kiln.scope(() => {
      kiln.compiler.reset();
      const rng = new Rng(seed, 'float32');
      const inputs = c.make(rng);
      const weights = asList(kiln.noGrad(() => c.run(kiln, inputs))).map((o) => kiln.randn([...o.shape]));
      const ref = RANDOM.test(c.name) ? null : referenceGrads(c, inputs, weights).map(toND);
      for (const i of c.grad) inputs[i]!.requiresGrad = true;
      const fn = (...xs: kiln.Tensor[]) => c.run(kiln, xs);
      const compiled = kiln.compile(fn, { ...opts, fullgraph: !READS_DATA.test(c.name) });
      const on = opts.backend ? `${opts.backend} ` : '';
      for (const call of check ? ['trace', 'replay'] : ['trace']) {
        for (const i of c.grad) inputs[i]!.grad = null;
        kiln.scope(() => {
          const outs = asList(compiled(...inputs) as kiln.Tensor | readonly kiln.Tensor[]);
          let loss: kiln.Tensor | null = null;
          outs.forEach((o, k) => {
            const term = kiln.sum(kiln.mul(o, weights[k]!));
            loss = loss ? kiln.add(loss, term) : term;
          });
          loss!.backward();
        });
        if (!check) continue;
        c.grad.forEach((i, j) => {
          const g = inputs[i]!.grad;
          assert.ok(g, `${c.name} (${on}${call}): input ${i} received no gradient`);
          assert.deepEqual(g.shape, inputs[i]!.shape, `${c.name} (${on}${call}): grad shape of input ${i}`);
          const m = ref ? mismatch(g.dataSync() as ArrayLike<number>, ref[j]!, c.gradTol32 ?? GRAD32_TOL) : null;
          if (m) throw new Error(`${c.name} (${on}${call}): grad of input ${i}: ${m}`);
        });
      }
      if (!check) return;
      const s = kiln.stats();
      const label = `${c.name} (${on}aot)`;
      assert.equal(s.interpretedReplays, 0, `${label}: replayed node by node: ${s.interpretedReasons.join('; ')}`);
      assert.equal(s.fusionFallbacks, 0, `${label}: fusion fallbacks`);
      assert.equal(s.eagerFallbacks, 0, `${label}: eager fallbacks: ${s.fallbackReasons.join('; ')}`);
      if (!READS_DATA.test(c.name)) {
        assert.equal(s.aotCompiles, 1, `${label}: one compiled forward/backward pair`);
        assert.equal(s.cacheHits, 1, `${label}: the second call replays`);
      }
    });
  });
}
