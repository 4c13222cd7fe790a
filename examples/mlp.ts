// Trains a small MLP classifier on three interleaved 2-D spirals (a dataset a linear
// model cannot fit) and reports held-out accuracy. Each training step runs inside
// kiln.scope, so memory stays flat however long it trains.
//
//   npx tsx examples/mlp.ts [--epochs N] [--compile]

import { pathToFileURL } from 'node:url';
import * as kiln from 'kilnjs';
import { Args } from './lib/args.js';
import { compilerSummary } from './lib/run-report.js';

const { nn, optim } = kiln;

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

export type Memory = ReturnType<typeof kiln.memory>;

export interface TrainMlpOptions {
  epochs?: number;
  batchSize?: number;
  lr?: number;
  seed?: number;
  /** compile the training step with kiln.compile */
  compile?: boolean;
  /** called with one line per epoch (default: none) */
  log?: (line: string) => void;
  data?: MlpData;
}

export interface TrainMlpResult {
  testAccuracy: number;
  trainAccuracy: number;
  /** mean training loss of each epoch */
  losses: number[];
  steps: number;
  /** kiln.memory() after the first epoch (the optimizer state exists by then) */
  memoryBefore: Memory;
  /** kiln.memory() after the last step: equal to memoryBefore when nothing leaks */
  memoryAfter: Memory;
  model: MlpClassifier;
}

/** Fraction of rows whose argmax logit is the label. */
export function accuracy(model: kiln.nn.Module, x: kiln.Tensor, y: kiln.Tensor): number {
  return kiln.scope(() =>
    kiln.noGrad(() => model.call(x).argmax(1).eq(y).float().mean().item()),
  );
}

export function trainMlp(opts: TrainMlpOptions = {}): TrainMlpResult {
  const epochs = opts.epochs ?? 30, batchSize = opts.batchSize ?? 64;
  const data = opts.data ?? buildMlpData({ seed: opts.seed });
  const log = opts.log ?? (() => {});
  kiln.manualSeed(opts.seed ?? 0);
  const model = new MlpClassifier(2, 64, data.classes);
  const opt = new optim.Adam(model.parameters(), { lr: opts.lr ?? 0.01 });

  // one training step; with `compile` it is traced once and replayed as fused kernels
  const eagerStep = (x: kiln.Tensor, y: kiln.Tensor): kiln.Tensor => {
    opt.zeroGrad();
    const loss = kiln.crossEntropy(model.call(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  const step = opts.compile ? kiln.compile(eagerStep, { name: 'mlp_step' }) : eagerStep;

  const n = data.xTrain.shape[0]!;
  const batches = Math.ceil(n / batchSize);
  const losses: number[] = [];
  let memoryBefore: Memory | undefined;
  let steps = 0;
  for (let epoch = 1; epoch <= epochs; epoch++) {
    model.train();
    // a fresh random order each epoch, as an int32 index tensor
    const order = kiln.scope(() => {
      const keys = kiln.rand([n]).dataSync();
      const idx = Int32Array.from({ length: n }, (_, i) => i).sort((a, b) => keys[a]! - keys[b]!);
      return kiln.tensor(idx, [n]);
    });
    let total = 0;
    for (let b = 0; b < batches; b++) {
      total += kiln.scope(() => {
        const idx = order.narrow(0, b * batchSize, Math.min(batchSize, n - b * batchSize));
        const x = data.xTrain.indexSelect(0, idx), y = data.yTrain.indexSelect(0, idx);
        return step(x, y).item();
      });
      steps++;
    }
    order.dispose();
    memoryBefore ??= kiln.memory(); // after one epoch: optimizer state exists, nothing else should grow
    losses.push(total / batches);
    model.eval();
    log(`epoch ${String(epoch).padStart(3)}  loss ${losses[epoch - 1]!.toFixed(4)}  train acc ${(accuracy(model, data.xTrain, data.yTrain) * 100).toFixed(1)}%  test acc ${(accuracy(model, data.xTest, data.yTest) * 100).toFixed(1)}%`);
  }
  model.eval();
  const memoryAfter = kiln.memory();
  return {
    testAccuracy: accuracy(model, data.xTest, data.yTest),
    trainAccuracy: accuracy(model, data.xTrain, data.yTrain),
    losses,
    steps,
    memoryBefore: memoryBefore ?? memoryAfter,
    memoryAfter,
    model,
  };
}

function main(): void {
  const args = new Args();
  const epochs = args.int('epochs') ?? 30;
  const compile = args.has('compile');
  const data = buildMlpData();
  console.log(`spirals: ${data.xTrain.shape[0]} train, ${data.xTest.shape[0]} test, ${data.classes} classes${compile ? ', compiled training step' : ''}`);
  const t0 = performance.now();
  const r = trainMlp({ epochs, data, compile, log: (l) => console.log(l) });
  const secs = (performance.now() - t0) / 1000;
  console.log(String(r.model));
  console.log(`held-out accuracy ${(r.testAccuracy * 100).toFixed(1)}% after ${r.steps} steps in ${secs.toFixed(1)} s`);
  console.log('memory after epoch 1:', r.memoryBefore);
  console.log('memory at the end:  ', kiln.memory());
  if (compile) console.log(compilerSummary({ fusionFallbacks: false }));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
