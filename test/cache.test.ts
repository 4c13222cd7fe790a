// The persistent compile cache, warm-up and artifacts (src/compiler/cache). Cross-process
// behaviour runs in fresh `node --import tsx` children (test/fixtures/cache-child.ts) over a
// temporary KILN_CACHE_DIR; hits are asserted from kiln.stats().cache, never from timing.
// Native cases are skipped (with the reason) where no C compiler or koffi is available.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import * as kilnNode from 'kilnjs/node';
import { buildModel, input } from './fixtures/cache-child.js';
import { wasmUnavailableReason } from '../src/backend/wasm/index.js';
import { entries, runChild, runChildAsync, runCli } from './helpers/cache-children.js';
import { resolveKernelBackend } from '../src/backend/registry.js';
import { runtime } from '../src/ops/dispatch.js';

const ROOT = mkdtempSync(join(tmpdir(), 'kiln-cache-test-'));
process.env.KILN_CACHE_DIR = join(ROOT, 'parent');
// keys cover kiln's sources too; other work editing them between two children must not turn hits into misses
process.env.KILN_CACHE_SOURCES = 'off';
process.on('exit', () => rmSync(ROOT, { recursive: true, force: true }));

const nativeWhy = kilnNode.nativeUnavailableReason();
if (nativeWhy) console.log(`# native cache tests skipped: ${nativeWhy}`);
const wasmWhy = wasmUnavailableReason();
const BACKENDS: { name: string; skip: string | false }[] = [
  { name: 'js', skip: false },
  { name: 'native', skip: nativeWhy ? `native backend unavailable: ${nativeWhy}` : false },
  { name: 'wasm', skip: wasmWhy ? `wasm backend unavailable: ${wasmWhy}` : false },
];

const fresh = (name: string) => join(ROOT, name);

for (const b of BACKENDS) {
  test(`${b.name}: a second process hits the cache (module: tracing skipped) and computes the same results`, { skip: b.skip }, () => {
    const dir = fresh(`second-${b.name}`);
    const opts = { backend: b.name, mode: 'module', batch: [8, 3] };
    const cold = runChild(dir, opts);
    assert.equal(cold.stats.cache.hits, 0);
    assert.equal(cold.stats.cache.misses, 2);
    assert.ok(cold.stats.cache.writes >= 4, 'two programs and two warm starts written');
    const warm = runChild(dir, opts);
    assert.equal(warm.stats.cache.hits, 2);
    assert.equal(warm.stats.cache.traceSkips, 2);
    assert.equal(warm.stats.cache.misses, 0);
    assert.equal(warm.stats.cacheMisses, 0, 'no call traced');
    assert.deepEqual(warm.out, cold.out);
    assert.match(warm.logs, /warm start: tracing skipped/);
    // every backend hands its stored code back (exportCode/importCode): no code regenerated
    assert.match(warm.logs, /generated code reused/);
    assert.doesNotMatch(warm.logs, /code regenerated/);
  });

  test(`${b.name}: a compiled module called in grad mode, backward outside: a second process skips tracing and takes both programs from the cache`, { skip: b.skip }, () => {
    const dir = fresh(`train-${b.name}`);
    const opts = { backend: b.name, mode: 'train', batch: [6] };
    const cold = runChild(dir, opts);
    assert.equal(cold.stats.aotCompiles, 1);
    assert.ok(cold.stats.cache.writes >= 3, 'forward, backward and the warm start written');
    const warm = runChild(dir, opts);
    assert.equal(warm.stats.cache.traceSkips, 1, 'the pair is a warm start');
    assert.equal(warm.stats.cache.hits, 2, 'forward and backward programs from the cache');
    assert.equal(warm.stats.cache.misses, 0);
    assert.equal(warm.stats.cacheMisses, 0, 'no call traced');
    assert.equal(warm.stats.interpretedReplays, 0);
    assert.equal(warm.stats.aotCompiles, 1, 'the warm start is the compiled pair');
    assert.deepEqual(warm.out, cold.out, 'the same gradients');
  });

  test(`${b.name}: a function (no named captures) traces but takes its program from the cache`, { skip: b.skip }, () => {
    const dir = fresh(`fn-${b.name}`);
    const opts = { backend: b.name, mode: 'fn', batch: [5] };
    const cold = runChild(dir, opts);
    const warm = runChild(dir, opts);
    assert.equal(warm.stats.cache.hits, 1);
    assert.equal(warm.stats.cache.traceSkips, 0);
    assert.equal(warm.stats.cacheMisses, 1, 'traced once');
    assert.deepEqual(warm.out, cold.out);
  });

  test(`${b.name}: export -> load in a fresh process gives identical outputs`, { skip: b.skip }, () => {
    const path = join(ROOT, `model-${b.name}.kiln`);
    const model = buildModel();
    const x = input(6);
    const expected = Array.from(kiln.noGrad(() => kiln.compile(model, { backend: b.name, cache: false })(x)).dataSync());
    kiln.noGrad(() => kilnNode.export(model, [x], path, { backends: [b.name] }));
    const loaded = runChild(fresh(`load-${b.name}`), { load: path, backend: b.name, batch: [6] });
    assert.deepEqual(loaded.out[0], expected);
    assert.equal((loaded.info as { codegen: boolean }).codegen, false);
    assert.equal(loaded.stats.cacheMisses, 0, 'no tracing');
    assert.equal(loaded.stats.graphsCompiled, 0, 'no compiling');
    // without weights: the caller's module supplies them by state-dict name
    const bare = join(ROOT, `bare-${b.name}.kiln`);
    kiln.noGrad(() => kilnNode.export(model, [x], bare, { backends: [b.name], weights: false }));
    assert.ok(statSync(bare).size < statSync(path).size);
    assert.deepEqual(runChild(fresh(`bare-${b.name}`), { load: bare, backend: b.name, params: true, batch: [6] }).out[0], expected);
    assert.throws(() => kilnNode.load(bare), (e: Error) => e.name === 'ArtifactError' && /without weights/.test(e.message));
  });
}

