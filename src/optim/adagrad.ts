// optim.Adagrad: torch's update rule, as in-place tensor ops (see optimizer.ts for the contract).
// The state (step, sum = initialAccumulatorValue) is made in the constructor, as torch does, so a
// compiled step's first trace is not a one-shot:
//   step += 1;  g (+ weightDecay p);  clr = lr / (1 + (step - 1) lrDecay);  sum += g^2;  p -= clr g / (sqrt(sum) + eps)

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { full, zeros } from '../ops/creation.js';
import { assign } from '../ops/inplace.js';
import { add, div, mul, neg, sqrt, sub } from '../ops/math.js';
import { cast } from '../ops/pointwise.js';
import { Optimizer, type Group, type ParamsArg } from './optimizer.js';

export interface AdagradHyper {
  lrDecay: number;
  weightDecay: number;
  initialAccumulatorValue: number;
  eps: number;
  maximize: boolean;
}

export type AdagradOptions = Partial<AdagradHyper> & { lr?: number };

/** Adagrad (torch defaults: lr 1e-2, lrDecay 0, weightDecay 0, initialAccumulatorValue 0, eps 1e-10). */
export class Adagrad extends Optimizer<AdagradHyper> {
  constructor(params: ParamsArg<AdagradHyper>, opts: AdagradOptions = {}) {
    super(params, {
      lr: opts.lr ?? 1e-2,
      lrDecay: opts.lrDecay ?? 0,
      weightDecay: opts.weightDecay ?? 0,
      initialAccumulatorValue: opts.initialAccumulatorValue ?? 0,
      eps: opts.eps ?? 1e-10,
      maximize: opts.maximize ?? false,
    });
    for (const g of this.paramGroups) for (const p of g.params) this.initState(g, p);
  }

  private initState(g: Group<AdagradHyper>, p: Tensor): Record<string, Tensor> {
    return this.stateFor(p, () => ({ step: zeros([], { dtype: 'float32' }), sum: full(p.shape, g.initialAccumulatorValue, { dtype: p.dtype }) }));
  }

  protected validate(h: AdagradHyper): void {
    for (const k of ['lrDecay', 'weightDecay', 'initialAccumulatorValue', 'eps'] as const) {
      if (!(h[k] >= 0)) throw new ArgumentError(`${k} must be >= 0, got ${h[k]}`, 'Adagrad');
    }
  }

  protected updateGroup(g: Group<AdagradHyper>): void {
    for (const p of g.params) {
      if (!p.grad) continue;
      const s = this.initState(g, p); // a group added later gets its state here
      const step = s.step!, acc = s.sum!;
      assign(step, add(step, 1));
      let grad: Tensor = g.maximize ? neg(p.grad) : p.grad;
      if (g.weightDecay !== 0) grad = add(grad, mul(p, g.weightDecay));
      const clr = g.lrDecay === 0 ? g.lrTensor : div(g.lrTensor, add(mul(sub(cast(step, g.lrTensor.dtype), 1), g.lrDecay), 1));
      assign(acc, add(acc, mul(grad, grad)));
      assign(p, sub(p, div(mul(grad, clr), add(sqrt(acc), g.eps))));
    }
  }
}
