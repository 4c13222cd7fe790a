// W1: MLP inference, batch 128, 784 -> 1024 -> ReLU -> 1024 -> ReLU -> 10 (float32).
// Parameters do not require grad; run under kiln.noGrad (types.ts runInference).

import * as kiln from 'kilnjs';
import { mlpForwardFlops } from '../lib/flops.js';
import { DEFAULT_SEED, freeze, makeInstance, type Instance, type SetupOptions, type Workload } from './types.js';

export const MLP_BATCH = 128;
export const MLP_DIMS = [784, 1024, 1024, 10] as const;

/** Linear -> ReLU -> ... -> Linear with torch's default initialization. */
export function buildMlp(dims: readonly number[] = MLP_DIMS): kiln.nn.Sequential {
  const layers: kiln.nn.AnyModule[] = [];
  for (let i = 0; i + 1 < dims.length; i++) {
    if (i > 0) layers.push(new kiln.nn.ReLU());
    layers.push(new kiln.nn.Linear(dims[i]!, dims[i + 1]!));
  }
  return new kiln.nn.Sequential(...layers);
}

export const w1: Workload = {
  id: 'W1',
  title: 'MLP inference 784-1024-1024-10, batch 128',
  kind: 'inference',
  setup(opts: SetupOptions = {}): Instance {
    kiln.manualSeed(opts.seed ?? DEFAULT_SEED);
    const model = freeze(buildMlp());
    const x = kiln.randn([MLP_BATCH, MLP_DIMS[0]]);
    return makeInstance({
      inputs: [x],
      fn: (x: kiln.Tensor) => model.call(x),
      shapes: `x[${MLP_BATCH},${MLP_DIMS[0]}]`,
      flops: mlpForwardFlops(MLP_BATCH, MLP_DIMS),
      params: model.parameters(),
    });
  },
};

export default w1;
