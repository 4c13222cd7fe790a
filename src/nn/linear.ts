// nn.Linear: y = x W^T + b with W [out, in] (torch's layout and default init).

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { zeros } from '../ops/creation.js';
import { linear } from '../ops/functional.js';
import { Module } from './module.js';
import { resetWeightAndBias } from './init.js';

export interface LinearOptions {
  bias?: boolean;
  dtype?: 'float32' | 'float64';
}

export class Linear extends Module {
  readonly inFeatures: number;
  readonly outFeatures: number;
  weight: Tensor;
  bias: Tensor | null;

  constructor(inFeatures: number, outFeatures: number, opts: LinearOptions = {}) {
    super();
    checkSize('Linear', 'inFeatures', inFeatures);
    checkSize('Linear', 'outFeatures', outFeatures);
    this.inFeatures = inFeatures;
    this.outFeatures = outFeatures;
    const dtype = opts.dtype ?? 'float32';
    this.weight = this.registerParameter('weight', zeros([outFeatures, inFeatures], { dtype }));
    this.bias = this.registerParameter('bias', opts.bias === false ? null : zeros([outFeatures], { dtype }));
    this.resetParameters();
  }

  /** torch's init: kaiming-uniform (a = sqrt 5), i.e. U(±1/sqrt(fan_in)), for the weight and the bias. */
  resetParameters(): void {
    resetWeightAndBias(this.weight, this.bias);
  }

  forward(x: Tensor): Tensor {
    return linear(x, this.weight, this.bias);
  }

  override extraRepr(): string {
    return `in_features=${this.inFeatures}, out_features=${this.outFeatures}, bias=${this.bias ? 'True' : 'False'}`;
  }
}

/** A layer size must be a positive integer (0 allowed where torch allows it). */
export function checkSize(op: string, name: string, v: number, allowZero = true): void {
  if (!Number.isInteger(v) || v < (allowZero ? 0 : 1)) {
    throw new ArgumentError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got ${v}`, op);
  }
}
