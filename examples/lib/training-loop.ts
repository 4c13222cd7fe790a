// The step-counted training loop of the denoiser and recommender examples: each step in
// its own kiln.scope (so memory stays flat), the first WARMUP_STEPS timed apart (tracing
// and compiling happen there, so they would skew the rate), kiln.memory() after the
// warm-up and at the end (equal when nothing leaks), and a held-out evaluation every
// `evalEvery` steps and after the last one, with the mean training loss since the
// previous evaluation. Kept in one place so every example measures the same way.

import * as kiln from 'kilnjs';

export type Memory = ReturnType<typeof kiln.memory>;

/** Steps timed apart from the rest: the first calls trace and compile. */
export const WARMUP_STEPS = 3;

/** One evaluation point: the step, the mean training loss since the previous one, and the example's held-out metrics. */
export type Evaluation<M extends object> = { step: number; loss: number } & M;

export interface TrainingLoopOptions<M extends object> {
  steps: number;
  /** evaluate every this many steps; 0 = only after the last step */
  evalEvery: number;
  /** training step number `step` (from 0): returns its loss; runs inside kiln.scope */
  step: (step: number) => number;
  /** the held-out metrics at an evaluation point */
  evaluate: () => M;
  /** called after each evaluation with the steps/s so far (undefined while still in the warm-up) */
  onEvaluation?: (e: Evaluation<M>, stepsPerSec: number | undefined) => void;
}

export interface TrainingLoopResult<M extends object> {
  /** training loss of every step */
  losses: number[];
  evals: Evaluation<M>[];
  steps: number;
  /** training steps per second after the first WARMUP_STEPS steps (NaN when there are no more) */
  stepsPerSec: number;
  /** seconds spent in the first WARMUP_STEPS steps */
  warmupSeconds: number;
  /** kiln.memory() after the warm-up steps and at the end: equal when nothing leaks */
  memoryBefore: Memory;
  memoryAfter: Memory;
}

export function runTrainingLoop<M extends object>(opts: TrainingLoopOptions<M>): TrainingLoopResult<M> {
  const { steps, evalEvery } = opts;
  const losses: number[] = [], evals: Evaluation<M>[] = [];
  let memoryBefore: Memory | undefined;
  let trainMs = 0, warmupMs = 0, sinceEval = 0;
  for (let s = 0; s < steps; s++) {
    const t0 = performance.now();
    const loss = kiln.scope(() => opts.step(s));
    const ms = performance.now() - t0;
    if (s < WARMUP_STEPS) warmupMs += ms;
    else trainMs += ms;
    if (s === WARMUP_STEPS - 1) memoryBefore = kiln.memory();
    losses.push(loss);
    sinceEval++;
    if ((evalEvery > 0 && (s + 1) % evalEvery === 0) || s === steps - 1) {
      const recent = losses.slice(-sinceEval);
      const e = { step: s + 1, loss: recent.reduce((a, x) => a + x, 0) / recent.length, ...opts.evaluate() };
      evals.push(e);
      sinceEval = 0;
      opts.onEvaluation?.(e, s + 1 > WARMUP_STEPS ? (s + 1 - WARMUP_STEPS) / (trainMs / 1000) : undefined);
    }
  }
  const memoryAfter = kiln.memory();
  return {
    losses,
    evals,
    steps,
    stepsPerSec: steps > WARMUP_STEPS ? (steps - WARMUP_STEPS) / (trainMs / 1000) : NaN,
    warmupSeconds: warmupMs / 1000,
    memoryBefore: memoryBefore ?? memoryAfter,
    memoryAfter,
  };
}

/** The steps/s suffix of a progress line ('' during the warm-up). */
export function rateSuffix(stepsPerSec: number | undefined, digits: number): string {
  return stepsPerSec === undefined ? '' : `  ${stepsPerSec.toFixed(digits)} steps/s`;
}
