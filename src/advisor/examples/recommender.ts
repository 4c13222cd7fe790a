// The recommender workload of `kilnjs advise` (its default example), the click log it trains on
// and the model; examples/recommender.ts trains it and compares it with a popularity baseline.
//
// A DLRM-style click-through model (EmbeddingBag tables, bottom and top MLPs, pairwise
// dot interaction) trained with Adam on a synthetic click log with a known signal, and
// scored by held-out AUC against a popularity baseline.
//
// The click log comes from a hidden latent-factor model. Users and items have hidden
// latent vectors (each the centroid of the user's segment or the item's category plus an
// individual offset), items have a popularity bias, and each impression has 13 dense
// features. An impression of item i to user u with dense features x is clicked with
//
//   p = sigmoid(gamma <u, i> / sqrt(k) + bias_i + f(x) + c)
//
// Table 0 holds the user id, 1 the item id, 2 the user's segment, 3 the item's category;
// the remaining tables are context ids that carry no signal (like many hashed features of a
// real log). The popularity baseline scores an impression by its item's click rate in the
// training log: it sees bias_i but not the user-item affinity, which the model's pairwise
// dot products can learn. The true logits give the oracle AUC, the ceiling of any model.
//
// `--config w6` uses the shapes of the W6 benchmark (bench/workloads/w6.ts): 26 tables of
// 10,000 rows x 16 dims, bottom MLP 13->512->256->16, top MLP 367->512->256->1, batch 512.

import * as kiln from '../../api/kiln.js';
import type { Workload } from '../workload.js';
import { disposeTraining } from './lib/dispose.js';
import { mlp, upperTriangleIndex, W6_BATCH, W6_BOTTOM, W6_DENSE, W6_EMB, W6_ROWS, W6_TABLES, W6_TOP } from './lib/dlrm.js';
import { auc } from './lib/metrics.js';
import { Rng } from './lib/rng.js';

const { nn, optim } = kiln;

export interface RecommenderConfig {
  name: string;
  /** embedding tables (at least 4: user, item, segment, category; the rest are context ids) */
  tables: number;
  /** rows per table */
  rows: number;
  embDim: number;
  /** dense features per impression */
  dense: number;
  /** bottom MLP hidden sizes (the MLP is dense -> ...bottomHidden -> embDim) */
  bottomHidden: number[];
  /** top MLP hidden sizes (the MLP is embDim + pairs -> ...topHidden -> 1) */
  topHidden: number[];
  batch: number;
  lr: number;
  /** default number of training steps */
  steps: number;
  /** evaluate held-out AUC every this many steps */
  evalEvery: number;
  // the click log
  users: number;
  items: number;
  segments: number;
  categories: number;
  trainEvents: number;
  testEvents: number;
}

export const CONFIGS = {
  /** trains in seconds */
  small: {
    name: 'small',
    tables: 6,
    rows: 2000,
    embDim: 16,
    dense: 13,
    bottomHidden: [64],
    topHidden: [64],
    batch: 256,
    lr: 0.005,
    steps: 600,
    evalEvery: 100,
    users: 2000,
    items: 1000,
    segments: 20,
    categories: 20,
    trainEvents: 200_000,
    testEvents: 20_000,
  },
  /** the W6 benchmark's shapes */
  w6: {
    name: 'w6',
    tables: W6_TABLES,
    rows: W6_ROWS,
    embDim: W6_EMB,
    dense: W6_DENSE,
    bottomHidden: W6_BOTTOM.slice(1, -1),
    topHidden: W6_TOP.slice(1, -1),
    batch: W6_BATCH,
    lr: 0.005,
    steps: 300,
    evalEvery: 100,
    users: W6_ROWS,
    items: W6_ROWS,
    segments: 100,
    categories: 100,
    trainEvents: 256_000,
    testEvents: 20_000,
  },
} satisfies Record<string, RecommenderConfig>;

export type ConfigName = keyof typeof CONFIGS;

/** One split of the log: tensors for the model, plain arrays for the baseline and checks. */
export interface ClickSplit {
  /** [N, dense] float32 */
  dense: kiln.Tensor;
  /** [N, tables] int32: user, item, segment, category, context ids */
  ids: kiln.Tensor;
  /** [N, 1] float32 0/1 */
  labels: kiln.Tensor;
  items: Int32Array;
  clicks: Uint8Array;
  /** the hidden model's logit of each impression */
  trueLogits: Float32Array;
}

export interface ClickLog {
  train: ClickSplit;
  test: ClickSplit;
  /** click-through rate of the training log */
  ctr: number;
  /** AUC of the true logits on the test split: the ceiling */
  oracleAuc: number;
  dispose(): void;
}

export interface ClickLogOptions {
  config?: RecommenderConfig;
  seed?: number;
  /** latent dimension of the hidden model */
  latentDim?: number;
  /** scale of the user-item affinity in the logit */
  affinity?: number;
  /** std of the item popularity bias */
  biasStd?: number;
}

/**
 * Draws a click log from the hidden latent-factor model described at the top of this file,
 * from its own seeded generator (kiln's generator is untouched). Tensors are kept.
 */
