// Error bounds of the wasm backend's f32x4 math (src/backend/wasm/vmath.ts), measured through
// compiled kernels (contiguous float32 loops are vectorized) against float64 Math.* of the
// same float32 inputs. The bounds are the ones documented in vmath.ts and the README.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { erf } from '../src/backend/js/render-scalar.js';

/** float32 inputs: a dense grid over [lo, hi] plus the range ends. */
function grid(lo: number, hi: number, n = 200_003): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + ((hi - lo) * i) / (n - 1);
  return out;
}

function run(op: (t: kiln.Tensor) => kiln.Tensor, xs: Float32Array): Float32Array {
  return kiln.scope(() => {
    kiln.compiler.reset();
    const f = kiln.compile(op, { backend: 'wasm', fullgraph: true });
    return (f(kiln.tensor(xs, [xs.length])) as kiln.Tensor).dataSync() as Float32Array;
  });
}

function errors(got: Float32Array, xs: Float32Array, ref: (x: number) => number): { abs: number; rel: number } {
  let abs = 0, rel = 0;
  for (let i = 0; i < xs.length; i++) {
    const r = ref(xs[i]!), g = got[i]!;
    const e = Math.abs(g - r);
    abs = Math.max(abs, e);
    if (r !== 0) rel = Math.max(rel, e / Math.abs(r));
  }
  return { abs, rel };
}

const gelu = (x: number) => 0.5 * x * (1 + erf(x * Math.SQRT1_2));
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

test('wasm math: exp relative error < 2e-7 on [-87, 88], exact limits', () => {
  const xs = grid(-87, 88);
  const e = errors(run((t) => t.exp(), xs), xs, Math.exp);
  console.log(`# exp: max relative error ${e.rel.toExponential(2)}`);
  assert.ok(e.rel < 2e-7, `exp relative error ${e.rel}`);
  const lim = Float32Array.from([Infinity, -Infinity, NaN, 89, -104, 0, -0]);
  const got = Array.from(run((t) => t.exp(), lim));
  assert.deepEqual(got.slice(0, 2), [Infinity, 0]);
  assert.ok(Number.isNaN(got[2]));
  assert.equal(got[3], Infinity);
  assert.equal(got[4], 0);
  assert.deepEqual(got.slice(5), [1, 1]);
});

test('wasm math: exp underflows gradually through the subnormal range', () => {
  const xs = grid(-103, -87, 20_001);
  const e = errors(run((t) => t.exp(), xs), xs, (x) => Math.fround(Math.exp(x)));
  // subnormal results carry fewer significant bits: the bound is absolute (2 ulp of the smallest normal)
  assert.ok(e.abs < 2.4e-38, `exp subnormal absolute error ${e.abs}`);
});

test('wasm math: log relative error < 1.5e-7 (absolute < 1e-7 on [0.5, 2]), special values', () => {
  for (const [lo, hi] of [[1e-30, 1e-3], [1e-3, 0.5], [2, 1e30]] as const) {
    const xs = grid(lo, hi);
    const e = errors(run((t) => t.log(), xs), xs, Math.log);
    console.log(`# log [${lo}, ${hi}]: max relative error ${e.rel.toExponential(2)}`);
    assert.ok(e.rel < 1.5e-7, `log relative error ${e.rel} on [${lo}, ${hi}]`);
  }
  const near = grid(0.5, 2);
  const e = errors(run((t) => t.log(), near), near, Math.log);
  console.log(`# log [0.5, 2]: max absolute error ${e.abs.toExponential(2)}`);
  assert.ok(e.abs < 1e-7, `log absolute error ${e.abs}`);
  const sub = Float32Array.from([1e-40, 1.4e-45, 0, -0, -1, Infinity, NaN]);
  const got = Array.from(run((t) => t.log(), sub));
  assert.ok(Math.abs(got[0]! - Math.log(Math.fround(1e-40))) < 1e-5);
  assert.ok(Math.abs(got[1]! - Math.log(Math.fround(1.4e-45))) < 1e-5);
  assert.deepEqual(got.slice(2, 4), [-Infinity, -Infinity]);
  assert.ok(Number.isNaN(got[4]) && Number.isNaN(got[6]));
  assert.equal(got[5], Infinity);
});

test('wasm math: tanh and erf absolute error < 4e-7, gelu < 2e-6, sigmoid < 2e-7 on [-20, 20]', () => {
  const xs = grid(-20, 20);
  const cases: [string, (t: kiln.Tensor) => kiln.Tensor, (x: number) => number, number][] = [
    ['tanh', (t) => t.tanh(), Math.tanh, 4e-7],
    ['erf', (t) => t.erf(), erf, 4e-7],
    ['gelu', (t) => t.gelu(), gelu, 2e-6],
    ['sigmoid', (t) => t.sigmoid(), sigmoid, 2e-7],
  ];
  for (const [name, op, ref, bound] of cases) {
    const e = errors(run(op, xs), xs, ref);
    console.log(`# ${name}: max absolute error ${e.abs.toExponential(2)}`);
    assert.ok(e.abs < bound, `${name} absolute error ${e.abs} (bound ${bound})`);
  }
  const nan = Array.from(run((t) => t.tanh(), Float32Array.from([NaN, Infinity, -Infinity, 1e-6])));
  assert.ok(Number.isNaN(nan[0]));
  assert.deepEqual(nan.slice(1, 3), [1, -1]);
  assert.equal(nan[3], Math.fround(1e-6));
});
