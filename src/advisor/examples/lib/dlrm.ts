// The DLRM structure shared by the recommender workload (../recommender.ts) and the W6
// benchmark (bench/workloads/w6.ts, which imports it): W6's shapes (CPU size of WORKLOADS.md),
// the MLP builder and the index of the pairwise-interaction triangle.

import * as kiln from '../../../api/kiln.js';

export const W6_BATCH = 512;
export const W6_TABLES = 26;
export const W6_ROWS = 10_000;
export const W6_EMB = 16;
export const W6_DENSE = 13;
export const W6_BOTTOM = [W6_DENSE, 512, 256, W6_EMB] as const;
export const W6_VECTORS = W6_TABLES + 1; // bottom output + one embedding per table
export const W6_PAIRS = (W6_VECTORS * (W6_VECTORS - 1)) / 2; // 351
export const W6_TOP = [W6_EMB + W6_PAIRS, 512, 256, 1] as const; // 367 -> ... -> 1

/** Linear layers with ReLU between them (and after the last one when `reluAfterLast`). */
export function mlp(dims: readonly number[], reluAfterLast: boolean): kiln.nn.Sequential {
  const layers: kiln.nn.AnyModule[] = [];
  for (let i = 0; i + 1 < dims.length; i++) {
    layers.push(new kiln.nn.Linear(dims[i]!, dims[i + 1]!));
    if (i + 2 < dims.length || reluAfterLast) layers.push(new kiln.nn.ReLU());
  }
  return new kiln.nn.Sequential(...layers);
}

/** Flat indices i·n + j of the strict upper triangle (i < j) of an n×n matrix, row-major. */
export function upperTriangleIndex(n: number): kiln.Tensor {
  const idx = new Int32Array((n * (n - 1)) / 2);
  let k = 0;
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) idx[k++] = i * n + j;
  return kiln.tensor(idx, [idx.length]);
}
