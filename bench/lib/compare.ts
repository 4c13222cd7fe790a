// How far a result is from its reference, for benchmarks and tests alike.

import * as kiln from 'kilnjs';

/** max |a - b| over max |b|; differing shapes are an error, not a NaN. */
export function maxRelDiff(a: kiln.Tensor, b: kiln.Tensor): number {
  if (a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i])) {
    throw new Error(`maxRelDiff: shapes differ, [${a.shape.join(', ')}] vs [${b.shape.join(', ')}]`);
  }
  const x = a.dataSync(), y = b.dataSync();
  let m = 0, scale = 1e-12;
  for (let i = 0; i < x.length; i++) {
    m = Math.max(m, Math.abs(x[i]! - y[i]!));
    scale = Math.max(scale, Math.abs(y[i]!));
  }
  return m / scale;
}
