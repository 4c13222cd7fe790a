// Forward correctness of every op in the op table, in float32, against float64 references
// computed independently in plain JS (test/helpers/reference.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { OP_TABLE, REQUIRED_OPS, Rng, baseSeed, caseSeed, checkForward, withSeed } from './op-table.js';
import { NON_DIFFERENTIABLE_API_OPS } from './op-table-api.js';

const BASE = baseSeed();

test('op table: unique names, every required op covered, differentiable ops have grad cases', () => {
  const names = new Set<string>();
  for (const c of OP_TABLE) {
    assert.ok(!names.has(c.name), `duplicate case name ${c.name}`);
    names.add(c.name);
    c.grad.forEach((i) => assert.ok(Number.isInteger(i) && i >= 0, `${c.name}: bad grad index ${i}`));
  }
  const covered = new Set(OP_TABLE.map((c) => c.op));
  const missing = REQUIRED_OPS.filter((op) => !covered.has(op));
  assert.deepEqual(missing, [], `ops without a case: ${missing.join(', ')}`);
  const nonDiff = new Set(['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'logicalAnd', 'logicalOr', 'logicalXor', 'logicalNot', 'argmax', 'argmin', 'oneHot', ...NON_DIFFERENTIABLE_API_OPS]);
  const withGrad = new Set(OP_TABLE.filter((c) => c.grad.length > 0).map((c) => c.op));
  const noGradCase = REQUIRED_OPS.filter((op) => !nonDiff.has(op) && !withGrad.has(op));
  assert.deepEqual(noGradCase, [], `differentiable ops without a gradcheck case: ${noGradCase.join(', ')}`);
});

for (const c of OP_TABLE) {
  test(`forward: ${c.name}`, () => {
    const seed = caseSeed(BASE, c.name);
    const before = kiln.memory();
    withSeed(BASE, seed, () => kiln.scope(() => checkForward(c, kiln, 'float32', seed)));
    const after = kiln.memory();
    assert.equal(after.tensors, before.tensors, `${c.name}: tensors leaked by the op inside kiln.scope`);
    assert.equal(after.bytes, before.bytes, `${c.name}: storage bytes leaked by the op inside kiln.scope`);
  });
}

test('inputs are reproducible from the printed seed', () => {
  for (const c of OP_TABLE.filter((_, i) => i % 7 === 0)) {
    const seed = caseSeed(BASE, c.name);
    const draw = () => kiln.scope(() => c.make(new Rng(seed, 'float32')).map((t) => Array.from(t.dataSync())));
    assert.deepEqual(draw(), draw(), `${c.name}: inputs differ for the same seed`);
  }
});

// ---- dropout: statistics, scaling, gradient ------------------------------------------------

test('dropout (training): zeros about p of the elements, scales the rest by 1/(1-p), keeps the mean', () => {
  const seed = caseSeed(BASE, 'dropout statistics');
  withSeed(BASE, seed, () =>
    kiln.scope(() => {
      kiln.manualSeed(seed);
      const n = 40000;
      const x = kiln.rand([200, 200]).add(0.5); // in [0.5, 1.5): never 0
      const xv = x.dataSync();
      for (const p of [0.1, 0.5, 0.8]) {
        const y = kiln.dropout(x, p);
        assert.deepEqual(y.shape, x.shape);
        assert.equal(y.dtype, 'float32');
        const yv = y.dataSync();
        let zeros = 0, sumY = 0, sumX = 0, firstHalfZeros = 0;
        for (let i = 0; i < n; i++) {
          sumX += xv[i]!;
          sumY += yv[i]!;
          if (yv[i] === 0) {
            zeros++;
            if (i < n / 2) firstHalfZeros++;
          } else {
            const want = xv[i]! / (1 - p);
            assert.ok(Math.abs(yv[i]! - want) <= 1e-6 * want, `p=${p}: kept element ${i} is ${yv[i]}, expected x/(1-p) = ${want}`);
          }
        }
        // binomial: 6 standard deviations
        const sd = Math.sqrt((p * (1 - p)) / n);
        assert.ok(Math.abs(zeros / n - p) < 6 * sd, `p=${p}: dropped fraction ${zeros / n}`);
        assert.ok(Math.abs(firstHalfZeros / (n / 2) - p) < 6 * sd * Math.SQRT2, `p=${p}: dropped fraction in the first half ${firstHalfZeros / (n / 2)}`);
        // E[y] = x: relative error of the sum, sd of y_i is x_i sqrt(p/(1-p))
        const sdMean = Math.sqrt(p / (1 - p)) * 1.1 / Math.sqrt(n);
        assert.ok(Math.abs(sumY / sumX - 1) < 6 * sdMean, `p=${p}: mean ratio ${sumY / sumX}`);
      }
      // masks differ between calls; p = 1 zeros everything
      const a = kiln.dropout(x, 0.5).eq(0).dataSync();
      const b = kiln.dropout(x, 0.5).eq(0).dataSync();
      let same = 0;
      for (let i = 0; i < n; i++) if (a[i] === b[i]) same++;
      assert.ok(Math.abs(same / n - 0.5) < 0.05, `two masks agree on ${same / n} of elements (independent masks: ~0.5)`);
      assert.ok(Array.from(kiln.dropout(x, 1).dataSync()).every((v) => v === 0));
      // the same seed reproduces the same mask
      kiln.manualSeed(seed + 1);
      const m1 = Array.from(kiln.dropout(x, 0.3).dataSync());
      kiln.manualSeed(seed + 1);
      assert.deepEqual(Array.from(kiln.dropout(x, 0.3).dataSync()), m1);
    }),
  );
});

test('dropout: p = 0 and eval mode are the identity; invalid p is an ArgumentError', () => {
  kiln.scope(() => {
    const x = kiln.randn([5, 7]);
    for (const y of [kiln.dropout(x, 0), kiln.dropout(x, 0.7, false), kiln.dropout(x, 0, false)]) {
      assert.deepEqual(Array.from(y.dataSync()), Array.from(x.dataSync()));
    }
    assert.throws(() => kiln.dropout(x, 1.5), kiln.ArgumentError);
    assert.throws(() => kiln.dropout(x, -0.1), kiln.ArgumentError);
  });
});

test('dropout gradient: the same mask and scale as the forward pass', () => {
  const seed = caseSeed(BASE, 'dropout gradient');
  withSeed(BASE, seed, () =>
    kiln.scope(() => {
      kiln.manualSeed(seed);
      const p = 0.4;
      const x = kiln.rand([50, 40], { dtype: 'float64' }).add(0.5).requiresGrad_();
      const w = kiln.randn([50, 40], { dtype: 'float64' });
      const y = kiln.dropout(x, p);
      y.mul(w).sum().backward();
      const yv = y.dataSync(), wv = w.dataSync(), g = x.grad!.dataSync();
      for (let i = 0; i < yv.length; i++) {
        const want = yv[i] === 0 ? 0 : wv[i]! / (1 - p);
        assert.ok(Math.abs(g[i]! - want) < 1e-12, `grad[${i}] = ${g[i]}, expected ${want}`);
      }
    }),
  );
});
