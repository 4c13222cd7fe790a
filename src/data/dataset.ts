// Datasets (torch.utils.data): the Dataset interface, TensorDataset (rows of tensors that share
// their first dim), Subset, and randomSplit.

import { ArgumentError, IndexError, ShapeError, fmtShape } from '../core/errors.js';
import { defaultGenerator, type Generator } from '../core/random.js';
import { isTensor, type Tensor } from '../tensor/tensor.js';
import { tensor } from '../ops/creation.js';
import { indexSelect } from '../ops/indexing.js';
import { select } from '../ops/movement.js';
import { permutation } from './sampler.js';

/** A map-style dataset: `length` samples, read one at a time (torch's __len__ / __getitem__). */
export interface Dataset<T = unknown> {
  readonly length: number;
  getItem(index: number): T;
}

/** A dataset that can also read many samples at once, already collated as defaultCollate would. */
export interface BatchedDataset<T = unknown> extends Dataset<T> {
  getBatch(indices: readonly number[]): T;
}

export function checkIndex(op: string, index: number, length: number): number {
  const i = index < 0 ? index + length : index;
  if (!Number.isInteger(index) || i < 0 || i >= length) throw new IndexError(`index ${index} is out of range for ${length} samples`, op);
  return i;
}

/** Sample i is [t[i] for t of tensors] (torch's TensorDataset); every tensor has the same first dim. */
export class TensorDataset implements BatchedDataset<Tensor[]> {
  readonly tensors: readonly Tensor[];

  constructor(...tensors: Tensor[]) {
    if (tensors.length === 0) throw new ArgumentError('needs at least one tensor', 'TensorDataset');
    tensors.forEach((t, i) => {
      if (!isTensor(t)) throw new ArgumentError(`argument ${i} is not a Tensor`, 'TensorDataset');
      if (t.ndim === 0) throw new ShapeError(`tensor ${i} is 0-d; samples are rows along dim 0`, 'TensorDataset');
    });
    const n = tensors[0]!.shape[0]!;
    const bad = tensors.findIndex((t) => t.shape[0] !== n);
    if (bad >= 0) throw new ShapeError(`size mismatch between tensors: ${tensors.map((t) => fmtShape(t.shape)).join(', ')} (dim 0 must agree)`, 'TensorDataset');
    this.tensors = tensors;
  }

  get length(): number {
    return this.tensors[0]!.shape[0]!;
  }

  getItem(index: number): Tensor[] {
    const i = checkIndex('TensorDataset.getItem', index, this.length);
    return this.tensors.map((t) => select(t, 0, i));
  }

  /** The rows at `indices` of every tensor, stacked (one indexSelect each). */
  getBatch(indices: readonly number[]): Tensor[] {
    for (const i of indices) checkIndex('TensorDataset.getBatch', i, this.length);
    const idx = tensor(Int32Array.from(indices), [indices.length], { dtype: 'int32' });
    const out = this.tensors.map((t) => indexSelect(t, 0, idx));
    idx.dispose();
    return out;
  }
}

/** The samples of `dataset` at `indices` (torch's Subset). */
export class Subset<T> implements Dataset<T> {
  constructor(readonly dataset: Dataset<T>, readonly indices: readonly number[]) {}

  get length(): number {
    return this.indices.length;
  }

  getItem(index: number): T {
    return this.dataset.getItem(this.indices[checkIndex('Subset.getItem', index, this.length)]!);
  }

  getBatch(indices: readonly number[]): T {
    const inner = indices.map((i) => this.indices[checkIndex('Subset.getBatch', i, this.length)]!);
    const d = this.dataset as Partial<BatchedDataset<T>>;
    if (typeof d.getBatch !== 'function') throw new ArgumentError('the underlying dataset has no getBatch', 'Subset.getBatch');
    return d.getBatch(inner);
  }
}

/**
 * Splits a dataset into non-overlapping random subsets of the given lengths (counts summing to
 * its length, or fractions summing to 1: the remainder goes one by one to the first subsets),
 * as torch's random_split; the shuffle draws from `generator` (default: the global one).
 */
export function randomSplit<T>(dataset: Dataset<T>, lengths: readonly number[], generator?: Generator): Subset<T>[] {
  const op = 'randomSplit';
  const n = dataset.length;
  if (!Array.isArray(lengths) || lengths.length === 0 || !lengths.every((l) => typeof l === 'number' && l >= 0)) {
    throw new ArgumentError(`lengths must be a non-empty list of non-negative numbers, got ${JSON.stringify(lengths)}`, op);
  }
  let sizes = [...lengths];
  const total = sizes.reduce((a, b) => a + b, 0);
  if (Math.abs(total - 1) < 1e-9 && sizes.every((l) => l <= 1) && total !== n) {
    sizes = sizes.map((f) => Math.floor(n * f));
    const rest = n - sizes.reduce((a, b) => a + b, 0);
    for (let i = 0; i < rest; i++) sizes[i % sizes.length]! += 1;
  }
  if (!sizes.every(Number.isInteger) || sizes.reduce((a, b) => a + b, 0) !== n) {
    throw new ArgumentError(`lengths ${JSON.stringify(lengths)} must sum to the dataset's length ${n} (or be fractions summing to 1)`, op);
  }
  const order = permutation(n, generator ?? defaultGenerator);
  let at = 0;
  return sizes.map((size) => new Subset(dataset, order.slice(at, (at += size))));
}
