// Compiled kernels split across worker threads give the single-thread results.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as kiln from 'kilnjs';
import { getThreadPool, planChunks, workerExecArgv } from '../src/backend/js/threads.js';
import { outputPoolStats } from '../src/compiler/run/output-pool.js';
import { ChunkControl, claimChunks, claimChunksSource, type ClaimChunks } from '../src/backend/js/chunk-protocol.js';
import { assertCompiledRan } from './helpers/compiled-ran.js';

function close(a: kiln.Tensor, b: kiln.Tensor, tol = 1e-5): void {
  const x = a.dataSync(), y = b.dataSync();
  let m = 0, s = 1e-6;
  for (let i = 0; i < y.length; i++) (m = Math.max(m, Math.abs(x[i]! - y[i]!))), (s = Math.max(s, Math.abs(y[i]!)));
  assert.ok(m / s < tol, `max diff ${m} (scale ${s})`);
}

test('large pointwise, row and matmul kernels run on the pool and equal eager', { skip: getThreadPool() ? false : 'no worker threads here (single core or no SharedArrayBuffer)' }, () => {
  kiln.compiler.reset();
  const pool = getThreadPool()!;
  const before = pool.launches;
  kiln.manualSeed(1);
  const x = kiln.randn([512, 384]), w = kiln.randn([384, 300]), b = kiln.randn([300]);
  const fns = [
    (x: kiln.Tensor) => x.mul(1.5).add(0.3).tanh().mul(x.sigmoid()),
    (x: kiln.Tensor) => kiln.softmax(x, -1).mul(x).sum(-1),
    (x: kiln.Tensor) => x.matmul(w).add(b).gelu('tanh'),
    (x: kiln.Tensor) => x.reshape([4, 128, 384]).matmul(w).relu(),
  ];
  for (const fn of fns) {
    const c = kiln.compile(fn, { backend: 'js' });
    for (let i = 0; i < 2; i++) kiln.scope(() => close(c(x) as kiln.Tensor, fn(x)));
  }
  assert.ok(pool.launches - before >= 8, `pool ran ${pool.launches - before} kernels`);
  assertCompiledRan('pooled kernels');
});

test('a compiled training step with large layers matches eager with threads', { skip: getThreadPool() ? false : 'no worker threads here' }, () => {
  kiln.compiler.reset();
  const build = () => {
    kiln.manualSeed(4);
    return new kiln.nn.Sequential(new kiln.nn.Linear(256, 512), new kiln.nn.ReLU(), new kiln.nn.Linear(512, 10));
  };
  const me = build(), mc = build();
  const oe = new kiln.optim.SGD(me.parameters(), { lr: 0.05, momentum: 0.9 }), oc = new kiln.optim.SGD(mc.parameters(), { lr: 0.05, momentum: 0.9 });
  const x = kiln.keep(kiln.randn([256, 256])), y = kiln.keep(kiln.randint(0, 10, [256]));
  const step = (m: kiln.nn.Sequential, o: kiln.optim.SGD, x: kiln.Tensor, y: kiln.Tensor) => {
    o.zeroGrad();
    const l = kiln.crossEntropy(m.forward(x) as kiln.Tensor, y);
    l.backward();
    o.step();
    return l;
  };
  const c = kiln.compile((x: kiln.Tensor, y: kiln.Tensor) => step(mc, oc, x, y), { backend: 'js' });
  for (let i = 0; i < 5; i++) {
    kiln.scope(() => {
      const le = step(me, oe, x, y).item(), lc = (c(x, y) as kiln.Tensor).item();
      assert.ok(Math.abs(le - lc) <= 1e-5 * Math.abs(le), `step ${i}: ${le} vs ${lc}`);
    });
  }
  // five momentum steps: float32 rounding differences (fast exp, fused rounding) compound a little
  me.parameters().forEach((p, i) => close(mc.parameters()[i]!, p, 1e-4));
  assertCompiledRan('threaded training step');
});

// ---- chunked scheduling (threads claim chunks from a shared counter) ----

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** each index of [lo, hi) counted once: a chunk run twice or skipped shows up as a count != 1 */
const COUNT_SRC = '(b0, lo, hi) => { for (let i = lo; i < hi; i++) Atomics.add(b0, i, 1); }';
const count = (bufs: readonly unknown[], lo: number, hi: number) => {
  for (let i = lo; i < hi; i++) Atomics.add(bufs[0] as Int32Array, i, 1);
};