test('native: a program entry whose libraries are gone renders and compiles them again', { skip: nativeWhy ? `native backend unavailable: ${nativeWhy}` : false }, () => {
  const dir = fresh('native-libs-gone');
  const opts = { backend: 'native', mode: 'module', batch: [4] };
  const cold = runChild(dir, opts);
  // the program entry names its libraries; without them the hit must not bind anything stale
  for (const n of readdirSync(join(dir, 'native'))) if (n.endsWith('.so')) rmSync(join(dir, 'native', n));
  const warm = runChild(dir, opts);
  assert.equal(warm.stats.cache.hits, 1);
  assert.deepEqual(warm.out, cold.out);
  const again = runChild(dir, opts);
  assert.deepEqual(again.out, cold.out);
});

test('compile(fn, { captures }) places the captures in the wasm heap when compiled; results unchanged', { skip: wasmWhy ? `wasm backend unavailable: ${wasmWhy}` : false }, () => {
  const model = buildModel();
  const x = input(5);
  const f = (x: kiln.Tensor) => model.call(x) as kiln.Tensor;
  const expected = Array.from(kiln.noGrad(() => f(x)).dataSync());
  const captures = model.stateDict() as Record<string, kiln.Tensor>;
  const c = kiln.compile(f, { backend: 'wasm', captures, cache: false, dynamic: false });
  // in the heap by compile(), before any call (eager tensors live there already): the first call copies no weight
  const heap = (resolveKernelBackend('wasm', runtime.backend).backend as unknown as { heap: { owns(b: unknown): boolean } }).heap;
  for (const [k, t] of Object.entries(captures)) assert.ok(heap.owns((t as unknown as { storage: { buf: unknown } }).storage.buf), `${k} is in the wasm heap`);
  const before = kiln.wasmStats().heap.adopted;
  const got = Array.from(kiln.noGrad(() => c(x)).dataSync());
  assert.equal(kiln.wasmStats().heap.adopted, before, 'the first call adopted nothing');
  got.forEach((v, i) => assert.ok(Math.abs(v - expected[i]!) <= 1e-4 * Math.max(1, Math.abs(expected[i]!)), `${i}: ${v} vs ${expected[i]}`));
  // the module's own tensors still read the same values (placement moves bytes only)
  assert.deepEqual(Array.from(kiln.noGrad(() => f(x)).dataSync()), expected);
});

