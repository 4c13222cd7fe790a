// nn.Flatten: merges dims startDim..endDim (default: all but the batch dim); nn.Unflatten
// splits one dim into several.

import { ArgumentError } from '../core/errors.js';
import { normalizeDim } from '../core/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { flatten, reshape } from '../ops/movement.js';
import { Module } from './module.js';

export class Flatten extends Module {
  constructor(
    readonly startDim = 1,
    readonly endDim = -1,
  ) {
    super();
  }

  forward(x: Tensor): Tensor {
    return flatten(x, this.startDim, this.endDim);
  }

  override extraRepr(): string {
    return `start_dim=${this.startDim}, end_dim=${this.endDim}`;
  }
}

/** nn.Unflatten: splits dim `dim` into `unflattenedSize` (one entry may be -1). */
export class Unflatten extends Module {
  readonly dim: number;
  readonly unflattenedSize: readonly number[];

  constructor(dim: number, unflattenedSize: readonly number[]) {
    super();
    if (!Number.isInteger(dim)) throw new ArgumentError(`dim must be an integer, got ${dim}`, 'Unflatten');
    if (!Array.isArray(unflattenedSize) || unflattenedSize.length === 0 || !unflattenedSize.every((s) => Number.isInteger(s) && (s >= 0 || s === -1)) || unflattenedSize.filter((s) => s === -1).length > 1) {
      throw new ArgumentError(`unflattenedSize must be a non-empty list of sizes (at most one -1), got ${JSON.stringify(unflattenedSize)}`, 'Unflatten');
    }
    this.dim = dim;
    this.unflattenedSize = [...unflattenedSize];
  }

  forward(x: Tensor): Tensor {
    const d = normalizeDim('Unflatten', this.dim, x.ndim, x.shape);
    return reshape(x, [...x.shape.slice(0, d), ...this.unflattenedSize, ...x.shape.slice(d + 1)]);
  }

  override extraRepr(): string {
    return `dim=${this.dim}, unflattened_size=(${this.unflattenedSize.join(', ')}${this.unflattenedSize.length === 1 ? ',' : ''})`;
  }
}
