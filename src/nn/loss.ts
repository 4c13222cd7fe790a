// Loss modules (torch.nn.*Loss): the functional losses of src/ops/losses.ts with their options
// fixed at construction (validated there); class weights and posWeight are buffers, so they
// appear in the state dict as torch's do.

import type { Tensor } from '../tensor/tensor.js';
import * as L from '../ops/losses.js';
import { checkReduction, type KlDivReduction, type Reduction } from '../ops/losses.js';
import { Module } from './module.js';

const REDUCTIONS = ['mean', 'sum', 'none'] as const;

abstract class Loss<R extends string = Reduction> extends Module<[Tensor, Tensor]> {
  readonly reduction: R;
  constructor(op: string, reduction: R | undefined, valid: readonly string[] = REDUCTIONS) {
    super();
    this.reduction = checkReduction<R>(op, reduction ?? 'mean', valid);
  }
}

export class L1Loss extends Loss {
  constructor(opts: { reduction?: Reduction } = {}) {
    super('L1Loss', opts.reduction);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.l1Loss(input, target, { reduction: this.reduction });
  }
}

export class MSELoss extends Loss {
  constructor(opts: { reduction?: Reduction } = {}) {
    super('MSELoss', opts.reduction);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.mseLoss(input, target, { reduction: this.reduction });
  }
}

export class SmoothL1Loss extends Loss {
  readonly beta: number;
  constructor(opts: { reduction?: Reduction; beta?: number } = {}) {
    super('SmoothL1Loss', opts.reduction);
    this.beta = opts.beta ?? 1;
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.smoothL1Loss(input, target, { reduction: this.reduction, beta: this.beta });
  }
}

export class HuberLoss extends Loss {
  readonly delta: number;
  constructor(opts: { reduction?: Reduction; delta?: number } = {}) {
    super('HuberLoss', opts.reduction);
    this.delta = opts.delta ?? 1;
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.huberLoss(input, target, { reduction: this.reduction, delta: this.delta });
  }
}

export class KLDivLoss extends Loss<KlDivReduction> {
  readonly logTarget: boolean;
  constructor(opts: { reduction?: KlDivReduction; logTarget?: boolean } = {}) {
    super('KLDivLoss', opts.reduction, [...REDUCTIONS, 'batchmean']);
    this.logTarget = opts.logTarget ?? false;
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.klDiv(input, target, { reduction: this.reduction, logTarget: this.logTarget });
  }
}

export class NLLLoss extends Loss {
  readonly ignoreIndex: number;
  weight: Tensor | null;
  constructor(opts: { weight?: Tensor | null; ignoreIndex?: number; reduction?: Reduction } = {}) {
    super('NLLLoss', opts.reduction);
    this.weight = this.registerBuffer('weight', opts.weight ?? null);
    this.ignoreIndex = opts.ignoreIndex ?? -100;
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.nllLoss(input, target, { weight: this.weight, ignoreIndex: this.ignoreIndex, reduction: this.reduction });
  }
}

export class CrossEntropyLoss extends Loss {
  readonly ignoreIndex: number | undefined;
  readonly labelSmoothing: number;
  weight: Tensor | null;
  constructor(opts: { weight?: Tensor | null; ignoreIndex?: number; reduction?: Reduction; labelSmoothing?: number } = {}) {
    super('CrossEntropyLoss', opts.reduction);
    this.weight = this.registerBuffer('weight', opts.weight ?? null);
    this.ignoreIndex = opts.ignoreIndex;
    this.labelSmoothing = opts.labelSmoothing ?? 0;
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.crossEntropy(input, target, { weight: this.weight, ignoreIndex: this.ignoreIndex, reduction: this.reduction, labelSmoothing: this.labelSmoothing });
  }
}

export class BCELoss extends Loss {
  weight: Tensor | null;
  constructor(opts: { weight?: Tensor | null; reduction?: Reduction } = {}) {
    super('BCELoss', opts.reduction);
    this.weight = this.registerBuffer('weight', opts.weight ?? null);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.binaryCrossEntropy(input, target, { weight: this.weight, reduction: this.reduction });
  }
}

export class BCEWithLogitsLoss extends Loss {
  weight: Tensor | null;
  /** torch's buffer name (state dict key); `posWeight` reads it */
  pos_weight: Tensor | null;
  constructor(opts: { weight?: Tensor | null; reduction?: Reduction; posWeight?: Tensor | null } = {}) {
    super('BCEWithLogitsLoss', opts.reduction);
    this.weight = this.registerBuffer('weight', opts.weight ?? null);
    this.pos_weight = this.registerBuffer('pos_weight', opts.posWeight ?? null);
  }
  get posWeight(): Tensor | null {
    return this.pos_weight;
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return L.binaryCrossEntropyWithLogits(input, target, { weight: this.weight, posWeight: this.pos_weight, reduction: this.reduction });
  }
}