test('corrupt entries (flipped bytes, truncated, another kiln version) are detected, deleted and recompiled', () => {
  const dir = fresh('corrupt');
  const opts = { mode: 'module', batch: [8] };
  const cold = runChild(dir, opts);
  const damage: [string, (b: Buffer) => Buffer][] = [
    ['flip', (b) => {
      const c = Buffer.from(b);
      for (let i = c.length - 50; i < c.length - 40; i++) c[i]! ^= 0xff;
      return c;
    }],
    ['truncate', (b) => b.subarray(0, Math.floor(b.length / 2))],
    ['version', (b) => Buffer.from(b.toString('latin1').replace(/"kiln":"[^"]*"/, '"kiln":"9.9.9"'), 'latin1')],
    ['garbage', () => Buffer.from('not a cache entry at all')],
  ];
  for (const [what, f] of damage) {
    for (const p of entries(dir)) writeFileSync(p, f(readFileSync(p)));
    const r = runChild(dir, opts);
    assert.equal(r.stats.cache.corrupt, 2, `${what}: both entries rejected\n${r.logs}`);
    assert.equal(r.stats.cache.hits, 0, what);
    assert.match(r.logs, /rejected .*deleting it and compiling again/, what);
    assert.deepEqual(r.out, cold.out, `${what}: same results after recompiling`);
    const again = runChild(dir, opts);
    assert.equal(again.stats.cache.traceSkips, 1, `${what}: the rewritten entries hit`);
  }
});

test('two processes compiling into one cache concurrently both succeed', async () => {
  const dir = fresh('concurrent');
  const opts = { mode: 'module', batch: [4, 9, 2] };
  const [a, b] = await Promise.all([runChildAsync(dir, opts), runChildAsync(dir, opts)]);
  assert.deepEqual(a.out, b.out);
  const c = runChild(dir, opts);
  assert.equal(c.stats.cache.traceSkips, 3);
  assert.equal(c.stats.cache.corrupt, 0);
  assert.deepEqual(c.out, a.out);
  assert.deepEqual(readdirSync(join(dir, 'compile')).filter((n) => n.endsWith('.tmp')), []);
});

test('eviction keeps the cache under its cap (least recently used first)', () => {
  const dir = fresh('evict');
  const capMb = 0.03; // ~31 KB: a few entries of this model
  const r = runChild(dir, { mode: 'module', batch: [1, 2, 3, 4, 5, 6] }, { KILN_CACHE_MAX_MB: String(capMb) });
  assert.ok(r.stats.cache.evictions > 0);
  const total = entries(dir).reduce((a, p) => a + statSync(p).size, 0);
  assert.ok(total <= capMb * 2 ** 20, `${total} bytes on disk, cap ${capMb * 2 ** 20}`);
  // the newest entries survived: the last batch size starts warm
  const last = runChild(dir, { mode: 'module', batch: [6] }, { KILN_CACHE_MAX_MB: String(capMb) });
  assert.equal(last.stats.cache.traceSkips, 1);
});

test('a process that writes once still keeps the folder under its cap: the scan runs after its call, or at exit when it exits at once', () => {
  for (const exitNow of [false, true]) {
    const dir = fresh(`evict-once-${exitNow}`);
    const capMb = 0.03;
    const stale = join(dir, 'compile', 'program-stale-from-another-process.kc');
    mkdirSync(join(dir, 'compile'), { recursive: true });
    writeFileSync(stale, Buffer.alloc(40_000)); // over the cap on its own
    utimesSync(stale, new Date(0), new Date(0));
    const r = runChild(dir, { mode: 'fn', batch: [3], exitNow }, { KILN_CACHE_MAX_MB: String(capMb) });
    assert.equal(r.stats.cache.writes, 1, 'one write: the scan is the deferred one');
    assert.equal(existsSync(stale), false, `exitNow ${exitNow}: the least recently used entry was evicted`);
    const total = entries(dir).reduce((a, p) => a + statSync(p).size, 0);
    assert.ok(total <= capMb * 2 ** 20, `${total} bytes on disk, cap ${capMb * 2 ** 20}`);
  }
});

test('a module whose class changed (a helper method, not forward) does not warm-start a stale graph, compiled or given as { captures }', () => {
  const dir = fresh('class-edit');
  // inside the repository (tsx resolves 'kilnjs' to src/ by tsconfig.json's paths; cwd is the root), in the ignored .probe/ folder
  const scratch = join(import.meta.dirname, '..', '.probe', `cache-class-${process.pid}`);
  mkdirSync(scratch, { recursive: true });
  process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
  const variant = (act: string) => {
    const path = join(scratch, `class-${act}.ts`);
    writeFileSync(path, `import * as kiln from 'kilnjs';
import 'kilnjs/node';
class Block extends kiln.nn.Module {
  readonly lin = new kiln.nn.Linear(8, 8);
  forward(x: kiln.Tensor): kiln.Tensor { return this.act(this.lin.call(x)); }
  act(h: kiln.Tensor): kiln.Tensor { return kiln.${act}(h); }
}
kiln.manualSeed(5);
const m = new Block();
m.requiresGrad_(false);
const x = kiln.randn([4, 8]);
const y = kiln.noGrad(() => kiln.compile(m)(x));
const skips = kiln.stats().cache.traceSkips;
// a function with the module as its captures: keyed by the module's classes too
const z = kiln.noGrad(() => kiln.compile((x: kiln.Tensor) => m.call(x).mul(2), { captures: m })(x));
process.stdout.write(JSON.stringify({ out: Array.from(y.dataSync()), outFn: Array.from(z.dataSync()), skips, fnSkips: kiln.stats().cache.traceSkips - skips }) + '\\n');
`);
    const r = spawnSync(process.execPath, ['--import', 'tsx', path], { encoding: 'utf8', cwd: join(import.meta.dirname, '..'), env: { ...process.env, KILN_CACHE_DIR: dir } });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { out: number[]; outFn: number[]; skips: number; fnSkips: number };
  };
  const relu = variant('relu');
  const again = variant('relu');
  assert.deepEqual([again.skips, again.fnSkips], [1, 1], 'the same class warm-starts (module, and function with { captures: module })');
  const gelu = variant('gelu');
  assert.deepEqual([gelu.skips, gelu.fnSkips], [0, 0], 'the edited class traces');
  assert.notDeepEqual(gelu.out, relu.out);
  assert.notDeepEqual(gelu.outFn, relu.outFn);
  assert.deepEqual(again.outFn, relu.outFn);
});

test('KILN_CACHE=0 and { cache: false } switch the cache off', () => {
  const dir = fresh('off');
  const r = runChild(dir, { mode: 'module' }, { KILN_CACHE: '0' });
  assert.equal(r.stats.cache.writes + r.stats.cache.misses + r.stats.cache.hits, 0);
  kiln.compiler.reset();
  kiln.noGrad(() => kiln.compile(buildModel(), { cache: false })(input(2)));
  assert.equal(kiln.stats().cache.writes, 0);
});

test('an artifact from another kiln version fails with a clear ArtifactError', () => {
  const path = join(ROOT, 'old.kiln');
  const model = buildModel();
  kiln.noGrad(() => kilnNode.export(model, [input(3)], path));
  const b = readFileSync(path).toString('latin1').replaceAll(/"kiln":"[^"]*"/g, '"kiln":"0.0.1-old"');
  writeFileSync(path, Buffer.from(b, 'latin1'));
  assert.throws(() => kilnNode.load(path), (e: Error) => e.name === 'ArtifactError' && /artifact built by kiln 0\.0\.1-old on \w+-\w+.*this is kiln \d/.test(e.message));
  writeFileSync(path, readFileSync(path).subarray(0, 200));
  assert.throws(() => kilnNode.load(path), (e: Error) => e.name === 'ArtifactError');
});

test('warmup compiles ahead for declared shapes and reports each', async () => {
  process.env.KILN_CACHE_DIR = fresh('warmup');
  kiln.compiler.reset();
  const c = kiln.compile(buildModel(), { dynamic: false });
  const report = await kiln.noGrad(() => c.warmup({ shapes: [[1, 16], [8, 16], [1, 16]] }));
  assert.deepEqual(report.entries.map((e) => e.source), ['compiled', 'compiled', 'memory']);
  assert.match(report.entries[1]!.args, /\[8,16\]/);
  assert.equal(kiln.stats().cacheMisses, 2);
  // the first real call of a warmed shape replays
  kiln.noGrad(() => kiln.scope(() => c(input(8))));
  assert.equal(kiln.stats().cacheMisses, 2);
  // a new compiled module in this process (same cache) starts warm from disk
  const c2 = kiln.compile(buildModel(), { dynamic: false });
  const r2 = await kiln.noGrad(() => c2.warmup([[input(8)]]));
  assert.equal(r2.entries[0]!.source, 'cache (trace skipped)');
});

test('kiln cache save / load move a whole cache', () => {
  const src = fresh('second-js');
  const file = join(ROOT, 'bundle.kcb');
  let r = runCli(['cache', 'save', file], { KILN_CACHE_DIR: src });
  assert.equal(r.status, 0, r.stderr);
  const dst = fresh('moved');
  r = runCli(['cache', 'load', file], { KILN_CACHE_DIR: dst });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /files added/);
  const moved = runChild(dst, { backend: 'js', mode: 'module', batch: [8, 3] });
  assert.equal(moved.stats.cache.traceSkips, 2);
});
