// The native backend (C compiled at run time, called through koffi): the op table, random
// graphs and an MLP training step compiled with { backend: 'native' } against the float64
// reference / eager; the disk cache; and what happens without a C compiler.
// Skipped (with the reason printed) where no C compiler or koffi is available.
//
// Speed: the op-table and random-graph cases are traced once inside nativeBatch (their
// kernels run as JS meanwhile and are compiled at the end as one C unit), then checked with
// the native kernels; compiled libraries are cached on disk (KILN_CACHE_DIR, here a folder
// under the OS temp dir) between runs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import * as kiln from 'kilnjs';
import { clearNativeMemoryCache, nativeBatch, nativeStats, nativeUnavailableReason, NativeUnavailableError, NativeCompileError } from 'kilnjs/node';
import { OP_TABLE } from './op-table.js';
import { checkCompiledCase, checkEdgeCase, edgeCases, opTableFailures } from './helpers/compiled-op-case.js';
import { checkGraph, graphArb, type T } from './helpers/random-graphs.js';
import { compareWithEager } from './helpers/compare-eager.js';
import { checkMlpStepsMatchEager } from './helpers/mlp-step.js';
import { outputPoolStats } from '../src/compiler/run/output-pool.js';

process.env.KILN_CACHE_DIR ??= join(tmpdir(), 'kiln-test-cache');
const unavailable = nativeUnavailableReason();
if (unavailable) console.log(`# native backend tests skipped: ${unavailable}`);
const skip = unavailable ? `native backend unavailable: ${unavailable}` : false;

const NATIVE = { backend: 'native', fullgraph: true } as const;

test('native: every op-table case compiled equals the float64 reference', { skip }, () => {
  // one C unit for every case's kernels, then each case traced again and checked on native
  nativeBatch(() => {
    for (const c of OP_TABLE) checkCompiledCase(c, NATIVE, false);
  });
  const compiles = nativeStats().compiles;
  assert.deepEqual(opTableFailures((c) => checkCompiledCase(c, NATIVE)), []);
  assert.equal(nativeStats().compiles, compiles, 'the checked runs found every kernel already compiled');
});

test('native: pointwise cases on edge values (0, -0, subnormals, ±inf, NaN, ±3e38) equal eager', { skip }, () => {
  const cases = edgeCases();
  nativeBatch(() => cases.forEach((c) => checkEdgeCase(c, NATIVE, false)));
  assert.deepEqual(opTableFailures((c) => (cases.includes(c) ? checkEdgeCase(c, NATIVE) : undefined)), []);
});

// ---- random graphs (as test/compile-random-graphs.test.ts, on native) ----

test('native: random graphs compiled (fullgraph) equal eager', { skip }, () => {
  const graphs = fc.sample(graphArb, { numRuns: 120, seed: 20261130 });
  nativeBatch(() => graphs.forEach((g) => checkGraph(g, NATIVE, false)));
  graphs.forEach((g) => checkGraph(g, NATIVE));
  // and a shrinking property run over fresh graphs (a few: each may compile a unit)
  fc.assert(fc.property(graphArb, (g) => checkGraph(g, NATIVE)), { numRuns: 4 });
});

// ---- large kernels: the threaded paths (OpenMP splits, chunked 1-D loops, matmul blocks) ----

test('native: large kernels (split across threads) equal eager', { skip }, () => {
  kiln.manualSeed(11);
  const big = kiln.keep(kiln.randn([300_000]));
  const rows = kiln.keep(kiln.randn([512, 300]));
  const a = kiln.keep(kiln.randn([256, 300]));
  const w = kiln.keep(kiln.randn([200, 300]));
  const bias = kiln.keep(kiln.randn([200]));
  const qa = kiln.keep(kiln.randn([16, 64, 96]));
  const qb = kiln.keep(kiln.randn([16, 96, 64]));
  const one = kiln.keep(kiln.randn([1, 300, 160]));
  const cases: [string, (...xs: T[]) => T | T[], T[]][] = [
    ['W4-like 1-D chain', (x) => x.mul(1.5).add(0.3).tanh().mul(x.sigmoid()).sub(x.mul(0.1)), [big]],
    ['full reduction and argmax', (x) => [x.sum(), x.max(), x.argmax().float(), x.abs().mean()], [big]],
    ['softmax, layer norm, argmax rows', (x) => [x.softmax(-1), kiln.layerNorm(x, [300]), x.argmin(-1, true).float(), x.logsumexp(0)], [rows]],
    ['transposed rows', (x) => x.transpose(0, 1).softmax(-1).mul(2), [rows]],
    ['linear + gelu epilogue (x·Wᵀ)', (x, wt, b) => kiln.linear(x, wt, b).gelu(), [a, w, bias]],
    ['float64 linear (x·Wᵀ, transposed packing)', (x, wt, b) => kiln.linear(x.double(), wt.double(), b.double()).tanh(), [a, w, bias]],
    ['matmul with a C tile edge in every dimension', (x, y) => x.slice(0, 0, 241).matmul(y.slice(1, 0, 173)).add(1), [a, kiln.keep(kiln.randn([300, 190]))]],
    ['batched matmul (batch-parallel)', (x, y) => x.matmul(y).relu(), [qa, qb]],
    ['batch-1 matmul, rows split', (x, y) => x.matmul(y.transpose(-1, -2).transpose(-1, -2)), [one, kiln.keep(kiln.randn([160, 96]))]],
    ['comparisons, where, int math', (x) => { const i = x.mul(100).to('int32'); return [kiln.where(x.gt(0), x, x.mul(0.5)), i.mul(i).add(7).float(), x.gt(0.5).logicalOr(x.lt(-0.5)).float()]; }, [big]],
  ];
  for (const [name, fn, inputs] of cases) compareWithEager(name, fn, inputs, NATIVE);
  for (const t of [big, rows, a, w, bias, qa, qb, one]) t.dispose();
});

