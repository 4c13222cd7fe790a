// defaultCollate (torch's default_collate): a list of samples into one batch. Tensors stack
// along a new dim 0; numbers become a 1-D tensor (int32 when all are integers, else float32, as
// kiln.tensor infers), booleans a bool tensor; arrays and objects collate field by field;
// strings and anything else stay a list.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import { isTensor, type Tensor } from '../tensor/tensor.js';
import { tensor } from '../ops/creation.js';
import { stack } from '../ops/movement.js';

export function defaultCollate(batch: readonly unknown[]): unknown {
  const op = 'defaultCollate';
  if (!Array.isArray(batch) || batch.length === 0) throw new ArgumentError('needs a non-empty list of samples', op);
  const first = batch[0];
  if (isTensor(first)) {
    const shapes = batch.map((t) => (isTensor(t) ? fmtShape(t.shape) : typeof t));
    if (!batch.every((t) => isTensor(t) && fmtShape(t.shape) === shapes[0])) {
      throw new ShapeError(`samples must be tensors of one shape to stack, got ${[...new Set(shapes)].join(', ')}`, op, 'pad them to one shape, or pass a collateFn');
    }
    return stack(batch as Tensor[], 0);
  }
  if (typeof first === 'number') {
    if (!batch.every((v) => typeof v === 'number')) throw new ArgumentError('samples mix numbers and other values', op);
    return tensor(batch as number[]);
  }
  if (typeof first === 'boolean') return tensor(batch as boolean[], { dtype: 'bool' });
  if (Array.isArray(first)) {
    if (!batch.every((s) => Array.isArray(s) && s.length === first.length)) throw new ArgumentError('each sample must have the same number of fields', op);
    return first.map((_, i) => defaultCollate(batch.map((s) => (s as unknown[])[i])));
  }
  if (first !== null && typeof first === 'object' && Object.getPrototypeOf(first) === Object.prototype) {
    const keys = Object.keys(first);
    return Object.fromEntries(keys.map((k) => [k, defaultCollate(batch.map((s) => (s as Record<string, unknown>)[k]))]));
  }
  return [...batch];
}
