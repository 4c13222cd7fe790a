// nn.Conv1d, nn.Conv2d and nn.ConvTranspose2d over batched or unbatched input, with torch's
// weight layouts ([out, in/groups, k...]; transposed: [in, out/groups, k...]) and default init.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import { checkEnum } from '../core/enum-arg.js';
import type { Tensor } from '../tensor/tensor.js';
import { zeros } from '../ops/creation.js';
import { squeeze, unsqueeze } from '../ops/movement.js';
import { CONV_PADDING_MODES, conv1d, conv2d, convTranspose2d, type ConvPadding } from '../ops/window.js';
import { Module } from './module.js';
import { resetWeightAndBias } from './init.js';
import { checkSize } from './linear.js';

export type Pair = number | readonly [number, number];

export interface Conv2dOptions {
  stride?: Pair;
  /** a size, a pair, 'valid' (0) or 'same' (stride 1; output size = input size, even kernels pad one more at the end) */
  padding?: ConvPadding;
  dilation?: Pair;
  groups?: number;
  bias?: boolean;
  dtype?: 'float32' | 'float64';
}

export interface Conv1dOptions extends Omit<Conv2dOptions, 'stride' | 'padding' | 'dilation'> {
  stride?: number;
  padding?: number | 'valid' | 'same';
  dilation?: number;
}

export interface ConvTranspose2dOptions extends Omit<Conv2dOptions, 'padding'> {
  padding?: Pair;
  /** added to one side of the output size (torch's output_padding), smaller than stride or dilation */
  outputPadding?: Pair;
}

const toPair = (v: Pair): [number, number] => (typeof v === 'number' ? [v, v] : [v[0], v[1]]);
const tuple = (p: readonly number[]) => `(${p.join(', ')}${p.length === 1 ? ',' : ''})`;

/** What every conv layer shares: sizes, the checks, parameters, init and printing. */
abstract class ConvNd extends Module {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly kernelSize: number[];
  readonly stride: number[];
  /** padding per spatial dim, or the string it was given as */
  readonly padding: number[] | 'same' | 'valid';
  readonly dilation: number[];
  readonly groups: number;
  weight: Tensor;
  bias: Tensor | null;

  protected constructor(op: string, inChannels: number, outChannels: number, kernel: number[], stride: number[], padding: number[] | 'same' | 'valid', dilation: number[], opts: { groups?: number; bias?: boolean; dtype?: 'float32' | 'float64' }, transposed: boolean) {
    super();
    checkSize(op, 'inChannels', inChannels, false);
    checkSize(op, 'outChannels', outChannels, false);
    for (const [name, v] of [['kernelSize', kernel], ['stride', stride], ['dilation', dilation]] as const) {
      if (!v.every((x) => Number.isInteger(x) && x > 0)) throw new ArgumentError(`${name} must hold positive integers, got ${JSON.stringify(v)}`, op);
    }
    if (typeof padding === 'string') {
      checkEnum(op, 'padding', padding, CONV_PADDING_MODES);
      if (padding === 'same' && stride.some((s) => s !== 1)) throw new ArgumentError("padding='same' is not supported for strided convolutions", op, 'use stride 1, or give the padding as numbers');
    } else if (!padding.every((x) => Number.isInteger(x) && x >= 0)) throw new ArgumentError(`padding must hold non-negative integers, got ${JSON.stringify(padding)}`, op);
    const groups = opts.groups ?? 1;
    if (!Number.isInteger(groups) || groups < 1 || inChannels % groups !== 0 || outChannels % groups !== 0) {
      throw new ArgumentError(`groups=${groups} must divide inChannels=${inChannels} and outChannels=${outChannels}`, op);
    }
    this.inChannels = inChannels;
    this.outChannels = outChannels;
    this.kernelSize = kernel;
    this.stride = stride;
    this.padding = padding;
    this.dilation = dilation;
    this.groups = groups;
    const dtype = opts.dtype ?? 'float32';
    const wShape = transposed ? [inChannels, outChannels / groups, ...kernel] : [outChannels, inChannels / groups, ...kernel];
    this.weight = this.registerParameter('weight', zeros(wShape, { dtype }));
    this.bias = this.registerParameter('bias', opts.bias === false ? null : zeros([outChannels], { dtype }));
    this.resetParameters();
  }

  /** torch's init: kaiming-uniform (a = sqrt 5), i.e. U(±1/sqrt(fan_in)), for the weight and the bias (fan_in from weight dim 1). */
  resetParameters(): void {
    resetWeightAndBias(this.weight, this.bias);
  }