// ---- more buffers than koffi binds as parameters (64) ----

test('native: a kernel over more than 62 buffers runs native (one pointer array) and equals eager', { skip }, () => {
  kiln.manualSeed(5);
  // 40 inputs of different shapes -> 40 outputs: one horizontal group kernel over 80 buffers
  const xs = Array.from({ length: 40 }, (_, i) => kiln.keep(kiln.randn([3 + (i % 5), 7])));
  const fn = (...a: kiln.Tensor[]) => a.map((x, i) => x.mul(i + 1).add(0.5).tanh());
  kiln.scope(() => {
    kiln.compiler.reset();
    const before = nativeStats();
    const nat = kiln.compile(fn, NATIVE);
    const eager = fn(...xs).map((t) => Array.from(t.dataSync()));
    for (const call of ['trace', 'replay']) {
      nat(...xs).forEach((t, o) => {
        const g = t.dataSync(), e = eager[o]!;
        for (let k = 0; k < e.length; k++) assert.ok(Math.abs(g[k]! - e[k]!) <= 1e-6, `${call} output ${o}[${k}]: native ${g[k]} vs eager ${e[k]}`);
      });
    }
    const after = nativeStats();
    // the group really was one native kernel with its buffers in a pointer array
    assert.ok(after.pointerArrays > before.pointerArrays, 'a kernel took its buffers as a pointer array');
    assert.ok(after.kernels > before.kernels || after.memoryHits > before.memoryHits, 'the kernel was compiled (not run as JS)');
  });
  xs.forEach((x) => x.dispose());
});

// ---- recycled program buffers ----

test('native: a disposed output is recycled by the next call (dirty memory, same values)', { skip }, () => {
  kiln.manualSeed(6);
  const x = kiln.keep(kiln.randn([64, 1024]));
  const y = kiln.keep(kiln.randn([64, 1024]));
  const fn = (a: kiln.Tensor, b: kiln.Tensor) => a.mul(b).add(1).tanh();
  kiln.compiler.reset();
  const nat = kiln.compile(fn, NATIVE);
  const want = Array.from(kiln.scope(() => fn(x, y).dataSync()));
  const mem = (t: kiln.Tensor) => (t.storage.buf as unknown as { data: Float32Array }).data;
  const first = nat(x, y);
  const firstData = mem(first);
  first.dispose();
  const hits = outputPoolStats.reuses;
  // the second call gets the first call's memory back (256 KiB: pooled); an output still alive is never reused
  const second = nat(x, y);
  assert.equal(outputPoolStats.reuses, hits + 1, 'the second call reused the disposed output');
  assert.equal(mem(second), firstData, 'the same memory');
  const third = nat(x, y);
  assert.notEqual(mem(third), mem(second), 'a live output is not handed out again');
  for (const t of [second, third]) t.dataSync().forEach((v, k) => assert.ok(Math.abs(v - want[k]!) <= 1e-6, `[${k}] ${v} vs ${want[k]}`));
  for (const t of [second, third, x, y]) t.dispose();
});

// ---- a training step ----

for (const opt of ['sgd', 'adam'] as const) {
  test(`native: a compiled MLP training step (${opt}) equals eager over several steps`, { skip }, () => checkMlpStepsMatchEager('native', opt));
}

// ---- the disk cache ----

