// optim.OneCycleLR: torch's one-cycle policy (lr up from maxLr / divFactor to maxLr, then down
// to initial / finalDivFactor; momentum, or Adam's beta1, the other way), as tensor ops of the
// step count, so it runs inside compiled steps (see lr-scheduler.ts). The cycled momentum is a
// scheduled hyperparameter of each group (ParamGroup.schedule), which step() reads.

import { ArgumentError } from '../core/errors.js';
import { checkEnum } from '../core/enum-arg.js';
import type { Tensor } from '../tensor/tensor.js';
import { runtime } from '../ops/dispatch.js';
import { add, cos, div, le, mul, sub, where } from '../ops/math.js';
import { LRScheduler, type AnyOptimizer, type HyperWrite, type ScheduleStep } from './lr-scheduler.js';

export interface OneCycleLROptions {
  /** the number of steps in the cycle; or give epochs and stepsPerEpoch */
  totalSteps?: number;
  epochs?: number;
  stepsPerEpoch?: number;
  /** share of the cycle spent increasing the lr (default 0.3) */
  pctStart?: number;
  /** 'cos' (default) or 'linear' */
  annealStrategy?: 'cos' | 'linear';
  /** cycle momentum (or beta1) inversely to the lr (default true) */
  cycleMomentum?: boolean;
  baseMomentum?: number | readonly number[];
  maxMomentum?: number | readonly number[];
  /** initial lr = maxLr / divFactor (default 25) */
  divFactor?: number;
  /** min lr = initial lr / finalDivFactor (default 1e4) */
  finalDivFactor?: number;
  /** a third phase annealing to the min lr after returning to the initial lr (default false) */
  threePhase?: boolean;
}

type Key = 'initial' | 'max' | 'min';
interface Phase { end: number; startLr: Key; endLr: Key; startM: 'base' | 'max'; endM: 'base' | 'max' }

const ANNEAL = ['cos', 'linear'] as const;

export class OneCycleLR extends LRScheduler {
  readonly totalSteps: number;
  readonly annealStrategy: 'cos' | 'linear';
  readonly cycleMomentum: boolean;
  /** the hyperparameter cycled: 'beta1' for optimizers with betas, else 'momentum' */
  readonly momentumName: 'beta1' | 'momentum' | null;
  readonly phases: Phase[];
  readonly lrs: { initial: number; max: number; min: number }[];
  readonly momenta: { base: number; max: number }[];

