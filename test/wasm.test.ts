// The wasm backend (WebAssembly emitted from the loop IR, f32x4 SIMD, threads over a shared
// memory): the op table and random graphs compiled with { backend: 'wasm' } against the
// float64 reference / eager, large (threaded) kernels, an MLP training step, threaded and
// single-threaded runs agreeing, and the heap's adoption and release of buffers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as kiln from 'kilnjs';
import { checkCompiledCase, checkEdgeCase, edgeCases, opTableFailures } from './helpers/compiled-op-case.js';
import { checkGraph, graphArb, type T } from './helpers/random-graphs.js';
import { compareWithEager } from './helpers/compare-eager.js';
import { checkMlpStepsMatchEager } from './helpers/mlp-step.js';
import { runtime } from '../src/ops/dispatch.js';

const WASM = { backend: 'wasm', fullgraph: true } as const;

test('wasm: every op-table case compiled equals the float64 reference', () => {
  // each failure reported in its first three lines
  const failures = opTableFailures((c) => checkCompiledCase(c, WASM), 3);
  assert.deepEqual(failures, []);
  assert.ok(kiln.wasmStats().kernels > 50, 'the cases ran wasm kernels');
});

test('wasm: pointwise cases on edge values (0, -0, subnormals, ±inf, NaN, ±3e38) equal eager', () => {
  const cases = edgeCases();
  assert.deepEqual(opTableFailures((c) => (cases.includes(c) ? checkEdgeCase(c, WASM) : undefined)), []);
});

// ---- random graphs (as test/compile-random-graphs.test.ts, on wasm) ----

test('wasm: random graphs compiled (fullgraph) equal eager', () => {
  fc.assert(fc.property(graphArb, (g) => checkGraph(g, WASM)), { numRuns: 120, seed: 20261130 });
});

// ---- large kernels: the threaded paths and the vectorized loops ----

test('wasm: large kernels (split across threads, f32x4 loops, blocked matmul) equal eager', () => {
  kiln.manualSeed(11);
  const big = kiln.keep(kiln.randn([300_001]));
  const rows = kiln.keep(kiln.randn([512, 301]));
  const a = kiln.keep(kiln.randn([256, 300]));
  const w = kiln.keep(kiln.randn([200, 300]));
  const bias = kiln.keep(kiln.randn([200]));
  const qa = kiln.keep(kiln.randn([8, 64, 48]));
  const qb = kiln.keep(kiln.randn([8, 48, 64]));
  const one = kiln.keep(kiln.randn([1, 300, 160]));
  const sq = kiln.keep(kiln.randn([130, 257]));
  const sq2 = kiln.keep(kiln.randn([257, 67]));
  const before = kiln.wasmStats().parallelLaunches;
  const cases: [string, (...xs: T[]) => T | T[], T[]][] = [
    ['W4-like 1-D chain', (x) => x.mul(1.5).add(0.3).tanh().mul(x.sigmoid()).sub(x.mul(0.1)), [big]],
    ['gelu, erf, exp, log, silu', (x) => [x.gelu(), x.erf(), x.exp(), x.abs().add(1e-3).log(), x.silu(), x.sin()], [big]],
    ['full reduction and argmax', (x) => [x.sum(), x.max(), x.argmax().float(), x.abs().mean()], [big]],
    ['softmax, layer norm, argmax rows', (x) => [x.softmax(-1), kiln.layerNorm(x, [301]), x.argmin(-1, true).float(), x.logsumexp(0)], [rows]],
    ['transposed rows', (x) => x.transpose(0, 1).softmax(-1).mul(2), [rows]],
    ['linear + gelu epilogue (x·Wᵀ)', (x, wt, b) => kiln.linear(x, wt, b).gelu(), [a, w, bias]],
    ['batched matmul (batch-parallel)', (x, y) => x.matmul(y).relu(), [qa, qb]],
    ['batch-1 matmul, rows split', (x, y) => x.matmul(y.transpose(-1, -2).transpose(-1, -2)), [one, kiln.keep(kiln.randn([160, 96]))]],
    ['odd-sized matmul (partial tiles)', (x, y) => x.matmul(y), [sq, sq2]],
    ['comparisons, where, int math', (x) => { const i = x.mul(100).to('int32'); return [kiln.where(x.gt(0), x, x.mul(0.5)), i.mul(i).add(7).float(), x.gt(0.5).logicalOr(x.lt(-0.5)).float()]; }, [big]],
  ];
  for (const [name, fn, inputs] of cases) compareWithEager(name, fn, inputs, WASM);
  if (kiln.wasmStats().threads > 1) assert.ok(kiln.wasmStats().parallelLaunches > before, 'large kernels were split across threads');
  for (const t of [big, rows, a, w, bias, qa, qb, one, sq, sq2]) t.dispose();
});

