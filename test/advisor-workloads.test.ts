// kiln advise's example workloads: the recommender is the default (with its small and w6
// configs), char-gpt and denoiser load by name, --config and --shapes reach the report (the
// shape policies are measured), --no-cache-check skips the restart, and a module workload with
// `captures` gets a warm start (tracing skipped) in the restarted process.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { advise, DEFAULT_EXAMPLE, loadExample, validateJsonSchema, WorkloadError, type Io, type JsonSchema } from '../src/advisor/index.js';
import { resolveConfig } from '../src/advisor/workload.js';

const schema = JSON.parse(readFileSync('docs/advisor-report.schema.json', 'utf8')) as JsonSchema;
const quiet: Io = { out: () => {}, err: () => {} };

test('the default example is the recommender; every example named in the issue loads as a workload', async () => {
  assert.equal(DEFAULT_EXAMPLE, 'recommender');
  for (const name of ['recommender', 'char-gpt', 'denoiser', 'mlp']) {
    const lw = await loadExample(name);
    assert.equal(lw.workload.name, name);
    assert.equal(lw.workload.kind, 'training');
    assert.equal(lw.source, `example:${name}`);
  }
  const rec = (await loadExample('recommender')).workload;
  const mlp = (await loadExample('mlp')).workload;
  assert.deepEqual(rec.configs, ['small', 'w6']);
  assert.equal(resolveConfig(rec, undefined), 'small');
  assert.equal(resolveConfig(rec, 'w6'), 'w6');
  assert.throws(() => resolveConfig(rec, 'huge'), (e: Error) => e instanceof WorkloadError && /offers small, w6/.test(e.message));
  assert.throws(() => resolveConfig(mlp, 'w6'), /has no configs/);
});


test('advise with no workload measures the recommender (small config): schema-valid, accurate losses, not-measured hooks', async () => {
  const { report: r, exitCode } = await advise(['--calls', '4', '--warmup', '2', '--no-html', '--quiet', '--no-cache-check'], quiet);
  assert.equal(exitCode, 0);
  assert.deepEqual(validateJsonSchema(schema, r), []);
  assert.equal(r.workload.name, 'recommender');
  assert.equal(r.workload.config, 'small');
  assert.deepEqual(r.workload.inputShapes, ['[4096,13] float32', '[4096,6] int32', '[4096,1] float32']);
  const b = r.backends[0]!;
  assert.equal(b.status, 'ok');
  assert.ok(b.compiler.cacheHits > 0, 'compiled code replayed');
  assert.deepEqual(b.compiler.graphBreaks, []);
  // the step cycles through its batch pool in place: compiled follows eager call by call
  assert.ok(b.accuracy.maxRelErr! < 1e-4, b.accuracy.detail);
  const losses = b.accuracy.losses!.eager;
  assert.equal(new Set(losses).size, losses.length, 'each call trains on a different batch');
  // what this run did not measure is named, with why: the restart (skipped) and the shape policies (no shapes declared)
  assert.deepEqual(r.notMeasured.map((x) => x.id), ['warm-cache-first-call', 'dynamic-shape-policies']);
  assert.equal(r.notMeasured[0]!.reason, 'skipped (--no-cache-check)');
  assert.match(r.notMeasured[1]!.reason, /declares no input shapes: give the shapes seen in production \(--shapes/);
  assert.equal(b.cacheCheck.status, 'skipped');
  assert.equal(r.options.cacheCheck, false);
  assert.equal(r.projection.warmupBasis, 'cold');
  assert.equal(r.checklist.find((c) => c.id === 'cache')!.status === 'pass', false, 'no pass without the restart measured');
});

test('--shapes replaces the declared shapes and is measured per policy; --config on a workload without configs fails', async () => {
  const { report: r } = await advise(['--example', 'mlp', '--calls', '3', '--warmup', '2', '--no-html', '--quiet', '--no-cache-check', '--shapes', 'x[32,2];x[64,2];x[128,2]'], quiet);
  assert.deepEqual(validateJsonSchema(schema, r), []);
  assert.deepEqual(r.workload.shapes, ['x[32,2]', 'x[64,2]', 'x[128,2]']);
  assert.equal(r.workload.config, null);
  assert.deepEqual(r.notMeasured.map((x) => x.id), ['warm-cache-first-call']);
  const d = r.dynamicShapes!;
  assert.equal(d.status, 'ok', d.reason ?? '');
  // the labels y (unlisted) follow x's batch: both vary in dim 0
  assert.deepEqual(d.inputShapes, [[[32, 2], [32]], [[64, 2], [64]], [[128, 2], [128]]]);
  assert.deepEqual(d.varying.map((v) => [v.arg, v.dim]), [[0, 0], [1, 0]]);
  const by = Object.fromEntries(d.policies.map((p) => [p.policy, p]));
  assert.equal(by.static!.status, 'ok');
  assert.equal(by['automatic dynamic']!.status, 'ok');
  assert.ok(by.static!.compiles > by['automatic dynamic']!.compiles, `static ${by.static!.compiles} vs automatic ${by['automatic dynamic']!.compiles} compiles`);
  // bucketing pads x only, and the loss needs one label per row: kiln refuses, and says why
  assert.equal(by.buckets!.status, 'refused');
  assert.match(by.buckets!.reason!, /nllLoss|target/);
  assert.ok(d.reasons.some((x) => /^buckets refused: /.test(x)), d.reasons.join('\n'));
  assert.ok(d.recommended === 'static' || d.recommended === 'automatic dynamic', String(d.recommended));
  if (r.verdict.verdict !== 'keep eager for now' && r.verdict.verdict !== 'do not compile') {
    assert.equal(r.verdict.verdict, 'compile with dynamic shapes or buckets');
    assert.match(r.verdict.reasons.join('\n'), /recommended shape policy: /);
  }
  await assert.rejects(advise(['--example', 'mlp', '--config', 'w6', '--calls', '1', '--warmup', '1', '--no-html', '--quiet'], quiet), /has no configs/);
});

test('a module workload with captures: the restarted process with a warm cache skips tracing (a warm start)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-advise-captures-'));
  try {
    const kilnUrl = pathToFileURL(join(process.cwd(), 'src', 'index.ts')).href;
    const file = join(dir, 'ranker.mts');
    writeFileSync(file, `import * as kiln from '${kilnUrl}';
export const workload = {
  name: 'ranker', kind: 'inference',
  setup({ seed }) {
    kiln.manualSeed(seed);
    const model = new kiln.nn.Sequential(new kiln.nn.Linear(16, 32), new kiln.nn.GELU(), new kiln.nn.Linear(32, 4));
    model.eval();
    model.requiresGrad_(false);
    const x = kiln.keep(kiln.randn([8, 16]));
    return { inputs: [x], fn: (x) => model.call(x), captures: model.stateDict(), dispose() { x.dispose(); } };
  },
};
`);
    const { report: r } = await advise([file, '--calls', '3', '--warmup', '1', '--no-html', '--quiet'], quiet);
    assert.deepEqual(validateJsonSchema(schema, r), []);
    const c = r.backends[0]!.cacheCheck;
    assert.equal(c.status, 'ok', c.reason ?? '');
    assert.equal(c.cold!.cache.traceSkips, 0);
    assert.ok(c.cold!.cache.writes >= 2, 'a program entry and a warm entry');
    assert.ok(c.warm!.cache.traceSkips > 0, JSON.stringify(c.warm!.cache));
    assert.equal(c.warm!.traces, 0, 'the function never traced in the warm process');
    assert.equal(c.skipped, 'tracing');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
