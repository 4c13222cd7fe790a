// A character-level language model of English first names: a GPT (src/advisor/examples/lib/gpt.ts)
// trained with AdamW on the names of the @stdlib female and male first-name datasets (lowercased,
// deduplicated; src/advisor/examples/data/first-names.txt), split into train and validation names. It reports the validation loss per
// character (the end of a name counts as one) against the unigram baseline (the entropy of
// the character distribution, in nats), and samples new names with temperature and top-k.
// Each training step runs inside kiln.scope, so memory stays flat.
//
//   npx tsx examples/char-gpt.ts [--steps N] [--compile] [--backend js|wasm|native|auto|eager]
//
// --backend is the compiler's backend (js: fused generated kernels; eager: captured graphs
// replayed with eager kernels, for debugging); it implies --compile.

import { pathToFileURL } from 'node:url';
import * as kiln from 'kilnjs';
import { BOUNDARY, IGNORE, buildCharData, charGptConfig, createCharGpt, makeTrainStep, type CharData } from '../src/advisor/examples/char-gpt.js';
import type { GPT, GptConfig } from '../src/advisor/examples/lib/gpt.js';
import { Args } from './lib/args.js';
import { EXAMPLE_BACKENDS, loadBackend, type ExampleBackend } from './lib/backends.js';
import { compilerSummary } from './lib/run-report.js';

// the data, model and step are the advisor's char-gpt workload (`kilnjs advise --example char-gpt`)
export { BOUNDARY, IGNORE, buildCharData, charGptConfig, createCharGpt, loadNames, makeTrainStep, type CharData } from '../src/advisor/examples/char-gpt.js';

/** Entropy (nats) of the target characters of `names`, the end of each name included. */
export function unigramEntropy(names: readonly string[]): number {
  const counts = new Map<string, number>();
  let total = 0;
  for (const name of names) {
    for (const c of [...name, BOUNDARY]) counts.set(c, (counts.get(c) ?? 0) + 1);
    total += name.length + 1;
  }
  let h = 0;
  for (const n of counts.values()) h -= (n / total) * Math.log(n / total);
  return h;
}

/** Validation loss per character: summed cross entropy over every target / number of targets. */
export function evaluate(model: GPT, x: kiln.Tensor, y: kiln.Tensor, batchSize = 128): number {
  const wasTraining = model.training;
  model.eval();
  let total = 0, count = 0;
  const n = x.shape[0]!;
  for (let s = 0; s < n; s += batchSize) {
    const [l, c] = kiln.scope(() =>
      kiln.noGrad(() => {
        const len = Math.min(batchSize, n - s);
        const xb = x.narrow(0, s, len), yb = y.narrow(0, s, len);
        const logits = model.call(xb);
        const v = logits.shape[2]!;
        const sum = kiln.crossEntropy(logits.reshape([-1, v]), yb.reshape([-1]), { ignoreIndex: IGNORE, reduction: 'sum' }).item();
        return [sum, yb.ne(IGNORE).sum().item()];
      }),
    );
    total += l;
    count += c;
  }
  model.train(wasTraining);
  return total / count;
}

export interface SampleOptions {
  count?: number;
  /** logits are divided by it (default 0.8; < 1 sharpens) */
  temperature?: number;
  /** only the k most likely characters can be drawn (default 10) */
  topK?: number;
  /** kiln.manualSeed(seed) first (default: the generator continues) */
  seed?: number;
}

/**
 * Samples names: all `count` sequences advance together, one token per forward pass over
 * the prefix. Temperature, top-k masking, softmax and the draw (inverse CDF against
 * kiln.rand) are kiln ops; JS only checks whether every name has ended and decodes.
 */
