// A small MLP trained for six steps (cross-entropy, SGD with momentum or Adam), eager and
// compiled on a backend: the training-step check of the wasm and native tests, in one place so
// both backends are held to the same steps and tolerances.

import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { crossEntropyStep } from './train-step.js';
import { assertCompiledRan } from './compiled-ran.js';

export { crossEntropyStep };

/** Six steps of a 12-32-16-3 MLP from seed 7; `backend` null: eager. Losses and final parameters. */
export function mlpSteps(backend: string | null, opt: 'sgd' | 'adam'): { losses: number[]; params: number[][] } {
  kiln.manualSeed(7);
  const model = new kiln.nn.Sequential(new kiln.nn.Linear(12, 32), new kiln.nn.ReLU(), new kiln.nn.Linear(32, 16), new kiln.nn.Tanh(), new kiln.nn.Linear(16, 3));
  const optim = opt === 'sgd' ? new kiln.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 }) : new kiln.optim.Adam(model.parameters(), { lr: 0.01 });
  const x = kiln.keep(kiln.randn([64, 12]));
  const y = kiln.keep(kiln.randint(0, 3, [64]));
  const step = crossEntropyStep(model, optim);
  const run = backend ? kiln.compile(step, { backend, fullgraph: true }) : step;
  const losses: number[] = [];
  for (let i = 0; i < 6; i++) losses.push(kiln.scope(() => (run(x, y) as kiln.Tensor).item()));
  return { losses, params: model.parameters().map((p) => Array.from(p.dataSync())) };
}

/** The steps compiled on `backend` equal eager's (losses within 1e-4 relative, parameters 1e-4) and replayed. */
export function checkMlpStepsMatchEager(backend: string, opt: 'sgd' | 'adam'): void {
  kiln.compiler.reset();
  const eager = mlpSteps(null, opt);
  const got = mlpSteps(backend, opt);
  got.losses.forEach((l, i) => assert.ok(Math.abs(l - eager.losses[i]!) <= 1e-4 * Math.max(1, Math.abs(eager.losses[i]!)), `step ${i}: ${backend} loss ${l} vs eager ${eager.losses[i]}`));
  got.params.forEach((p, i) => p.forEach((v, j) => assert.ok(Math.abs(v - eager.params[i]![j]!) <= 1e-4, `param ${i}[${j}]: ${v} vs ${eager.params[i]![j]}`)));
  assert.ok(kiln.stats().cacheHits >= 4, 'the step replayed');
  assertCompiledRan(`MLP steps (${backend}, ${opt})`);
}
