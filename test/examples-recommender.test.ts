// examples/recommender.ts: the DLRM click model beats the popularity baseline on held-out
// AUC, memory stays flat, and the compiled training step follows the eager one.

import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { CONFIGS, DlrmClickModel, buildClickLog, popularityScores, trainRecommender, type ClickLog } from '../examples/recommender.js';
import { auc } from '../src/advisor/examples/lib/metrics.js';
import { Dlrm } from '../bench/workloads/w6.js';
import { nativeUnavailableReason } from 'kilnjs/node';
import { assertCompiledFollowsEager } from './helpers/compiled-training.js';

let log: ClickLog | undefined;
const smallLog = () => (log ??= buildClickLog({ config: CONFIGS.small }));

test('auc is exact: ties count one half, and it matches the pairwise definition', () => {
  assert.equal(auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]), 0.75);
  assert.equal(auc([1, 1, 1, 1], [0, 1, 0, 1]), 0.5);
  assert.equal(auc([0.2, 0.2, 0.9], [0, 1, 1]), 0.75);
  assert.ok(Number.isNaN(auc([1, 2], [1, 1])));
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const s = Array.from({ length: 300 }, () => Math.round(rand() * 20) / 20), y = s.map((v) => (rand() < v ? 1 : 0));
  let num = 0, den = 0;
  for (let i = 0; i < s.length; i++) for (let j = 0; j < s.length; j++) {
    if (y[i] === 1 && y[j] === 0) {
      den++;
      num += s[i]! > s[j]! ? 1 : s[i] === s[j] ? 0.5 : 0;
    }
  }
  assert.ok(Math.abs(auc(s, y) - num / den) < 1e-12);
});

test('buildClickLog is reproducible and carries a signal the popularity baseline only partly sees', () => {
  const cfg = { ...CONFIGS.small, trainEvents: 20_000, testEvents: 5_000 };
  const a = buildClickLog({ config: cfg, seed: 5 }), b = buildClickLog({ config: cfg, seed: 5 });
  assert.deepEqual(a.train.ids.shape, [20_000, cfg.tables]);
  assert.equal(a.train.ids.dtype, 'int32');
  assert.deepEqual(a.test.dense.shape, [5_000, cfg.dense]);
  assert.deepEqual(Array.from(a.train.ids.dataSync().subarray(0, 600)), Array.from(b.train.ids.dataSync().subarray(0, 600)));
  assert.ok(a.ctr > 0.15 && a.ctr < 0.4, `CTR ${a.ctr}`);
  const base = auc(popularityScores(a, cfg.items), a.test.clicks);
  assert.ok(base > 0.55, `popularity AUC ${base}`);
  assert.ok(a.oracleAuc > base + 0.1, `oracle ${a.oracleAuc} vs popularity ${base}`);
  a.dispose();
  b.dispose();
});

test('the small config beats the popularity baseline by > 0.05 AUC in 150 steps, with flat memory', () => {
  const r = trainRecommender({ config: 'small', steps: 150, evalEvery: 0, log: smallLog() });
  assert.ok(r.auc > r.baselineAuc + 0.05, `model AUC ${r.auc} vs popularity ${r.baselineAuc}`);
  assert.ok(r.auc <= r.oracleAuc + 0.01, `model AUC ${r.auc} above the oracle ${r.oracleAuc}`);
  assert.equal(r.losses.length, 150);
  const mean = (a: number[]) => a.reduce((s, x) => s + x, 0) / a.length;
  assert.ok(mean(r.losses.slice(-20)) < mean(r.losses.slice(0, 20)) - 0.05, 'loss falls');
  assert.equal(r.memoryAfter.tensors, r.memoryBefore.tensors);
  assert.equal(r.memoryAfter.bytes, r.memoryBefore.bytes);
});

const curveOpts = { config: 'small' as const, steps: 50, evalEvery: 0 };
let eagerCurve: ReturnType<typeof trainRecommender> | undefined;
const eagerRun = () => (eagerCurve ??= trainRecommender({ ...curveOpts, log: smallLog() }));

function checkCompiledFollowsEager(backend: 'js' | 'native', t: TestContext): void {
  const eager = eagerRun();
  const compiled = assertCompiledFollowsEager(t, backend, eager, () => trainRecommender({ ...curveOpts, log: smallLog(), compile: true, fullgraph: true, backend }));
  assert.ok(Math.abs(eager.auc - compiled.auc) < 1e-3, `AUC eager ${eager.auc}, compiled ${compiled.auc}`);
}

test('the compiled training step (fullgraph) follows the eager loss curve within 1e-4 for 50 steps, no graph breaks', (t) => {
  checkCompiledFollowsEager('js', t);
});

const unavailable = nativeUnavailableReason();
test('the same with the native backend', { skip: unavailable ? `native backend unavailable: ${unavailable}` : false }, (t) => {
  checkCompiledFollowsEager('native', t);
});

test('the w6 config has the shapes of the W6 benchmark model', () => {
  kiln.manualSeed(0);
  const ours = new DlrmClickModel(CONFIGS.w6), bench = new Dlrm();
  const shapes = (ps: kiln.Tensor[]) => ps.map((p) => p.shape.join('x'));
  assert.deepEqual(shapes(ours.parameters()), shapes(bench.parameters()));
  // one forward at batch 4
  const out = kiln.scope(() =>
    kiln.noGrad(() => ours.call(kiln.randn([4, CONFIGS.w6.dense]), kiln.randint(0, CONFIGS.w6.rows, [4, CONFIGS.w6.tables])).shape),
  );
  assert.deepEqual(out, [4, 1]);
});
