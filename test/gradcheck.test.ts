// Finite-difference gradient checks in float64 for every differentiable case of the op table:
// loss = sum_k (out_k * W_k).sum() with random weights W_k; autograd's .grad of each
// differentiable input is compared with central differences (eps 1e-6). The float64
// forward result is also checked against the reference, tightly.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import {
  GRAD_TOL, OP_TABLE, Rng, asList, baseSeed, caseSeed, checkForward, mismatch, toND, withSeed,
  type OpCase, type Tensor,
} from './op-table.js';
import * as R from './helpers/reference.js';
import { prng } from './helpers/prng.js';

const BASE = baseSeed();
const EPS = 1e-6;
/** finite differences are taken at most at this many elements per input (chosen at random) */
const MAX_POINTS = 48;


function pickPoints(n: number, rand: () => number): number[] {
  const all = Array.from({ length: n }, (_, i) => i);
  if (n <= MAX_POINTS) return all;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all.slice(0, MAX_POINTS).sort((a, b) => a - b);
}

function gradcheck(c: OpCase, seed: number): void {
  const rng = new Rng(seed, 'float64');
  const inputs = c.make(rng);
  for (const i of c.grad) {
    const x = inputs[i]!;
    assert.equal(x.dtype, 'float64', `${c.name}: differentiable input ${i} is ${x.dtype}`);
    assert.ok(x.isLeaf, `${c.name}: input ${i} must be a leaf`);
    x.requiresGrad = true;
  }
  const values = inputs.map(toND);

  // analytic: loss = sum_k <out_k, W_k>
  const outs = asList(c.run(kiln, inputs));
  const weights = outs.map((o) => kiln.randn([...o.shape], { dtype: 'float64' }));
  const W = weights.map(toND);
  let loss: Tensor | null = null;
  outs.forEach((o, k) => {
    assert.ok(o.requiresGrad, `${c.name}: output ${k} does not require grad although its inputs do`);
    const term = kiln.sum(kiln.mul(o, weights[k]!));
    loss = loss ? kiln.add(loss, term) : term;
  });
  loss!.backward();

  // numeric: central differences of the same loss, on contiguous copies of the inputs
  const f = (which: number, data: Float64Array): number =>
    kiln.noGrad(() =>
      kiln.scope(() => {
        const xs = inputs.map((t, i) => (i === which ? kiln.tensor(data, [...t.shape], { dtype: 'float64' }) : t));
        const ys = asList(c.run(kiln, xs));
        let s = 0;
        ys.forEach((y, k) => {
          const d = y.dataSync();
          const w = W[k]!.data;
          for (let j = 0; j < d.length; j++) s += d[j]! * w[j]!;
        });
        return s;
      }),
    );

  const rand = prng(seed ^ 0x9e3779b9);
  const tol = c.gradTol ?? GRAD_TOL;
  for (const i of c.grad) {
    const x = inputs[i]!;
    const g = x.grad;
    assert.ok(g, `${c.name}: input ${i} received no gradient`);
    assert.deepEqual(g.shape, x.shape, `${c.name}: grad of input ${i} has shape [${g.shape}], input [${x.shape}]`);
    assert.equal(g.dtype, 'float64', `${c.name}: grad of input ${i} is ${g.dtype}`);
    const analytic = g.dataSync();
    const base = values[i]!.data;
    const points = pickPoints(base.length, rand);
    const numeric = R.nd([points.length]);
    const got = new Float64Array(points.length);
    points.forEach((p, j) => {
      const plus = base.slice();
      plus[p]! += EPS;
      const minus = base.slice();
      minus[p]! -= EPS;
      numeric.data[j] = (f(i, plus) - f(i, minus)) / (2 * EPS);
      got[j] = analytic[p]!;
    });
    const m = mismatch(got, numeric, tol);
    if (m) {
      const where = m.replace(/worst at \[(\d+)\]/, (_s, j: string) => `worst at flat index ${points[Number(j)]}`);
      assert.fail(`${c.name}: gradient of input ${i} (analytic vs finite differences): ${where}`);
    }
  }
  // the backward pass must not have changed the inputs
  inputs.forEach((t, i) => {
    const m = mismatch(t.dataSync() as ArrayLike<number>, values[i]!, 'exact');
    if (m) assert.fail(`${c.name}: input ${i} was modified: ${m}`);
  });
}

const cases = OP_TABLE.filter((c) => c.grad.length > 0);

for (const c of cases) {
  test(`gradcheck: ${c.name}`, () => {
    const seed = caseSeed(BASE, c.name);
    const before = kiln.memory();
    withSeed(BASE, seed, () => {
      kiln.scope(() => checkForward(c, kiln, 'float64', seed));
      kiln.scope(() => gradcheck(c, seed));
    });
    const after = kiln.memory();
    // leaf grads are kept by design (outside scopes); the inputs were disposed, and their grads with them
    assert.equal(after.tensors, before.tensors, `${c.name}: tensors leaked by forward/backward inside kiln.scope`);
    assert.equal(after.bytes, before.bytes, `${c.name}: bytes leaked by forward/backward inside kiln.scope`);
  });
}
