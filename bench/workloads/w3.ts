// W3: transformer MLP block (inference) on x[8192, 768]:
//   y = x + Linear(3072 -> 768)(GELU_tanh(Linear(768 -> 3072)(LayerNorm(768)(x))))
// About 77 GFLOP a call: seconds per call on a single-threaded JS matmul. `quick` shrinks
// the batch to 1024 rows (1/8 of the work).

import * as kiln from 'kilnjs';
import { matmulFlops } from '../lib/flops.js';
import { DEFAULT_SEED, freeze, makeInstance, type Instance, type SetupOptions, type Workload } from './types.js';

export const W3_ROWS = 8192;
export const W3_ROWS_QUICK = 1024;
export const W3_DIM = 768;
export const W3_HIDDEN = 3072;

/** LayerNorm -> Linear -> GELU(tanh) -> Linear, plus the residual (a transformer's MLP sublayer). */
export class MlpBlock extends kiln.nn.Module {
  readonly norm: kiln.nn.LayerNorm;
  readonly fc1: kiln.nn.Linear;
  readonly act: kiln.nn.GELU;
  readonly fc2: kiln.nn.Linear;

  constructor(dim = W3_DIM, hidden = W3_HIDDEN) {
    super();
    this.norm = new kiln.nn.LayerNorm(dim);
    this.fc1 = new kiln.nn.Linear(dim, hidden);
    this.act = new kiln.nn.GELU({ approximate: 'tanh' });
    this.fc2 = new kiln.nn.Linear(hidden, dim);
  }

  forward(x: kiln.Tensor): kiln.Tensor {
    return x.add(this.fc2.call(this.act.call(this.fc1.call(this.norm.call(x)))));
  }
}

export const w3: Workload = {
  id: 'W3',
  title: 'transformer MLP block LN-768x3072-GELU-3072x768+res',
  kind: 'inference',
  setup(opts: SetupOptions = {}): Instance {
    kiln.manualSeed(opts.seed ?? DEFAULT_SEED);
    const rows = opts.quick ? W3_ROWS_QUICK : W3_ROWS;
    const block = freeze(new MlpBlock());
    const x = kiln.randn([rows, W3_DIM]);
    return makeInstance({
      inputs: [x],
      fn: (x: kiln.Tensor) => block.call(x),
      shapes: `x[${rows},${W3_DIM}]`,
      flops: matmulFlops(rows, W3_HIDDEN, W3_DIM) + matmulFlops(rows, W3_DIM, W3_HIDDEN),
      params: block.parameters(),
    });
  },
};

export default w3;