test('native: a second build of the same program loads the library from the disk cache', { skip }, () => {
  // a program no other test builds (its constant is unique), so its unit is not on disk yet
  const unique = 1 + Math.random();
  const fn = (x: kiln.Tensor) => x.mul(unique).exp().sum(-1);
  const x = kiln.keep(kiln.randn([8, 16]));
  const build = () => kiln.scope(() => {
    kiln.compiler.reset();
    return Array.from((kiln.compile(fn, NATIVE)(x) as kiln.Tensor).dataSync());
  });
  const s0 = nativeStats();
  const first = build();
  const s1 = nativeStats();
  assert.equal(s1.compiles - s0.compiles, 1, 'the first build ran the C compiler once');
  clearNativeMemoryCache(); // as a new process would: nothing compiled in memory
  const second = build();
  const s2 = nativeStats();
  assert.equal(s2.compiles, s1.compiles, 'the second build compiled nothing');
  assert.ok(s2.diskHits - s1.diskHits >= 1, 'the second build loaded from the disk cache');
  assert.deepEqual(second, first);
  x.dispose();
});

// ---- no compiler ----

test('native: without a C compiler, backend native throws a typed error (and js still works)', { skip: unavailable ? 'no compiler here to hide' : false }, () => {
  const saved = process.env.KILN_CC;
  process.env.KILN_CC = '/nonexistent/kiln-cc';
  clearNativeMemoryCache();
  try {
    assert.match(nativeUnavailableReason() ?? '', /KILN_CC=\/nonexistent\/kiln-cc is not an executable/);
    kiln.compiler.reset();
    const x = kiln.keep(kiln.randn([4, 4]));
    const fn = (t: kiln.Tensor) => t.mul(2).add(1);
    assert.throws(() => kiln.scope(() => kiln.compile(fn, NATIVE)(x)), (e: unknown) => {
      assert.ok(e instanceof NativeUnavailableError && e instanceof kiln.KilnError);
      assert.match((e as Error).message, /unavailable.*KILN_CC/s);
      assert.match((e as Error).message, /hint: install a C compiler/);
      return true;
    });
    // nothing was left half-traced: the same function compiles on js
    const out = kiln.scope(() => Array.from((kiln.compile(fn, { backend: 'js', fullgraph: true })(x) as kiln.Tensor).dataSync()));
    assert.deepEqual(out, Array.from(x.dataSync()).map((v) => Math.fround(v * 2 + 1)));
    x.dispose();
  } finally {
    if (saved === undefined) delete process.env.KILN_CC;
    else process.env.KILN_CC = saved;
    clearNativeMemoryCache();
  }
  assert.equal(nativeUnavailableReason(), null);
});

test('native: a C compile that fails surfaces as a NativeCompileError: never a silent run of the recorded eager kernels (issue 18)', { skip }, () => {
  const saved = process.env.KILN_CFLAGS;
  process.env.KILN_CFLAGS = '-O1 -include /nonexistent/kiln-forced-failure.h';
  clearNativeMemoryCache();
  try {
    kiln.compiler.reset();
    const x = kiln.keep(kiln.randn([5, 11]));
    assert.throws(() => kiln.scope(() => kiln.compile((t: kiln.Tensor) => t.mul(1.75).tanh(), { backend: 'native', cache: false })(x)), NativeCompileError);
    const st = kiln.stats();
    assert.equal(st.fusionFallbacks, 0, 'a kernel backend failure is not a fusion fallback');
    assert.equal(st.eagerFallbacks, 0);
    x.dispose();
  } finally {
    if (saved === undefined) delete process.env.KILN_CFLAGS;
    else process.env.KILN_CFLAGS = saved;
    clearNativeMemoryCache();
    kiln.compiler.reset();
  }
});

test('native: a PATH without any C compiler is reported as such', { skip }, () => {
  // in a child process, so this process's PATH (and compiler lookup) stays as it is
  const script = "import('kilnjs/node').then((k) => console.log(k.nativeUnavailableReason()))";
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, PATH: mkdtempSync(join(tmpdir(), 'kiln-empty-path-')), KILN_CC: '' } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /no C compiler \(cc, gcc or clang\) on PATH/);
});

test('native: a compiler failure raises NativeCompileError with the command and stderr', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-bad-cflags-'));
  const saved = { flags: process.env.KILN_CFLAGS, cache: process.env.KILN_CACHE_DIR };
  process.env.KILN_CFLAGS = '-O2 -fno-such-flag-kiln';
  process.env.KILN_CACHE_DIR = dir;
  clearNativeMemoryCache();
  try {
    kiln.compiler.reset();
    const x = kiln.keep(kiln.randn([3]));
    assert.throws(() => kiln.scope(() => kiln.compile((t: kiln.Tensor) => t.sin(), NATIVE)(x)), (e: unknown) => {
      assert.ok(e instanceof NativeCompileError);
      assert.match(e.command, /-fno-such-flag-kiln/);
      assert.match(e.stderr, /no-such-flag-kiln/);
      return true;
    });
    x.dispose();
  } finally {
    for (const [k, v] of [['KILN_CFLAGS', saved.flags], ['KILN_CACHE_DIR', saved.cache]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    clearNativeMemoryCache();
    rmSync(dir, { recursive: true, force: true });
  }
});
