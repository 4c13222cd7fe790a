// The error bounds documented in src/backend/js/fast-math.ts, checked on dense samples.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fastExp, fastTanh } from '../src/backend/js/fast-math.js';

test('fastExp: relative error < 2e-8 over [-100, 88], exact limits', () => {
  let worst = 0;
  for (let x = -100; x <= 88; x += 0.0137) worst = Math.max(worst, Math.abs(fastExp(x) - Math.exp(x)) / Math.exp(x));
  for (let i = 0; i < 20000; i++) { const x = (Math.random() - 0.5) * 40; worst = Math.max(worst, Math.abs(fastExp(x) - Math.exp(x)) / Math.exp(x)); }
  assert.ok(worst < 2e-8, `worst relative error ${worst}`);
  assert.equal(fastExp(1000), Infinity);
  assert.equal(fastExp(-1000), 0);
  assert.ok(Number.isNaN(fastExp(NaN)));
  assert.equal(fastExp(-Infinity), 0);
  assert.ok(Math.abs(fastExp(-740) - Math.exp(-740)) / Math.exp(-740) < 1e-6, 'subnormal range');
  // the edges of the power-of-two table (a NaN here once came out of GELU on large inputs)
  for (let x = 700; x < 712; x += 0.001) {
    const want = Math.exp(x);
    assert.ok(fastExp(x) === want || Math.abs(fastExp(x) - want) / want < 2e-8, `fastExp(${x}) = ${fastExp(x)}`);
    assert.ok(fastExp(-x) === Math.exp(-x) || Math.abs(fastExp(-x) - Math.exp(-x)) / Math.exp(-x) < 2e-8, `fastExp(${-x})`);
  }
});

test('fastTanh: absolute error < 3e-8 over [-20, 20], odd, saturating, NaN-preserving', () => {
  let worst = 0;
  for (let x = -20; x <= 20; x += 0.00731) worst = Math.max(worst, Math.abs(fastTanh(x) - Math.tanh(x)));
  assert.ok(worst < 3e-8, `worst absolute error ${worst}`);
  assert.equal(fastTanh(0.3), -fastTanh(-0.3));
  assert.ok(Math.abs(fastTanh(50) - 1) < 3e-8 && Math.abs(fastTanh(-Infinity) + 1) < 3e-8);
  assert.ok(Number.isNaN(fastTanh(NaN)));
});
