// kiln advise: the measurement on the mlp example (JSON report against the schema, HTML
// charts), the verdict rules as pure functions, and workloads with planted problems (a graph
// break, outputs that differ between eager and compiled).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import * as kiln from 'kilnjs';
import {
  advise, main, speedupInterval, breakEven, buildReport, checklist, compiledIsFaster, decide, formatSummary, loadExample, measure, parseProcessLifetime, project, renderHtml,
  validateJsonSchema, verdictInput, withWarmCache, WorkloadError, type AdvisorReport, type BreakEven, type CacheFacts, type Io, type JsonSchema, type Usage, type VerdictInput, type Workload,
} from '../src/advisor/index.js';
import { recommendPolicy, type PolicyRun } from '../src/advisor/shape-policies.js';

const schema = JSON.parse(readFileSync('docs/advisor-report.schema.json', 'utf8')) as JsonSchema;
const quiet: Io = { out: () => {}, err: () => {} };
const THIS_FILE = 'advisor.test.ts';
const lineOf = (marker: string): number => readFileSync(new URL(import.meta.url), 'utf8').split('\n').findIndex((l) => l.includes(marker) && !l.includes('lineOf(')) + 1;

const dir = mkdtempSync(join(tmpdir(), 'kiln-advise-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

// ---------------------------------------------------------------- the mlp example, end to end

let mlpReport: AdvisorReport | null = null;

test('advise --example mlp writes a JSON report that validates against the schema, with plausible values', async () => {
  const json = join(dir, 'mlp.json'), html = join(dir, 'mlp.html');
  const out: string[] = [], err: string[] = [];
  const r = await advise(['--example', 'mlp', '--backend', 'js', '--calls', '20', '--warmup', '3', '--process-lifetime', '7d', '--calls-per-day', '1000000', '--monthly-compute-cost', '5000', '--json', json, '--html', html], {
    out: (s) => out.push(s),
    err: (s) => err.push(s),
  });
  assert.equal(r.exitCode, 0);
  assert.match(err.join('\n'), /js: call 1: compiled .* eager/, 'progress lines while measuring');
  assert.match(out.join('\n'), /VERDICT: /);
  const rep = JSON.parse(readFileSync(json, 'utf8')) as AdvisorReport;
  assert.deepEqual(validateJsonSchema(schema, rep), []);
  mlpReport = rep;

  assert.equal(rep.workload.name, 'mlp');
  assert.equal(rep.workload.kind, 'training');
  // kiln.compile(model) in the ordinary loop, measured beside the whole step on the verdict's backend
  const tf = rep.trainingForms!;
  assert.equal(tf.status, 'ok', tf.reason ?? '');
  assert.equal(tf.backend, rep.primaryBackend);
  assert.deepEqual({ ...tf.moduleCompiler, aotCompiles: 0 }, { interpretedReplays: 0, interpretedReasons: [], eagerFallbacks: 0, fusionFallbacks: 0, aotCompiles: 0 }, 'the compiled module ran compiled');
  assert.ok(tf.moduleCompiler.aotCompiles >= 1, 'a forward/backward pair was compiled');
  assert.ok(tf.moduleLossRelErr <= 1e-3, `losses vs eager ${tf.moduleLossRelErr}`);
  assert.ok(tf.eagerMs > 0 && tf.wholeStepMs > 0 && tf.moduleMs > 0);
  assert.match(out.join('\n'), /training forms \(js, median step\): eager .* kiln\.compile\(model\) in the loop/);
  assert.match(out.join('\n'), /use: kiln\.compile\((model\) in your loop|step\), the whole step)/);
  assert.ok(rep.verdict.reasons.some((r) => r.startsWith(`training form: ${tf.recommended === 'compiled module' ? 'kiln.compile(model) in your loop' : 'the whole step compiled'}: `)), 'the verdict says which form');
  if (rep.verdict.code) assert.match(rep.verdict.code, tf.recommended === 'compiled module' ? /kiln\.compile\(model,/ : /kiln\.compile\(step,/);
  const b = rep.backends[0]!;
  assert.equal(b.backend, 'js');
  assert.equal(b.status, 'ok');
  assert.ok(b.speedup > 0 && Number.isFinite(b.speedup));
  assert.equal(b.perCall.eagerMs.length, 23);
  assert.equal(b.perCall.compiledMs.length, 23);
  assert.equal(b.eager.n, 20);
  assert.ok(b.compiled.firstCallMs! > b.compiled.medianMs!, 'the first compiled call pays for tracing and compiling');
  assert.ok(b.compiler.compileTimeMsTotal > 0 && b.compiler.compileTimeMsFirstCall > 0);
  assert.ok(b.compiler.cacheHits > 0, 'compiled code was replayed');
  assert.deepEqual(b.compiler.graphBreaks, []);
  assert.equal(b.compiler.tracedCalls[0], 1);
  assert.ok(b.accuracy.ok, b.accuracy.detail);
  assert.equal(b.accuracy.losses!.eager.length, 23);
  assert.ok(b.accuracy.gradsMaxRelErr !== null && b.accuracy.gradsMaxRelErr < 1e-4, `first-step gradients differ by ${b.accuracy.gradsMaxRelErr}`);
  // informational in the report (Adam amplifies float32 rounding over steps: ~5e-2 here), yet
  // bounded: a compiled optimizer that updated wrongly drifts by order 1
  assert.ok(b.accuracy.paramsMaxRelErr !== null && b.accuracy.paramsMaxRelErr < 0.25, `parameter drift ${b.accuracy.paramsMaxRelErr}`);
  assert.ok(b.eager.peakBytes > 0);

  // break-even consistent with the measured times
  const be = b.breakEven;
  const k = be.warmupCalls;
  const sum = (xs: number[]) => xs.slice(0, k).reduce((a, x) => a + x, 0);
  assert.ok(Math.abs(be.eagerWarmupMs - sum(b.perCall.eagerMs)) < 1e-2);
  assert.ok(Math.abs(be.compiledWarmupMs - sum(b.perCall.compiledMs)) < 1e-2);
  assert.ok(Math.abs(be.extraWarmupMs - (be.compiledWarmupMs - be.eagerWarmupMs)) < 1e-2);
  assert.ok(Math.abs(be.perCallSavingMs! - (b.eager.medianMs! - b.compiled.medianMs!)) < 1e-2);
  assert.ok(Math.abs(b.speedup - b.eager.medianMs! / b.compiled.medianMs!) < 1e-3);
  if (be.perCallSavingMs! > 0) {
    const expect = k + Math.max(0, Math.ceil(be.extraWarmupMs / be.perCallSavingMs!));
    assert.ok(be.calls !== null && Math.abs(be.calls - expect) <= 1, `break-even ${be.calls} vs ${expect}`);
  } else {
    assert.equal(be.calls, null);
    assert.equal(rep.verdict.verdict, 'do not compile');
  }
  // projection consistent with the usage
  const p = rep.projection;
  assert.equal(p.callsPerMonth, 30_000_000);
  assert.equal(p.callsPerProcess, 7_000_000);
  assert.ok(Math.abs(p.eagerHoursPerMonth - (30e6 * b.eager.medianMs!) / 3.6e6) < 1e-6 * p.eagerHoursPerMonth + 1e-9);
  assert.ok(p.computeSavingUsdPerMonth !== null && Math.abs(p.computeSavingUsdPerMonth - 5000 * p.savedFraction) < 1e-6);
  assert.equal(p.engineeringCostUsd, 6000);
  assert.equal(rep.checklist.find((c) => c.id === 'compile-time-metric')!.status, 'pass');
  assert.equal(rep.checklist.find((c) => c.id === 'accuracy')!.status, 'pass');

  // a restarted process, cold then warm persistent cache (two child processes, one folder)
  const cc = b.cacheCheck;
  assert.equal(cc.status, 'ok', cc.reason ?? '');
  assert.equal(cc.calls, k, 'each child runs the in-process warm-up calls');
  assert.equal(cc.cold!.callsMs.length, k);
  assert.equal(cc.warm!.callsMs.length, k);
  assert.equal(cc.cold!.firstCallMs, cc.cold!.callsMs[0]);
  assert.ok(cc.cold!.totalMs > 0 && cc.warm!.totalMs > 0);
  // evidence from the children's kiln.stats().cache, not timing: the cold one wrote, the warm one read
  assert.equal(cc.cold!.cache.hits, 0);
  assert.ok(cc.cold!.cache.writes > 0 && cc.cold!.cache.misses > 0, JSON.stringify(cc.cold!.cache));
  assert.ok(cc.warm!.cache.hits > 0 && cc.warm!.cache.bytesRead > 0, JSON.stringify(cc.warm!.cache));
  assert.equal(cc.warm!.cache.writes, 0, 'nothing new to write on the warm start');
  assert.equal(cc.hit, true);
  // a training step writes gradients: it traces, and the cache skips code generation only
  assert.equal(cc.warm!.cache.traceSkips, 0);
  assert.equal(cc.skipped, 'code generation');
  assert.ok(cc.warm!.traces >= 1);
  // no timing comparison here: two child processes on a loaded machine (CI runs two test files at
  // once) measured warm 780 ms against cold 426 ms; the cache counters above are the evidence, and
  // bench/coldstart.ts measures the times on a quiet machine
  assert.ok(Math.abs(cc.savedMs! - (cc.cold!.totalMs - cc.warm!.totalMs)) < 1e-2);
  const wbe = cc.breakEven!;
  // the cache removes at most the whole extra warm-up measured in process (never below eager's)
  assert.ok(Math.abs(wbe.extraWarmupMs - (be.extraWarmupMs - Math.min(Math.max(0, cc.savedMs!), Math.max(0, be.extraWarmupMs)))) < 1e-2);
  assert.ok(wbe.extraWarmupMs >= Math.min(0, be.extraWarmupMs));
  assert.ok(wbe.extraWarmupMs <= be.extraWarmupMs);
  // the projection charges process starts the warm-cache warm-up
  assert.equal(p.warmupBasis, 'warm cache');
  assert.ok(Math.abs(p.extraWarmupMsPerStart - wbe.extraWarmupMs) < 1e-9);
  assert.ok(p.warmupHoursPerMonth <= p.coldWarmupHoursPerMonth + 1e-12);
  // the checklist's cache item is a real check of this environment's folder and the warm hit
  const cacheItem = rep.checklist.find((c) => c.id === 'cache')!;
  assert.equal(cacheItem.status, rep.cacheConfig.disabled || !rep.cacheConfig.writable ? 'fail' : 'pass', cacheItem.detail);
  assert.match(cacheItem.detail, new RegExp(rep.cacheConfig.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  assert.match(rep.checklist.find((c) => c.id === 'warm-up')!.detail, /compiled\.warmup\(/);
  // a training step's warm-up is a real step: the advice says how to have it restore the weights
  if (rep.workload.kind === 'training') assert.match(rep.checklist.find((c) => c.id === 'warm-up')!.detail, /captures: model/);
  assert.match(out.join('\n'), /restart \(js\): first .* cold cache, .* warm cache \(\d+ hits/);
  assert.equal(rep.dynamicShapes, null, 'one declared shape: no policy comparison');
  assert.deepEqual(rep.notMeasured.map((x) => x.id), ['dynamic-shape-policies']);

  // a week-long process that pays back its engineering: one of the compile verdicts
  if (b.speedup > 1 && p.breakEvenWithinProcess && p.netSavingUsdPerMonth! >= 0) assert.match(rep.verdict.verdict, /^compile/);
  else assert.equal(rep.verdict.verdict, 'do not compile');
});

test('the HTML report is one self-contained file with the SVG charts', () => {
  const html = readFileSync(join(dir, 'mlp.html'), 'utf8');
  assert.match(html, /^<!doctype html>/);
  const svgs = html.match(/<svg[\s\S]*?<\/svg>/g) ?? [];
  assert.equal(svgs.length, 4, 'latency, cumulative, speedup, cost');
  assert.match(svgs[0]!, /per-call latency, first 23 calls/);
  assert.match(svgs[0]!, /<polyline class="series eager"/);
  assert.match(svgs[0]!, /<polyline class="series compiled"/);
  assert.match(svgs[0]!, /warm-up/);
  assert.match(svgs[0]!, /break-even/);
  assert.match(svgs[1]!, /cumulative time/);
  assert.match(svgs[2]!, /speedup per backend/);
  assert.match(svgs[3]!, /projected monthly cost/);
  assert.match(html, /Verdict: /);
  assert.match(html, /Go-live checklist/);
  // nothing is fetched: no scripts, no external resources
  assert.doesNotMatch(html, /<script|<link|<img|\s(src|href)=/i);
  assert.deepEqual([...html.matchAll(/https?:\/\/[^\s"'<>]+/g)].map((m) => m[0]).filter((u) => u !== 'http://www.w3.org/2000/svg'), []);
});

test('--fail-if-slower: compiledIsFaster reads the primary backend', () => {
  assert.ok(mlpReport, 'needs the mlp report');
  const slower = structuredClone(mlpReport);
  slower.backends[0]!.speedup = 0.8;
  assert.equal(compiledIsFaster(slower), false);
  const faster = structuredClone(mlpReport);
  faster.backends[0]!.speedup = 1.5;
  assert.equal(compiledIsFaster(faster), true);
});

// ---------------------------------------------------------------- the verdict, pure

const be = (o: Partial<BreakEven> = {}): BreakEven => ({ warmupCalls: 2, eagerWarmupMs: 30, compiledWarmupMs: 230, extraWarmupMs: 200, perCallSavingMs: 2, calls: 102, ...o });
function vin(o: Partial<VerdictInput> = {}): VerdictInput {
  return {
    kind: 'inference', backend: 'js', eagerMedianMs: 6, compiledMedianMs: 4, speedup: 1.5, breakEven: be(), firstCallExtraMs: 150, compileTimeMs: 120, graphBreaks: [],
    accuracy: { ok: true, compared: 'outputs', maxRelErr: 1e-7, tolerance: 1e-3, paramsMaxRelErr: null, paramTolerance: 1e-3 },
    replays: 100, eagerFallbacks: 0, fallbackReasons: [], fusionFallbacks: 0, recompileReasons: [], productionShapes: null, ...o,
  };
}
const usage = (o: Partial<Usage> = {}): Usage => ({ callsPerDay: 1_000_000, processLifetime: { seconds: 7 * 86400 }, monthlyComputeCostUsd: null, engineerWeeks: 1.5, engineerWeekCostUsd: 4000, amortizationMonths: 12, ...o });
const verdictFor = (i: VerdictInput, u: Usage) => decide(i, project({ eagerMedianMs: i.eagerMedianMs, compiledMedianMs: i.compiledMedianMs, breakEven: i.breakEven }, u));

test('break-even: K warm-up calls plus the extra warm-up over the per-call saving; never when not faster', () => {
  const r = breakEven({ eagerPerCallMs: [40, 20, 6, 6], compiledPerCallMs: [300, 100, 4, 4], warmupCalls: 2, eagerMedianMs: 6, compiledMedianMs: 4 });
  assert.equal(r.extraWarmupMs, 340);
  assert.equal(r.perCallSavingMs, 2);
  assert.equal(r.calls, 2 + 170);
  const cheap = breakEven({ eagerPerCallMs: [40, 6], compiledPerCallMs: [30, 4], warmupCalls: 1, eagerMedianMs: 6, compiledMedianMs: 4 });
  assert.equal(cheap.calls, 1, 'a first compiled call cheaper than the eager one breaks even at once');
  assert.equal(breakEven({ eagerPerCallMs: [40, 6], compiledPerCallMs: [300, 7], warmupCalls: 1, eagerMedianMs: 6, compiledMedianMs: 7 }).calls, null);
});

test('verdict: one call per process -> do not compile (too short-lived)', () => {
  const v = verdictFor(vin(), usage({ processLifetime: { calls: 1 }, callsPerDay: 1000 }));
  assert.equal(v.verdict, 'do not compile');
  assert.equal(v.headline, 'do not compile (too short-lived)');
  assert.match(v.reasons.join('\n'), /break-even after 102 calls, but a process serves only 1 call/);
});

test('verdict: a long-lived server -> compile, with warm-up when the first call is noticeably slower', () => {
  const v = verdictFor(vin(), usage({ monthlyComputeCostUsd: 20_000 }));
  assert.equal(v.verdict, 'compile with warm-up and the persistent cache');
  assert.match(v.reasons.join('\n'), /warm-up call at process start/);
  assert.match(v.reasons.join('\n'), /net \$[\d,]+\/month/);
  // a negligible warm-up: plain 'compile'
  const quick = vin({ breakEven: be({ extraWarmupMs: 5, calls: 5 }), firstCallExtraMs: 5 });
  assert.equal(verdictFor(quick, usage()).verdict, 'compile');
});

test('verdict: not faster -> do not compile; saving below the engineering cost -> do not compile', () => {
  const slow = verdictFor(vin({ speedup: 0.9, compiledMedianMs: 6.6, breakEven: be({ perCallSavingMs: -0.6, calls: null }) }), usage());
  assert.equal(slow.verdict, 'do not compile');
  assert.match(slow.reasons[0]!, /not faster/);
  const tiny = verdictFor(vin(), usage({ monthlyComputeCostUsd: 100 }));
  assert.equal(tiny.verdict, 'do not compile');
  assert.match(tiny.headline, /engineering cost/);
});

test('verdict: several production shapes or shape recompiles -> compile with dynamic shapes or buckets', () => {
  assert.equal(verdictFor(vin({ productionShapes: ['x[32,784]', 'x[64,784]', 'x[128,784]'] }), usage()).verdict, 'compile with dynamic shapes or buckets');
  assert.equal(verdictFor(vin({ recompileReasons: ['arg x dim 0 changed: expected 3, got 5'] }), usage()).verdict, 'compile with dynamic shapes or buckets');
  assert.equal(verdictFor(vin({ productionShapes: ['x[32,784]'] }), usage()).verdict, 'compile with warm-up and the persistent cache');
});

test('verdict: graph breaks, accuracy problems and silent fallbacks -> keep eager for now', () => {
  const brk = verdictFor(vin({ graphBreaks: [{ reason: 'item() needs the value of a tensor', location: 'src/model.ts:12:7', count: 3 }] }), usage());
  assert.equal(brk.verdict, 'keep eager for now');
  assert.match(brk.reasons[0]!, /graph break at src\/model\.ts:12:7: item\(\) .*\(3 times\)/);
  const acc = verdictFor(vin({ accuracy: { ok: false, compared: 'losses', maxRelErr: 0.02, tolerance: 1e-3, paramsMaxRelErr: null, paramTolerance: 1e-3 } }), usage());
  assert.equal(acc.verdict, 'keep eager for now');
  assert.match(acc.reasons[0]!, /losses differ from eager by max rel\. error 2\.00e-2/);
  assert.equal(verdictFor(vin({ eagerFallbacks: 3, fallbackReasons: ['f: recompile limit 8 reached'] }), usage()).verdict, 'keep eager for now');
});

test('noisy timings: a speedup interval that contains 1 makes the verdict uncertain', () => {
  const sure = verdictFor(vin({ speedupInterval: [1.3, 1.7] }), usage());
  assert.equal(sure.confidence, 'clear');
  const noisy = verdictFor(vin({ speedupInterval: [0.8, 1.9] }), usage());
  assert.equal(noisy.verdict, 'compile with warm-up and the persistent cache');
  assert.equal(noisy.confidence, 'uncertain');
  assert.match(noisy.reasons[0]!, /uncertain: the speedup's 95% interval 0\.80x-1\.90x contains 1x/);
  const same = Array.from({ length: 30 }, (_, i) => 5 + (i % 7) * 0.3);
  const iv = speedupInterval(same, same)!;
  assert.ok(iv[0] <= 1 && iv[1] >= 1, `${iv}`);
  const fast = speedupInterval(same, same.map((x) => x / 2))!;
  assert.ok(fast[0] > 1.5 && fast[1] < 2.5, `${fast}`);
  assert.deepEqual(speedupInterval(same, same.map((x) => x / 2)), fast, 'deterministic');
});

const cacheFacts = (o: Partial<CacheFacts> = {}): CacheFacts => ({
  status: 'ok', reason: null, calls: 2, coldMs: 230, warmMs: 60, hit: true, hits: 2, traceSkips: 0, coldWrites: 2, skipped: 'code generation',
  warmBreakEven: withWarmCache(be(), 170), config: { dir: '/srv/kiln-cache', from: 'KILN_CACHE_DIR', disabled: false, writable: true }, ...o,
});

test('checklist: pass/fail per item; the cache item checks the folder and the warm restart', () => {
  const c = checklist(vin());
  const by = Object.fromEntries(c.map((x) => [x.id, x.status]));
  assert.deepEqual(by, { accuracy: 'pass', 'compiled-ran': 'pass', 'graph-breaks': 'pass', cache: 'unknown', 'warm-up': 'unknown', serving: 'unknown', 'compile-time-metric': 'pass', 'eager-path': 'pass' });
  assert.match(c.find((x) => x.id === 'serving')!.detail, /npx kilnjs serve model\.kiln/);
  assert.match(c.find((x) => x.id === 'cache')!.detail, /not checked: import 'kilnjs\/node'/);
  assert.match(c.find((x) => x.id === 'warm-up')!.detail, /compiled\.warmup\(\[\[\.\.\.exampleArgs\]\]\)/);
  const cacheOf = (f: CacheFacts) => checklist(vin({ cache: f })).find((x) => x.id === 'cache')!;
  const ok = cacheOf(cacheFacts());
  assert.equal(ok.status, 'pass');
  assert.match(ok.detail, /\/srv\/kiln-cache \(from KILN_CACHE_DIR\) is writable.*60\.00 ms with a warm persistent cache vs 230 ms cold \(2 cache hit\(s\), code generation skipped/);
  assert.equal(cacheOf(cacheFacts({ skipped: 'tracing', traceSkips: 1 })).detail.includes('tracing and code generation skipped'), true);
  assert.equal(cacheOf(cacheFacts({ config: { dir: '/ro', from: 'default', disabled: false, writable: false } })).status, 'fail');
  assert.match(cacheOf(cacheFacts({ config: { dir: '/x', from: 'default', disabled: true, writable: true } })).detail, /KILN_CACHE turns the cache off/);
  assert.equal(cacheOf(cacheFacts({ hit: false, hits: 0, skipped: 'nothing', warmBreakEven: null })).status, 'fail');
  assert.equal(cacheOf(cacheFacts({ hit: false, hits: 0, coldWrites: 0, skipped: 'nothing', warmBreakEven: null })).status, 'unknown', 'a backend that stores nothing');
  assert.equal(cacheOf(cacheFacts({ status: 'skipped', reason: 'skipped (--no-cache-check)', coldMs: null, warmMs: null })).status, 'unknown');
  assert.match(checklist(vin({ cache: cacheFacts() })).find((x) => x.id === 'warm-up')!.detail, /60\.00 ms warm cache vs 230 ms cold/);
  const bad = Object.fromEntries(checklist(vin({ replays: 0, eagerFallbacks: 2, accuracy: { ok: false, compared: 'outputs', maxRelErr: 1, tolerance: 1e-3, paramsMaxRelErr: null, paramTolerance: 1e-3 } })).map((x) => [x.id, x.status]));
  assert.equal(bad.accuracy, 'fail');
  assert.equal(bad['compiled-ran'], 'fail');
});

test('the warm persistent cache: break-even, projection basis, and the verdict when only the warm start breaks even in time', () => {
  // cold W = 200 ms over 2 calls, s = 2 ms: break-even 102; the warm restart saves 170 ms -> W = 30 ms
  const w = withWarmCache(be(), 170);
  assert.equal(w.extraWarmupMs, 30);
  assert.equal(w.compiledWarmupMs, 60);
  assert.equal(w.calls, 2 + 15);
  assert.equal(withWarmCache(be(), -50).extraWarmupMs, 200, 'a slower warm run (noise) never makes the cache look harmful');
  assert.equal(withWarmCache(be(), 2900).extraWarmupMs, 0, 'a restart saving more than the extra warm-up (e.g. native libraries already on disk in process) never makes the warm-up cheaper than eager');
  const u = usage({ callsPerDay: 1_000_000, processLifetime: { calls: 50 } });
  const cold = project({ eagerMedianMs: 6, compiledMedianMs: 4, breakEven: be() }, u);
  assert.equal(cold.warmupBasis, 'cold');
  assert.equal(cold.breakEvenWithinProcess, false);
  const warm = project({ eagerMedianMs: 6, compiledMedianMs: 4, breakEven: be(), warmCacheBreakEven: w }, u);
  assert.equal(warm.warmupBasis, 'warm cache');
  assert.equal(warm.extraWarmupMsPerStart, 30);
  assert.equal(warm.breakEvenWithinProcess, true);
  assert.equal(warm.breakEvenWithinProcessCold, false);
  assert.ok(Math.abs(warm.coldWarmupHoursPerMonth - cold.warmupHoursPerMonth) < 1e-12);
  assert.ok(warm.warmupHoursPerMonth < cold.warmupHoursPerMonth);
  // 50 calls per process: cold breaks even too late (102), warm in time (17)
  const i = vin({ cache: cacheFacts({ warmBreakEven: w }) });
  const v = decide(i, warm);
  assert.equal(v.verdict, 'compile with warm-up and the persistent cache');
  const text = v.reasons.join('\n');
  assert.match(text, /without the persistent cache every process start pays the cold warm-up and breaks even after 102 calls, past the 50 calls/);
  assert.match(text, /first 2 calls of a restarted process took 60\.00 ms with a warm persistent cache vs 230 ms cold/);
  assert.match(text, /break-even after 102 calls \(17 calls with a warm persistent cache\)/);
  // without the cache measurement the same process is too short-lived
  assert.equal(decide(vin(), cold).headline, 'do not compile (too short-lived)');
  // too short even warm: still do not compile, naming both figures
  const v2 = decide(i, project({ eagerMedianMs: 6, compiledMedianMs: 4, breakEven: be(), warmCacheBreakEven: w }, usage({ processLifetime: { calls: 5 } })));
  assert.equal(v2.headline, 'do not compile (too short-lived)');
  assert.match(v2.reasons[0]!, /break-even after 102 calls cold, 17 calls with a warm persistent cache, but a process serves only 5 call/);
});

test('shape policies: the recommendation is the fastest steady time, or fewer compiles within 5% of it; refusals are named', () => {
  const run = (policy: PolicyRun['policy'], o: Partial<PolicyRun> = {}): PolicyRun => ({
    policy, options: '{}', status: 'ok', reason: null, compiles: 1, traces: 1, recompiles: 0, dynamicCompiles: [], dynamicFailures: [], eagerFallbacks: 0, compileTimeMs: 100,
    firstPassMs: 300, firstCallMs: 200, perShapeMs: [1, 2], steadyMs: 1.5, vsStatic: 1, speedup: 2, maxRelErr: 0, buckets: [], ...o,
  });
  const eager = run('eager', { steadyMs: 3, speedup: 1 });
  const r1 = recommendPolicy([eager, run('static', { compiles: 3 }), run('automatic dynamic', { compiles: 2, steadyMs: 1.545, vsStatic: 1.03, dynamicCompiles: [['s0 = arg x dim 0 (automatic dynamic)']] }), run('buckets', { status: 'refused', reason: 'a gradient would include padded rows' })], { shapes: 3, tolerance: 1e-3 });
  assert.equal(r1.recommended, 'automatic dynamic');
  assert.match(r1.reasons[0]!, /^automatic dynamic: 2 compile\(s\) \(1 dynamic: s0 = arg x dim 0\), steady 1\.03x static, 2\.00x eager.*fewest compiles.*use kiln\.compile\(fn\) \(the default\)/);
  assert.ok(r1.reasons.includes('buckets refused: a gradient would include padded rows'));
  // 20% slower is not "close": static wins on steady time
  const r2 = recommendPolicy([eager, run('static', { compiles: 3 }), run('automatic dynamic', { compiles: 2, steadyMs: 1.8, vsStatic: 1.2 })], { shapes: 12, tolerance: 1e-3 });
  assert.equal(r2.recommended, 'static');
  assert.match(r2.reasons.at(-1)!, /recompileLimit >= 12/);
  // fallbacks and wrong outputs rule a policy out
  const r3 = recommendPolicy([eager, run('static', { eagerFallbacks: 4 }), run('automatic dynamic', { maxRelErr: 0.5 })], { shapes: 3, tolerance: 1e-3 });
  assert.equal(r3.recommended, null);
  assert.match(r3.reasons.join('\n'), /static ruled out: 4 call\(s\) fell back to eager/);
  assert.match(r3.reasons.join('\n'), /automatic dynamic ruled out: outputs differ from eager/);
  // the verdict: a recommended policy in the headline; none faster than eager -> too dynamic
  const shapes = ['x[8,16]', 'x[16,16]'];
  const dyn = verdictFor(vin({ productionShapes: shapes, dynamic: { status: 'ok', reason: null, recommended: 'buckets', speedup: 1.8, reasons: ['buckets: 2 compile(s)'] } }), usage());
  assert.equal(dyn.verdict, 'compile with dynamic shapes or buckets');
  assert.equal(dyn.headline, 'compile with dynamic shapes or buckets (policy: buckets)');
  assert.ok(dyn.reasons.includes('buckets: 2 compile(s)'));
  const slow = verdictFor(vin({ productionShapes: shapes, dynamic: { status: 'ok', reason: null, recommended: 'static', speedup: 0.7, reasons: [] } }), usage());
  assert.equal(slow.headline, 'do not compile (too dynamic)');
});

test('projection: warm-up per process start and amortized engineering', () => {
  const p = project({ eagerMedianMs: 10, compiledMedianMs: 5, breakEven: be({ extraWarmupMs: 3600, calls: 722 }) }, usage({ callsPerDay: 86_400, processLifetime: { seconds: 3600 }, monthlyComputeCostUsd: 1000, engineerWeeks: 1, engineerWeekCostUsd: 1200, amortizationMonths: 12 }));
  assert.equal(p.callsPerProcess, 3600);
  assert.equal(p.processStartsPerMonth, 720);
  assert.equal(p.eagerHoursPerMonth, 7.2);
  assert.ok(Math.abs(p.warmupHoursPerMonth - 0.72) < 1e-9);
  assert.ok(Math.abs(p.savedHoursPerMonth - (7.2 - 3.6 - 0.72)) < 1e-9);
  assert.ok(Math.abs(p.computeSavingUsdPerMonth! - 400) < 1e-9);
  assert.equal(p.engineeringCostUsdPerMonth, 100);
  assert.ok(Math.abs(p.netSavingUsdPerMonth! - 300) < 1e-9);
  assert.ok(Math.abs(p.paybackMonths! - 3) < 1e-9);
  assert.deepEqual(parseProcessLifetime('1'), { calls: 1 });
  assert.deepEqual(parseProcessLifetime('12h'), { seconds: 43200 });
  assert.deepEqual(parseProcessLifetime('7d'), { seconds: 604800 });
  assert.throws(() => parseProcessLifetime('forever'), /process-lifetime/);
});

// ---------------------------------------------------------------- planted problems, measured

const inferenceWorkload = (name: string, makeFn: (w: kiln.Tensor) => (x: kiln.Tensor) => kiln.Tensor): Workload => ({
  name,
  kind: 'inference',
  setup({ seed }) {
    kiln.manualSeed(seed);
    const w = kiln.keep(kiln.randn([16, 16]));
    const x = kiln.keep(kiln.randn([8, 16]));
    return { inputs: [x], fn: makeFn(w), dispose: () => { w.dispose(); x.dispose(); } };
  },
});

test('a graph break inside fn (.item()) -> keep eager for now, naming this file and line', async () => {
  const wl = inferenceWorkload('with-break', (w) => (x) => {
    const h = x.matmul(w).relu();
    const s = h.sum().item(); // PLANTED-GRAPH-BREAK
    return h.mul(s > 0 ? 1 : -1);
  });
  const meas = await measure({ workload: wl, source: 'test' }, { calls: 4, warmup: 2 });
  const b = meas.backends[0]!;
  assert.ok(b.compiler.graphBreaks.length >= 1);
  const line = lineOf('PLANTED-GRAPH-BREAK');
  const rep = buildReport(meas, usage());
  assert.deepEqual(validateJsonSchema(schema, rep), []);
  assert.equal(rep.verdict.verdict, 'keep eager for now');
  const text = rep.verdict.reasons.join('\n');
  assert.match(text, new RegExp(`graph break at \\S*${THIS_FILE.replace('.', '\\.')}:${line}:\\d+: item\\(\\)`), text);
  assert.equal(rep.checklist.find((c) => c.id === 'graph-breaks')!.status, 'pass', 'counted and located');
});

test('compiled outputs that differ from eager are caught as an accuracy problem', async () => {
  // a JS value read from the closure is baked in at trace time: eager sees 1, 2, 3, ...,
  // the compiled replays keep the traced 1
  let calls = 0;
  const baked = inferenceWorkload('baked-counter', (w) => (x) => x.matmul(w).mul(++calls));
  const r1 = buildReport(await measure({ workload: baked, source: 'test' }, { calls: 3, warmup: 1 }), usage());
  assert.equal(r1.verdict.verdict, 'keep eager for now');
  assert.equal(r1.backends[0]!.accuracy.ok, false);
  assert.ok(r1.backends[0]!.accuracy.maxRelErr! > 1e-3);
  assert.match(r1.verdict.reasons[0]!, /accuracy: compiled outputs differ from eager by max rel\. error/);
  assert.equal(r1.checklist.find((c) => c.id === 'accuracy')!.status, 'fail');

  // a custom op whose forward reads a JS counter that changes on every call (shared by the
  // eager and the compiled instance, so their calls see different values)
  let tick = 0;
  const noisy = kiln.customOp({ name: 'advisor_test_tick', forward: (x: kiln.Tensor) => x.add(++tick) });
  const custom = inferenceWorkload('custom-op-counter', (w) => (x) => noisy(x.matmul(w)));
  const r2 = buildReport(await measure({ workload: custom, source: 'test' }, { calls: 3, warmup: 1 }), usage());
  assert.equal(r2.backends[0]!.compiler.graphBreaks.length, 0, 'a custom op is not a graph break');
  assert.equal(r2.verdict.verdict, 'keep eager for now');
  assert.match(r2.verdict.reasons[0]!, /accuracy/);
});

test('a workload with matching outputs passes the accuracy check (inference, several outputs)', async () => {
  const wl = inferenceWorkload('two-outputs', (w) => (x) => x.matmul(w).relu());
  const meas = await measure({ workload: { ...wl, setup: async (o) => { const i = await wl.setup(o); return { ...i, fn: (x: kiln.Tensor) => [i.fn(x) as kiln.Tensor, x.mul(2)] }; } }, source: 'test' }, { calls: 3, warmup: 2 });
  const b = meas.backends[0]!;
  assert.equal(b.accuracy.compared, 'outputs');
  assert.ok(b.accuracy.ok, b.accuracy.detail);
  assert.equal(b.accuracy.losses, null);
  const rep = buildReport(meas, usage());
  assert.deepEqual(validateJsonSchema(schema, rep), []);
  const v = verdictInput(b, 'inference', null);
  assert.equal(v.replays > 0, true);
  assert.ok(renderHtml(rep).includes('<svg'));
});

test('declared shapes: a dynamic-shape section with compiles per policy, buckets hit, a recommendation; schema-valid', async () => {
  // rows are independent (matmul + relu): static, automatic dynamic and buckets all apply
  const wl: Workload = {
    ...inferenceWorkload('rows', (w) => (x) => x.matmul(w).relu()),
    shapes: ['x[8,16]', 'x[16,16]', 'x[24,16]', 'x[32,16]'],
  };
  const meas = await measure({ workload: wl, source: 'test' }, { calls: 3, warmup: 2 });
  const b = meas.backends[0]!;
  assert.equal(b.cacheCheck.status, 'skipped', 'an in-memory workload cannot be loaded by a child process');
  assert.match(b.cacheCheck.reason!, /did not come from a module file/);
  const d = meas.dynamicShapes!;
  assert.equal(d.status, 'ok', d.reason ?? '');
  assert.deepEqual(d.shapes, wl.shapes);
  assert.deepEqual(d.varying, [{ arg: 0, dim: 0, sizes: [8, 16, 24, 32] }]);
  assert.deepEqual(d.policies.map((p) => p.policy), ['eager', 'static', 'automatic dynamic', 'buckets']);
  const by = Object.fromEntries(d.policies.map((p) => [p.policy, p]));
  for (const p of d.policies) assert.equal(p.status, 'ok', `${p.policy}: ${p.reason}`);
  assert.equal(by.static!.compiles, 4, 'static: one entry per shape');
  assert.ok(by['automatic dynamic']!.compiles < by.static!.compiles, `automatic dynamic ${by['automatic dynamic']!.compiles} compiles`);
  assert.equal(by['automatic dynamic']!.dynamicCompiles.length, 1);
  // pow2 buckets: 8, 16, 32 (24 pads to 32)
  assert.deepEqual(by.buckets!.buckets.map((x) => [x.bucket, x.sizes]), [[8, [8]], [16, [16]], [32, [24, 32]]]);
  for (const p of d.policies.slice(1)) {
    assert.ok(p.maxRelErr !== null && p.maxRelErr < 1e-5, `${p.policy} outputs vs eager: ${p.maxRelErr}`);
    assert.equal(p.perShapeMs.length, 4);
    assert.ok(p.steadyMs! > 0 && p.vsStatic! > 0 && p.speedup! > 0);
  }
  assert.equal(by.static!.vsStatic, 1);
  assert.ok(d.recommended !== null);
  assert.match(d.reasons[0]!, new RegExp(`^${d.recommended}: \\d+ compile`));
  assert.equal(meas.notMeasured.map((x) => x.id).join(), 'warm-cache-first-call');
  const rep = buildReport(meas, usage());
  assert.deepEqual(validateJsonSchema(schema, rep), []);
  if (rep.verdict.verdict === 'compile with dynamic shapes or buckets') assert.equal(rep.verdict.headline, `compile with dynamic shapes or buckets (policy: ${d.recommended})`);
  const html = renderHtml(rep);
  assert.match(html, /<table id="dynamic-shapes">/);
  assert.match(html, /32 &larr; 24, 32/);
  dynamicMeasurement = meas;
});

let dynamicMeasurement: Awaited<ReturnType<typeof measure>> | null = null;

test('every figure of the verdict comes from the backend and shape policy it recommends, which it names with the code to adopt', () => {
  assert.ok(dynamicMeasurement, 'needs the declared-shapes measurement');
  const meas = structuredClone(dynamicMeasurement);
  // two backends: js as measured, and a "native" one twice as fast at one shape; the shape
  // policies ran on the fastest (measure() runs them on meas.primaryBackend)
  const js = meas.backends[0]!;
  const native = { ...structuredClone(js), backend: 'native', compiled: { ...js.compiled, medianMs: js.compiled.medianMs / 2 } };
  meas.backends = [js, native];
  meas.primaryBackend = 'native';
  const d = meas.dynamicShapes!;
  d.backend = 'native';
  d.recommended = 'buckets';
  const rec = d.policies.find((p) => p.policy === 'buckets')!, eager = d.policies.find((p) => p.policy === 'eager')!;
  // stream figures unlike any single-shape figure
  Object.assign(eager, { steadyMs: 10, firstPassMs: 40, firstCallMs: 12 });
  Object.assign(rec, { steadyMs: 4, firstPassMs: 240, firstCallMs: 150, speedup: 2.5, compileTimeMs: 180 });
  const u = usage({ monthlyComputeCostUsd: 20_000 });
  const rep = buildReport(meas, u);
  assert.deepEqual(validateJsonSchema(schema, rep), []);
  assert.equal(rep.primaryBackend, 'native');
  assert.equal(rep.verdict.backend, 'native');
  assert.equal(rep.verdict.policy, 'buckets');
  assert.match(rep.verdict.basis, /backend native, shape policy buckets over the 4 production shapes/);
  // the projection is the policy's stream on native: eager 10 ms, compiled 4 ms per call, the first pass as warm-up
  const j = rep.projection;
  assert.equal(j.eagerHoursPerMonth, (j.callsPerMonth * 10) / 3_600_000);
  assert.equal(j.extraWarmupMsPerStart, 200);
  assert.equal(j.warmupBasis, 'cold', 'the warm restart was measured at one shape: not charged to the stream');
  assert.ok(Math.abs(j.compiledHoursPerMonth - ((j.callsPerMonth * 4) / 3_600_000 + j.warmupHoursPerMonth)) < 1e-9);
  assert.equal(rep.verdict.verdict, 'compile with dynamic shapes or buckets');
  assert.match(rep.verdict.reasons.join('\n'), /compiled \(native\) 4\.00 ms vs eager 10\.00 ms per call \(mean over the 4 production shapes, policy buckets\): 2\.50x/);
  assert.equal(rep.verdict.code, [
    "import * as kiln from 'kilnjs';",
    "import 'kilnjs/node'; // registers the native backend",
    "const compiled = kiln.compile(fn, { backend: 'native', buckets: { arg: 0, dim: 0, sizes: 'pow2' } });",
    'await compiled.warmup([[...exampleArgs]]); // at process start, before serving',
  ].join('\n'));
  const text = formatSummary(rep);
  assert.match(text, /figures from: backend native, shape policy buckets/);
  assert.match(text, /adopt it:\n\s+import \* as kiln from 'kilnjs';/);
  assert.match(renderHtml(rep), /<pre id="adopt"><code>import \* as kiln/);
  // a verdict that does not compile shows no code
  assert.equal(verdictFor(vin({ speedup: 0.9, compiledMedianMs: 6.6, breakEven: be({ perCallSavingMs: -0.6, calls: null }) }), usage()).code, null);
});

test('measure runs the shape policies on the backend the verdict recommends', () => {
  assert.ok(dynamicMeasurement);
  assert.equal(dynamicMeasurement.dynamicShapes!.backend, dynamicMeasurement.primaryBackend);
});

// ---------------------------------------------------------------- loading workloads, the CLI

test('--example: a missing example or one without a workload export fails with a clear message', async () => {
  await assert.rejects(loadExample('no-such-example'), (e: Error) => e instanceof WorkloadError && /there is no example 'no-such-example' \(examples: char-gpt, denoiser, mlp, recommender\)/.test(e.message));
  const exdir = join(dir, 'examples');
  rmSync(exdir, { recursive: true, force: true });
  (await import('node:fs')).mkdirSync(exdir);
  writeFileSync(join(exdir, 'plain.ts'), 'export const answer = 42;\n');
  await assert.rejects(loadExample('plain', exdir), /plain\.ts does not export a 'workload' \(yet\)/);
  writeFileSync(join(exdir, 'good.ts'), "export const workload = { name: 'good', kind: 'inference', setup() { throw new Error('not called'); } };\n");
  const lw = await loadExample('good', exdir);
  assert.equal(lw.workload.name, 'good');
  assert.equal(lw.source, 'example:good');
});

test('the CLI (src/cli.ts; the built bin: test/package.test.ts): exit statuses for bad arguments', async () => {
  const run = (...a: string[]) => spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...a], { encoding: 'utf8' });
  const h = run('advise', '--help');
  assert.equal(h.status, 0, h.stderr);
  assert.match(h.stdout, /kilnjs advise \[workload-module\]/);
  assert.match(h.stdout, /--fail-if-slower/);
  const missing = run('advise', '--example', 'no-such-example', '--quiet');
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /there is no example 'no-such-example'/);
  // the same entry point in-process
  const err: string[] = [];
  const io: Io = { out: () => {}, err: (s) => err.push(s) };
  assert.equal(await main(['advise', '--calls', 'lots'], io), 2);
  assert.match(err.join('\n'), /--calls: expected an integer/);
  assert.equal(await main(['advise', '--bogus'], io), 2);
  assert.equal(await main(['advise', 'a.ts', '--example', 'mlp'], io), 2);
  assert.equal(await main(['frobnicate'], io), 2);
  assert.equal(await main(['advise', './no/such/workload.ts'], io), 1);
  assert.match(err.join('\n'), /workload module not found/);
});

test('--shapes is checked before anything is measured: garbage, and shapes that do not fit the workload', async () => {
  const err: string[] = [];
  const io: Io = { out: () => {}, err: (s) => err.push(s) };
  assert.equal(await main(['advise', '--example', 'mlp', '--shapes', 'garbage'], io), 2);
  assert.match(err.join('\n'), /--shapes: shape 'garbage' in 'garbage': expected name\[d0,d1,\.\.\.\]/);
  err.length = 0;
  // mlp's input is x[N, 2]: a rank-3 shape does not fit; reported before the first call is timed
  assert.equal(await main(['advise', '--example', 'mlp', '--shapes', 'x[8,2];x[4,2,2]', '--no-html'], io), 2);
  assert.match(err.join('\n'), /--shapes: the shape list does not fit the workload's inputs .*argument 0 has rank 3/);
  assert.doesNotMatch(err.join('\n'), /call 1|warm-up/, 'nothing was measured');
});

test('advise quietly with --no-html writes only what it is asked to', async () => {
  const r = await advise(['--example', 'mlp', '--calls', '2', '--warmup', '2', '--no-html', '--quiet', '--process-lifetime', '1'], quiet);
  assert.equal(r.htmlPath, null);
  assert.equal(r.jsonPath, null);
  assert.equal(r.report.usage.processLifetime.calls, 1);
  assert.ok(r.report.usage.assumptions.some((a) => /calls\/day/.test(a)));
  // one call per process never reaches break-even (or compiled is not faster): do not compile
  assert.equal(r.report.verdict.verdict === 'do not compile' || r.report.verdict.verdict === 'keep eager for now', true, r.report.verdict.headline);
});
