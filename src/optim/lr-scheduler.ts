// Learning-rate schedulers (torch.optim.lr_scheduler) that keep working inside a compiled step.
//
// A compiled function replays its recorded program without running its JavaScript, so a
// scheduler that counted epochs in JS and set `group.lr` from JS would be frozen at its traced
// value. Here every scheduler's state is tensors: the epoch counter (torch's last_epoch) is a
// kept 0-d tensor advanced in place, each group's lr lives in its ParamGroup.lrState, and
// step() computes torch's get_lr (the chainable form, from the current lr) with tensor ops and
// writes the result in place (ParamGroup.writeLr). So `scheduler.step()` inside a compiled
// training step advances on every replay, never retraces, and gives the lr eager would.
// State is float64, as torch computes schedules in Python floats (float32 on a backend without
// float64 kernels); the optimizer reads the float32 lrTensor, as torch casts lr to the
// parameter's dtype.
//
// Branches of torch's get_lr become `where` on the epoch; the values of constants (gamma, base
// lrs, milestones) are baked into the graph, as they are fixed for a scheduler's life.

import { ArgumentError, StateDictError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { isTensor } from '../tensor/tensor.js';
import { keep, scope } from '../core/scope.js';
import { noGrad } from '../autograd/grad-mode.js';
import { full } from '../ops/creation.js';
import { assign } from '../ops/inplace.js';
import { add, cos, div, eq, floor, ge, gt, logicalOr, minimum, mul, ne, pow, sub, where } from '../ops/math.js';
import type { Optimizer } from './optimizer.js';
import type { ParamGroup } from './param-group.js';

/** What every scheduler offers (LRScheduler, SequentialLR, ChainedScheduler): checkpoints take any. */
export interface Scheduler {
  readonly optimizer: AnyOptimizer;
  step(): void;
  getLastLr(): number[];
  stateDict(): SchedulerStateDict | CompositeStateDict;
  /** throws unless sd is this scheduler's kind of state (changes nothing) */
  checkStateDict(sd: unknown): void;
  loadStateDict(sd: SchedulerStateDict | CompositeStateDict): void;
}

/** The state of a scheduler made of others (SequentialLR, ChainedScheduler). */
export interface CompositeStateDict {
  type: string;
  lastEpoch?: number;
  schedulers: (SchedulerStateDict | CompositeStateDict)[];
}

/** A hyperparameter value a scheduler sets besides the lr (OneCycleLR's momentum / beta1). */
export interface HyperWrite {
  readonly group: number;
  readonly name: string;
  readonly value: Tensor;
}

/** What one scheduler step computes: the new lr of every group, and other hyperparameters. */
export interface ScheduleStep {
  readonly lrs: Tensor[];
  readonly hyper?: HyperWrite[];
}

/** The JSON form of a scheduler's state (torch's state_dict without the optimizer). */
export interface SchedulerStateDict {
  type: string;
  lastEpoch: number;
  baseLrs: number[];
  [key: string]: unknown;
}

export type AnyOptimizer = Optimizer<any>;

/** Python's floor modulo (non-negative for a positive m), as torch's `%` on epochs. */
export const mod = (e: Tensor, m: number): Tensor => sub(e, mul(floor(div(e, m)), m));

export abstract class LRScheduler implements Scheduler {
  readonly optimizer: AnyOptimizer;
  /** each group's lr when the first scheduler of this optimizer was made (torch's initial_lr) */
  baseLrs: number[];
  /** torch's last_epoch: the number of step() calls, -1 before the first (a kept 0-d tensor) */
  readonly lastEpochTensor: Tensor;

  /** Subclasses call initialStep() at the end of their constructor (their settings are set by then). */
  protected constructor(optimizer: AnyOptimizer) {
    if (!optimizer || !Array.isArray((optimizer as AnyOptimizer).paramGroups)) {
      throw new ArgumentError(`${describe(optimizer)} is not an Optimizer`, this.constructor.name, 'pass the optimizer first: new optim.StepLR(optimizer, stepSize)');
    }
    this.optimizer = optimizer;
    for (const g of optimizer.paramGroups) g.initialLr ??= g.lr;
    this.baseLrs = optimizer.paramGroups.map((g) => g.initialLr!);
    const dtype = optimizer.paramGroups[0]!.lrState.dtype;
    this.lastEpochTensor = keep(full([], -1, { dtype }));
    this.lastEpochTensor.name = `${this.constructor.name}.last_epoch`;
  }

  /** torch's _initial_step: the first step() (epoch 0), which sets the lr of epoch 0 (SequentialLR repeats it). */
  initialStep(): void {
    this.step();
  }

  protected get groups(): ParamGroup[] {
    return this.optimizer.paramGroups;
  }

  /**
   * torch's get_lr at `epoch` (already advanced), from the groups' current lrs: the chainable form.
   * Pure: returns tensors, writes nothing.
   */
  abstract lrsAt(epoch: Tensor, lrs: readonly Tensor[]): ScheduleStep;

  /** torch's _get_closed_form_lr where it has one (SequentialLR restarts a scheduler with it), else lrsAt. */
  closedFormAt(epoch: Tensor, lrs: readonly Tensor[]): ScheduleStep {
    return this.lrsAt(epoch, lrs);
  }

  /** Advances the epoch and sets every group's lr (in place: traceable, replays advance too). */
  step(): void {
    noGrad(() =>
      scope(() => {
        const e = add(this.lastEpochTensor, 1);
        assign(this.lastEpochTensor, e);
        applyStep(this.groups, this.lrsAt(e, this.groups.map((g) => g.lrState)));
      }, isTensor),
    );
  }

  /** torch's last_epoch (a read of the epoch tensor). */
  get lastEpoch(): number {
    return this.lastEpochTensor.item();
  }

  /** The lr of each group after the last step (reads the lr tensors). */
  getLastLr(): number[] {
    return this.groups.map((g) => g.lr);
  }

  /** The scheduler's own settings for its state dict (beyond lastEpoch and baseLrs). */
  protected settings(): Record<string, unknown> {
    return {};
  }

  stateDict(): SchedulerStateDict {
    return { type: this.constructor.name, lastEpoch: this.lastEpoch, baseLrs: [...this.baseLrs], ...this.settings() };
  }

  checkStateDict(sd: unknown): void {
    checkStateDict(this, sd);
    if ((sd as SchedulerStateDict).baseLrs.length !== this.groups.length) {
      throw new StateDictError(`the state has ${(sd as SchedulerStateDict).baseLrs.length} base lrs, the optimizer ${this.groups.length} groups`, `${this.constructor.name}.loadStateDict`);
    }
  }

  /** Restores the epoch and base lrs (the optimizer's state dict restores the lrs themselves). */
  loadStateDict(sd: SchedulerStateDict | CompositeStateDict): void {
    this.checkStateDict(sd);
    const own = sd as SchedulerStateDict;
    this.baseLrs = [...own.baseLrs];
    noGrad(() => assign(this.lastEpochTensor, own.lastEpoch));
  }

  toString(): string {
    return `${this.constructor.name}(lastEpoch=${this.lastEpoch}, lr=[${this.getLastLr().join(', ')}])`;
  }
}

/** Writes a step's lrs and hyperparameters into the groups (in place). */
export function applyStep(groups: readonly ParamGroup[], s: ScheduleStep): void {
  s.lrs.forEach((lr, i) => groups[i]!.writeLr(lr));
  for (const h of s.hyper ?? []) assign(groups[h.group]!.scheduled.get(h.name)!, h.value);
}

/** Throws unless sd is the state of a scheduler of s's class (with its fields), typed for it. */
export function checkStateDict(s: object, sd: unknown): asserts sd is SchedulerStateDict {
  checkStateType(s, sd);
  const op = `${s.constructor.name}.loadStateDict`;
  const d = sd as SchedulerStateDict;
  if (!Number.isInteger(d.lastEpoch) || !Array.isArray(d.baseLrs) || !d.baseLrs.every((v) => typeof v === 'number')) {
    throw new StateDictError('lastEpoch must be an integer and baseLrs a list of numbers', op);
  }
}

/** Throws unless sd is an object whose `type` names s's class. */
export function checkStateType(s: object, sd: unknown): void {
  const name = s.constructor.name;
  const type = sd && typeof sd === 'object' ? (sd as { type?: unknown }).type : undefined;
  if (type !== name) {
    throw new StateDictError(`the state dict is for ${type === undefined ? describe(sd) : String(type)}, not ${name}`, `${name}.loadStateDict`, 'build the same scheduler before loading its state');
  }
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return String(v);
  return typeof v === 'object' ? ((v as object).constructor?.name ?? 'object') : typeof v;
}

const perGroup = (lrs: readonly Tensor[], f: (lr: Tensor, i: number) => Tensor): ScheduleStep => ({ lrs: lrs.map(f) });

/** A number in [lo, hi], else the typed error torch's ValueError corresponds to. */
function checkRange(op: string, name: string, v: number, lo: number, hi: number): void {
  if (typeof v !== 'number' || !(v >= lo && v <= hi)) throw new ArgumentError(`${name} must be in [${lo}, ${hi}], got ${v}`, op);
}

function checkPositiveInt(op: string, name: string, v: number): void {
  if (!Number.isInteger(v) || v <= 0) throw new ArgumentError(`${name} must be a positive integer, got ${v}`, op);
}

// ---- the schedulers ----------------------------------------------------------------------

/** Multiplies the lr by gamma every stepSize epochs. */
export class StepLR extends LRScheduler {
  constructor(optimizer: AnyOptimizer, readonly stepSize: number, readonly gamma = 0.1) {
    checkPositiveInt('StepLR', 'stepSize', stepSize);
    super(optimizer);
    this.initialStep();
  }
  lrsAt(e: Tensor, lrs: readonly Tensor[]): ScheduleStep {
    const keep = logicalOr(eq(e, 0), ne(mod(e, this.stepSize), 0));
    return perGroup(lrs, (lr) => where(keep, lr, mul(lr, this.gamma)));
  }
  override closedFormAt(e: Tensor): ScheduleStep {
    return { lrs: this.baseLrs.map((b) => mul(pow(this.gamma, floor(div(e, this.stepSize))), b)) };
  }
  protected override settings() {
    return { stepSize: this.stepSize, gamma: this.gamma };
  }
}

/** Multiplies the lr by gamma at each milestone (a milestone listed twice multiplies twice). */
export class MultiStepLR extends LRScheduler {
  readonly milestones: number[];
  constructor(optimizer: AnyOptimizer, milestones: readonly number[], readonly gamma = 0.1) {
    if (!Array.isArray(milestones) || !milestones.every((m) => Number.isInteger(m) && m >= 0)) {
      throw new ArgumentError(`milestones must be a list of non-negative integers, got ${JSON.stringify(milestones)}`, 'MultiStepLR');
    }
    const sorted = [...milestones].sort((a, b) => a - b);
    super(optimizer);
    this.milestones = sorted;
    this.initialStep();
  }
  lrsAt(e: Tensor, lrs: readonly Tensor[]): ScheduleStep {
    // gamma ** (how many times e is a milestone): gamma^0 = 1 where it is none
    const counts = new Map<number, number>();
    for (const m of this.milestones) counts.set(m, (counts.get(m) ?? 0) + 1);
    let power = full([], 0, { dtype: e.dtype }); // in the epoch's precision: gamma ** power as torch's float
    for (const [m, c] of counts) power = add(where(eq(e, m), c, 0), power);
    const factor = pow(this.gamma, power);
    return perGroup(lrs, (lr) => mul(lr, factor));
  }
  override closedFormAt(e: Tensor): ScheduleStep {
    let passed = full([], 0, { dtype: e.dtype });
    for (const m of this.milestones) passed = add(where(ge(e, m), 1, 0), passed);
    const factor = pow(this.gamma, passed);
    return { lrs: this.baseLrs.map((b) => mul(factor, b)) };
  }
  protected override settings() {
    return { milestones: [...this.milestones], gamma: this.gamma };
  }
}

/** The lr times `factor` until totalIters epochs have passed. */
export class ConstantLR extends LRScheduler {
  constructor(optimizer: AnyOptimizer, readonly factor = 1 / 3, readonly totalIters = 5) {
    checkRange('ConstantLR', 'factor', factor, 0, 1);
    super(optimizer);
    this.initialStep();
  }
  lrsAt(e: Tensor, lrs: readonly Tensor[]): ScheduleStep {
    const first = eq(e, 0), end = eq(e, this.totalIters);
    return perGroup(lrs, (lr) => where(first, mul(lr, this.factor), where(end, mul(lr, 1 / this.factor), lr)));
  }
  override closedFormAt(e: Tensor): ScheduleStep {
    const f = add(mul(where(ge(e, this.totalIters), 1, 0), 1 - this.factor), this.factor);
    return { lrs: this.baseLrs.map((b) => mul(f, b)) };
  }
  protected override settings() {
    return { factor: this.factor, totalIters: this.totalIters };
  }
}

/** The lr times a factor moving linearly from startFactor to endFactor over totalIters epochs (a warm-up). */
export class LinearLR extends LRScheduler {
  constructor(optimizer: AnyOptimizer, readonly startFactor = 1 / 3, readonly endFactor = 1, readonly totalIters = 5) {
    checkRange('LinearLR', 'startFactor', startFactor, 0, 1);
    checkRange('LinearLR', 'endFactor', endFactor, 0, 1);
    super(optimizer);
    this.initialStep();
  }
  lrsAt(e: Tensor, lrs: readonly Tensor[]): ScheduleStep {
    const d = this.endFactor - this.startFactor;
    // torch: lr * (1 + d / (totalIters * start + (e - 1) * d))
    const ratio = add(div(d, add(mul(sub(e, 1), d), this.totalIters * this.startFactor)), 1);
    const first = eq(e, 0), after = gt(e, this.totalIters);
    return perGroup(lrs, (lr) => where(first, mul(lr, this.startFactor), where(after, lr, mul(lr, ratio))));
  }
  override closedFormAt(e: Tensor): ScheduleStep {
    const f = add(div(mul(minimum(e, this.totalIters), this.endFactor - this.startFactor), this.totalIters), this.startFactor);
    return { lrs: this.baseLrs.map((b) => mul(f, b)) };
  }
  protected override settings() {
    return { startFactor: this.startFactor, endFactor: this.endFactor, totalIters: this.totalIters };
  }
}

/** Multiplies the lr by gamma every epoch. */
export class ExponentialLR extends LRScheduler {
  constructor(optimizer: AnyOptimizer, readonly gamma: number) {
    if (typeof gamma !== 'number') throw new ArgumentError(`gamma must be a number, got ${gamma}`, 'ExponentialLR');
    super(optimizer);
    this.initialStep();
  }
  lrsAt(e: Tensor, lrs: readonly Tensor[]): ScheduleStep {
    const first = eq(e, 0);
    return perGroup(lrs, (lr) => where(first, lr, mul(lr, this.gamma)));
  }
  override closedFormAt(e: Tensor): ScheduleStep {
    return { lrs: this.baseLrs.map((b) => mul(pow(this.gamma, e), b)) };
  }
  protected override settings() {
    return { gamma: this.gamma };
  }
}

/** The lr times (1 - e / totalIters)^power, reaching 0 at totalIters. */
export class PolynomialLR extends LRScheduler {
  constructor(optimizer: AnyOptimizer, readonly totalIters = 5, readonly power = 1) {
    checkPositiveInt('PolynomialLR', 'totalIters', totalIters);
    super(optimizer);
    this.initialStep();
  }
  lrsAt(e: Tensor, lrs: readonly Tensor[]): ScheduleStep {
    const t = this.totalIters;
    const factor = pow(div(sub(1, div(e, t)), sub(1, div(sub(e, 1), t))), this.power);
    const hold = logicalOr(eq(e, 0), gt(e, t));
    return perGroup(lrs, (lr) => where(hold, lr, mul(lr, factor)));
  }
  override closedFormAt(e: Tensor): ScheduleStep {
    const f = pow(sub(1, div(minimum(e, this.totalIters), this.totalIters)), this.power);
    return { lrs: this.baseLrs.map((b) => mul(f, b)) };
  }
  protected override settings() {
    return { totalIters: this.totalIters, power: this.power };
  }
}

/** Cosine annealing from the base lr to etaMin over tMax epochs (and back up, periodically), torch's recursive form. */
export class CosineAnnealingLR extends LRScheduler {
  constructor(optimizer: AnyOptimizer, readonly tMax: number, readonly etaMin = 0) {
    checkPositiveInt('CosineAnnealingLR', 'tMax', tMax);
    super(optimizer);
    this.initialStep();
  }
  lrsAt(e: Tensor, lrs: readonly Tensor[]): ScheduleStep {
    const T = this.tMax, eta = this.etaMin;
    const first = eq(e, 0);
    const restart = eq(mod(sub(e, 1 + T), 2 * T), 0);
    const ratio = div(add(cos(div(mul(e, Math.PI), T)), 1), add(cos(div(mul(sub(e, 1), Math.PI), T)), 1));
    return perGroup(lrs, (lr, i) => {
      const up = add(lr, ((this.baseLrs[i]! - eta) * (1 - Math.cos(Math.PI / T))) / 2);
      return where(first, lr, where(restart, up, add(mul(ratio, sub(lr, eta)), eta)));
    });
  }
  override closedFormAt(e: Tensor): ScheduleStep {
    const c = add(cos(div(mul(e, Math.PI), this.tMax)), 1);
    return { lrs: this.baseLrs.map((b) => add(div(mul(c, b - this.etaMin), 2), this.etaMin)) };
  }
  protected override settings() {
    return { tMax: this.tMax, etaMin: this.etaMin };
  }
}

/**
 * A factor of the epoch, computed by your function. It gets the epoch as a 0-d tensor: write it
 * with kiln ops (`kiln.pow(0.95, epoch)`, `kiln.minimum(1, kiln.div(epoch, 100))`) and it runs
 * inside compiled steps too; JS arithmetic on it (`0.95 ** epoch`) reads the value, which works
 * eagerly and is a graph break in compiled code (an error under fullgraph).
 */
export type LrLambda = (epoch: Tensor) => Tensor | number;

function lambdas(op: string, optimizer: AnyOptimizer, fn: LrLambda | readonly LrLambda[]): LrLambda[] {
  const n = optimizer?.paramGroups?.length ?? 0;
  const list = typeof fn === 'function' ? Array.from({ length: n }, () => fn) : [...fn];
  if (list.length !== n || !list.every((f) => typeof f === 'function')) {
    throw new ArgumentError(`expected one function or ${n} (one per parameter group), got ${Array.isArray(fn) ? `${fn.length} entries` : typeof fn}`, op);
  }
  return list;
}

/** The schedulers driven by your functions of the epoch (one, or one per group). */
abstract class LambdaScheduler extends LRScheduler {
  readonly lrLambdas: LrLambda[];
  constructor(optimizer: AnyOptimizer, lrLambda: LrLambda | readonly LrLambda[]) {
    const list = lambdas(new.target.name, optimizer, lrLambda);
    super(optimizer);
    this.lrLambdas = list;
    this.initialStep();
  }

  /** lrLambda i at epoch e, as a tensor of lr's dtype. */
  protected factor(i: number, e: Tensor, lr: Tensor): Tensor {
    const f = this.lrLambdas[i]!(e);
    return typeof f === 'number' ? full([], f, { dtype: lr.dtype }) : f;
  }
}

/** lr = base lr * lrLambda(epoch). */
export class LambdaLR extends LambdaScheduler {
  lrsAt(e: Tensor, lrs: readonly Tensor[]): ScheduleStep {
    return perGroup(lrs, (lr, i) => mul(this.factor(i, e, lr), this.baseLrs[i]!));
  }
}

/** lr = lr * lrLambda(epoch) for every epoch after the first. */
export class MultiplicativeLR extends LambdaScheduler {
  lrsAt(e: Tensor, lrs: readonly Tensor[]): ScheduleStep {
    const first = eq(e, 0);
    return perGroup(lrs, (lr, i) => where(first, lr, mul(lr, this.factor(i, e, lr))));
  }
}
