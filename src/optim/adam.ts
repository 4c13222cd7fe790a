// optim.Adam and optim.AdamW: torch's update rules, as in-place tensor ops (see
// optimizer.ts for the contract). Per parameter, with t the step count (a kept 0-d
// float32 tensor, incremented in place):
//   Adam:  g += weightDecay p            AdamW: p *= 1 - lr weightDecay  (decoupled)
//   m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2   (vmax = max(vmax, v) with amsgrad)
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// The bias corrections use kiln.pow(b, t) on the tensor t, never t's value in JS.

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { keep } from '../core/scope.js';
import { zeros, zerosLike } from '../ops/creation.js';
import { assign } from '../ops/inplace.js';
import { add, div, maximum, mul, neg, pow, sqrt, sub } from '../ops/math.js';
import { Optimizer, type Group, type ParamsArg } from './optimizer.js';

export interface AdamHyper {
  betas: readonly [number, number];
  eps: number;
  weightDecay: number;
  amsgrad: boolean;
  maximize: boolean;
}

export type AdamOptions = Partial<AdamHyper> & { lr?: number };

abstract class AdamBase extends Optimizer<AdamHyper> {
  protected abstract readonly decoupled: boolean;

  constructor(params: ParamsArg<AdamHyper>, opts: AdamOptions, defaultWeightDecay: number) {
    super(params, {
      lr: opts.lr ?? 1e-3,
      betas: opts.betas ?? [0.9, 0.999],
      eps: opts.eps ?? 1e-8,
      weightDecay: opts.weightDecay ?? defaultWeightDecay,
      amsgrad: opts.amsgrad ?? false,
      maximize: opts.maximize ?? false,
    });
  }

  protected validate(h: AdamHyper): void {
    const op = this.constructor.name;
    const [b1, b2] = h.betas;
    if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1)) throw new ArgumentError(`betas must be in [0, 1), got [${h.betas.join(', ')}]`, op);
    if (!(h.eps >= 0)) throw new ArgumentError(`eps must be >= 0, got ${h.eps}`, op);
    if (!(h.weightDecay >= 0)) throw new ArgumentError(`weightDecay must be >= 0, got ${h.weightDecay}`, op);
  }

  protected updateGroup(g: Group<AdamHyper>): void {
    const b2 = g.betas[1];
    const b1 = g.hyper('beta1', g.betas[0]); // a tensor when a scheduler cycles it (OneCycleLR)
    const lr = g.lrTensor;
    for (const p of g.params) {
      if (!p.grad) continue;
      const s = this.stateFor(p, () => ({
        step: zeros([], { dtype: 'float32' }),
        exp_avg: zerosLike(p),
        exp_avg_sq: zerosLike(p),
        ...(g.amsgrad ? { max_exp_avg_sq: zerosLike(p) } : {}),
      }));
      const step = s.step!, m = s.exp_avg!, v = s.exp_avg_sq!;
      assign(step, add(step, 1));
      let grad: Tensor = g.maximize ? neg(p.grad) : p.grad;
      if (g.weightDecay !== 0) {
        if (this.decoupled) assign(p, mul(p, sub(1, mul(lr, g.weightDecay))));
        else grad = add(grad, mul(p, g.weightDecay));
      }
      assign(m, add(m, mul(sub(grad, m), typeof b1 === 'number' ? 1 - b1 : sub(1, b1)))); // torch's lerp(m, g, 1 - b1)
      assign(v, add(mul(v, b2), mul(mul(grad, grad), 1 - b2)));
      let second = v;
      if (g.amsgrad) {
        const vmax = s.max_exp_avg_sq ?? (s.max_exp_avg_sq = keep(zerosLike(p))); // amsgrad turned on later
        assign(vmax, maximum(vmax, v));
        second = vmax;
      }
      const bc1 = sub(1, pow(b1, step));
      const bc2 = sub(1, pow(b2, step));
      const denom = add(div(sqrt(second), sqrt(bc2)), g.eps);
      assign(p, sub(p, mul(div(m, denom), div(lr, bc1))));
    }
  }
}

/** Adam (torch defaults: lr 1e-3, betas [0.9, 0.999], eps 1e-8, weightDecay 0, added to the gradient). */
export class Adam extends AdamBase {
  protected readonly decoupled = false;
  constructor(params: ParamsArg<AdamHyper>, opts: AdamOptions = {}) {
    super(params, opts, 0);
  }
}

/** AdamW: Adam with decoupled weight decay (torch default weightDecay 1e-2). */
export class AdamW extends AdamBase {
  protected readonly decoupled = true;
  constructor(params: ParamsArg<AdamHyper>, opts: AdamOptions = {}) {
    super(params, opts, 1e-2);
  }
}
