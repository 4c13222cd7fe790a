// AOTAutograd (issue 17): a compiled module in an ordinary training loop, loss.backward() and
// optimizer.step() outside, on every CPU backend: W2's MLP, W6's DLRM and a GPT trained on
// next-token prediction equal the eager loop for 20 steps; plus the pieces around it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import { nativeUnavailableReason } from 'kilnjs/node';
import { Dlrm, W6_DENSE, W6_TABLES } from '../bench/workloads/w6.js';
import { GPT } from '../examples/gpt.js';
import { checkTorchHabit, type HabitCase } from './helpers/torch-habit.js';

process.env.KILN_CACHE_DIR ??= join(tmpdir(), 'kiln-test-cache');
const nativeSkip = nativeUnavailableReason();
const BACKENDS = ['js', 'wasm', 'native'] as const;
const STEPS = 20;

function batches(n: number, make: () => kiln.Tensor[]): kiln.Tensor[][] {
  return Array.from({ length: n }, () => make().map((t) => kiln.keep(t)));
}

kiln.manualSeed(11);
const MLP: HabitCase = {
  name: 'W2 MLP 784-1024-1024-10',
  build() {
    kiln.manualSeed(1);
    const model = new kiln.nn.Sequential(new kiln.nn.Linear(784, 1024), new kiln.nn.ReLU(), new kiln.nn.Linear(1024, 1024), new kiln.nn.ReLU(), new kiln.nn.Linear(1024, 10));
    return { model, opt: new kiln.optim.SGD(model.parameters(), { lr: 0.05, momentum: 0.9 }) };
  },
  batches: batches(3, () => [kiln.randn([32, 784]), kiln.randint(0, 10, [32])]),
  loss: (out, b) => kiln.crossEntropy(out, b[1]!),
};

const ROWS = 300;
const DLRM: HabitCase = {
  name: 'W6 DLRM',
  build() {
    kiln.manualSeed(2);
    const model = new Dlrm(ROWS);
    return { model, opt: new kiln.optim.Adam(model.parameters(), { lr: 1e-3 }) };
  },
  batches: batches(3, () => [kiln.randn([64, W6_DENSE]), ...Array.from({ length: W6_TABLES }, () => kiln.randint(0, ROWS, [64, 1])), kiln.randint(0, 2, [64, 1]).float()]),
  loss: (out, b) => kiln.binaryCrossEntropyWithLogits(out, b.at(-1)!),
};

const VOCAB = 40, SEQ = 16;
const TINY_GPT: HabitCase = {
  name: 'GPT (training variant of W7: d 64, 4 heads, 2 layers)',
  build() {
    kiln.manualSeed(3);
    const model = new GPT({ vocabSize: VOCAB, blockSize: SEQ, nEmbd: 64, nHead: 4, nLayer: 2 });
    return { model, opt: new kiln.optim.AdamW(model.parameters(), { lr: 3e-3 }) };
  },
  batches: batches(3, () => [kiln.randint(0, VOCAB, [2, SEQ]), kiln.randint(0, VOCAB, [2 * SEQ])]),
  loss: (out, b) => kiln.crossEntropy(out.reshape([2 * SEQ, VOCAB]), b[1]!),
};

for (const backend of BACKENDS) {
  const skip = backend === 'native' && nativeSkip ? `native backend unavailable: ${nativeSkip}` : false;
  for (const c of [MLP, DLRM, TINY_GPT]) {
    test(`torch-habit loop: ${c.name} on ${backend} equals eager for ${STEPS} steps`, { skip }, (t) => {
      const worst = checkTorchHabit(c, backend, STEPS);
      t.diagnostic(`largest relative differences: loss ${worst.loss.toExponential(2)}, grad ${worst.grad.toExponential(2)}`);
    });
  }
}
