// The two ways to compile a training step, measured side by side on one backend: the whole
// step (zeroGrad, forward, loss, backward, optimizer) in one compiled closure, and
// `kiln.compile(model)` in the user's unchanged loop, where forward and backward are compiled
// (AOTAutograd) and the loss, the backward() call and the optimizer step run eagerly around them.
//
// Method: three instances from one seed (eager, whole step, compiled module), `warmup + calls`
// rounds calling each once per round (round-robin, so load from other processes hits all
// alike), every call inside kiln.scope and timed with its disposal. The compiled module's losses
// are compared with eager's round by round, and its calls are checked to have run compiled
// (no node-by-node replay, no fallback: the kiln.stats() deltas around its calls).

import * as kiln from '../api/kiln.js';
import { checkInstance, type LoadedWorkload, type WorkloadInstance } from './workload.js';
import { dispose, fmt, round, summarizeMs, timedCall, valuesRelErr } from './calls.js';

export type TrainForm = 'whole step' | 'compiled module';

/**
 * The compiled module is recommended while it costs at most this much more than the whole step
 * per call: the loop stays the user's own (any optimizer, eager loss code, debuggable), which is
 * worth a little speed; beyond it the whole step's saving is worth rewriting the loop.
 */
export const MODULE_FORM_MAX_RATIO = 1.15;

export interface TrainFormsOptions {
  backend: string;
  seed: number;
  config?: string;
  calls: number;
  warmup: number;
  tolerance: number;
  progress?: (line: string) => void;
}

export interface TrainingForms {
  status: 'ok' | 'failed' | 'not measured';
  /** why it failed or was not measured */
  reason: string | null;
  backend: string;
  /** steady-state medians (ms) of one step */
  eagerMs: number;
  wholeStepMs: number;
  moduleMs: number;
  /** moduleMs / wholeStepMs */
  moduleVsWholeStep: number;
  /** eagerMs / moduleMs */
  moduleSpeedup: number;
  /** compiled module's losses vs eager's, max over rounds (relative) */
  moduleLossRelErr: number;
  /** kiln.stats() growth during the compiled module's calls */
  moduleCompiler: { interpretedReplays: number; interpretedReasons: string[]; eagerFallbacks: number; fusionFallbacks: number; aotCompiles: number };
  recommended: TrainForm;
  why: string;
}

const notMeasured = (backend: string, reason: string): TrainingForms => ({
  status: 'not measured', reason, backend, eagerMs: NaN, wholeStepMs: NaN, moduleMs: NaN, moduleVsWholeStep: NaN, moduleSpeedup: NaN, moduleLossRelErr: NaN,
  moduleCompiler: { interpretedReplays: 0, interpretedReasons: [], eagerFallbacks: 0, fusionFallbacks: 0, aotCompiles: 0 },
  recommended: 'whole step', why: reason,
});

/** Which form to use, and why, from the measured figures. */
export function recommendForm(f: Pick<TrainingForms, 'moduleVsWholeStep' | 'moduleLossRelErr' | 'moduleCompiler'>, tolerance: number): { recommended: TrainForm; why: string } {
  const c = f.moduleCompiler;
  if (!(f.moduleLossRelErr <= tolerance)) return { recommended: 'whole step', why: `the compiled module's losses differ from eager's (max rel. error ${f.moduleLossRelErr.toExponential(2)} > ${tolerance.toExponential(0)})` };
  if (c.interpretedReplays > 0 || c.eagerFallbacks > 0 || c.fusionFallbacks > 0) {
    const what = [c.interpretedReplays ? `${c.interpretedReplays} node-by-node replays (${c.interpretedReasons[0] ?? 'no reason recorded'})` : '', c.eagerFallbacks ? `${c.eagerFallbacks} eager fallbacks` : '', c.fusionFallbacks ? `${c.fusionFallbacks} fusion fallbacks` : ''].filter(Boolean).join(', ');
    return { recommended: 'whole step', why: `the compiled module did not run fully compiled: ${what}` };
  }
  const pct = Math.round((f.moduleVsWholeStep - 1) * 100);
  if (f.moduleVsWholeStep <= MODULE_FORM_MAX_RATIO) {
    return { recommended: 'compiled module', why: `kiln.compile(model) in the unchanged loop is within ${Math.round((MODULE_FORM_MAX_RATIO - 1) * 100)}% of the whole step (${pct >= 0 ? `${pct}% slower` : `${-pct}% faster`}): keep the loop as it is` };
  }
  return { recommended: 'whole step', why: `the whole step compiled as one program is ${(f.moduleVsWholeStep).toFixed(2)}x faster than kiln.compile(model) in the loop (the optimizer step and the loss run eagerly there): compile the step` };
}

type Variant = { inst: WorkloadInstance; call: () => unknown; ms: number[]; values: Float64Array[][] };