export function sampleNames(model: GPT, data: Pick<CharData, 'vocab' | 'blockSize'>, opts: SampleOptions = {}): string[] {
  const n = opts.count ?? 10, temperature = opts.temperature ?? 0.8, topK = opts.topK ?? 10;
  if (!(temperature > 0)) throw new Error(`temperature must be > 0, got ${temperature}`);
  if (opts.seed !== undefined) kiln.manualSeed(opts.seed);
  const v = data.vocab.length;
  const wasTraining = model.training;
  model.eval();
  const ids = kiln.noGrad(() =>
    kiln.scope(() => {
      let idx = kiln.zeros([n, 1], { dtype: 'int32' }); // every name starts with the boundary
      const ended = new Uint8Array(n);
      for (let t = 0; t < data.blockSize; t++) {
        const next = kiln.scope(() => {
          const logits = model.call(idx).select(1, t).div(temperature); // [n, V] at the last position
          // rank[i, v] = how many logits of row i are larger than logit v; keep the topK smallest ranks
          const rank = logits.unsqueeze(1).gt(logits.unsqueeze(2)).float().sum(2);
          const probs = kiln.where(rank.lt(topK), logits, -Infinity).softmax(-1);
          // inverse CDF: the first index whose cumulative probability reaches u
          const u = kiln.rand([n, 1]);
          return kiln.minimum(probs.cumsum(1).lt(u).sum(1, true), v - 1).int(); // [n, 1]
        });
        idx = kiln.cat([idx, next], 1);
        const nx = next.dataSync();
        for (let i = 0; i < n; i++) if (nx[i] === 0) ended[i] = 1;
        if (ended.every((e) => e === 1)) break;
      }
      return idx;
    }),
  );
  const flat = ids.dataSync(), len = ids.shape[1]!;
  ids.dispose();
  model.train(wasTraining);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    let s = '';
    for (let t = 1; t < len; t++) {
      const id = flat[i * len + t]!;
      if (id === 0) break;
      s += data.vocab[id];
    }
    out.push(s);
  }
  return out;
}

export interface TrainCharGptOptions {
  steps?: number;
  /** names per step (default 32) */
  batchSize?: number;
  /** peak learning rate (default 1e-2), warmed up over 5% of the steps, cosine-decayed to 10% */
  lr?: number;
  weightDecay?: number;
  seed?: number;
  /** compile the training step with kiln.compile (fullgraph) */
  compile?: boolean;
  /** the compiler backend: 'js' (default), 'wasm', 'native', 'auto' or 'eager' */
  backend?: ExampleBackend;
  /** model shape overrides (vocab and block size come from the data) */
  model?: Partial<GptConfig>;
  data?: CharData;
  /** validation loss every this many steps (default: only at the end) */
  evalEvery?: number;
  samples?: number;
  temperature?: number;
  topK?: number;
  /** called with progress lines (default: none) */
  log?: (line: string) => void;
}

export interface TrainCharGptResult {
  /** validation cross entropy per character (nats), at the end */
  valLoss: number;
  /** the unigram baseline: entropy of the training characters' distribution (nats) */
  unigramLoss: number;
  /** the training loss of every step */
  losses: number[];
  /**
   * training steps per second (batch selection and step; evaluation excluded), after the
   * first 5 steps when there are more than 10 (tracing and JIT warm-up: compile time is
   * reported by kiln.stats().compileTimeMs)
   */
  stepsPerSec: number;
  samples: string[];
  model: GPT;
  data: CharData;
}

