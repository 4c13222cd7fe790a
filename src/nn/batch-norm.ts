// nn.BatchNorm1d / BatchNorm2d: per-channel normalization with running statistics kept
// as buffers (running_mean, running_var, num_batches_tracked: torch's names and dtypes,
// int32 for the counter). Training mode normalizes with the batch statistics and
// updates the buffers in place (so compiled programs that hold them see the update);
// eval mode uses the buffers.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { ones, zeros } from '../ops/creation.js';
import { batchNorm } from '../ops/functional.js';
import { noGrad } from '../autograd/grad-mode.js';
import { assign } from '../ops/inplace.js';
import { add } from '../ops/math.js';
import { Module } from './module.js';
import { fmtNum } from './layer-norm.js';
import { checkSize } from './linear.js';

export interface BatchNormOptions {
  eps?: number;
  /** weight of the new batch in the running averages */
  momentum?: number;
  affine?: boolean;
  trackRunningStats?: boolean;
  dtype?: 'float32' | 'float64';
}

abstract class BatchNorm extends Module {
  readonly numFeatures: number;
  readonly eps: number;
  readonly momentum: number;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  weight: Tensor | null;
  bias: Tensor | null;
  running_mean: Tensor | null;
  running_var: Tensor | null;
  num_batches_tracked: Tensor | null;

  constructor(numFeatures: number, opts: BatchNormOptions) {
    super();
    checkSize(new.target.name, 'numFeatures', numFeatures, false);
    this.numFeatures = numFeatures;
    this.eps = opts.eps ?? 1e-5;
    this.momentum = opts.momentum ?? 0.1;
    if (!(this.momentum >= 0 && this.momentum <= 1)) throw new ArgumentError(`momentum must be in [0, 1], got ${this.momentum}`, new.target.name);
    this.affine = opts.affine ?? true;
    this.trackRunningStats = opts.trackRunningStats ?? true;
    const dtype = opts.dtype ?? 'float32';
    this.weight = this.registerParameter('weight', this.affine ? ones([numFeatures], { dtype }) : null);
    this.bias = this.registerParameter('bias', this.affine ? zeros([numFeatures], { dtype }) : null);
    const track = this.trackRunningStats;
    this.running_mean = this.registerBuffer('running_mean', track ? zeros([numFeatures], { dtype }) : null);
    this.running_var = this.registerBuffer('running_var', track ? ones([numFeatures], { dtype }) : null);
    this.num_batches_tracked = this.registerBuffer('num_batches_tracked', track ? zeros([], { dtype: 'int32' }) : null);
  }

  get runningMean(): Tensor | null {
    return this.running_mean;
  }
  get runningVar(): Tensor | null {
    return this.running_var;
  }
  get numBatchesTracked(): Tensor | null {
    return this.num_batches_tracked;
  }

  /** Which input ranks this layer accepts. */
  protected abstract checkInput(x: Tensor): void;

  resetRunningStats(): void {
    noGrad(() => {
      if (this.running_mean) assign(this.running_mean, 0);
      if (this.running_var) assign(this.running_var, 1);
      if (this.num_batches_tracked) assign(this.num_batches_tracked, 0);
    });
  }

  forward(x: Tensor): Tensor {
    this.checkInput(x);
    if (x.shape[1] !== this.numFeatures) {
      throw new ShapeError(`input ${fmtShape(x.shape)} has ${x.shape[1]} channels in dim 1, expected ${this.numFeatures}`, this.typeName);
    }
    const useBatchStats = this.training || !this.running_mean;
    if (useBatchStats && x.size / x.shape[1]! <= 1) {
      throw new ShapeError(`expected more than 1 value per channel when training, got input ${fmtShape(x.shape)}`, this.typeName, 'use a batch larger than 1, or call eval()');
    }
    const updateStats = this.training && this.running_mean !== null;
    const r = batchNorm(x, {
      training: useBatchStats,
      runningMean: updateStats || !useBatchStats ? this.running_mean : null,
      runningVar: updateStats || !useBatchStats ? this.running_var : null,
      weight: this.weight,
      bias: this.bias,
      momentum: this.momentum,
      eps: this.eps,
    });
    if (updateStats) {
      noGrad(() => {
        assign(this.running_mean!, r.runningMean!);
        assign(this.running_var!, r.runningVar!);
        const n = add(this.num_batches_tracked!, 1);
        assign(this.num_batches_tracked!, n);
        n.dispose();
      });
      r.runningMean!.dispose();
      r.runningVar!.dispose();
    }
    return r.output;
  }

  override extraRepr(): string {
    return `${this.numFeatures}, eps=${fmtNum(this.eps)}, momentum=${fmtNum(this.momentum)}, affine=${this.affine ? 'True' : 'False'}, track_running_stats=${this.trackRunningStats ? 'True' : 'False'}`;
  }
}

/** Over [N, C] or [N, C, L]. */
export class BatchNorm1d extends BatchNorm {
  constructor(numFeatures: number, opts: BatchNormOptions = {}) {
    super(numFeatures, opts);
  }
  protected checkInput(x: Tensor): void {
    if (x.ndim !== 2 && x.ndim !== 3) throw new ShapeError(`expects [N, C] or [N, C, L], got ${fmtShape(x.shape)}`, 'BatchNorm1d');
  }
}

/** Over [N, C, H, W]. */
export class BatchNorm2d extends BatchNorm {
  constructor(numFeatures: number, opts: BatchNormOptions = {}) {
    super(numFeatures, opts);
  }
  protected checkInput(x: Tensor): void {
    if (x.ndim !== 4) throw new ShapeError(`expects [N, C, H, W], got ${fmtShape(x.shape)}`, 'BatchNorm2d');
  }
}
