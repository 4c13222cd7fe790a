// compiled.warmup(...) must not change the model: a training step warmed up on example inputs
// runs for real, so the state kiln knows (module parameters and buffers, { captures }, their
// grads) is written back; writes it cannot undo are reported and warned about.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { crossEntropyStep } from './helpers/train-step.js';

function snapshot(ts: readonly kiln.Tensor[]): number[][] {
  return ts.map((t) => Array.from(t.dataSync()));
}

function trainingStep(seed: number, momentum: number) {
  kiln.manualSeed(seed);
  const model = new kiln.nn.Sequential(new kiln.nn.Linear(6, 16), new kiln.nn.ReLU(), new kiln.nn.Linear(16, 3));
  const opt = new kiln.optim.SGD(model.parameters(), { lr: 0.1, momentum });
  const step = crossEntropyStep(model, opt);
  return { model, opt, step };
}

for (const backend of ['js', 'eager']) {
  test(`${backend}: warming up a training step compiled with { captures } leaves weights and grads as they were`, async () => {
    kiln.compiler.reset();
    const seed = Math.floor(Math.random() * 1e6);
    const { model, step } = trainingStep(seed, 0);
    const params = model.parameters();
    const compiled = kiln.compile(step, { backend, captures: model.stateDict() });
    const before = snapshot(params);
    const report = await compiled.warmup({ shapes: [[[4, 6], [4]], [[9, 6], [9]]], dtype: ['float32', 'int32'] });
    assert.equal(report.entries.length, 2);
    assert.deepEqual(snapshot(params), before, `seed ${seed}: weights unchanged`);
    assert.ok(params.every((p) => p.grad === null), 'grads as before (none)');
    assert.ok(report.entries.every((e) => e.restored > 0 && e.unrestored.length === 0));
    // and the warmed-up step trains exactly like a fresh one
    const ref = trainingStep(seed, 0);
    kiln.manualSeed(seed + 1);
    const x = kiln.keep(kiln.randn([4, 6])), y = kiln.keep(kiln.randint(0, 3, [4]));
    for (let i = 0; i < 3; i++) {
      const a = kiln.scope(() => (compiled(x, y) as kiln.Tensor).item());
      const b = kiln.scope(() => ref.step(x, y).item());
      assert.ok(Math.abs(a - b) <= 1e-5 * Math.abs(b), `step ${i}: warmed ${a}, fresh ${b}`);
    }
  });
}

test('warming up a module in training mode restores BatchNorm running statistics', async () => {
  kiln.compiler.reset();
  const model = new kiln.nn.Sequential(new kiln.nn.Linear(5, 8), new kiln.nn.BatchNorm1d(8));
  model.train();
  const compiled = kiln.compile(model);
  const buffers = model.buffers();
  const before = snapshot(buffers);
  await kiln.noGrad(() => compiled.warmup({ inputs: [[kiln.randn([16, 5])]] }));
  assert.deepEqual(snapshot(buffers), before);
});

test('state warm-up cannot restore (reached only through a closure) is reported and warned about', async () => {
  kiln.compiler.reset();
  const { model, step } = trainingStep(3, 0);
  const warnings: string[] = [];
  const warn = console.warn;
  console.warn = (m: string) => void warnings.push(m);
  try {
    const compiled = kiln.compile(step); // no captures: the weights are unknown to warm-up
    const report = await compiled.warmup({ shapes: [[[4, 6], [4]]], dtype: ['float32', 'int32'] });
    assert.ok(report.entries[0]!.unrestored.length >= model.parameters().length, JSON.stringify(report.entries[0]));
  } finally {
    console.warn = warn;
  }
  assert.ok(warnings.some((w) => /cannot restore .*captures/.test(w)), warnings.join('\n'));
});
