// A parameter group: parameters that share hyperparameters. The learning rate also
// lives in a kept 0-d float32 tensor that step() reads, so a compiled (traced) step
// sees a new lr without retracing: setting group.lr writes that tensor in place.
//
// A learning-rate scheduler (lr-scheduler.ts) computes the lr with tensor ops, so that a
// scheduler stepped inside a compiled function keeps stepping on every replay. It keeps the
// group's lr in `lrState`, a 0-d float64 tensor (Python floats, as torch computes schedules;
// float32 on a backend without float64 kernels), and writes each new value into lrState and
// lrTensor in place. Hyperparameters a scheduler drives (OneCycleLR's momentum or beta1) live
// in `scheduled` as 0-d tensors (lrTensor's dtype), which step() then reads instead of the JS values.

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { keep } from '../core/scope.js';
import { noGrad } from '../autograd/grad-mode.js';
import { full } from '../ops/creation.js';
import { assign } from '../ops/inplace.js';
import type { Operand } from '../ops/pointwise.js';

export class ParamGroup {
  readonly params: Tensor[];
  /** the learning rate as step() reads it: a 0-d float32 tensor (float64 for a group of float64 parameters), updated in place */
  readonly lrTensor: Tensor;
  /** scheduler-driven hyperparameters by name ('momentum', 'beta1'), read by step() */
  readonly scheduled = new Map<string, Tensor>();
  /** the lr when the first scheduler of the optimizer was made (torch's initial_lr) */
  initialLr: number | undefined;
  #lr: number;
  #lrState: Tensor | null = null;

  constructor(params: Tensor[], lr: number) {
    checkLr(lr);
    this.params = params;
    this.#lr = lr;
    // the parameters' precision (torch passes lr as a Python float, which a float32 kernel rounds)
    this.lrTensor = keep(full([], lr, { dtype: params.length > 0 && params.every((p) => p.dtype === 'float64') ? 'float64' : 'float32' }));
    this.lrTensor.name = 'lr';
  }

  /** The learning rate (a JS copy; once a scheduler drives the group, read from its state tensor). */
  get lr(): number {
    return this.#lrState ? this.#lrState.item() : this.#lr;
  }

  /** Takes effect at the next step(), compiled or not. */
  set lr(v: number) {
    checkLr(v);
    this.#lr = v;
    noGrad(() => {
      assign(this.lrTensor, v);
      if (this.#lrState) assign(this.#lrState, v);
    });
  }

  /** The lr as schedulers compute with it (created on first use from the current lr). */
  get lrState(): Tensor {
    if (!this.#lrState) {
      this.#lrState = keep(full([], this.#lr, { dtype: this.lrTensor.storage.backend.float64 === false ? 'float32' : 'float64' }));
      this.#lrState.name = 'lr_state';
    }
    return this.#lrState;
  }

  /** A scheduler's new lr (a 0-d tensor), written in place into lrState and lrTensor. */
  writeLr(v: Tensor): void {
    const state = this.lrState;
    noGrad(() => {
      assign(state, v);
      assign(this.lrTensor, v);
    });
  }

  /** The hyperparameter `name` as step() should read it: its scheduled tensor if any, else `value`. */
  hyper(name: string, value: number): Operand {
    return this.scheduled.get(name) ?? value;
  }

  /** The scheduled tensor of `name`, created from `value` on first use (kept, in lrTensor's dtype, as step() uses it). */
  schedule(name: string, value: number): Tensor {
    let t = this.scheduled.get(name);
    if (!t) {
      t = keep(full([], value, { dtype: this.lrTensor.dtype }));
      t.name = name;
      this.scheduled.set(name, t);
    }
    return t;
  }
}

function checkLr(lr: number): void {
  if (typeof lr !== 'number' || !(lr >= 0) || !Number.isFinite(lr)) throw new ArgumentError(`learning rate must be a finite number >= 0, got ${lr}`, 'optim');
}