/** Measures both forms (and eager) on one backend; 'not measured' when the workload has no trainLoop. */
export async function measureTrainingForms(lw: LoadedWorkload, o: TrainFormsOptions): Promise<TrainingForms> {
  const w = lw.workload;
  if (w.kind !== 'training') return notMeasured(o.backend, 'an inference workload has one form');
  const setupOpts = o.config === undefined ? { seed: o.seed } : { seed: o.seed, config: o.config };
  const say = o.progress ?? (() => {});
  kiln.compiler.reset();
  const insts = [checkInstance(await w.setup(setupOpts), w.name), checkInstance(await w.setup(setupOpts), w.name), checkInstance(await w.setup(setupOpts), w.name)] as const;
  const loop = insts[2].trainLoop;
  if (!loop) {
    insts.forEach(dispose);
    return notMeasured(o.backend, "the workload's setup() returns no trainLoop ({ module, step(forward, ...inputs) }): give one to compare kiln.compile(model) in an ordinary loop with the whole-step compile");
  }
  const whole = kiln.compile(insts[1].fn as (...a: kiln.Tensor[]) => unknown, { backend: o.backend, name: `${w.name} (whole step)`, cache: false });
  const cm = kiln.compile(loop.module, { backend: o.backend, cache: false }) as unknown as (...xs: kiln.Tensor[]) => kiln.Tensor;
  const v: Variant[] = [
    { inst: insts[0], call: () => insts[0].fn(...insts[0].inputs), ms: [], values: [] },
    { inst: insts[1], call: () => whole(...insts[1].inputs), ms: [], values: [] },
    { inst: insts[2], call: () => loop.step(cm, ...insts[2].inputs), ms: [], values: [] },
  ];
  const grown = { interpretedReplays: 0, eagerFallbacks: 0, fusionFallbacks: 0, aotCompiles: 0 };
  const reasons = new Set<string>();
  try {
    for (let i = 0; i < o.warmup + o.calls; i++) {
      for (const [k, x] of v.entries()) {
        const before = k === 2 ? kiln.stats() : null;
        const r = timedCall(x.call, false);
        if (before) {
          const after = kiln.stats();
          for (const key of Object.keys(grown) as (keyof typeof grown)[]) grown[key] += after[key] - before[key];
          after.interpretedReasons.forEach((s) => reasons.add(s));
        }
        x.ms.push(r.ms);
        x.values.push(r.values);
      }
    }
  } catch (e) {
    return { ...notMeasured(o.backend, `${(e as Error).name}: ${(e as Error).message}`), status: 'failed' };
  } finally {
    kiln.compiler.reset();
    insts.forEach(dispose);
  }
  const median = (x: Variant): number => summarizeMs(x.ms.slice(o.warmup)).medianMs;
  const [eagerMs, wholeStepMs, moduleMs] = v.map(median) as [number, number, number];
  const moduleLossRelErr = Math.max(...v[2]!.values.map((vals, i) => valuesRelErr(vals, v[0]!.values[i]!)));
  const figures = {
    moduleVsWholeStep: round(moduleMs / wholeStepMs),
    moduleLossRelErr,
    moduleCompiler: { ...grown, interpretedReasons: [...reasons] },
  };
  say(`  training forms (${o.backend}): eager ${fmt(eagerMs)}, whole step ${fmt(wholeStepMs)}, kiln.compile(model) in the loop ${fmt(moduleMs)} (median of ${o.calls})`);
  return {
    status: 'ok', reason: null, backend: o.backend,
    eagerMs: round(eagerMs), wholeStepMs: round(wholeStepMs), moduleMs: round(moduleMs),
    moduleSpeedup: round(eagerMs / moduleMs),
    ...figures,
    ...recommendForm(figures, o.tolerance),
  };
}

/** The training-forms lines of the terminal summary. */
export function trainingFormLines(f: TrainingForms): string[] {
  if (f.status !== 'ok') return [`  training forms: ${f.status === 'failed' ? 'FAILED' : 'not measured'}: ${f.reason}`];
  const c = f.moduleCompiler;
  return [
    `  training forms (${f.backend}, median step): eager ${fmt(f.eagerMs)}, whole step compiled ${fmt(f.wholeStepMs)}, kiln.compile(model) in the loop ${fmt(f.moduleMs)} (${f.moduleSpeedup.toFixed(2)}x eager, ${f.moduleVsWholeStep.toFixed(2)}x the whole step)`,
    `    compiled module: losses vs eager ${f.moduleLossRelErr.toExponential(2)}, ${c.aotCompiles} forward/backward compile(s), ${c.interpretedReplays} node-by-node replays, ${c.eagerFallbacks} eager fallbacks, ${c.fusionFallbacks} fusion fallbacks`,
    `    use: ${f.recommended === 'compiled module' ? 'kiln.compile(model) in your loop' : 'kiln.compile(step), the whole step'}: ${f.why}`,
  ];
}