  constructor(optimizer: AnyOptimizer, maxLr: number | readonly number[], opts: OneCycleLROptions = {}) {
    const op = 'OneCycleLR';
    const groups = optimizer?.paramGroups ?? [];
    const perGroup = (name: string, v: number | readonly number[]): number[] => {
      const list = typeof v === 'number' ? groups.map(() => v) : [...v];
      if (list.length !== groups.length || !list.every((x) => typeof x === 'number' && Number.isFinite(x))) {
        throw new ArgumentError(`expected ${groups.length} values for ${name} (one per group), got ${JSON.stringify(v)}`, op);
      }
      return list;
    };
    let total: number;
    if (opts.totalSteps !== undefined) {
      if (!Number.isInteger(opts.totalSteps) || opts.totalSteps <= 0) throw new ArgumentError(`totalSteps must be a positive integer, got ${opts.totalSteps}`, op);
      total = opts.totalSteps;
    } else if (opts.epochs !== undefined && opts.stepsPerEpoch !== undefined) {
      for (const k of ['epochs', 'stepsPerEpoch'] as const) if (!Number.isInteger(opts[k]) || opts[k]! <= 0) throw new ArgumentError(`${k} must be a positive integer, got ${opts[k]}`, op);
      total = opts.epochs * opts.stepsPerEpoch;
    } else throw new ArgumentError('give totalSteps, or epochs and stepsPerEpoch', op);
    const pct = opts.pctStart ?? 0.3;
    if (!(pct >= 0 && pct <= 1)) throw new ArgumentError(`pctStart must be in [0, 1], got ${pct}`, op);
    const anneal = opts.annealStrategy ?? 'cos';
    checkEnum(op, 'annealStrategy', anneal, ANNEAL);
    const divFactor = opts.divFactor ?? 25, finalDiv = opts.finalDivFactor ?? 1e4;
    const lrs = perGroup('maxLr', maxLr).map((max) => ({ initial: max / divFactor, max, min: max / divFactor / finalDiv }));
    const cycle = opts.cycleMomentum ?? true;
    let momentumName: 'beta1' | 'momentum' | null = null;
    if (cycle) {
      const d = optimizer.defaults as Record<string, unknown>;
      if ('betas' in d) momentumName = 'beta1';
      else if ('momentum' in d) momentumName = 'momentum';
      else throw new ArgumentError(`${optimizer.constructor.name} has no momentum or betas to cycle`, op, 'pass cycleMomentum: false');
    }
    const maxM = perGroup('maxMomentum', opts.maxMomentum ?? 0.95), baseM = perGroup('baseMomentum', opts.baseMomentum ?? 0.85);
    // torch overrides initial_lr (not setdefault), so the base lrs are the cycle's initial lrs
    groups.forEach((g, i) => (g.initialLr = lrs[i]!.initial));
    super(optimizer);
    this.totalSteps = total;
    this.annealStrategy = anneal;
    this.cycleMomentum = cycle;
    this.momentumName = momentumName;
    this.lrs = lrs;
    this.momenta = maxM.map((max, i) => ({ base: baseM[i]!, max }));
    this.phases = opts.threePhase
      ? [
          { end: pct * total - 1, startLr: 'initial', endLr: 'max', startM: 'max', endM: 'base' },
          { end: 2 * pct * total - 2, startLr: 'max', endLr: 'initial', startM: 'base', endM: 'max' },
          { end: total - 1, startLr: 'initial', endLr: 'min', startM: 'max', endM: 'max' },
        ]
      : [
          { end: pct * total - 1, startLr: 'initial', endLr: 'max', startM: 'max', endM: 'base' },
          { end: total - 1, startLr: 'max', endLr: 'min', startM: 'base', endM: 'max' },
        ];
    if (momentumName) {
      groups.forEach((g, i) => {
        // the JS value too: optimizers decide from it whether momentum is on (torch sets group['momentum'])
        if (momentumName === 'beta1') g.betas = [maxM[i]!, g.betas[1]];
        else g.momentum = maxM[i]!;
        g.schedule(momentumName, maxM[i]!);
      });
    }
    this.initialStep();
  }

  private anneal(start: number, end: number, pct: Tensor): Tensor {
    if (this.annealStrategy === 'linear') return add(mul(pct, end - start), start);
    return add(mul(add(cos(mul(pct, Math.PI)), 1), (start - end) / 2), end); // end + (start - end) / 2 (cos(pi pct) + 1)
  }

  /** The value of the phase step e falls in (the first whose end it does not pass, else the last). */
  private byPhase(e: Tensor, value: (p: Phase, pct: Tensor) => Tensor): Tensor {
    let start = 0;
    const parts = this.phases.map((p) => {
      const v = value(p, div(sub(e, start), p.end - start));
      start = p.end;
      return v;
    });
    let out = parts[parts.length - 1]!;
    for (let i = parts.length - 2; i >= 0; i--) out = where(le(e, this.phases[i]!.end), parts[i]!, out);
    return out;
  }

  override step(): void {
    // torch raises past the cycle; compiled replays cannot raise, so the check is made where the
    // epoch can be read (eagerly, on a backend with synchronous reads)
    const t = this.lastEpochTensor;
    if (!runtime.tracer && t.storage.backend.syncReads !== false && t.item() + 1 > this.totalSteps) {
      throw new ArgumentError(`tried to step ${t.item() + 2} times; the cycle has totalSteps ${this.totalSteps}`, 'OneCycleLR.step', 'make the scheduler with totalSteps (or epochs x stepsPerEpoch) covering every step');
    }
    super.step();
  }

  lrsAt(e: Tensor): ScheduleStep {
    const lrs = this.lrs.map((l) => this.byPhase(e, (p, pct) => this.anneal(l[p.startLr], l[p.endLr], pct)));
    const hyper: HyperWrite[] = [];
    if (this.momentumName) {
      this.momenta.forEach((m, group) => hyper.push({ group, name: this.momentumName!, value: this.byPhase(e, (p, pct) => this.anneal(m[p.startM], m[p.endM], pct)) }));
    }
    return { lrs, hyper };
  }

  protected override settings() {
    return { totalSteps: this.totalSteps, annealStrategy: this.annealStrategy, cycleMomentum: this.cycleMomentum };
  }
}
