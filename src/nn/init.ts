// nn.init: in-place initializers (torch.nn.init), drawing from kiln's global generator so
// kiln.manualSeed makes every model's initial weights reproducible.

import { ArgumentError, fmtShape } from '../core/errors.js';
import { checkEnum } from '../core/enum-arg.js';
import { isTensor, type Tensor } from '../tensor/tensor.js';
import { scope } from '../core/scope.js';
import { noGrad } from '../autograd/grad-mode.js';
import { assign } from '../ops/inplace.js';
import { rand, randn } from '../ops/creation.js';
import * as m from '../ops/math.js';

/** Writes the value fn makes into t, without autograd, freeing fn's temporaries. */
function fill(t: Tensor, fn: () => Tensor): Tensor {
  noGrad(() => scope(() => void assign(t, fn()), isTensor));
  return t;
}

const floatOf = (t: Tensor) => (t.dtype === 'float64' ? 'float64' : 'float32');

/** Uniform on [low, high). */
export function uniform_(t: Tensor, low = 0, high = 1): Tensor {
  return fill(t, () => m.add(m.mul(rand(t.shape, { dtype: floatOf(t) }), high - low), low));
}

/** Normal with the given mean and standard deviation. */
export function normal_(t: Tensor, mean = 0, std = 1): Tensor {
  return fill(t, () => m.add(m.mul(randn(t.shape, { dtype: floatOf(t) }), std), mean));
}

export function constant_(t: Tensor, value: number): Tensor {
  noGrad(() => assign(t, value));
  return t;
}

export const zeros_ = (t: Tensor): Tensor => constant_(t, 0);
export const ones_ = (t: Tensor): Tensor => constant_(t, 1);

/** torch's _calculate_fan_in_and_fan_out: dims 1 and 0, times the receptive field size. */
export function calculateFanInAndFanOut(t: Tensor): { fanIn: number; fanOut: number } {
  if (t.ndim < 2) throw new ArgumentError(`fan in and fan out need at least 2 dims, got ${fmtShape(t.shape)}`, 'init');
  const receptive = t.shape.slice(2).reduce((a, b) => a * b, 1);
  return { fanIn: t.shape[1]! * receptive, fanOut: t.shape[0]! * receptive };
}

export const NONLINEARITIES = ['linear', 'conv2d', 'sigmoid', 'tanh', 'relu', 'leaky_relu', 'selu'] as const;
export type Nonlinearity = (typeof NONLINEARITIES)[number];

/** torch's calculate_gain. */
export function calculateGain(nonlinearity: Nonlinearity, param?: number): number {
  checkEnum('calculateGain', 'nonlinearity', nonlinearity, NONLINEARITIES);
  switch (nonlinearity) {
    case 'linear': case 'conv2d': case 'sigmoid': return 1;
    case 'tanh': return 5 / 3;
    case 'relu': return Math.SQRT2;
    case 'leaky_relu': {
      const slope = param ?? 0.01;
      return Math.sqrt(2 / (1 + slope * slope));
    }
    case 'selu': return 3 / 4;
  }
}

export interface KaimingOptions {
  /** negative slope of the leaky ReLU after this layer (torch's `a`) */
  a?: number;
  mode?: 'fan_in' | 'fan_out';
  nonlinearity?: Nonlinearity;
}

/** The fan kaiming init scales by (mode checked). */
function kaimingFan(op: string, t: Tensor, opts: KaimingOptions): number {
  const mode = opts.mode ?? 'fan_in';
  checkEnum(op, 'mode', mode, ['fan_in', 'fan_out']);
  const { fanIn, fanOut } = calculateFanInAndFanOut(t);
  return mode === 'fan_in' ? fanIn : fanOut;
}

/** U(-b, b) with b = gain * sqrt(3 / fan). Linear and Conv use a = sqrt(5): b = 1/sqrt(fan_in). */
export function kaimingUniform_(t: Tensor, opts: KaimingOptions = {}): Tensor {
  const fan = kaimingFan('kaimingUniform_', t, opts);
  const gain = calculateGain(opts.nonlinearity ?? 'leaky_relu', opts.a ?? 0);
  const bound = fan === 0 ? 0 : gain * Math.sqrt(3 / fan);
  return uniform_(t, -bound, bound);
}

/** N(0, std) with std = gain / sqrt(fan). */
export function kaimingNormal_(t: Tensor, opts: KaimingOptions = {}): Tensor {
  const fan = kaimingFan('kaimingNormal_', t, opts);
  const gain = calculateGain(opts.nonlinearity ?? 'leaky_relu', opts.a ?? 0);
  return normal_(t, 0, fan === 0 ? 0 : gain / Math.sqrt(fan));
}

/** U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)). */
export function xavierUniform_(t: Tensor, gain = 1): Tensor {
  const { fanIn, fanOut } = calculateFanInAndFanOut(t);
  const bound = gain * Math.sqrt(6 / (fanIn + fanOut));
  return uniform_(t, -bound, bound);
}

export function xavierNormal_(t: Tensor, gain = 1): Tensor {
  const { fanIn, fanOut } = calculateFanInAndFanOut(t);
  return normal_(t, 0, gain * Math.sqrt(2 / (fanIn + fanOut)));
}

/** The bias bound torch's Linear and Conv use: 1/sqrt(fan_in) of their weight. */
export function biasBound(weight: Tensor): number {
  const { fanIn } = calculateFanInAndFanOut(weight);
  return fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
}

/** torch's default init of Linear and Conv: kaiming-uniform (a = sqrt 5), i.e. U(±1/sqrt(fan_in)), for the weight and the bias. */
export function resetWeightAndBias(weight: Tensor, bias: Tensor | null): void {
  kaimingUniform_(weight, { a: Math.sqrt(5) });
  if (bias) {
    const b = biasBound(weight);
    uniform_(bias, -b, b);
  }
}
