// nn.Flatten: merges dims startDim..endDim (default: all but the batch dim).

import type { Tensor } from '../tensor/tensor.js';
import { flatten } from '../ops/movement.js';
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
