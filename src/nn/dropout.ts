// nn.Dropout: zeroes elements with probability p in training mode (scaling the rest by
// 1/(1-p)); the identity in eval mode.

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { dropout } from '../ops/functional.js';
import { Module } from './module.js';
import { fmtNum } from './layer-norm.js';

export class Dropout extends Module {
  readonly p: number;

  constructor(p = 0.5) {
    super();
    if (!(p >= 0 && p <= 1)) throw new ArgumentError(`p must be in [0, 1], got ${p}`, 'Dropout');
    this.p = p;
  }

  forward(x: Tensor): Tensor {
    return dropout(x, this.p, this.training);
  }

  override extraRepr(): string {
    return `p=${fmtNum(this.p)}, inplace=False`;
  }
}