// ---- a training step ----

for (const opt of ['sgd', 'adam'] as const) {
  test(`wasm: a compiled MLP training step (${opt}) equals eager over several steps`, () => checkMlpStepsMatchEager('wasm', opt));
}

// ---- threads ----

test('wasm: threaded and single-threaded backends compute the same values', () => {
  kiln.manualSeed(3);
  const x = kiln.keep(kiln.randn([700, 513]));
  const m = kiln.keep(kiln.randn([513, 96]));
  const fn = (t: kiln.Tensor, w: kiln.Tensor) => [t.tanh().mul(t).softmax(-1), t.matmul(w).relu(), t.sum(-1), t.exp().mul(2)];
  const run = (threads: number) => {
    const b = kiln.setWasmThreads(threads);
    const out = kiln.scope(() => {
      kiln.compiler.reset();
      const f = kiln.compile(fn, WASM);
      f(x, m);
      return (f(x, m) as kiln.Tensor[]).map((t) => Array.from(t.dataSync()));
    });
    return { out, b };
  };
  const one = run(1);
  assert.equal(one.b.threads, 1);
  assert.match(one.b.singleThreadReason ?? '', /one thread/);
  assert.equal(one.b.stats().parallelLaunches, 0);
  const many = run(3);
  assert.equal(many.b.threads, 3);
  assert.equal(many.b.singleThreadReason, null);
  assert.ok(many.b.stats().parallelLaunches >= 3, 'kernels were split across threads');
  // rows split across threads compute exactly what one thread computes
  assert.deepEqual(many.out, one.out);
  x.dispose();
  m.dispose();
});

// ---- the heap ----

test('wasm: buffers made outside the heap are adopted into it once and released when tensors are disposed', (ctx) => {
  // eager tensors live in the heap already (test/eager-wasm.test.ts): plain JS buffers are the ones adopted
  const saved = runtime.backend;
  kiln.setDefaultBackend(new kiln.JsBackend());
  ctx.after(() => kiln.setDefaultBackend(saved));
  kiln.compiler.reset();
  const f = kiln.compile((a: kiln.Tensor, b: kiln.Tensor) => a.mul(b).add(1).relu().sum(-1), WASM);
  const mk = (): [kiln.Tensor, kiln.Tensor] => [kiln.randn([64, 100]), kiln.randn([64, 100])];
  kiln.scope(() => f(...mk()));
  const baseline = kiln.wasmStats().heap.bytesInUse;
  const adopted = kiln.wasmStats().heap.adopted;
  for (let i = 0; i < 20; i++) {
    kiln.scope(() => {
      const [a, b] = mk();
      const out = f(a!, b!) as kiln.Tensor;
      // a user array is a copy: it keeps its values after the heap reuses the region
      const arr = out.dataSync();
      const copy = Array.from(arr);
      out.dispose();
      kiln.scope(() => f(...mk()));
      assert.deepEqual(Array.from(arr), copy);
    });
  }
  assert.ok(kiln.wasmStats().heap.adopted >= adopted + 40, 'inputs were adopted');
  assert.equal(kiln.wasmStats().heap.bytesInUse, baseline, 'heap bytes in use are back to the baseline');
  // a disposed buffer no longer points into the heap
  const t = kiln.randn([1000]);
  kiln.scope(() => f(t.reshape([10, 100]), t.reshape([10, 100])));
  const storage = (t as unknown as { storage: { buf: { data: Float32Array } } }).storage;
  const buf = storage.buf;
  assert.ok(buf.data.length === 1000);
  t.dispose();
  assert.equal(buf.data.length, 0);
});
