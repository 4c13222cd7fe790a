// W4: an elementwise chain on 4M float32 values: tanh(x·1.5 + 0.3)·sigmoid(x) − 0.1·x.
// Memory-bound: the measure is bytes moved (read x once, write the result once = 32 MiB),
// not FLOPs. Eager mode runs 7 kernels with 6 temporaries; a fusing compiler runs one loop.
// size 'gpu': 64M values (512 MiB moved a call).

import * as kiln from 'kilnjs';
import { DEFAULT_SEED, makeInstance, type Instance, type SetupOptions, type Workload, type WorkloadSize } from './types.js';

export const W4_SIZE = 4 * 1024 * 1024;
export const W4_SIZE_GPU = 64 * 1024 * 1024;

/** The number of elements of W4 at a size of WORKLOADS.md. */
export function w4Elements(size: WorkloadSize = 'cpu'): number {
  return size === 'gpu' ? W4_SIZE_GPU : W4_SIZE;
}

/** The shapes string of a W4 instance with n elements. */
export const w4Shapes = (n: number): string => `x[${n}]`;

export function elementwiseChain(x: kiln.Tensor): kiln.Tensor {
  return x.mul(1.5).add(0.3).tanh().mul(x.sigmoid()).sub(x.mul(0.1));
}

export const w4: Workload = {
  id: 'W4',
  title: 'elementwise tanh(1.5x+0.3)*sigmoid(x)-0.1x, 4M',
  kind: 'inference',
  setup(opts: SetupOptions = {}): Instance {
    kiln.manualSeed(opts.seed ?? DEFAULT_SEED);
    const n = w4Elements(opts.size);
    const x = kiln.randn([n]);
    return makeInstance({
      inputs: [x],
      fn: elementwiseChain,
      shapes: w4Shapes(n),
      flops: null,
      bytes: 2 * 4 * n,
      params: [],
    });
  },
};

export default w4;
