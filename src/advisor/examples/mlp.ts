// The mlp workload of `kilnjs advise --example mlp`: the spirals classifier of examples/mlp.ts
// (which trains it), its data and model, and one Adam step on a fixed batch.

import * as kiln from '../../api/kiln.js';
import type { Workload } from '../workload.js';
import { disposeTraining } from './lib/dispose.js';

const { nn } = kiln;

export interface MlpData {
  xTrain: kiln.Tensor; // [N, 2] float32
  yTrain: kiln.Tensor; // [N] int32 class ids
  xTest: kiln.Tensor;
  yTest: kiln.Tensor;
  classes: number;
}

/**
 * Three spirals of `perClass` points each, with Gaussian angle noise, shuffled and split
 * into train and test. Drawn from kiln's generator under `seed`: the same data every run.
 */
export function buildMlpData(opts: { perClass?: number; classes?: number; noise?: number; testFraction?: number; seed?: number } = {}): MlpData {
  const perClass = opts.perClass ?? 300, classes = opts.classes ?? 3, noise = opts.noise ?? 0.2;
  const n = perClass * classes;
  kiln.manualSeed(opts.seed ?? 0);
  // data generation is setup, not training: reading the draws into JS is fine here
  const jitter = kiln.randn([n]), order = kiln.rand([n]);
  const jit = jitter.dataSync(), ord = order.dataSync();
  jitter.dispose();
  order.dispose();
  const xs = new Float32Array(2 * n), ys = new Int32Array(n);
  for (let c = 0; c < classes; c++) {
    for (let i = 0; i < perClass; i++) {
      const k = c * perClass + i;
      const r = i / perClass; // radius 0..1
      const t = (c * 4 + 4 * r) + jit[k]! * noise; // angle: each class one arm, ~4 rad long
      xs[2 * k] = r * Math.sin(t);
      xs[2 * k + 1] = r * Math.cos(t);
      ys[k] = c;
    }
  }
  // shuffle by the random keys, then split
  const perm = Array.from({ length: n }, (_, i) => i).sort((a, b) => ord[a]! - ord[b]!);
  const nTest = Math.round(n * (opts.testFraction ?? 0.2));
  const pick = (idx: number[]) => {
    const x = new Float32Array(2 * idx.length), y = new Int32Array(idx.length);
    idx.forEach((j, i) => {
      x[2 * i] = xs[2 * j]!;
      x[2 * i + 1] = xs[2 * j + 1]!;
      y[i] = ys[j]!;
    });
    return { x: kiln.keep(kiln.tensor(x, [idx.length, 2])), y: kiln.keep(kiln.tensor(y, [idx.length])) };
  };
  const test = pick(perm.slice(0, nTest)), train = pick(perm.slice(nTest));
  return { xTrain: train.x, yTrain: train.y, xTest: test.x, yTest: test.y, classes };
}

/** Linear -> ReLU -> Linear -> ReLU -> Linear, returning logits. */
export class MlpClassifier extends nn.Module {
  net: kiln.nn.Sequential;

  constructor(inFeatures = 2, hidden = 64, classes = 3) {
    super();
    this.net = new nn.Sequential(
      new nn.Linear(inFeatures, hidden),
      new nn.ReLU(),
      new nn.Linear(hidden, hidden),
      new nn.ReLU(),
      new nn.Linear(hidden, classes),
    );
  }

  forward(x: kiln.Tensor): kiln.Tensor {
    return this.net.call(x);
  }
}

export const MLP_BATCH = 64;

/**
 * The spirals classifier of examples/mlp.ts as a training workload: MlpClassifier (2-64-64-3),
 * one Adam step (lr 0.01, cross-entropy) on a fixed batch of 64 training rows.
 */
export const workload: Workload = {
  name: 'mlp',
  kind: 'training',
  description: `spirals classifier: MlpClassifier 2-64-64-3, Adam step (zeroGrad, cross-entropy, backward, step) on a batch of ${MLP_BATCH} spiral points`,
  shapes: [`x[${MLP_BATCH},2] float32, y[${MLP_BATCH}] int32`],
  setup({ seed }) {
    const data = buildMlpData({ seed });
    kiln.manualSeed(seed);
    const model = new MlpClassifier(2, 64, data.classes);
    const opt = new kiln.optim.Adam(model.parameters(), { lr: 0.01 });
    const x = kiln.keep(data.xTrain.narrow(0, 0, MLP_BATCH).contiguous());
    const y = kiln.keep(data.yTrain.narrow(0, 0, MLP_BATCH).contiguous());
    for (const t of [data.xTrain, data.yTrain, data.xTest, data.yTest]) t.dispose();
    const inputs = [x, y];
    const step = (forward: (x: kiln.Tensor) => kiln.Tensor, x: kiln.Tensor, y: kiln.Tensor): kiln.Tensor => {
      opt.zeroGrad();
      const loss = kiln.crossEntropy(forward(x), y);
      loss.backward();
      opt.step();
      return loss;
    };
    return {
      inputs,
      fn: (x: kiln.Tensor, y: kiln.Tensor) => step((x) => model.call(x), x, y),
      trainLoop: { module: model, step },
      params: model.parameters(),
      dispose: () => disposeTraining(model, opt, inputs),
    };
  },
};
