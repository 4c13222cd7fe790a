// The char-gpt workload of `kilnjs advise --example char-gpt`: a character-level GPT
// (lib/gpt.ts) on English first names (data/first-names.txt: the @stdlib female and male
// first-name datasets, lowercased and deduplicated), one AdamW step on a fixed batch. The data
// encoding, model size and step are shared with examples/char-gpt.ts, which trains it.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as kiln from '../../api/kiln.js';
import type { Workload } from '../workload.js';
import { disposeTraining } from './lib/dispose.js';
import { GPT, initGpt2_, type GptConfig } from './lib/gpt.js';

/** The start and end of every name: one token, id 0 (a name is ".emma."). */
export const BOUNDARY = '.';
/** Target id of padding positions (ignored by the loss). */
export const IGNORE = -1;

/** Every distinct first name of both datasets, lowercased and sorted (data/first-names.txt). */
export function loadNames(): string[] {
  const text = readFileSync(fileURLToPath(new URL('./data/first-names.txt', import.meta.url)), 'utf8');
  return text.split('\n').filter((line) => line.length > 0 && !line.startsWith('#'));
}

export interface CharData {
  /** token strings: vocab[0] is BOUNDARY, then the characters seen, sorted */
  vocab: string[];
  stoi: Map<string, number>;
  /** positions per sequence: the longest name + 1 */
  blockSize: number;
  trainNames: string[];
  valNames: string[];
  /** [N, blockSize] int32 inputs: boundary, then the name's characters, then boundary padding */
  xTrain: kiln.Tensor;
  /** [N, blockSize] int32 targets: the name's characters, boundary, then IGNORE */
  yTrain: kiln.Tensor;
  xVal: kiln.Tensor;
  yVal: kiln.Tensor;
}

/** Shuffles the names with kiln's generator under `seed` and encodes train / validation tensors (kept). */
export function buildCharData(opts: { names?: string[]; valFraction?: number; seed?: number } = {}): CharData {
  const names = opts.names ?? loadNames();
  const chars = [...new Set(names.join(''))].sort();
  if (chars.includes(BOUNDARY)) throw new Error(`names contain the boundary token '${BOUNDARY}'`);
  const vocab = [BOUNDARY, ...chars];
  const stoi = new Map(vocab.map((c, i) => [c, i]));
  const blockSize = Math.max(...names.map((s) => s.length)) + 1;
  // a seeded shuffle (setup, not training: reading the draws into JS is fine here)
  kiln.manualSeed(opts.seed ?? 0);
  const keys = kiln.scope(() => kiln.rand([names.length]).dataSync());
  const order = names.map((_, i) => i).sort((a, b) => keys[a]! - keys[b]!);
  const nVal = Math.round(names.length * (opts.valFraction ?? 0.1));
  const valNames = order.slice(0, nVal).map((i) => names[i]!);
  const trainNames = order.slice(nVal).map((i) => names[i]!);
  const encode = (list: string[]) => {
    const x = new Int32Array(list.length * blockSize); // zeros: boundary padding
    const y = new Int32Array(list.length * blockSize).fill(IGNORE);
    list.forEach((name, r) => {
      const ids = [...name].map((c) => stoi.get(c)!);
      for (let t = 0; t < ids.length; t++) {
        x[r * blockSize + t + 1] = ids[t]!;
        y[r * blockSize + t] = ids[t]!;
      }
      y[r * blockSize + ids.length] = 0; // predict the end
    });
    return [kiln.keep(kiln.tensor(x, [list.length, blockSize])), kiln.keep(kiln.tensor(y, [list.length, blockSize]))] as const;
  };
  const [xTrain, yTrain] = encode(trainNames);
  const [xVal, yVal] = encode(valNames);
  return { vocab, stoi, blockSize, trainNames, valNames, xTrain, yTrain, xVal, yVal };
}

/** The default model: 2 blocks, width 64, 4 heads (~100k parameters). */
export function charGptConfig(data: Pick<CharData, 'vocab' | 'blockSize'>, overrides: Partial<GptConfig> = {}): GptConfig {
  return { vocabSize: data.vocab.length, blockSize: data.blockSize, nEmbd: 64, nHead: 4, nLayer: 2, ...overrides };
}

/** A fresh GPT-2-initialized model, seeded. */
export function createCharGpt(config: GptConfig, seed = 0): GPT {
  kiln.manualSeed(seed);
  return initGpt2_(new GPT(config));
}

/** Mean cross entropy per target character (padding ignored). */
export function charLoss(forward: (x: kiln.Tensor) => kiln.Tensor, x: kiln.Tensor, y: kiln.Tensor): kiln.Tensor {
  const logits = forward(x); // [B, T, V]
  const v = logits.shape[2]!;
  return kiln.crossEntropy(logits.reshape([-1, v]), y.reshape([-1]), { ignoreIndex: IGNORE });
}

/** One AdamW step: zeroGrad, forward, loss, backward, step; returns the loss. Wrap it in kiln.compile to compile it. */
export function makeTrainStep(model: GPT, opt: { zeroGrad(): void; step(): void }): (x: kiln.Tensor, y: kiln.Tensor) => kiln.Tensor {
  const step = makeLoopStep(opt);
  return function charGptStep(x: kiln.Tensor, y: kiln.Tensor): kiln.Tensor {
    return step((x) => model.call(x), x, y);
  };
}

/** The same step against `forward` (the model's call, or kiln.compile(model)): an ordinary training loop's body. */
export function makeLoopStep(opt: { zeroGrad(): void; step(): void }): (forward: (x: kiln.Tensor) => kiln.Tensor, x: kiln.Tensor, y: kiln.Tensor) => kiln.Tensor {
  return (forward, x, y) => {
    opt.zeroGrad();
    const loss = charLoss(forward, x, y);
    loss.backward();
    opt.step();
    return loss;
  };
}

export const CHAR_GPT_BATCH = 32;

/**
 * One AdamW training step of the default char GPT (2 blocks, width 64, 4 heads) on one
 * fixed batch of 32 training names (padded to the block size; padding ignored by the loss).
 */
export const workload: Workload = {
  name: 'char-gpt',
  kind: 'training',
  description: `char-gpt: GPT 2 blocks x width 64 x 4 heads on first names, one AdamW step on ${CHAR_GPT_BATCH} names`,
  setup({ seed }) {
    const data = buildCharData({ seed });
    const x = kiln.keep(data.xTrain.narrow(0, 0, CHAR_GPT_BATCH).contiguous());
    const y = kiln.keep(data.yTrain.narrow(0, 0, CHAR_GPT_BATCH).contiguous());
    for (const t of [data.xTrain, data.yTrain, data.xVal, data.yVal]) t.dispose();
    const model = createCharGpt(charGptConfig(data), seed);
    model.train();
    const opt = new kiln.optim.AdamW(model.parameters(), { lr: 1e-2, betas: [0.9, 0.99], weightDecay: 0.01 });
    const inputs = [x, y];
    return { inputs, fn: makeTrainStep(model, opt), trainLoop: { module: model, step: makeLoopStep(opt) }, params: model.parameters(), dispose: () => disposeTraining(model, opt, inputs) };
  },
};