test('the pool covers [0, extent) exactly once in chunks shared by caller and workers', { skip: getThreadPool() ? false : 'no worker threads here' }, async () => {
  const pool = getThreadPool()!;
  pool.prepare([COUNT_SRC]);
  // workers boot asynchronously: until one has, the caller runs every chunk itself
  for (let i = 0; i < 100 && pool.chunks === pool.callerChunks; i++) {
    await sleep(20);
    pool.run(COUNT_SRC, count as never, [new Int32Array(new SharedArrayBuffer(4 * 64))], 64, undefined, 1);
  }
  const chunks0 = pool.chunks, caller0 = pool.callerChunks;
  for (const [extent, grain] of [[1, 1], [2, 1], [7, 1], [100, 1], [1000, 3], [4097, 8], [64, 64], [100000, 1]] as const) {
    const buf = new Int32Array(new SharedArrayBuffer(4 * extent));
    pool.run(COUNT_SRC, count as never, [buf], extent, undefined, grain);
    assert.ok(buf.every((v) => v === 1), `extent ${extent} grain ${grain}: [${buf.slice(0, 16).join(',')}...]`);
  }
  // many back-to-back launches: a worker reading an old launch's message must claim nothing of a new one
  for (let l = 0; l < 300; l++) {
    const extent = 1 + (l % 37);
    const buf = new Int32Array(new SharedArrayBuffer(4 * extent));
    pool.run(COUNT_SRC, count as never, [buf], extent, undefined, 1);
    assert.ok(buf.every((v) => v === 1), `launch ${l}`);
  }
  assert.ok(pool.chunks - chunks0 > 300 + 2 * pool.threads, `more chunks than one per thread (${pool.chunks - chunks0})`);
  assert.ok(pool.callerChunks - caller0 < pool.chunks - chunks0, 'workers ran some chunks');
});

test('a chunk that fails in a worker is rerun by the caller, whose error surfaces; the pool keeps working', { skip: getThreadPool() ? false : 'no worker threads here' }, () => {
  const pool = getThreadPool()!;
  const src = '(b0, lo, hi) => { throw new Error("worker boom"); }';
  assert.throws(() => pool.run(src, () => { throw new Error('caller boom'); }, [new Int32Array(new SharedArrayBuffer(4 * 512))], 512, undefined, 1), /caller boom/);
  const buf = new Int32Array(new SharedArrayBuffer(4 * 512));
  pool.run(COUNT_SRC, count as never, [buf], 512, undefined, 1);
  assert.ok(buf.every((v) => v === 1));
});

test('planChunks: a few chunks per thread, in grain multiples, never fewer chunks than threads', () => {
  assert.deepEqual(planChunks(1000, 2), { size: 125, chunks: 8 });
  assert.deepEqual(planChunks(1000, 2, 64), { size: 128, chunks: 8 });
  // a grain bigger than one thread's share: one chunk per thread, as the static split
  assert.deepEqual(planChunks(100, 2, 64), { size: 50, chunks: 2 });
  assert.deepEqual(planChunks(1, 4), { size: 1, chunks: 1 });
  for (const [e, t, g] of [[7, 3, 1], [513, 2, 8], [8192, 16, 1], [1e7, 2, 1]] as const) {
    const { size, chunks } = planChunks(e, t, g);
    assert.ok(size * chunks >= e && size * (chunks - 1) < e && chunks <= 4095, `${e}/${t}/${g}: ${size} x ${chunks}`);
  }
});

test('wasm: a few-row matmul (threads split columns) and row reductions equal one thread exactly with chunks', () => {
  kiln.manualSeed(5);
  const x = kiln.keep(kiln.randn([128, 256])), w = kiln.keep(kiln.randn([256, 1024])), b = kiln.keep(kiln.randn([1024]));
  const fn = (t: kiln.Tensor) => [t.matmul(w).add(b).relu(), kiln.softmax(t.matmul(w), -1).sum(-1)];
  const run = (threads: number) => {
    const be = kiln.setWasmThreads(threads);
    const out = kiln.scope(() => {
      kiln.compiler.reset();
      const f = kiln.compile(fn, { backend: 'wasm' });
      f(x);
      const got = (f(x) as kiln.Tensor[]).map((t) => Array.from(t.dataSync()));
      assertCompiledRan(`wasm, ${threads} threads`);
      return got;
    });
    return { out, launches: be.stats().parallelLaunches };
  };
  const one = run(1), many = run(3);
  assert.ok(many.launches >= 2, 'split across threads');
  assert.deepEqual(many.out, one.out);
  kiln.setWasmThreads(2);
  [x, w, b].forEach((t) => t.dispose());
});

// ---- output buffers of compiled programs ----

