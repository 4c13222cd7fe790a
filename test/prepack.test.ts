// Prepacked matmul operands on the native and wasm backends (src/backend/native/prepack.ts,
// src/backend/wasm/prepack.ts): a weight
// whose storage keeps its version is packed once, on its second launch, and later calls use the
// packed panels; any in-place write (eager assign, a compiled optimizer step writing it) moves
// the version and the next call packs again: never a stale weight. Checked against float64
// references with fresh random inputs, at sizes with an edge in every dimension, for x·Wᵀ
// (Linear) and x·W, batched x, and NaN/Inf in the weight.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import { nativeUnavailableReason } from 'kilnjs/node';
import { prepackStats } from '../src/backend/native/prepack.js';
import { wasmPrepackStats } from '../src/backend/wasm/prepack.js';
import { prng } from './helpers/prng.js';

process.env.KILN_CACHE_DIR ??= join(tmpdir(), 'kiln-test-cache');
const nativeWhy = nativeUnavailableReason();
const BACKENDS = [
  { backend: 'native', skip: nativeWhy ? `native backend unavailable: ${nativeWhy}` : false, stats: prepackStats },
  { backend: 'wasm', skip: kiln.wasmUnavailableReason() ?? false, stats: wasmPrepackStats },
] as const;

const seed = Math.floor(Math.random() * 2 ** 31);
console.log(`# native prepack: seed ${seed}`);
const rand = prng(seed);
const randomTensor = (shape: number[]) => kiln.keep(kiln.tensor(Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rand() * 2 - 1)).reshape(shape));

/** float64 x[..., m, k] · (transposed ? w[n, k]ᵀ : w[k, n]) + bias, then relu. */
function reference(x: kiln.Tensor, w: kiln.Tensor, bias: kiln.Tensor, transposed: boolean): Float64Array {
  const xd = x.dataSync(), wd = w.dataSync(), bd = bias.dataSync();
  const k = x.shape.at(-1)!, rows = xd.length / k, n = bias.shape[0]!;
  const out = new Float64Array(rows * n);
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += xd[i * k + p]! * (transposed ? wd[j * k + p]! : wd[p * n + j]!);
      s += bd[j]!;
      out[i * n + j] = s > 0 || Number.isNaN(s) ? s : 0;
    }
  }
  return out;
}

function assertClose(got: ArrayLike<number>, want: Float64Array, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  let scale = 1e-30;
  for (const v of want) if (Number.isFinite(v)) scale = Math.max(scale, Math.abs(v));
  for (let i = 0; i < want.length; i++) {
    const g = got[i]!, w = want[i]!;
    if (!Number.isFinite(w)) assert.ok(Object.is(g, w) || (Number.isNaN(g) && Number.isNaN(w)), `${what}[${i}]: ${g} vs ${w}`);
    else assert.ok(Math.abs(g - w) <= 2e-5 * scale, `${what}[${i}]: ${g} vs ${w} (scale ${scale})`);
  }
}

const CASES = [
  { name: 'x·Wᵀ, edges in m, n and k', x: [37, 301], n: 203, transposed: true },
  { name: 'x·W (B not transposed)', x: [64, 129], n: 70, transposed: false },
  { name: 'batched x [3, 20, 96] · Wᵀ', x: [3, 20, 96], n: 33, transposed: true },
  { name: 'one row', x: [1, 200], n: 40, transposed: true },
];

for (const { backend, skip, stats } of BACKENDS) for (const c of CASES) {
  test(`${backend} prepack: ${c.name}, packed once and repacked after every in-place write`, { skip }, () => {
    kiln.compiler.reset();
    const k = c.x.at(-1)!;
    const x = randomTensor(c.x);
    const w = randomTensor(c.transposed ? [c.n, k] : [k, c.n]);
    const bias = randomTensor([c.n]);
    const fn = (t: kiln.Tensor) => (c.transposed ? kiln.linear(t, w, bias) : t.matmul(w).add(bias)).relu();
    const f = kiln.compile(fn, { backend, fullgraph: true });
    const call = () => kiln.noGrad(() => kiln.scope(() => Array.from(f(x).dataSync())));
    const packs0 = stats.packs, hits0 = stats.hits;
    for (let i = 0; i < 4; i++) assertClose(call(), reference(x, w, bias, c.transposed), `call ${i}`);
    assert.equal(stats.packs - packs0, 1, 'the weight was packed once');
    assert.ok(stats.hits - hits0 >= 2, 'later calls used the packed weight');
    // an eager in-place write moves the version: the next call must see the new weight
    kiln.noGrad(() => kiln.assign(w, kiln.scope(() => w.mul(-0.5).add(0.25))));
    assertClose(call(), reference(x, w, bias, c.transposed), 'after assign');
    assertClose(call(), reference(x, w, bias, c.transposed), 'after assign, packed again');
    assert.equal(stats.packs - packs0, 2, 'packed again for the new content');
    // a compiled step writing the weight (an optimizer-style update) moves it too
    const update = kiln.compile(() => kiln.noGrad(() => void kiln.assign(w, w.mul(1.5).sub(0.1))), { backend, fullgraph: true });
    for (let i = 0; i < 3; i++) {
      update();
      assertClose(call(), reference(x, w, bias, c.transposed), `after compiled update ${i}`);
    }
    assert.equal(kiln.stats().fusionFallbacks, 0);
    assert.equal(kiln.stats().eagerFallbacks, 0);
    for (const t of [x, w, bias]) t.dispose();
  });
}

for (const { backend, skip } of BACKENDS) test(`${backend} prepack: NaN and Inf in a packed weight propagate as in eager`, { skip }, () => {
  kiln.compiler.reset();
  const x = randomTensor([16, 40]);
  const wd = Float32Array.from({ length: 24 * 40 }, () => rand() - 0.5);
  wd[3 * 40 + 7] = NaN;
  wd[10 * 40 + 0] = Infinity;
  const w = kiln.keep(kiln.tensor(wd).reshape([24, 40]));
  const bias = kiln.keep(kiln.zeros([24]));
  const f = kiln.compile((t: kiln.Tensor) => kiln.linear(t, w, bias), { backend, fullgraph: true });
  const eager = kiln.noGrad(() => kiln.scope(() => Array.from(kiln.linear(x, w, bias).dataSync())));
  for (let i = 0; i < 3; i++) {
    const got = kiln.noGrad(() => kiln.scope(() => Array.from(f(x).dataSync())));
    got.forEach((v, j) => {
      const e = eager[j]!;
      if (Number.isNaN(e)) assert.ok(Number.isNaN(v), `call ${i} [${j}]: ${v}, eager NaN`);
      else if (!Number.isFinite(e)) assert.equal(v, e, `call ${i} [${j}]`);
      else assert.ok(Math.abs(v - e) <= 1e-4, `call ${i} [${j}]: ${v} vs ${e}`);
    });
    const col = (j: number) => got.filter((_, idx) => idx % 24 === j);
    assert.ok(col(3).every(Number.isNaN), `call ${i}: the NaN column is NaN`);
    assert.ok(col(10).every((v) => !Number.isFinite(v)), `call ${i}: the Inf column is not finite`);
  }
  for (const t of [x, w, bias]) t.dispose();
});
