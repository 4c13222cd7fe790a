// nn.GroupNorm and nn.RMSNorm (torch's parameters: weight ones, bias zeros; RMSNorm has no bias).

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { ones, zeros } from '../ops/creation.js';
import { groupNorm, rmsNorm } from '../ops/normalization.js';
import { Module } from './module.js';
import { checkSize } from './linear.js';
import { fmtNum } from './layer-norm.js';

export interface GroupNormOptions {
  eps?: number;
  affine?: boolean;
  dtype?: 'float32' | 'float64';
}

export class GroupNorm extends Module {
  readonly numGroups: number;
  readonly numChannels: number;
  readonly eps: number;
  readonly affine: boolean;
  weight: Tensor | null;
  bias: Tensor | null;

  constructor(numGroups: number, numChannels: number, opts: GroupNormOptions = {}) {
    super();
    checkSize('GroupNorm', 'numGroups', numGroups, false);
    checkSize('GroupNorm', 'numChannels', numChannels, false);
    if (numChannels % numGroups !== 0) throw new ArgumentError(`numChannels ${numChannels} must be divisible by numGroups ${numGroups}`, 'GroupNorm');
    this.numGroups = numGroups;
    this.numChannels = numChannels;
    this.eps = opts.eps ?? 1e-5;
    this.affine = opts.affine ?? true;
    const dtype = opts.dtype ?? 'float32';
    this.weight = this.registerParameter('weight', this.affine ? ones([numChannels], { dtype }) : null);
    this.bias = this.registerParameter('bias', this.affine ? zeros([numChannels], { dtype }) : null);
  }

  forward(x: Tensor): Tensor {
    return groupNorm(x, this.numGroups, this.weight, this.bias, this.eps);
  }

  override extraRepr(): string {
    return `${this.numGroups}, ${this.numChannels}, eps=${fmtNum(this.eps)}, affine=${this.affine ? 'True' : 'False'}`;
  }
}

export interface RMSNormOptions {
  /** default: the machine epsilon of the input's dtype (torch's eps=None) */
  eps?: number | null;
  elementwiseAffine?: boolean;
  dtype?: 'float32' | 'float64';
}

export class RMSNorm extends Module {
  readonly normalizedShape: readonly number[];
  readonly eps: number | null;
  readonly elementwiseAffine: boolean;
  weight: Tensor | null;

  constructor(normalizedShape: number | readonly number[], opts: RMSNormOptions = {}) {
    super();
    this.normalizedShape = typeof normalizedShape === 'number' ? [normalizedShape] : [...normalizedShape];
    for (const s of this.normalizedShape) checkSize('RMSNorm', 'normalizedShape', s);
    this.eps = opts.eps ?? null;
    this.elementwiseAffine = opts.elementwiseAffine ?? true;
    this.weight = this.registerParameter('weight', this.elementwiseAffine ? ones(this.normalizedShape, { dtype: opts.dtype ?? 'float32' }) : null);
  }

  forward(x: Tensor): Tensor {
    return rmsNorm(x, this.normalizedShape, this.weight, this.eps);
  }

  override extraRepr(): string {
    return `(${this.normalizedShape.join(', ')}${this.normalizedShape.length === 1 ? ',' : ''}), eps=${this.eps === null ? 'None' : fmtNum(this.eps)}, elementwise_affine=${this.elementwiseAffine ? 'True' : 'False'}`;
  }
}
