// optim.RMSprop: torch's update rule, as in-place tensor ops (see optimizer.ts for the contract):
//   g (+ weightDecay p);  v = alpha v + (1 - alpha) g^2;  centered: a = alpha a + (1 - alpha) g, avg = sqrt(v - a^2)
//   else avg = sqrt(v);  momentum: buf = momentum buf + g / (avg + eps), p -= lr buf;  else p -= lr g / (avg + eps)

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { zeros, zerosLike } from '../ops/creation.js';
import { assign } from '../ops/inplace.js';
import { add, div, mul, neg, sqrt, sub } from '../ops/math.js';
import { Optimizer, type Group, type ParamsArg } from './optimizer.js';

export interface RMSpropHyper {
  alpha: number;
  eps: number;
  weightDecay: number;
  momentum: number;
  centered: boolean;
  maximize: boolean;
}

export type RMSpropOptions = Partial<RMSpropHyper> & { lr?: number };

/** RMSprop (torch defaults: lr 1e-2, alpha 0.99, eps 1e-8, weightDecay 0, momentum 0, centered false). */
export class RMSprop extends Optimizer<RMSpropHyper> {
  constructor(params: ParamsArg<RMSpropHyper>, opts: RMSpropOptions = {}) {
    super(params, {
      lr: opts.lr ?? 1e-2,
      alpha: opts.alpha ?? 0.99,
      eps: opts.eps ?? 1e-8,
      weightDecay: opts.weightDecay ?? 0,
      momentum: opts.momentum ?? 0,
      centered: opts.centered ?? false,
      maximize: opts.maximize ?? false,
    });
  }

  protected validate(h: RMSpropHyper): void {
    for (const k of ['alpha', 'eps', 'weightDecay', 'momentum'] as const) {
      if (!(h[k] >= 0)) throw new ArgumentError(`${k} must be >= 0, got ${h[k]}`, 'RMSprop');
    }
  }

  protected updateGroup(g: Group<RMSpropHyper>): void {
    const momentum = g.hyper('momentum', g.momentum);
    for (const p of g.params) {
      if (!p.grad) continue;
      const s = this.stateFor(p, () => ({
        step: zeros([], { dtype: 'float32' }),
        square_avg: zerosLike(p),
        ...(g.momentum > 0 ? { momentum_buffer: zerosLike(p) } : {}),
        ...(g.centered ? { grad_avg: zerosLike(p) } : {}),
      }));
      assign(s.step!, add(s.step!, 1));
      let grad: Tensor = g.maximize ? neg(p.grad) : p.grad;
      if (g.weightDecay !== 0) grad = add(grad, mul(p, g.weightDecay));
      const v = s.square_avg!;
      assign(v, add(mul(v, g.alpha), mul(mul(grad, grad), 1 - g.alpha)));
      let avg: Tensor;
      if (g.centered) {
        const a = s.grad_avg!;
        assign(a, add(mul(a, g.alpha), mul(grad, 1 - g.alpha)));
        avg = sqrt(sub(v, mul(a, a)));
      } else avg = sqrt(v);
      avg = add(avg, g.eps);
      if (g.momentum > 0) {
        const buf = s.momentum_buffer!;
        assign(buf, add(mul(buf, momentum), div(grad, avg)));
        assign(p, sub(p, mul(buf, g.lrTensor)));
      } else assign(p, sub(p, mul(div(grad, avg), g.lrTensor)));
    }
  }
}
