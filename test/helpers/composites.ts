// The float64 references of the composite scalar ops (src/ir/composites.ts), their public API
// calls and the extreme inputs they are checked on (test/composites*.test.ts).

import * as kiln from 'kilnjs';
import type { CompositeOp } from '../../src/ir/composites.js';
import { erf } from '../../src/backend/js/render-scalar.js';

const sigmoid = (x: number) => (x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x)));

/** float64 references (stable forms where one exists; torch's threshold 20 for softplus) */
export const REFERENCE: Record<CompositeOp, (x: number) => number> = {
  sigmoid,
  silu: (x) => x * sigmoid(x),
  gelu: (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)),
  geluTanh: (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3))),
  softplus: (x) => (x > 20 ? x : Math.max(x, 0) + Math.log1p(Math.exp(-Math.abs(x)))),
  rsqrt: (x) => 1 / Math.sqrt(x),
};

export const API: Record<CompositeOp, (x: kiln.Tensor) => kiln.Tensor> = {
  sigmoid: (x) => x.sigmoid(),
  silu: (x) => kiln.silu(x),
  gelu: (x) => kiln.gelu(x),
  geluTanh: (x) => kiln.gelu(x, 'tanh'),
  softplus: (x) => kiln.softplus(x),
  rsqrt: (x) => x.rsqrt(),
};

export const EXTREMES = [0, -0, 1e-45, -1e-45, 1e-30, -1e-30, 0.5, -0.5, 3, -3, 19.999, 20, 20.001, -20, 30, -30, 88, -88, 89, -89, 100, -100, 1e10, -1e10, 3e38, -3e38, Infinity, -Infinity, NaN];