  /** Runs `run` on batched input, adding and removing the batch dim of unbatched input. */
  protected batched(x: Tensor, spatial: number, run: (x: Tensor) => Tensor): Tensor {
    if (x.ndim === spatial + 1) return squeeze(run(unsqueeze(x, 0)), 0);
    if (x.ndim !== spatial + 2) {
      const dims = spatial === 1 ? 'L' : 'H, W';
      throw new ShapeError(`expects [N, C, ${dims}] or [C, ${dims}], got ${fmtShape(x.shape)}`, this.typeName);
    }
    return run(x);
  }

  override extraRepr(): string {
    let s = `${this.inChannels}, ${this.outChannels}, kernel_size=${tuple(this.kernelSize)}, stride=${tuple(this.stride)}`;
    if (typeof this.padding === 'string') s += `, padding=${this.padding}`;
    else if (this.padding.some((p) => p !== 0)) s += `, padding=${tuple(this.padding)}`;
    if (this.dilation.some((d) => d !== 1)) s += `, dilation=${tuple(this.dilation)}`;
    s += this.extraSettings();
    if (this.groups !== 1) s += `, groups=${this.groups}`;
    if (!this.bias) s += ', bias=False';
    return s;
  }

  protected extraSettings(): string {
    return '';
  }
}

export class Conv2d extends ConvNd {
  constructor(inChannels: number, outChannels: number, kernelSize: Pair, opts: Conv2dOptions = {}) {
    const pad = opts.padding ?? 0;
    super('Conv2d', inChannels, outChannels, toPair(kernelSize), toPair(opts.stride ?? 1), typeof pad === 'string' ? pad : toPair(pad), toPair(opts.dilation ?? 1), opts, false);
  }

  forward(x: Tensor): Tensor {
    return this.batched(x, 2, (xb) => conv2d(xb, this.weight, this.bias, { stride: this.stride as [number, number], padding: padArg(this.padding), dilation: this.dilation as [number, number], groups: this.groups }));
  }
}

export class Conv1d extends ConvNd {
  constructor(inChannels: number, outChannels: number, kernelSize: number, opts: Conv1dOptions = {}) {
    const pad = opts.padding ?? 0;
    super('Conv1d', inChannels, outChannels, [kernelSize], [opts.stride ?? 1], typeof pad === 'string' ? pad : [pad], [opts.dilation ?? 1], opts, false);
  }

  forward(x: Tensor): Tensor {
    const padding = typeof this.padding === 'string' ? this.padding : this.padding[0]!;
    return this.batched(x, 1, (xb) => conv1d(xb, this.weight, this.bias, { stride: this.stride[0], padding, dilation: this.dilation[0], groups: this.groups }));
  }
}

export class ConvTranspose2d extends ConvNd {
  readonly outputPadding: [number, number];

  constructor(inChannels: number, outChannels: number, kernelSize: Pair, opts: ConvTranspose2dOptions = {}) {
    super('ConvTranspose2d', inChannels, outChannels, toPair(kernelSize), toPair(opts.stride ?? 1), toPair(opts.padding ?? 0), toPair(opts.dilation ?? 1), opts, true);
    this.outputPadding = toPair(opts.outputPadding ?? 0);
    const [sh, sw] = this.stride, [dh, dw] = this.dilation;
    if (!this.outputPadding.every((p) => Number.isInteger(p) && p >= 0) || this.outputPadding[0] >= Math.max(sh!, dh!) || this.outputPadding[1] >= Math.max(sw!, dw!)) {
      throw new ArgumentError(`outputPadding ${JSON.stringify(opts.outputPadding)} must be non-negative and smaller than stride or dilation`, 'ConvTranspose2d');
    }
  }

  forward(x: Tensor): Tensor {
    return this.batched(x, 2, (xb) => convTranspose2d(xb, this.weight, this.bias, {
      stride: this.stride as [number, number], padding: this.padding as [number, number], dilation: this.dilation as [number, number], outputPadding: this.outputPadding, groups: this.groups,
    }));
  }

  protected override extraSettings(): string {
    return this.outputPadding.some((p) => p !== 0) ? `, output_padding=${tuple(this.outputPadding)}` : '';
  }
}

const padArg = (p: number[] | 'same' | 'valid'): ConvPadding => (typeof p === 'string' ? p : (p as [number, number]));
