// kiln advise's example workloads: the recommender is the default (with its small and w6
// configs), char-gpt and denoiser load by name, --config and --shapes reach the report, and
// the report says what it could not measure in this build (warm cache, shape policies).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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
  const { report: r, exitCode } = await advise(['--calls', '4', '--warmup', '2', '--no-html', '--quiet'], quiet);
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
  // the measurements that wait on issues 6 and 7 are named, with why
  assert.deepEqual(r.notMeasured.map((x) => x.id), ['warm-cache-first-call', 'dynamic-shape-policies']);
  for (const x of r.notMeasured) assert.ok(x.reason.length > 20, x.reason);
});

test('--shapes replaces the declared shapes and feeds the dynamic-shapes verdict; --config on a workload without configs fails', async () => {
  const { report: r } = await advise(['--example', 'mlp', '--calls', '3', '--warmup', '2', '--no-html', '--quiet', '--shapes', 'x[32,2];x[64,2];x[128,2]'], quiet);
  assert.deepEqual(r.workload.shapes, ['x[32,2]', 'x[64,2]', 'x[128,2]']);
  assert.equal(r.workload.config, null);
  assert.match(r.notMeasured.find((x) => x.id === 'dynamic-shape-policies')!.reason, /3 declared shapes/);
  if (r.verdict.verdict !== 'keep eager for now' && r.verdict.verdict !== 'do not compile') assert.equal(r.verdict.verdict, 'compile with dynamic shapes or buckets');
  await assert.rejects(advise(['--example', 'mlp', '--config', 'w6', '--calls', '1', '--warmup', '1', '--no-html', '--quiet'], quiet), /has no configs/);
});
