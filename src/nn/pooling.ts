// Pooling modules over the functional ops: nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d,
// nn.AdaptiveAvgPool1d, nn.AdaptiveMaxPool2d (stateless; they print as torch's).

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { avgPool2d, maxPool2d } from '../ops/window.js';
import { adaptiveAvgPool1d, adaptiveAvgPool2d, adaptiveMaxPool2d } from '../ops/resize.js';
import { Module } from './module.js';

type Pair = number | readonly [number, number];
const show = (v: Pair | readonly (number | null)[] | null): string => (v === null ? 'None' : typeof v === 'number' ? String(v) : `(${v.map((x) => (x === null ? 'None' : x)).join(', ')})`);
const pyBool = (b: boolean) => (b ? 'True' : 'False');

export interface MaxPool2dOptions {
  /** default: the kernel size */
  stride?: Pair | null;
  padding?: Pair;
  dilation?: Pair;
  ceilMode?: boolean;
  /** torch's return_indices: not supported (throws), so code that expects indices fails loudly */
  returnIndices?: boolean;
}

export class MaxPool2d extends Module {
  readonly kernelSize: Pair;
  readonly stride: Pair;
  readonly padding: Pair;
  readonly dilation: Pair;
  readonly ceilMode: boolean;

  constructor(kernelSize: Pair, opts: MaxPool2dOptions = {}) {
    super();
    if (opts.returnIndices) throw new ArgumentError('returnIndices is not supported', 'MaxPool2d', 'use kiln.maxPool2d for the values; argmax over the windows is not exposed yet');
    this.kernelSize = kernelSize;
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
    this.dilation = opts.dilation ?? 1;
    this.ceilMode = opts.ceilMode ?? false;
  }

  forward(x: Tensor): Tensor {
    return maxPool2d(x, this.kernelSize, { stride: this.stride, padding: this.padding, dilation: this.dilation, ceilMode: this.ceilMode });
  }

  override extraRepr(): string {
    return `kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, padding=${show(this.padding)}, dilation=${show(this.dilation)}, ceil_mode=${pyBool(this.ceilMode)}`;
  }
}

export interface AvgPool2dOptions {
  stride?: Pair | null;
  padding?: Pair;
  ceilMode?: boolean;
  countIncludePad?: boolean;
  divisorOverride?: number | null;
}

export class AvgPool2d extends Module {
  readonly kernelSize: Pair;
  readonly stride: Pair;
  readonly padding: Pair;
  readonly ceilMode: boolean;
  readonly countIncludePad: boolean;
  readonly divisorOverride: number | null;

  constructor(kernelSize: Pair, opts: AvgPool2dOptions = {}) {
    super();
    this.kernelSize = kernelSize;
    this.stride = opts.stride ?? kernelSize;
    this.padding = opts.padding ?? 0;
    this.ceilMode = opts.ceilMode ?? false;
    this.countIncludePad = opts.countIncludePad ?? true;
    this.divisorOverride = opts.divisorOverride ?? null;
  }

  forward(x: Tensor): Tensor {
    return avgPool2d(x, this.kernelSize, { stride: this.stride, padding: this.padding, ceilMode: this.ceilMode, countIncludePad: this.countIncludePad, divisorOverride: this.divisorOverride });
  }

  override extraRepr(): string {
    return `kernel_size=${show(this.kernelSize)}, stride=${show(this.stride)}, padding=${show(this.padding)}`;
  }
}

type AdaptiveSize = number | readonly (number | null)[];

export class AdaptiveAvgPool2d extends Module {
  constructor(readonly outputSize: AdaptiveSize) {
    super();
  }
  forward(x: Tensor): Tensor {
    return adaptiveAvgPool2d(x, this.outputSize);
  }
  override extraRepr(): string {
    return `output_size=${show(this.outputSize)}`;
  }
}

export class AdaptiveAvgPool1d extends Module {
  constructor(readonly outputSize: number) {
    super();
  }
  forward(x: Tensor): Tensor {
    return adaptiveAvgPool1d(x, this.outputSize);
  }
  override extraRepr(): string {
    return `output_size=${this.outputSize}`;
  }
}

export class AdaptiveMaxPool2d extends Module {
  constructor(readonly outputSize: AdaptiveSize) {
    super();
  }
  forward(x: Tensor): Tensor {
    return adaptiveMaxPool2d(x, this.outputSize);
  }
  override extraRepr(): string {
    return `output_size=${show(this.outputSize)}`;
  }
}