export function buildClickLog(opts: ClickLogOptions = {}): ClickLog {
  const cfg = opts.config ?? CONFIGS.small;
  if (cfg.tables < 4) throw new Error(`the click log needs at least 4 tables, got ${cfg.tables}`);
  if (Math.max(cfg.users, cfg.items, cfg.segments, cfg.categories) > cfg.rows) throw new Error(`users, items, segments and categories must fit in ${cfg.rows} rows`);
  const rng = new Rng(opts.seed ?? 1);
  const k = opts.latentDim ?? 8, gamma = opts.affinity ?? 1.6, biasStd = opts.biasStd ?? 0.7;
  const offset = -1.4; // sets the click rate near 25%

  const latent = (groups: number, count: number) => {
    const centroids = Float64Array.from({ length: groups * k }, () => rng.normal());
    const group = Int32Array.from({ length: count }, () => rng.int(groups));
    const vec = new Float64Array(count * k);
    for (let i = 0; i < count; i++) {
      for (let d = 0; d < k; d++) vec[i * k + d] = (centroids[group[i]! * k + d]! + 0.5 * rng.normal()) / Math.sqrt(1.25);
    }
    return { group, vec };
  };
  const users = latent(cfg.segments, cfg.users);
  const items = latent(cfg.categories, cfg.items);
  const bias = Float64Array.from({ length: cfg.items }, () => biasStd * rng.normal());
  // exposure: Zipf-like over a random ranking of the items (independent of the bias)
  const rank = rng.permutation(cfg.items);
  const cdf = new Float64Array(cfg.items);
  let acc = 0;
  for (let i = 0; i < cfg.items; i++) cdf[i] = acc += 1 / (rank[i]! + 10);
  for (let i = 0; i < cfg.items; i++) cdf[i]! /= acc;
  const drawItem = () => {
    const u = rng.uniform();
    let lo = 0, hi = cfg.items - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };

  const split = (n: number): ClickSplit => {
    const dense = new Float32Array(n * cfg.dense), ids = new Int32Array(n * cfg.tables);
    const labels = new Float32Array(n), itemIds = new Int32Array(n), clicks = new Uint8Array(n), trueLogits = new Float32Array(n);
    for (let e = 0; e < n; e++) {
      const u = rng.int(cfg.users), i = drawItem();
      const x = dense.subarray(e * cfg.dense, (e + 1) * cfg.dense);
      for (let j = 0; j < cfg.dense; j++) x[j] = rng.normal();
      let dot = 0;
      for (let d = 0; d < k; d++) dot += users.vec[u * k + d]! * items.vec[i * k + d]!;
      const denseEffect = 0.5 * x[0]! - 0.4 * x[1]! + 0.5 * (Math.abs(x[2]!) - 0.8);
      const logit = (gamma * dot) / Math.sqrt(k) + bias[i]! + denseEffect + offset;
      const click = rng.uniform() < 1 / (1 + Math.exp(-logit)) ? 1 : 0;
      const row = ids.subarray(e * cfg.tables, (e + 1) * cfg.tables);
      row[0] = u;
      row[1] = i;
      row[2] = users.group[u]!;
      row[3] = items.group[i]!;
      for (let t = 4; t < cfg.tables; t++) row[t] = rng.int(cfg.rows);
      labels[e] = clicks[e] = click;
      itemIds[e] = i;
      trueLogits[e] = logit;
    }
    return {
      dense: kiln.keep(kiln.tensor(dense, [n, cfg.dense])),
      ids: kiln.keep(kiln.tensor(ids, [n, cfg.tables])),
      labels: kiln.keep(kiln.tensor(labels, [n, 1])),
      items: itemIds,
      clicks,
      trueLogits,
    };
  };
  const train = split(cfg.trainEvents), test = split(cfg.testEvents);
  return {
    train,
    test,
    ctr: train.clicks.reduce((s, c) => s + c, 0) / cfg.trainEvents,
    oracleAuc: auc(test.trueLogits, test.clicks),
    dispose() {
      for (const s of [train, test]) for (const t of [s.dense, s.ids, s.labels]) t.dispose();
    },
  };
}

/**
 * DLRM: dense features through the bottom MLP to one embDim vector, one EmbeddingBag(sum)
 * lookup per table, the dot products of every pair of these vectors (upper triangle of
 * Z Z^T), concatenated with the bottom output, through the top MLP to one logit.
 * The W6 configuration has the shapes of bench/workloads/w6.ts's Dlrm.
 */
export class DlrmClickModel extends nn.Module<[kiln.Tensor, kiln.Tensor], kiln.Tensor> {
  readonly bottom: kiln.nn.Sequential;
  readonly tables: kiln.nn.ModuleList<kiln.nn.EmbeddingBag>;
  readonly top: kiln.nn.Sequential;
  readonly triIndex: kiln.Tensor;
  readonly vectors: number;

