// W5 of ../shared/WORKLOADS.md as a workload of bench/workloads/types.ts: a bare 1024³
// float32 matmul (bench/workloads/ leaves it out because a fusing compiler has nothing to
// fuse in it; cpu.ts measures it because it is where a backend's matmul engine shows).

import * as kiln from 'kilnjs';
import { matmulFlops } from './flops.js';
import { DEFAULT_SEED, makeInstance, type Instance, type SetupOptions, type Workload } from '../workloads/types.js';

export const W5_N = 1024;

export const w5: Workload = {
  id: 'W5',
  title: 'matmul 1024x1024x1024',
  kind: 'inference',
  setup(opts: SetupOptions = {}): Instance {
    kiln.manualSeed(opts.seed ?? DEFAULT_SEED);
    const a = kiln.randn([W5_N, W5_N]);
    const b = kiln.randn([W5_N, W5_N]);
    return makeInstance({
      inputs: [a, b],
      fn: (a: kiln.Tensor, b: kiln.Tensor) => kiln.matmul(a, b),
      shapes: `a[${W5_N},${W5_N}] b[${W5_N},${W5_N}]`,
      flops: matmulFlops(W5_N, W5_N, W5_N),
      params: [],
    });
  },
};
