// Activation modules: stateless wrappers over the pointwise ops, so they can sit in a
// Sequential and print like torch's.

import type { Tensor } from '../tensor/tensor.js';
import * as m from '../ops/math.js';
import { logSoftmax, softmax } from '../ops/reduce.js';
import { Module } from './module.js';
import { fmtNum } from './layer-norm.js';

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
  readonly approximate: 'none' | 'tanh';
  constructor(opts: { approximate?: 'none' | 'tanh' } = {}) {
    super();
    this.approximate = opts.approximate ?? 'none';
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
    return m.where(m.ge(x, 0), x, m.mul(x, this.negativeSlope));
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
