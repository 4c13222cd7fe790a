// Trains the DLRM-style click-through model of the advisor's recommender workload
// (src/advisor/examples/recommender.ts, which describes the synthetic click log and its hidden
// latent-factor model) with Adam, and scores it by held-out AUC against a popularity baseline
// (each impression scored by its item's click rate in the training log) and the oracle (the
// hidden model's true logits, the ceiling of any model).
//
//   npx tsx examples/recommender.ts [--config small|w6] [--steps N] [--compile] [--backend js|wasm|native|auto|eager]
//
// `--config w6` uses the shapes of the W6 benchmark (bench/workloads/w6.ts): 26 tables of
// 10,000 rows x 16 dims, bottom MLP 13->512->256->16, top MLP 367->512->256->1, batch 512.

import { pathToFileURL } from 'node:url';
import * as kiln from 'kilnjs';
import { buildClickLog, CONFIGS, DlrmClickModel, type ClickLog, type ClickSplit, type ConfigName, type RecommenderConfig } from '../src/advisor/examples/recommender.js';
import { auc } from '../src/advisor/examples/lib/metrics.js';
import { Args } from './lib/args.js';
import { EXAMPLE_BACKENDS, loadBackend, type ExampleBackend } from './lib/backends.js';
import { EpochBatches } from './lib/batches.js';
import { printMemoryAndCompiler } from './lib/run-report.js';
import { WARMUP_STEPS, rateSuffix, runTrainingLoop, type TrainingLoopResult } from './lib/training-loop.js';

// the click log, the configs and the model are the advisor's recommender workload (the
// default of `kilnjs advise`)
export { buildClickLog, CONFIGS, DlrmClickModel, type ClickLog, type ClickSplit, type ConfigName, type RecommenderConfig } from '../src/advisor/examples/recommender.js';

const { optim } = kiln;

/**
 * The popularity baseline: each test impression scored by its item's click rate in the
 * training log (smoothed toward the global rate with `prior` pseudo-impressions).
 */
export function popularityScores(log: ClickLog, items: number, prior = 10): Float64Array {
  const shows = new Float64Array(items), clicks = new Float64Array(items);
  const { train } = log;
  for (let e = 0; e < train.items.length; e++) {
    shows[train.items[e]!]!++;
    clicks[train.items[e]!]! += train.clicks[e]!;
  }
  const rate = Float64Array.from(shows, (s, i) => (clicks[i]! + prior * log.ctr) / (s + prior));
  return Float64Array.from(log.test.items, (i) => rate[i]!);
}

