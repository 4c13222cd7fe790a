// W2: W1's MLP training step, batch 128: cross-entropy on int32 class targets, backward,
// SGD (lr 0.01, no momentum). fn is the whole step (zeroGrad, forward, loss.backward(),
// opt.step()) and returns the loss, so kiln.compile(fn) compiles the whole step.

import * as kiln from 'kilnjs';
import { mlpTrainStepFlops } from '../lib/flops.js';
import { DEFAULT_SEED, makeInstance, optimizerTensors, type Instance, type SetupOptions, type Workload } from './types.js';
import { buildMlp, MLP_BATCH, MLP_DIMS } from './w1.js';

export const W2_LR = 0.01;

export const w2: Workload = {
  id: 'W2',
  title: 'MLP training step (CE, backward, SGD), batch 128',
  kind: 'training',
  setup(opts: SetupOptions = {}): Instance {
    kiln.manualSeed(opts.seed ?? DEFAULT_SEED);
    const model = buildMlp();
    const opt = new kiln.optim.SGD(model.parameters(), { lr: W2_LR });
    const classes = MLP_DIMS[MLP_DIMS.length - 1]!;
    const x = kiln.randn([MLP_BATCH, MLP_DIMS[0]]);
    const y = kiln.randint(0, classes, [MLP_BATCH]);
    const step = (forward: (x: kiln.Tensor) => kiln.Tensor, x: kiln.Tensor, y: kiln.Tensor): kiln.Tensor => {
      opt.zeroGrad();
      const loss = kiln.crossEntropy(forward(x), y);
      loss.backward();
      opt.step();
      return loss;
    };
    return makeInstance({
      inputs: [x, y],
      fn: (x: kiln.Tensor, y: kiln.Tensor) => step((x) => model.call(x), x, y),
      trainLoop: { module: model, step },
      shapes: `x[${MLP_BATCH},${MLP_DIMS[0]}] y[${MLP_BATCH}] int32`,
      flops: mlpTrainStepFlops(MLP_BATCH, MLP_DIMS),
      params: model.parameters(),
      extra: () => optimizerTensors(opt),
    });
  },
};

export default w2;
