// Random sampling built on kiln's generator (kiln.manualSeed), with a fixed output shape, so it
// traces: a compiled function draws fresh numbers on every call. multinomial with replacement
// inverts the CDF (a comparison count), without replacement races exponential clocks (topk of
// p / E, E ~ Exp(1): the k first to ring, as torch samples); randperm sorts random keys.
// Everything runs in the weights' float dtype (float32 unless they are float64).

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import { isFloat } from '../core/dtype.js';
import type { Tensor } from '../tensor/tensor.js';
import { expectTensor, readContiguous, runtime } from './dispatch.js';
import * as m from './math.js';
import { rand } from './creation.js';
import { cumsum, gather } from './indexing.js';
import { narrow, reshape, unsqueeze } from './movement.js';
import { cast } from './pointwise.js';
import { sum } from './reduce.js';
import { argsort, topk } from './sorting.js';
import { publicOp } from '../core/user-op.js';

/**
 * numSamples int32 category indices per row of weights [C] or [N, C] (non-negative, not
 * necessarily normalized), drawn in proportion to the weights, with or without replacement.
 * Eager calls check the weights (torch's errors); compiled code cannot read them and does not.
 */
export const multinomial = publicOp('multinomial', function multinomial(input: Tensor, numSamples: number, replacement = false): Tensor {
  expectTensor('multinomial', input, 'input');
  if (input.ndim !== 1 && input.ndim !== 2) throw new ShapeError(`input must be [C] or [N, C] weights, got ${fmtShape(input.shape)}`, 'multinomial');
  if (typeof replacement !== 'boolean') throw new ArgumentError(`replacement must be true or false, got ${JSON.stringify(replacement)}`, 'multinomial');
  const c = input.shape[input.ndim - 1]!;
  if (c === 0) throw new ShapeError(`input ${fmtShape(input.shape)} has no categories`, 'multinomial');
  if (!Number.isInteger(numSamples) || numSamples < 1) throw new ArgumentError(`numSamples must be a positive integer, got ${numSamples}`, 'multinomial');
  if (!replacement && numSamples > c) {
    throw new ArgumentError(`cannot draw ${numSamples} samples from ${c} categories without replacement`, 'multinomial', 'pass replacement = true, or draw at most as many samples as categories');
  }
  if (!runtime.tracer && input.hasStorage) checkWeights(input, numSamples, replacement);
  const p0 = input.ndim === 1 ? unsqueeze(input, 0) : input;
  const p = isFloat(p0.dtype) ? p0 : cast(p0, 'float32');
  const rows = p.shape[0]!;
  const dtype = p.dtype as 'float32' | 'float64';
  let out: Tensor;
  if (replacement) {
    // u <= 1 - 2^-24 keeps u * total below the total after float32 rounding: no index passes the last category
    const cdf = cumsum(p, 1);
    const total = narrow(cdf, 1, c - 1, 1);
    const target = m.mul(rand([rows, numSamples], { dtype }), total); // [N, S]
    // index = how many CDF entries lie at or below the target (a zero-weight category never wins)
    out = sum(m.le(unsqueeze(cdf, 1), unsqueeze(target, 2)), 2);
  } else {
    const clocks = m.neg(m.log1p(m.neg(rand([rows, c], { dtype })))); // Exp(1)
    // zero weights never ring before a positive one
    const keys = m.where(m.gt(p, 0), m.div(p, clocks), -1);
    out = topk(keys, numSamples, 1).indices;
  }
  return input.ndim === 1 ? reshape(out, [numSamples]) : out;
});

function checkWeights(input: Tensor, numSamples: number, replacement: boolean): void {
  const data = readContiguous(input, 'multinomial');
  const c = input.shape[input.ndim - 1]!;
  for (let r = 0; r * c < data.length; r++) {
    let total = 0, positive = 0;
    for (let j = 0; j < c; j++) {
      const v = data[r * c + j]!;
      if (!(v >= 0) || v === Infinity) {
        throw new ArgumentError(`weights must be finite and non-negative, got ${v} in row ${r}`, 'multinomial', 'pass probabilities or non-negative weights');
      }
      total += v;
      if (v > 0) positive++;
    }
    if (!(total > 0)) throw new ArgumentError(`row ${r} of the weights sums to 0`, 'multinomial', 'every row needs a positive weight');
    if (!replacement && positive < numSamples) {
      throw new ArgumentError(`row ${r} has ${positive} categories of positive weight, fewer than the ${numSamples} samples to draw without replacement`, 'multinomial');
    }
  }
}

/** A random permutation of 0 .. n-1 (int32): the order of n random 48-bit keys (two 24-bit draws). */
export const randperm = publicOp('randperm', function randperm(n: number): Tensor {
  if (!Number.isInteger(n) || n < 0) throw new ArgumentError(`n must be a non-negative integer, got ${n}`, 'randperm');
  const high = rand([n]), low = rand([n]);
  // lexicographic order of (high, low): a stable sort by high of the order by low
  const byLow = argsort(low);
  return gather(byLow, 0, argsort(gather(high, 0, byLow)));
});
