import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { MlpClassifier, accuracy, buildMlpData, trainMlp } from '../examples/mlp.js';

test('trainMlp reaches > 95% held-out accuracy in a few epochs, with flat memory', () => {
  const r = trainMlp({ epochs: 20 });
  assert.ok(r.testAccuracy > 0.95, `held-out accuracy ${r.testAccuracy}`);
  assert.equal(r.losses.length, 20);
  assert.ok(r.losses[19]! < r.losses[0]! / 4, `loss ${r.losses[0]} -> ${r.losses[19]}`);
  assert.equal(r.memoryAfter.tensors, r.memoryBefore.tensors);
  assert.equal(r.memoryAfter.bytes, r.memoryBefore.bytes);
});

test('buildMlpData is reproducible and balanced', () => {
  const a = buildMlpData({ seed: 3 }), b = buildMlpData({ seed: 3 });
  assert.deepEqual(Array.from(a.xTrain.dataSync()), Array.from(b.xTrain.dataSync()));
  assert.deepEqual(a.xTrain.shape, [720, 2]);
  assert.deepEqual(a.xTest.shape, [180, 2]);
  assert.equal(a.yTest.dtype, 'int32');
  const counts = [0, 0, 0];
  for (const y of a.yTrain.dataSync()) counts[y]!++;
  assert.ok(counts.every((c) => c > 200), `classes ${counts}`);
});

test('1000 training steps keep kiln.memory() flat', () => {
  const data = buildMlpData({ seed: 1 });
  kiln.manualSeed(1);
  const model = new MlpClassifier(2, 32, 3);
  const opt = new kiln.optim.AdamW(model.parameters(), { lr: 0.01 });
  const n = data.xTrain.shape[0]!, batch = 16;
  const step = (i: number) =>
    kiln.scope(() => {
      const start = (i * batch) % (n - batch);
      const x = data.xTrain.narrow(0, start, batch), y = data.yTrain.narrow(0, start, batch);
      opt.zeroGrad();
      const loss = kiln.crossEntropy(model.call(x), y);
      loss.backward();
      opt.step();
      if (i % 250 === 0) opt.paramGroups[0]!.lr *= 0.9; // a schedule must not allocate either
    });
  for (let i = 0; i < 10; i++) step(i); // warm-up: optimizer state and the last grads exist now
  const before = kiln.memory();
  for (let i = 10; i < 1000; i++) step(i);
  const after = kiln.memory();
  assert.equal(after.tensors, before.tensors, 'live tensors');
  assert.equal(after.bytes, before.bytes, 'live bytes');
  model.eval();
  assert.ok(accuracy(model, data.xTest, data.yTest) > 0.6);
});