test('compiled outputs: a disposed output buffer is reused by a later call, a kept one never is', () => {
  kiln.compiler.reset();
  const f = kiln.compile((x: kiln.Tensor) => x.mul(2).add(1), { backend: 'js' });
  const x1 = kiln.keep(kiln.randn([32768])), x2 = kiln.keep(kiln.randn([32768])); // 128 KiB outputs
  const kept = f(x1) as kiln.Tensor;
  assert.equal(kept.storage.backend.name, 'js', 'default pooling is the JS backend\'s');
  const keptBuf = kept.storage.buf, keptData = kept.dataSync();
  const first = f(x1) as kiln.Tensor;
  const firstBuf = first.storage.buf;
  const r0 = outputPoolStats.reuses;
  first.dispose();
  const second = f(x2) as kiln.Tensor;
  assert.equal(second.storage.buf, firstBuf, 'the disposed output buffer was reused');
  assert.equal(outputPoolStats.reuses, r0 + 1);
  assert.deepEqual(second.dataSync(), (x2.mul(2).add(1)).dataSync());
  second.dispose();
  // a training-style loop that disposes its outputs: every call after the first reuses
  const r1 = outputPoolStats.reuses;
  for (let i = 0; i < 5; i++) kiln.scope(() => void (f(i % 2 ? x1 : x2) as kiln.Tensor).sum().item());
  assert.ok(outputPoolStats.reuses - r1 >= 5, `reuses ${outputPoolStats.reuses - r1}`);
  // the kept output was never handed out again nor overwritten
  assert.notEqual(keptBuf, firstBuf);
  assert.deepEqual(kept.dataSync(), keptData);
  // a view keeps its storage alive: disposing the base alone recycles nothing
  const base = f(x1) as kiln.Tensor, view = base.reshape([2, 16384]);
  const baseBuf = base.storage.buf, viewData = view.dataSync();
  base.dispose();
  const other = f(x2) as kiln.Tensor;
  assert.notEqual(other.storage.buf, baseBuf);
  assert.deepEqual(view.dataSync(), viewData);
  [kept, view, other, x1, x2].forEach((t) => t.dispose());
  assertCompiledRan('recycled outputs');
});

test('chunk protocol: the claimChunks workers get as source text claims like the caller\'s over the shared control', () => {
  const shipped = new Function('__name', `return ${claimChunksSource()};`)((f: unknown) => f) as ClaimChunks;
  const control = new ChunkControl();
  const m = control.open(7, 10, 65);
  const ranges: string[] = [];
  const record = (_: null, lo: number, hi: number) => void ranges.push(`${lo}-${hi}`);
  // as a worker and the caller would: the first claims 3 chunks, the other the rest
  let budget = 3;
  const mine = shipped(control.ctl, m, () => null, (f, lo, hi) => {
    if (budget-- <= 1) throw new Error('stop');
    record(f, lo, hi);
  });
  assert.equal(mine, 7, 'the shipped copy ran (or failed) every chunk it claimed');
  assert.equal(control.finish(m, (lo, hi) => record(null, lo, hi), true), 0, 'nothing left for the caller to claim');
  // chunks 2..6 failed in the shipped copy and were rerun by the caller
  assert.deepEqual(ranges.sort(), ['0-10', '10-20', '20-30', '30-40', '40-50', '50-60', '60-65']);
  assert.equal(claimChunks(control.ctl, control.open(2, 5, 10), () => null, () => {}), 2, 'the next launch starts afresh');
});

test('dynamic programs recycle outputs as static ones do (js: 64 KiB and up), per size', () => {
  kiln.compiler.reset();
  const f = kiln.compile((x: kiln.Tensor) => x.mul(2).add(1), { dynamic: true, backend: 'js' });
  const x4 = kiln.keep(kiln.randn([4, 8192])), x6 = kiln.keep(kiln.randn([6, 8192])); // 128 and 192 KiB outputs
  const first = f(x4) as kiln.Tensor, buf = first.storage.buf;
  first.dispose();
  const r0 = outputPoolStats.reuses;
  const other = f(x6) as kiln.Tensor;
  assert.notEqual(other.storage.buf, buf, 'another size gets another buffer');
  const again = f(x4) as kiln.Tensor;
  assert.equal(again.storage.buf, buf, 'the disposed output of this size was reused');
  assert.equal(outputPoolStats.reuses, r0 + 1);
  assert.deepEqual(again.dataSync(), x4.mul(2).add(1).dataSync());
  [other, again, x4, x6].forEach((t) => t.dispose());
  assertCompiledRan('dynamic recycled outputs');
});

test('kernel workers run in a process started with -e and --input-type=module (they take none of its options)', { skip: getThreadPool() ? false : 'no worker threads here' }, () => {
  assert.deepEqual(workerExecArgv(), []);
  // a large kernel splits across the pool's workers; they must boot and compute there too
  const script = `import * as kiln from 'kilnjs';
const x = kiln.randn([512, 512]);
const f = kiln.compile((x) => x.mul(2).add(1).tanh().sum(-1), { backend: 'js' });
const d = f(x).sub(x.mul(2).add(1).tanh().sum(-1)).abs().max().item();
console.log(JSON.stringify({ d, launches: kiln.stats().threads?.parallelLaunches ?? null }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { d: number };
  assert.ok(out.d < 1e-4, r.stdout);
});
