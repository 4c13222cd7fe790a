// optim.SGD: torch's update rule, as in-place tensor ops (see optimizer.ts for the contract):
//   d = g (+ weightDecay p);  buf = momentum buf + (1 - dampening) d  (buf = d on the first step)
//   d = nesterov ? d + momentum buf : buf;  p -= lr d

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { full, zerosLike } from '../ops/creation.js';
import { assign } from '../ops/inplace.js';
import { add, mul, neg, sub } from '../ops/math.js';
import { Optimizer, type Group, type ParamsArg } from './optimizer.js';

export interface SGDHyper {
  momentum: number;
  dampening: number;
  nesterov: boolean;
  weightDecay: number;
  /** ascend instead of descend */
  maximize: boolean;
}

export type SGDOptions = Partial<SGDHyper> & { lr?: number };

export class SGD extends Optimizer<SGDHyper> {
  constructor(params: ParamsArg<SGDHyper>, opts: SGDOptions = {}) {
    super(params, {
      lr: opts.lr ?? 1e-3,
      momentum: opts.momentum ?? 0,
      dampening: opts.dampening ?? 0,
      nesterov: opts.nesterov ?? false,
      weightDecay: opts.weightDecay ?? 0,
      maximize: opts.maximize ?? false,
    });
  }

  protected validate(h: SGDHyper): void {
    if (!(h.momentum >= 0)) throw new ArgumentError(`momentum must be >= 0, got ${h.momentum}`, 'SGD');
    if (!(h.weightDecay >= 0)) throw new ArgumentError(`weightDecay must be >= 0, got ${h.weightDecay}`, 'SGD');
    if (h.nesterov && (h.momentum <= 0 || h.dampening !== 0)) throw new ArgumentError('nesterov needs momentum > 0 and dampening 0', 'SGD');
  }

  protected updateGroup(g: Group<SGDHyper>): void {
    const momentum = g.hyper('momentum', g.momentum); // a tensor when a scheduler cycles it
    for (const p of g.params) {
      if (!p.grad) continue;
      let d: Tensor = g.maximize ? neg(p.grad) : p.grad;
      if (g.weightDecay !== 0) d = add(d, mul(p, g.weightDecay));
      if (g.momentum !== 0) {
        // zeros make the first step's buf = (1 - dampening) d; torch takes buf = d there, which
        // a 0-d 'first_step' flag (1, then 0) restores with tensor ops when dampening != 0
        const s = this.stateFor(p, () => ({
          momentum_buffer: zerosLike(p),
          ...(g.dampening !== 0 ? { first_step: full([], 1, { dtype: 'float32' }) } : {}),
        }));
        const buf = s.momentum_buffer!;
        let scaled: Tensor = d;
        if (g.dampening !== 0) {
          const first = s.first_step ?? full([], 0, { dtype: 'float32' }); // absent if dampening was set later
          scaled = mul(d, add(mul(first, g.dampening), 1 - g.dampening));
          if (s.first_step) assign(s.first_step, 0);
        }
        assign(buf, add(mul(buf, momentum), scaled));
        d = g.nesterov ? add(d, mul(buf, momentum)) : buf;
      }
      assign(p, sub(p, mul(d, g.lrTensor)));
    }
  }
}
