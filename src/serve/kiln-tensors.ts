// Between the server's plain typed arrays and kiln tensors, for kiln's engines.

import type { RawTensor } from '../io/safetensors.js';
import { tensor } from '../ops/creation.js';
import { isTensor, Tensor } from '../tensor/tensor.js';
import type { Pad } from '../compiler/dynamic/bucket.js';
import { flattenOutputs, type EngineOutput } from './engine.js';

export const toTensor = (r: RawTensor): Tensor => tensor(r.data, r.shape, { dtype: r.dtype });

/**
 * A kiln result as engine outputs (row-major copies). `rows`: the row axes of each leaf from
 * bucket.ts rowAxes; 'whole' when a call holds one request (rows are dim 0 as given); null when
 * rows may mix (each call then holds exactly one request and gets its outputs whole).
 */
export function engineOutputs(result: unknown, rows: readonly (Pad | null)[] | 'whole' | null): EngineOutput[] {
  return flattenOutputs(result, isTensor).map(([name, t], i) => ({
    name,
    tensor: { dtype: t.dtype, shape: [...t.shape], data: t.dataSync() },
    rows: rows === 'whole' ? { axis: 0, factor: 1 } : rows ? (rows[i] ?? null) : null,
  }));
}
