// Gradients at the points where the textbook formula divides by zero: prod at a zero element
// (torch: the product of the others) and pow(x, 0) at x = 0 (torch: 0). Expected values are
// torch 1.13's, eager and compiled.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';

function gradOf(x: number[][] | number[], f: (x: kiln.Tensor) => kiln.Tensor, compiled = false): number[] {
  const t = kiln.tensor(x, { dtype: 'float32' });
  t.requiresGrad = true;
  const step = (x: kiln.Tensor) => {
    x.grad = null;
    f(x).sum().backward();
    return x.grad!;
  };
  const g = compiled ? (kiln.compile(step, { fullgraph: true })(t) as kiln.Tensor) : step(t);
  return Array.from(g.dataSync());
}

for (const compiled of [false, true]) {
  const how = compiled ? 'compiled' : 'eager';
  test(`prod's gradient at zeros is the product of the others (${how}, as torch)`, () => {
    kiln.compiler.reset();
    assert.deepEqual(gradOf([[2, 0, 3], [0, 4, 0], [1, 2, 3]], (x) => x.prod(1), compiled), [0, 6, 0, 0, 0, 0, 6, 3, 2]);
    assert.deepEqual(gradOf([2, 0, 3], (x) => x.prod(), compiled), [0, 6, 0]);
    if (compiled) assert.equal(kiln.stats().fusionFallbacks, 0);
  });

  test(`pow(x, 0)'s gradient is 0, at x = 0 too (${how}, as torch)`, () => {
    kiln.compiler.reset();
    assert.deepEqual(gradOf([0, 2, -1], (x) => x.pow(0), compiled), [0, 0, 0]);
    assert.deepEqual(gradOf([0, 2, -1], (x) => x.pow(kiln.tensor([0, 0, 2], { dtype: 'float32' })), compiled), [0, 0, -2]);
    if (compiled) assert.equal(kiln.stats().fusionFallbacks, 0);
  });
}
