// nn.Conv2d over [N, C, H, W] (or unbatched [C, H, W]), torch's weight layout
// [out, in/groups, kh, kw] and default init.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import { checkEnum } from '../core/enum-arg.js';
import type { Tensor } from '../tensor/tensor.js';
import { zeros } from '../ops/creation.js';
import { squeeze, unsqueeze } from '../ops/movement.js';
import { conv2d } from '../ops/window.js';
import { Module } from './module.js';
import { resetWeightAndBias } from './init.js';
import { checkSize } from './linear.js';

export type Pair = number | readonly [number, number];

export interface Conv2dOptions {
  stride?: Pair;
  /** a size, a pair, 'valid' (0) or 'same' (stride 1; output size = input size) */
  padding?: Pair | 'valid' | 'same';
  dilation?: Pair;
  groups?: number;
  bias?: boolean;
  dtype?: 'float32' | 'float64';
}

const toPair = (v: Pair): [number, number] => (typeof v === 'number' ? [v, v] : [v[0], v[1]]);

export class Conv2d extends Module {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly kernelSize: [number, number];
  readonly stride: [number, number];
  readonly padding: [number, number];
  readonly dilation: [number, number];
  readonly groups: number;
  private readonly paddingMode: string;
  weight: Tensor;
  bias: Tensor | null;

  constructor(inChannels: number, outChannels: number, kernelSize: Pair, opts: Conv2dOptions = {}) {
    super();
    checkSize('Conv2d', 'inChannels', inChannels, false);
    checkSize('Conv2d', 'outChannels', outChannels, false);
    const groups = opts.groups ?? 1;
    if (!Number.isInteger(groups) || groups < 1 || inChannels % groups !== 0 || outChannels % groups !== 0) {
      throw new ArgumentError(`groups=${groups} must divide inChannels=${inChannels} and outChannels=${outChannels}`, 'Conv2d');
    }
    this.inChannels = inChannels;
    this.outChannels = outChannels;
    this.kernelSize = toPair(kernelSize);
    this.stride = toPair(opts.stride ?? 1);
    this.dilation = toPair(opts.dilation ?? 1);
    this.groups = groups;
    const pad = opts.padding ?? 0;
    if (typeof pad === 'string') checkEnum('Conv2d', 'padding', pad, ['valid', 'same']);
    this.paddingMode = typeof pad === 'string' ? pad : '';
    if (pad === 'same') {
      if (this.stride[0] !== 1 || this.stride[1] !== 1) throw new ArgumentError("padding='same' needs stride 1", 'Conv2d');
      const total = this.kernelSize.map((k, i) => this.dilation[i]! * (k - 1));
      if (total.some((t) => t % 2 !== 0)) {
        throw new ArgumentError(`padding='same' with kernel ${this.kernelSize.join('x')} and dilation ${this.dilation.join(',')} would need uneven padding`, 'Conv2d', 'use an odd kernel size, or pad the input with kiln.pad');
      }
      this.padding = [total[0]! / 2, total[1]! / 2];
    } else this.padding = pad === 'valid' ? [0, 0] : toPair(pad);
    const dtype = opts.dtype ?? 'float32';
    this.weight = this.registerParameter('weight', zeros([outChannels, inChannels / groups, ...this.kernelSize], { dtype }));
    this.bias = this.registerParameter('bias', opts.bias === false ? null : zeros([outChannels], { dtype }));
    this.resetParameters();
  }

  /** torch's init: kaiming-uniform (a = sqrt 5), i.e. U(±1/sqrt(fan_in)), for the weight and the bias. */
  resetParameters(): void {
    resetWeightAndBias(this.weight, this.bias);
  }

  forward(x: Tensor): Tensor {
    if (x.ndim === 3) return squeeze(this.forward(unsqueeze(x, 0)), 0);
    if (x.ndim !== 4) throw new ShapeError(`expects [N, C, H, W] or [C, H, W], got ${fmtShape(x.shape)}`, 'Conv2d');
    return conv2d(x, this.weight, this.bias, { stride: this.stride, padding: this.padding, dilation: this.dilation, groups: this.groups });
  }

  override extraRepr(): string {
    const t = (p: readonly number[]) => `(${p.join(', ')})`;
    let s = `${this.inChannels}, ${this.outChannels}, kernel_size=${t(this.kernelSize)}, stride=${t(this.stride)}`;
    if (this.paddingMode) s += `, padding=${this.paddingMode}`;
    else if (this.padding.some((p) => p !== 0)) s += `, padding=${t(this.padding)}`;
    if (this.dilation.some((d) => d !== 1)) s += `, dilation=${t(this.dilation)}`;
    if (this.groups !== 1) s += `, groups=${this.groups}`;
    if (!this.bias) s += ', bias=False';
    return s;
  }
}