/** The model's logits for every row of a split, in chunks, without autograd. */
export function predict(model: DlrmClickModel, split: ClickSplit, chunk = 4096): Float32Array {
  const n = split.dense.shape[0]!;
  const out = new Float32Array(n);
  for (let s = 0; s < n; s += chunk) {
    const len = Math.min(chunk, n - s);
    kiln.scope(() =>
      kiln.noGrad(() => {
        out.set(model.call(split.dense.narrow(0, s, len), split.ids.narrow(0, s, len)).dataSync() as Float32Array, s);
      }),
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// training

export type { Memory } from './lib/training-loop.js';

export interface TrainRecommenderOptions {
  config?: ConfigName | RecommenderConfig;
  steps?: number;
  lr?: number;
  /** seed of the model's weights (kiln.manualSeed) and of the batch order */
  seed?: number;
  /** compile the training step with kiln.compile */
  compile?: boolean;
  /** kiln.compile's backend option (native and auto after importing 'kilnjs/node') */
  backend?: ExampleBackend;
  /** kiln.compile's fullgraph option (throw at a graph break) */
  fullgraph?: boolean;
  /** evaluate every this many steps (default: the config's); 0 = only at the end */
  evalEvery?: number;
  /** the click log (default: buildClickLog for the config, seed 1, disposed at the end) */
  log?: ClickLog;
  /** progress lines (default: none) */
  print?: (line: string) => void;
}

/** losses, evals, steps, steps/s and memory: see TrainingLoopResult */
export interface TrainRecommenderResult extends TrainingLoopResult<{ auc: number }> {
  /** held-out AUC of the trained model */
  auc: number;
  /** held-out AUC of the popularity baseline (item click rate in the training log) */
  baselineAuc: number;
  /** held-out AUC of the hidden model's true logits */
  oracleAuc: number;
  model: DlrmClickModel;
}

export function trainRecommender(opts: TrainRecommenderOptions = {}): TrainRecommenderResult {
  const cfg = typeof opts.config === 'object' ? opts.config : CONFIGS[opts.config ?? 'small'];
  const steps = opts.steps ?? cfg.steps, evalEvery = opts.evalEvery ?? cfg.evalEvery;
  const print = opts.print ?? (() => {});
  const seed = opts.seed ?? 0;
  const log = opts.log ?? buildClickLog({ config: cfg });
  kiln.manualSeed(seed);
  const model = new DlrmClickModel(cfg);
  const opt = new optim.Adam(model.parameters(), { lr: opts.lr ?? cfg.lr });

  const eagerStep = (dense: kiln.Tensor, ids: kiln.Tensor, labels: kiln.Tensor): kiln.Tensor => {
    opt.zeroGrad();
    const loss = kiln.binaryCrossEntropyWithLogits(model.call(dense, ids), labels);
    loss.backward();
    opt.step();
    return loss;
  };
  const step = opts.compile ? kiln.compile(eagerStep, { name: 'dlrm_step', backend: opts.backend, fullgraph: opts.fullgraph }) : eagerStep;

  const baselineAuc = auc(popularityScores(log, cfg.items), log.test.clicks);

  // batches in a fresh random order each epoch (our own generator, so eager and compiled
  // runs with the same seed see the same batches)
  const batches = new EpochBatches(log.train.dense.shape[0]!, cfg.batch, seed + 1);
  const run = runTrainingLoop({
    steps,
    evalEvery,
    step: (s) => {
      const idx = batches.indices(s);
      return step(log.train.dense.indexSelect(0, idx), log.train.ids.indexSelect(0, idx), log.train.labels.indexSelect(0, idx)).item();
    },
    evaluate: () => ({ auc: auc(predict(model, log.test), log.test.clicks) }),
    onEvaluation: (e, rate) => print(`step ${String(e.step).padStart(5)}  loss ${e.loss.toFixed(4)}  test AUC ${e.auc.toFixed(4)}${rateSuffix(rate, 1)}`),
  });
  batches.dispose();
  if (!opts.log) log.dispose(); // we built it
  const final = run.evals[run.evals.length - 1]!;
  return {
    auc: final.auc,
    baselineAuc,
    oracleAuc: log.oracleAuc,
    ...run,
    model,
  };
}

const signed = (x: number, digits: number) => `${x >= 0 ? '+' : ''}${x.toFixed(digits)}`;

async function main(): Promise<void> {
  const args = new Args();
  const configName = args.choice('config', Object.keys(CONFIGS) as ConfigName[]) ?? 'small';
  const backend = args.choice('backend', EXAMPLE_BACKENDS);
  await loadBackend(backend);
  const compile = args.has('compile') || backend !== undefined;
  const cfg = CONFIGS[configName];
  const steps = args.int('steps') ?? cfg.steps;

  let t0 = performance.now();
  const log = buildClickLog({ config: cfg });
  console.log(
    `click log (${cfg.name}): ${log.train.items.length} train / ${log.test.items.length} test impressions, CTR ${(log.ctr * 100).toFixed(1)}%, ` +
      `${cfg.tables} tables x ${cfg.rows} rows x ${cfg.embDim}, batch ${cfg.batch}  (built in ${((performance.now() - t0) / 1000).toFixed(1)} s)`,
  );
  console.log(`training ${steps} Adam steps, ${compile ? `compiled training step (backend ${backend ?? 'js'})` : 'eager'}`);
  t0 = performance.now();
  const r = trainRecommender({ config: cfg, steps, log, compile, backend, print: (l) => console.log(l) });
  const secs = (performance.now() - t0) / 1000;
  console.log(String(r.model));
  printMemoryAndCompiler(r, compile);
  console.log(
    `result: config ${cfg.name}, ${compile ? `compiled (backend ${backend ?? 'js'})` : 'eager'}, ${r.steps} steps in ${secs.toFixed(1)} s: test AUC ${r.auc.toFixed(4)} vs popularity baseline ${r.baselineAuc.toFixed(4)} ` +
      `(${signed(r.auc - r.baselineAuc, 4)}; oracle ${r.oracleAuc.toFixed(4)}), ${r.stepsPerSec.toFixed(2)} steps/s after ${WARMUP_STEPS} warm-up steps (${r.warmupSeconds.toFixed(2)} s)`,
  );
  log.dispose();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
