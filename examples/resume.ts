// Training that can stop and resume: the spiral classifier of mlp.ts trained from a DataLoader
// (shuffled by a seeded generator, last partial batch dropped) with AdamW, a warm-up then cosine
// schedule (SequentialLR of LinearLR and CosineAnnealingLR) and gradient clipping, the whole step
// compiled (the scheduler steps inside it, on every replay). Every `--every` steps it
// writes a checkpoint folder (model, optimizer, scheduler, the loader's place in its epoch, the
// random generator); started again with --resume it picks up where the checkpoint left off and
// ends bit for bit where an uninterrupted run ends.
//
//   npx tsx examples/resume.ts --steps 300 --checkpoint /tmp/ckpt --stop-after 120   # stops early
//   npx tsx examples/resume.ts --steps 300 --checkpoint /tmp/ckpt --resume           # finishes

import { pathToFileURL } from 'node:url';
import * as kiln from 'kilnjs';
import { loadCheckpoint, saveCheckpoint } from 'kilnjs/node';
import { Args } from './lib/args.js';
import { compilerSummary } from './lib/run-report.js';
import { accuracy, buildMlpData, type MlpData } from './mlp.js';

const { nn, optim, data } = kiln;
type Tensor = kiln.Tensor;

/** The spiral classifier, optionally with dropout after the first layer. */
export class SpiralNet extends nn.Module {
  net: kiln.nn.Sequential;
  constructor(dropout = 0, hidden = 64, classes = 3) {
    super();
    this.net = new nn.Sequential(new nn.Linear(2, hidden), new nn.ReLU(), new nn.Dropout(dropout), new nn.Linear(hidden, hidden), new nn.ReLU(), new nn.Linear(hidden, classes));
  }
  forward(x: Tensor): Tensor {
    return this.net.call(x);
  }
}

export interface ResumeOptions {
  /** total optimizer steps of the run */
  steps: number;
  /** checkpoint folder (written every `every` steps and at the end) */
  checkpoint?: string;
  every?: number;
  /** start from the checkpoint instead of from scratch */
  resume?: boolean;
  /** stop after this many steps (a crash, or a job's time limit) */
  stopAfter?: number;
  /** compile the training step (default true) */
  compile?: boolean;
  /**
   * dropout probability (default 0). With dropout, a compiled resume is not bit-identical yet:
   * a compiled function's tracing call draws other random numbers than its replays (issue 18),
   * and a resumed process traces at the step where the first one replayed. Eager runs resume
   * bit for bit with dropout too.
   */
  dropout?: number;
  seed?: number;
  log?: (line: string) => void;
}

export interface ResumeResult {
  /** the step count reached */
  step: number;
  /** the loss and lr of every step this process ran */
  losses: number[];
  lrs: number[];
  model: SpiralNet;
  data: MlpData;
}

/** The run's objects, made the same way in every process (a checkpoint restores their state). */
function build(steps: number, seed: number, dropout: number) {
  const dataset = buildMlpData({ seed });
  kiln.manualSeed(seed);
  const model = new SpiralNet(dropout);
  const opt = new optim.AdamW(model.parameters(), { lr: 3e-2, weightDecay: 1e-3 });
  const warmup = Math.max(1, Math.floor(steps / 10));
  const sched = new optim.SequentialLR(opt, [new optim.LinearLR(opt, 0.05, 1, warmup), new optim.CosineAnnealingLR(opt, steps - warmup, 1e-4)], [warmup]);
  const loader = new data.DataLoader(new data.TensorDataset(dataset.xTrain, dataset.yTrain), {
    batchSize: 32, shuffle: true, dropLast: true, generator: new kiln.Generator().manualSeed(seed + 1),
  });
  return { dataset, model, opt, sched, loader };
}

export async function trainResumable(o: ResumeOptions): Promise<ResumeResult> {
  const seed = o.seed ?? 0, every = o.every ?? 50, log = o.log ?? (() => {});
  const { dataset, model, opt, sched, loader } = build(o.steps, seed, o.dropout ?? 0);
  const parts = { model, optimizer: opt, scheduler: sched, dataLoader: loader };
  let step = 0;
  if (o.resume) {
    if (!o.checkpoint) throw new Error('--resume needs --checkpoint');
    step = ((await loadCheckpoint(o.checkpoint, parts)).extra as { step: number }).step;
    log(`resumed at step ${step} (lr ${opt.paramGroups[0]!.lr.toExponential(3)})`);
  }
  const trainStep = (x: Tensor, y: Tensor): Tensor => {
    opt.zeroGrad();
    const loss = kiln.crossEntropy(model.call(x), y);
    loss.backward();
    nn.utils.clipGradNorm_(model.parameters(), 1.0);
    opt.step();
    sched.step();
    return loss;
  };
  const compiled = o.compile === false ? trainStep : kiln.compile(trainStep, { name: 'resumable_step', fullgraph: true });
  const stopAt = Math.min(o.steps, o.stopAfter ?? o.steps);
  const losses: number[] = [], lrs: number[] = [];
  model.train();
  while (step < stopAt) {
    for (const [x, y] of loader) {
      losses.push(kiln.scope(() => (compiled(x!, y!) as Tensor).item()));
      x!.dispose();
      y!.dispose();
      step++;
      lrs.push(opt.paramGroups[0]!.lr);
      if (step % 25 === 0) log(`step ${String(step).padStart(4)}  loss ${losses[losses.length - 1]!.toFixed(4)}  lr ${lrs[lrs.length - 1]!.toExponential(3)}`);
      if (o.checkpoint && (step % every === 0 || step === stopAt)) await saveCheckpoint(o.checkpoint, parts, { step });
      if (step >= stopAt) break;
    }
  }
  return { step, losses, lrs, model, data: dataset };
}

async function main(): Promise<void> {
  const args = new Args();
  const steps = args.int('steps') ?? 300;
  const r = await trainResumable({
    steps, checkpoint: args.string('checkpoint'), every: args.int('every'), resume: args.has('resume'), stopAfter: args.int('stop-after'),
    compile: !args.has('eager'), log: (l) => console.log(l),
  });
  r.model.eval();
  console.log(`step ${r.step} of ${steps}: held-out accuracy ${(accuracy(r.model, r.data.xTest, r.data.yTest) * 100).toFixed(1)}%`);
  if (r.step < steps) console.log('stopped early: run again with --resume to finish');
  if (!args.has('eager')) console.log(compilerSummary());
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
