// Batches as plain typed arrays: the rows of several requests side by side, zero-padded to a
// bucket size, and each request's rows cut back out of the outputs.

import { TYPED_ARRAY } from '../core/dtype.js';
import type { RawTensor } from '../io/safetensors.js';
import type { EngineOutput } from './engine.js';
import type { InputSpec } from './signature.js';

/** The smallest bucket that holds `rows`, or null when none does. */
export function bucketFor(rows: number, buckets: readonly number[]): number | null {
  return buckets.find((b) => b >= rows) ?? null;
}

/** Powers of two up to `max`, and `max` itself: the default buckets (kiln's 'pow2' sizes). */
export function pow2Buckets(max: number): number[] {
  const out: number[] = [];
  for (let b = 1; b < max; b *= 2) out.push(b);
  out.push(max);
  return out;
}

/** Each input's rows of the requests in order, then zero rows up to `bucket`. */
export function assemble(specs: readonly InputSpec[], requests: readonly { tensors: readonly RawTensor[] }[], bucket: number): RawTensor[] {
  return specs.map((s, k) => {
    const rowSize = s.row.reduce((a, b) => a * b, 1);
    if (requests.length === 1 && requests[0]!.tensors[k]!.shape[0] === bucket) return requests[0]!.tensors[k]!;
    const data = new TYPED_ARRAY[s.dtype](bucket * rowSize);
    let at = 0;
    for (const r of requests) {
      data.set(r.tensors[k]!.data, at);
      at += r.tensors[k]!.data.length;
    }
    return { dtype: s.dtype, shape: [bucket, ...s.row], data };
  });
}

/** The part of an output that belongs to rows [start, start + n) of the batch (all of it when not per row). */
export function sliceRows(out: EngineOutput, start: number, n: number): RawTensor {
  const t = out.tensor;
  if (!out.rows) return t;
  const { axis, factor } = out.rows;
  const shape = [...t.shape];
  const len = shape[axis]!;
  const inner = shape.slice(axis + 1).reduce((a, b) => a * b, 1);
  const outer = shape.slice(0, axis).reduce((a, b) => a * b, 1);
  const from = start * factor, take = n * factor;
  if (from === 0 && take === len) return t;
  const data = new TYPED_ARRAY[t.dtype](outer * take * inner);
  for (let o = 0; o < outer; o++) data.set(t.data.subarray((o * len + from) * inner, (o * len + from + take) * inner), o * take * inner);
  shape[axis] = take;
  return { dtype: t.dtype, shape, data };
}