  constructor(readonly config: RecommenderConfig) {
    super();
    const { dense, embDim, tables, rows } = config;
    this.vectors = tables + 1;
    const pairs = (this.vectors * (this.vectors - 1)) / 2;
    this.bottom = mlp([dense, ...config.bottomHidden, embDim], true);
    this.tables = new nn.ModuleList(Array.from({ length: tables }, () => new nn.EmbeddingBag(rows, embDim, { mode: 'sum' })));
    this.top = mlp([embDim + pairs, ...config.topHidden, 1], false);
    this.triIndex = this.registerBuffer('tri_index', upperTriangleIndex(this.vectors), { persistent: false })!;
    // small embeddings, as the DLRM reference initializes them (uniform +-sqrt(1/rows)):
    // with N(0, 1) rows the dot products of the context tables would start as large noise
    const bound = Math.sqrt(1 / rows);
    for (const t of this.tables) nn.init.uniform_(t.weight, -bound, bound);
  }

  /** dense [B, dense] float32 and ids [B, tables] int32 -> logits [B, 1]. */
  forward(dense: kiln.Tensor, ids: kiln.Tensor): kiln.Tensor {
    const b = this.bottom.call(dense); // [B, D]
    const embs = [...this.tables].map((t, i) => t.call(ids.narrow(1, i, 1))); // tables x [B, D]
    const z = kiln.stack([b, ...embs], 1); // [B, V, D]
    const zz = kiln.bmm(z, z.transpose(1, 2)); // [B, V, V]
    const pairs = kiln.indexSelect(zz.reshape([zz.shape[0]!, this.vectors * this.vectors]), 1, this.triIndex); // [B, pairs]
    return this.top.call(kiln.cat([b, pairs], 1)); // [B, 1]
  }
}

/** batches in the workload's pool: the step cycles through them (see `workload`) */
export const WORKLOAD_POOL_BATCHES = 16;

/**
 * One Adam training step of the DLRM click model (zeroGrad, BCE-with-logits, backward,
 * step). Config 'small' (the default: a bare `npx kilnjs advise` stays well under 3 minutes on
 * 2 cores) or 'w6' (W6's shapes: 26 tables of 10,000 x 16, batch 512; slower:
 * `kilnjs advise --config w6 --calls 20`).
 *
 * The inputs are a pool of 16 batches of the click log, and the step picks the next batch
 * itself (an int32 cursor updated in place, like Adam's step count, so the compiled step
 * replays it): training on one fixed batch memorizes it within ~40 steps, the loss falls to
 * ~1e-6 and its relative eager-vs-compiled difference then measures float32 cancellation,
 * not the compiler. Real training sees fresh batches; so does this step.
 */
export const workload: Workload = {
  name: 'recommender',
  kind: 'training',
  description: 'recommender: DLRM click model (EmbeddingBag tables, bottom/top MLPs, pairwise dots), one Adam step on the next batch of a 16-batch pool',
  configs: ['small', 'w6'],
  setup({ seed, config }) {
    const cfg: RecommenderConfig | undefined = (CONFIGS as Record<string, RecommenderConfig>)[config ?? 'small'];
    if (!cfg) throw new Error(`recommender: unknown config '${config}' (have ${Object.keys(CONFIGS).join(', ')})`);
    const B = cfg.batch, pool = WORKLOAD_POOL_BATCHES * B;
    const log = buildClickLog({ config: { ...cfg, trainEvents: pool, testEvents: B }, seed });
    const inputs = [log.train.dense, log.train.ids, log.train.labels];
    for (const t of [log.test.dense, log.test.ids, log.test.labels]) t.dispose();
    const cursor = kiln.keep(kiln.zeros([], { dtype: 'int32' }));
    const offsets = kiln.keep(kiln.arange(B, undefined, 1, { dtype: 'int32' }));
    kiln.manualSeed(seed);
    const model = new DlrmClickModel(cfg);
    const opt = new optim.Adam(model.parameters(), { lr: cfg.lr });
    const step = (forward: (dense: kiln.Tensor, ids: kiln.Tensor) => kiln.Tensor, dense: kiln.Tensor, ids: kiln.Tensor, labels: kiln.Tensor): kiln.Tensor => {
      const idx = kiln.add(kiln.mul(cursor, B), offsets);
      const next = kiln.add(cursor, 1);
      kiln.assign(cursor, kiln.where(kiln.ge(next, WORKLOAD_POOL_BATCHES), 0, next));
      opt.zeroGrad();
      const logits = forward(kiln.indexSelect(dense, 0, idx), kiln.indexSelect(ids, 0, idx));
      const loss = kiln.binaryCrossEntropyWithLogits(logits, kiln.indexSelect(labels, 0, idx));
      loss.backward();
      opt.step();
      return loss;
    };
    return {
      inputs,
      fn: (dense: kiln.Tensor, ids: kiln.Tensor, labels: kiln.Tensor): kiln.Tensor => step((d, i) => model.call(d, i), dense, ids, labels),
      trainLoop: { module: model, step },
      params: model.parameters(),
      dispose: () => disposeTraining(model, opt, [...inputs, cursor, offsets]),
    };
  },
};
