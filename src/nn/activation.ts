// Activation modules: stateless wrappers over the pointwise ops, so they can sit in a
// Sequential and print like torch's.

import type { Tensor } from '../tensor/tensor.js';
import * as m from '../ops/math.js';
import * as act from '../ops/activations.js';
import { full } from '../ops/creation.js';
import { checkEnum } from '../core/enum-arg.js';
import { logSoftmax, softmax } from '../ops/reduce.js';
import { Module } from './module.js';
import { fmtNum } from './layer-norm.js';
import { checkSize } from './linear.js';

export class Identity extends Module {
  forward(x: Tensor): Tensor {
    return x;
  }
}

export class ReLU extends Module {
  forward(x: Tensor): Tensor {
    return m.relu(x);
  }
}

export class GELU extends Module {
  readonly approximate: m.GeluApproximation;
  constructor(opts: { approximate?: m.GeluApproximation } = {}) {
    super();
    const approximate = opts.approximate ?? 'none';
    checkEnum('GELU', 'approximate', approximate, m.GELU_APPROXIMATIONS);
    this.approximate = approximate;
  }
  forward(x: Tensor): Tensor {
    return m.gelu(x, this.approximate);
  }
  override extraRepr(): string {
    return `approximate='${this.approximate}'`;
  }
}

export class SiLU extends Module {
  forward(x: Tensor): Tensor {
    return m.silu(x);
  }
}

export class Sigmoid extends Module {
  forward(x: Tensor): Tensor {
    return m.sigmoid(x);
  }
}

export class Tanh extends Module {
  forward(x: Tensor): Tensor {
    return m.tanh(x);
  }
}

export class Softplus extends Module {
  readonly beta: number;
  readonly threshold: number;
  constructor(opts: { beta?: number; threshold?: number } = {}) {
    super();
    this.beta = opts.beta ?? 1;
    this.threshold = opts.threshold ?? 20;
  }
  forward(x: Tensor): Tensor {
    return m.softplus(x, this.beta, this.threshold);
  }
  override extraRepr(): string {
    return `beta=${fmtNum(this.beta)}, threshold=${fmtNum(this.threshold)}`;
  }
}

export class LeakyReLU extends Module {
  readonly negativeSlope: number;
  constructor(negativeSlope = 0.01) {
    super();
    this.negativeSlope = negativeSlope;
  }
  forward(x: Tensor): Tensor {
    return act.leakyRelu(x, this.negativeSlope);
  }
  override extraRepr(): string {
    return `negative_slope=${fmtNum(this.negativeSlope)}`;
  }
}

export class Softmax extends Module {
  constructor(readonly dim = -1) {
    super();
  }
  forward(x: Tensor): Tensor {
    return softmax(x, this.dim);
  }
  override extraRepr(): string {
    return `dim=${this.dim}`;
  }
}

export class LogSoftmax extends Module {
  constructor(readonly dim = -1) {
    super();
  }
  forward(x: Tensor): Tensor {
    return logSoftmax(x, this.dim);
  }
  override extraRepr(): string {
    return `dim=${this.dim}`;
  }
}

export class ELU extends Module {
  constructor(readonly alpha = 1) {
    super();
  }
  forward(x: Tensor): Tensor {
    return act.elu(x, this.alpha);
  }
  override extraRepr(): string {
    return `alpha=${fmtNum(this.alpha)}`;
  }
}

export class SELU extends Module {
  forward(x: Tensor): Tensor {
    return act.selu(x);
  }
}

export class CELU extends Module {
  constructor(readonly alpha = 1) {
    super();
  }
  forward(x: Tensor): Tensor {
    return act.celu(x, this.alpha);
  }
  override extraRepr(): string {
    return `alpha=${fmtNum(this.alpha)}`;
  }
}

export class Hardtanh extends Module {
  constructor(readonly minVal = -1, readonly maxVal = 1) {
    super();
  }
  forward(x: Tensor): Tensor {
    return act.hardtanh(x, this.minVal, this.maxVal);
  }
  override extraRepr(): string {
    return `min_val=${fmtNum(this.minVal)}, max_val=${fmtNum(this.maxVal)}`;
  }
}

export class ReLU6 extends Module {
  forward(x: Tensor): Tensor {
    return act.relu6(x);
  }
}

export class Hardsigmoid extends Module {
  forward(x: Tensor): Tensor {
    return act.hardsigmoid(x);
  }
}

export class Hardswish extends Module {
  forward(x: Tensor): Tensor {
    return act.hardswish(x);
  }
}

export class Mish extends Module {
  forward(x: Tensor): Tensor {
    return act.mish(x);
  }
}

export class LogSigmoid extends Module {
  forward(x: Tensor): Tensor {
    return act.logsigmoid(x);
  }
}

/** One learned negative slope per channel (numParameters = channels) or one shared (1), initialized to `init`. */
export class PReLU extends Module {
  readonly numParameters: number;
  weight: Tensor;
  constructor(numParameters = 1, init = 0.25, opts: { dtype?: 'float32' | 'float64' } = {}) {
    super();
    checkSize('PReLU', 'numParameters', numParameters, false);
    this.numParameters = numParameters;
    this.weight = this.registerParameter('weight', full([numParameters], init, { dtype: opts.dtype ?? 'float32' }));
  }
  forward(x: Tensor): Tensor {
    return act.prelu(x, this.weight);
  }
  override extraRepr(): string {
    return `num_parameters=${this.numParameters}`;
  }
}

export class GLU extends Module {
  constructor(readonly dim = -1) {
    super();
  }
  forward(x: Tensor): Tensor {
    return act.glu(x, this.dim);
  }
  override extraRepr(): string {
    return `dim=${this.dim}`;
  }
}
