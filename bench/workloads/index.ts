// The reference workloads (../../../shared/WORKLOADS.md) as uniform modules; see types.ts.
// W5 (a bare 1024³ matmul) is in bench/lib/w5-matmul.ts (bench/cpu.ts) and bench/eager.ts:
// there is nothing in it for a compiler to fuse. bench/gpu.ts measures its GPU size (4096³) as
// the large matmul's rate. `setup({ size: 'gpu' })` builds the GPU column of WORKLOADS.md.

import type { Workload, WorkloadId } from './types.js';
import { w1 } from './w1.js';
import { w2 } from './w2.js';
import { w3 } from './w3.js';
import { w4 } from './w4.js';
import { w6 } from './w6.js';
import { w7 } from './w7.js';

export * from './types.js';

export const WORKLOADS: readonly Workload[] = [w1, w2, w3, w4, w6, w7];

export function workload(id: WorkloadId | string): Workload {
  const w = WORKLOADS.find((x) => x.id === id.toUpperCase());
  if (!w) throw new Error(`unknown workload ${id}; have ${WORKLOADS.map((x) => x.id).join(', ')}`);
  return w;
}