export function trainCharGpt(opts: TrainCharGptOptions = {}): TrainCharGptResult {
  const steps = opts.steps ?? 2000, batchSize = opts.batchSize ?? 32, peakLr = opts.lr ?? 1e-2;
  const seed = opts.seed ?? 0;
  const log = opts.log ?? (() => {});
  const data = opts.data ?? buildCharData({ seed });
  const model = createCharGpt(charGptConfig(data, opts.model), seed);
  const opt = new kiln.optim.AdamW(model.parameters(), { lr: peakLr, betas: [0.9, 0.99], weightDecay: opts.weightDecay ?? 0.01 });
  const eagerStep = makeTrainStep(model, opt);
  const compile = opts.compile || opts.backend !== undefined;
  const step = compile ? kiln.compile(eagerStep, { fullgraph: true, backend: opts.backend ?? 'js', name: 'char_gpt_step' }) : eagerStep;
  const unigramLoss = unigramEntropy(data.trainNames);
  log(`${data.trainNames.length} train / ${data.valNames.length} validation names, vocab ${data.vocab.length}, block ${data.blockSize}; ` +
    `model ${model.numParameters()} parameters; unigram baseline ${unigramLoss.toFixed(4)} nats${compile ? `; compiled step (backend ${opts.backend ?? 'js'})` : ''}`);

  const warmup = Math.max(1, Math.round(steps * 0.05));
  const lrAt = (i: number) => (i < warmup ? peakLr * (i + 1) / warmup : peakLr * (0.1 + 0.45 * (1 + Math.cos(Math.PI * (i - warmup) / Math.max(1, steps - warmup)))));
  const n = data.xTrain.shape[0]!;
  const losses: number[] = [];
  const stepMs: number[] = [];
  model.train();
  for (let i = 0; i < steps; i++) {
    opt.paramGroups[0]!.lr = lrAt(i); // lr lives in a tensor: a compiled step sees it without retracing
    const t0 = performance.now();
    losses.push(kiln.scope(() => {
      const idx = kiln.randint(0, n, [batchSize]);
      // the first step runs eagerly: it creates AdamW's state, so the compiled step is traced
      // once, with the state in place (a trace that creates state is one-shot anyway)
      return (i === 0 ? eagerStep : step)(data.xTrain.indexSelect(0, idx), data.yTrain.indexSelect(0, idx)).item();
    }));
    stepMs.push(performance.now() - t0);
    const last = i === steps - 1;
    if (opts.evalEvery && ((i + 1) % opts.evalEvery === 0) && !last) {
      const recent = losses.slice(-opts.evalEvery);
      log(`step ${String(i + 1).padStart(5)}  train ${(recent.reduce((a, b) => a + b, 0) / recent.length).toFixed(4)}  val ${evaluate(model, data.xVal, data.yVal).toFixed(4)}  lr ${lrAt(i).toExponential(2)}`);
    }
  }
  const valLoss = evaluate(model, data.xVal, data.yVal);
  const tail = losses.slice(-Math.min(100, losses.length));
  log(`step ${String(steps).padStart(5)}  train ${(tail.reduce((a, b) => a + b, 0) / Math.max(1, tail.length)).toFixed(4)}  val ${valLoss.toFixed(4)}  (unigram ${unigramLoss.toFixed(4)}, ${(unigramLoss - valLoss).toFixed(3)} nats better)`);
  const samples = sampleNames(model, data, { count: opts.samples ?? 10, temperature: opts.temperature, topK: opts.topK });
  const timed = stepMs.slice(steps > 10 ? 5 : 0);
  const stepsPerSec = timed.length / (timed.reduce((a, b) => a + b, 0) / 1000);
  return { valLoss, unigramLoss, losses, stepsPerSec, samples, model, data };
}

async function main(): Promise<void> {
  const args = new Args();
  const steps = args.int('steps') ?? 2000;
  const backend = args.choice('backend', EXAMPLE_BACKENDS);
  await loadBackend(backend);
  const compile = args.has('compile') || backend !== undefined;
  const t0 = performance.now();
  const r = trainCharGpt({ steps, compile, backend, evalEvery: Math.max(1, Math.round(steps / 10)), log: (l) => console.log(l) });
  const secs = (performance.now() - t0) / 1000;
  console.log(`validation loss ${r.valLoss.toFixed(4)} nats/char vs unigram ${r.unigramLoss.toFixed(4)} (${(r.unigramLoss - r.valLoss).toFixed(3)} better); ` +
    `${steps} steps at ${r.stepsPerSec.toFixed(1)} steps/s, ${secs.toFixed(1)} s in all`);
  const seen = new Set(r.data.trainNames);
  console.log(`samples (temperature 0.8, top-10): ${r.samples.map((s) => (seen.has(s) ? s : `${s}*`)).join(', ')}   (* = not a training name)`);
  console.log('memory at the end:', kiln.memory());
  if (compile) console.log(compilerSummary({ fusionFallbacks: false }));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
