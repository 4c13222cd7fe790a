// Trains a small MLP classifier on three interleaved 2-D spirals (a dataset a linear
// model cannot fit) and reports held-out accuracy. Each training step runs inside
// kiln.scope, so memory stays flat however long it trains.
//
//   npx tsx examples/mlp.ts [--epochs N] [--compile]

import { pathToFileURL } from 'node:url';
import * as kiln from 'kilnjs';
import { MlpClassifier, buildMlpData, type MlpData } from '../src/advisor/examples/mlp.js';
import { Args } from './lib/args.js';
import { compilerSummary } from './lib/run-report.js';

const { optim } = kiln;

// the data and the model are the advisor's mlp workload (`kilnjs advise --example mlp`)
export { MlpClassifier, buildMlpData, type MlpData } from '../src/advisor/examples/mlp.js';

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
