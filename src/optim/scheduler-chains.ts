// Warm-up chains: optim.SequentialLR (one scheduler after another, switching at milestones) and
// optim.ChainedScheduler (several schedulers stepped together, their factors composing), with
// torch's semantics. SequentialLR picks the active scheduler with tensor ops of its epoch
// (every child's next lr is computed and the active one selected), so the switch happens inside
// compiled steps too, without retracing.

import { ArgumentError, StateDictError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { isTensor } from '../tensor/tensor.js';
import { keep, scope } from '../core/scope.js';
import { noGrad } from '../autograd/grad-mode.js';
import { full } from '../ops/creation.js';
import { assign } from '../ops/inplace.js';
import { add, eq, ge, logicalAnd, where } from '../ops/math.js';
import { applyStep, checkStateType, LRScheduler, type AnyOptimizer, type CompositeStateDict, type HyperWrite, type Scheduler, type SchedulerStateDict } from './lr-scheduler.js';

function checkChildren(op: string, schedulers: readonly unknown[], optimizer: AnyOptimizer | undefined, leaves: boolean): void {
  if (!Array.isArray(schedulers) || schedulers.length === 0) throw new ArgumentError('needs a non-empty list of schedulers', op);
  schedulers.forEach((s, i) => {
    if (leaves ? !(s instanceof LRScheduler) : typeof (s as Scheduler)?.step !== 'function') {
      throw new ArgumentError(`scheduler ${i} is not ${leaves ? 'an LRScheduler (StepLR, LinearLR, ...)' : 'a scheduler'}`, op, leaves ? 'SequentialLR does not nest SequentialLR or ChainedScheduler' : undefined);
    }
    if ((s as Scheduler).optimizer !== (optimizer ?? (schedulers[0] as Scheduler).optimizer)) {
      throw new ArgumentError(`scheduler ${i} belongs to another optimizer`, op, 'build every scheduler on the same optimizer');
    }
  });
}

/** Throws unless sd is the state of `op` and its children (changes nothing). */
function checkComposite(op: object, children: readonly Scheduler[], sd: unknown): CompositeStateDict {
  checkStateType(op, sd);
  const c = sd as CompositeStateDict;
  if (!Array.isArray(c.schedulers) || c.schedulers.length !== children.length) {
    throw new StateDictError(`the state dict holds ${Array.isArray(c.schedulers) ? c.schedulers.length : 'no'} schedulers, this one ${children.length}`, `${op.constructor.name}.loadStateDict`);
  }
  children.forEach((s, i) => s.checkStateDict(c.schedulers[i]));
  return c;
}

/** Runs schedulers[0] until milestones[0], then schedulers[1] (restarted at its epoch 0), and so on. */
export class SequentialLR implements Scheduler {
  readonly optimizer: AnyOptimizer;
  readonly schedulers: LRScheduler[];
  readonly milestones: number[];
  /** epochs since construction, as torch's SequentialLR.last_epoch (a kept 0-d tensor) */
  readonly lastEpochTensor: Tensor;

  constructor(optimizer: AnyOptimizer, schedulers: readonly LRScheduler[], milestones: readonly number[]) {
    const op = 'SequentialLR';
    checkChildren(op, schedulers, optimizer, true);
    if (!Array.isArray(milestones) || milestones.length !== schedulers.length - 1 || !milestones.every((m, i) => Number.isInteger(m) && m > 0 && (i === 0 || m > milestones[i - 1]!))) {
      throw new ArgumentError(`needs ${schedulers.length - 1} increasing positive milestones (one fewer than schedulers), got ${JSON.stringify(milestones)}`, op);
    }
    this.optimizer = optimizer;
    this.schedulers = [...schedulers];
    this.milestones = [...milestones];
    this.lastEpochTensor = keep(full([], 0, { dtype: schedulers[0]!.lastEpochTensor.dtype }));
    this.lastEpochTensor.name = 'SequentialLR.last_epoch';
    // torch: reset every lr to its initial value, undo each child's initial step, redo the first's
    for (const g of optimizer.paramGroups) g.lr = g.initialLr ?? g.lr;
    noGrad(() => {
      for (const s of this.schedulers) assign(s.lastEpochTensor, add(s.lastEpochTensor, -1));
    });
    this.schedulers[0]!.initialStep();
  }

  step(): void {
    const groups = this.optimizer.paramGroups;
    noGrad(() =>
      scope(() => {
        const e = add(this.lastEpochTensor, 1);
        assign(this.lastEpochTensor, e);
        let index = full([], 0, { dtype: e.dtype }); // torch's bisect_right(milestones, e)
        for (const m of this.milestones) index = add(where(ge(e, m), 1, 0), index);
        let lrs: Tensor[] = groups.map((g) => g.lrState);
        const current = groups.map((g) => g.lrState);
        const hyper = new Map<string, HyperWrite>();
        this.schedulers.forEach((s, i) => {
          const active = eq(index, i);
          const next = add(s.lastEpochTensor, 1);
          let step = s.lrsAt(next, current);
          let epoch = where(active, next, s.lastEpochTensor);
          if (i > 0) {
            // at its milestone a scheduler restarts at epoch 0 with its closed form (torch's step(0))
            const restart = logicalAnd(active, eq(e, this.milestones[i - 1]!));
            const fresh = s.closedFormAt(full([], 0, { dtype: e.dtype }), current);
            step = { lrs: step.lrs.map((l, j) => where(restart, fresh.lrs[j]!, l)), hyper: step.hyper?.map((h, j) => ({ ...h, value: where(restart, fresh.hyper![j]!.value, h.value) })) };
            epoch = where(restart, 0, epoch);
          }
          assign(s.lastEpochTensor, epoch);
          lrs = lrs.map((l, j) => where(active, step.lrs[j]!, l));
          for (const h of step.hyper ?? []) {
            const key = `${h.group}.${h.name}`;
            const before = hyper.get(key)?.value ?? groups[h.group]!.scheduled.get(h.name)!;
            hyper.set(key, { ...h, value: where(active, h.value, before) });
          }
        });
        applyStep(groups, { lrs, hyper: [...hyper.values()] });
      }, isTensor),
    );
  }

  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.lr);
  }

  stateDict(): CompositeStateDict {
    return { type: 'SequentialLR', lastEpoch: this.lastEpochTensor.item(), schedulers: this.schedulers.map((s) => s.stateDict()) };
  }

  checkStateDict(sd: unknown): void {
    const c = checkComposite(this, this.schedulers, sd);
    if (!Number.isInteger(c.lastEpoch)) throw new StateDictError('lastEpoch must be an integer', 'SequentialLR.loadStateDict');
  }

  loadStateDict(sd: SchedulerStateDict | CompositeStateDict): void {
    this.checkStateDict(sd);
    const c = sd as CompositeStateDict;
    this.schedulers.forEach((s, i) => s.loadStateDict(c.schedulers[i]!));
    noGrad(() => assign(this.lastEpochTensor, c.lastEpoch!));
  }
}

/** Steps every scheduler at each step(), in order: chainable schedulers' factors compose. */
export class ChainedScheduler implements Scheduler {
  readonly optimizer: AnyOptimizer;
  readonly schedulers: Scheduler[];

  constructor(schedulers: readonly Scheduler[]) {
    checkChildren('ChainedScheduler', schedulers, undefined, false);
    this.schedulers = [...schedulers];
    this.optimizer = schedulers[0]!.optimizer;
  }

  step(): void {
    for (const s of this.schedulers) s.step();
  }

  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.lr);
  }

  stateDict(): CompositeStateDict {
    return { type: 'ChainedScheduler', schedulers: this.schedulers.map((s) => s.stateDict()) };
  }

  checkStateDict(sd: unknown): void {
    checkComposite(this, this.schedulers, sd);
  }

  loadStateDict(sd: SchedulerStateDict | CompositeStateDict): void {
    this.checkStateDict(sd);
    this.schedulers.forEach((s, i) => s.loadStateDict((sd as CompositeStateDict).schedulers[i]!));
  }
}
