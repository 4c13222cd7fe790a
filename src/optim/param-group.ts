// A parameter group: parameters that share hyperparameters. The learning rate also
// lives in a kept 0-d float32 tensor that step() reads, so a compiled (traced) step
// sees a new lr without retracing: setting group.lr writes that tensor in place.

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { keep } from '../tensor/scope.js';
import { noGrad } from '../autograd/grad-mode.js';
import { full } from '../ops/creation.js';
import { assign } from '../ops/inplace.js';

export class ParamGroup {
  readonly params: Tensor[];
  /** the learning rate as step() reads it: a 0-d float32 tensor, updated in place */
  readonly lrTensor: Tensor;
  #lr: number;

  constructor(params: Tensor[], lr: number) {
    checkLr(lr);
    this.params = params;
    this.#lr = lr;
    this.lrTensor = keep(full([], lr, { dtype: 'float32' }));
    this.lrTensor.name = 'lr';
  }

  /** The learning rate (a JS copy; reading it never touches the tensor). */
  get lr(): number {
    return this.#lr;
  }

  /** Takes effect at the next step(), compiled or not. */
  set lr(v: number) {
    checkLr(v);
    this.#lr = v;
    noGrad(() => assign(this.lrTensor, v));
  }
}

function checkLr(lr: number): void {
  if (typeof lr !== 'number' || !(lr >= 0) || !Number.isFinite(lr)) throw new ArgumentError(`learning rate must be a finite number >= 0, got ${lr}`, 'optim');
}
