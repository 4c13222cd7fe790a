// The MLP example (examples/mlp.ts: spirals data, MlpClassifier, Adam) trained for a few steps
// with a compiled step, on whichever backend is given. Shared by the Node side and the browser
// page of test/webgpu-browser.test.ts, so both run literally the same code: the data and the
// initial weights come from kiln's Philox generator (the WebGPU backend draws the same
// uniform numbers on the GPU, bit for bit), so the same seed gives the same start on both.

import * as kiln from 'kilnjs';
import { crossEntropyStep } from './train-step.js';
import { MlpClassifier, buildMlpData } from '../../examples/mlp.js';

export interface MlpRun {
  losses: number[];
  params: number[][];
  testAccuracy: number;
  backend: string;
}

/**
 * `readLoss`: the step is a compiled generator that reads its loss (`yield* kiln.read`, an
 * asynchronous graph break) and updates only when it is finite; the numbers must not change.
 */
export async function trainMlpSteps(dev: kiln.Backend | null, opts: { steps?: number; batch?: number; seed?: number; readLoss?: boolean } = {}): Promise<MlpRun> {
  const steps = opts.steps ?? 12, batch = opts.batch ?? 64, seed = opts.seed ?? 0;
  const cpu = new kiln.JsBackend();
  kiln.setDefaultBackend(cpu);
  // data is made on the host (buildMlpData reads its random draws synchronously), then moved
  const data = buildMlpData({ seed, perClass: 100 });
  const target = dev ?? cpu;
  const move = (t: kiln.Tensor) => (dev ? kiln.keep(kiln.toBackend(t, dev)) : t);
  // each batch its own tensor at offset 0 (a view's offset is part of the compiled guards)
  const slice = (t: kiln.Tensor, i: number) => kiln.keep(kiln.tensor(t.narrow(0, (i * batch) % (t.shape[0]! - batch), batch).dataSync(), [batch, ...t.shape.slice(1)], { dtype: t.dtype }));
  const xs = Array.from({ length: steps }, (_, i) => move(slice(data.xTrain, i)));
  const ys = Array.from({ length: steps }, (_, i) => move(slice(data.yTrain, i)));
  const xTest = move(data.xTest), yTest = move(data.yTest);
  kiln.setDefaultBackend(target);
  try {
    kiln.compiler.reset();
    kiln.manualSeed(seed);
    const model = new MlpClassifier(2, 64, data.classes);
    const opt = new kiln.optim.Adam(model.parameters(), { lr: 0.01 });
    const backend = dev ? dev.name : 'js';
    const step = kiln.compile(crossEntropyStep(model, opt), { name: 'mlp_step', backend, fullgraph: true });
    const checkedStep = kiln.compile(function* checkedMlpStep(xb: kiln.Tensor, yb: kiln.Tensor) {
      opt.zeroGrad();
      const loss = kiln.crossEntropy(model.call(xb), yb);
      const [l] = yield* kiln.read(loss);
      if (Number.isFinite(l!)) {
        loss.backward();
        opt.step();
      }
      return loss;
    }, { backend });
    const losses: number[] = [];
    for (let i = 0; i < steps; i++) {
      const loss = opts.readLoss ? await checkedStep(xs[i]!, ys[i]!) : kiln.scope(() => kiln.keep(step(xs[i]!, ys[i]!)));
      losses.push((await loss.data())[0]!); // the asynchronous read works on every backend
      loss.dispose();
    }
    model.eval();
    const hits = kiln.noGrad(() => kiln.scope(() => kiln.keep(model.call(xTest).argmax(1).eq(yTest).float().mean())));
    const testAccuracy = (await hits.data())[0]!;
    hits.dispose();
    const params: number[][] = [];
    for (const p of model.parameters()) params.push(Array.from(await p.data()));
    return { losses, params, testAccuracy, backend: target.name };
  } finally {
    kiln.setDefaultBackend(cpu);
  }
}
