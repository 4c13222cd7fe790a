// Measures a workload eager vs compiled: first calls, steady-state latency, warm-up and
// break-even, accuracy, compiler statistics and memory, per compiler backend.
//
// Method, per backend:
//  1. kiln.compiler.reset() (cold: no compiled entries, counters at zero), then setup() twice
//     with the same seed: one instance runs eagerly, the other through kiln.compile(fn).
//  2. `warmup + calls` rounds; each round calls the compiled variant, then the eager one
//     (round-robin, so load from other processes hits both alike). The compiled variant goes
//     first in round 1, so its first call is the process's first call of the workload: it
//     pays trace + compile + first run and also some one-time JIT warm-up of kiln's own code,
//     which makes the warm-up figure conservative (it counts against compiling).
//  3. Every call runs inside kiln.scope (inference also under kiln.noGrad) and is timed
//     with the scope's disposal, but without reading the outputs back, which happens after
//     each call for the accuracy check: the compiled output (or training loss) of round i
//     is compared with the eager one of round i. Training instances also compare their
//     parameters after the last round.
//  4. Steady state = the last `calls` rounds (median, p95). Per-call latencies of every
//     round are kept for the chart. kiln.stats() after the rounds gives graph breaks,
//     recompiles, fallbacks and the compile time; peak memory is measured around each call
//     with kiln.resetPeakMemory() / kiln.memory().peakBytes.
//  5. The in-process compile runs with the persistent cache off (its first call is the cold
//     one); then, unless `cacheCheck` is false, cache-check.ts times the first K calls in two
//     fresh processes on one temporary cache folder (cold, warm): what a restart costs once
//     the cache is configured.
// Then, once, on the first backend: with more than one production shape, shape-policies.ts
// runs a stream of calls over the shapes eagerly and per compile policy.

import * as os from 'node:os';
import * as kiln from '../api/kiln.js';
import { nativeUnavailableReason } from '../api/node.js';
import { checkInstance, resolveConfig, type LoadedWorkload } from './workload.js';
import { breakEven, withWarmCache, type BreakEven } from './verdict.js';
import { cacheConfig, checkCache, skippedCheck, type CacheCheck, type CacheConfig } from './cache-check.js';
import { measureShapePolicies, planShapeList, type DynamicShapes } from './shape-policies.js';
import { measureTrainingForms, type TrainingForms } from './train-forms.js';
import { dispose, fmt, gradsRelErr, relErr, round, shapeOf, speedupInterval, summarizeMs, timedCall, valuesRelErr, type CallResult } from './calls.js';

export { relErr, summarizeMs, speedupInterval } from './calls.js';

/** Compiler backends the advisor can measure today (CompileOptions.backend). */
export const KNOWN_BACKENDS = ['js', 'wasm', 'native', 'auto', 'eager'] as const;

/** The CPU backends that can run here (js always; wasm and native when available), the advisor's default. */
export function availableBackends(): string[] {
  return ['js', ...(kiln.wasmUnavailableReason() ? [] : ['wasm']), ...(nativeUnavailableReason() ? [] : ['native'])];
}

export interface MeasureOptions {
  /** steady-state calls timed per variant (default 30) */
  calls: number;
  /** calls before the steady state (still recorded per call; default 10) */
  warmup: number;
  seed: number;
  /** kiln.compile backends to measure (default ['js']) */
  backends: readonly string[];
  /** max relative error of outputs / losses (default 1e-3) */
  tolerance: number;
  /** max relative error of final parameters, relative to max(1, |p|) (default 1e-3) */
  paramTolerance: number;
  /** one of the workload's configs (default: its first) */
  config?: string;
  /**
   * input shapes seen in production (`--shapes`), replacing the workload's own list in the
   * report and the verdict
   */
  shapes?: readonly string[];
  /**
   * time the first calls in fresh processes with a cold and a warm persistent cache
   * (default true; `--no-cache-check` skips the two child processes)
   */
  cacheCheck: boolean;
  /** progress lines (default: none) */
  progress?: (line: string) => void;
}

export const DEFAULT_MEASURE: Omit<MeasureOptions, 'progress' | 'config' | 'shapes'> = { calls: 30, warmup: 10, seed: 20261130, backends: ['js'], tolerance: 1e-3, paramTolerance: 1e-3, cacheCheck: true };

export interface LatencySummary {
  firstCallMs: number;
  n: number;
  medianMs: number;
  p95Ms: number;
  minMs: number;
  meanMs: number;
  /** largest kiln.memory() growth during a steady-state call (bytes) */
  peakBytes: number;
  /** the same during the first call */
  firstCallPeakBytes: number;
}

export interface CompilerFacts {
  compiles: number;
  graphsCompiled: number;
  cacheHits: number;
  cacheMisses: number;
  segmentHits: number;
  eagerFallbacks: number;
  fallbackReasons: string[];
  fusionFallbacks: number;
  recompiles: { fn: string; reason: string }[];
  /** distinct breaks (reason + location), with how often each was hit */
  graphBreaks: { reason: string; location: string; hint: string; count: number }[];
  /** graphs of the last trace: ops, generated kernels, planned peak bytes */
  graphs: { ops: number; kernels: number | null; peakBytes: number | null }[];
  /** kiln.stats().compileTimeMs after the first call (trace + passes + codegen, without the first run) */
  compileTimeMsFirstCall: number;
  /** kiln.stats().compileTimeMs after all calls (every trace) */
  compileTimeMsTotal: number;
  /** 1-based compiled calls that traced (cacheMisses grew) */
  tracedCalls: number[];
}

export interface AccuracyResult {
  ok: boolean;
  compared: 'outputs' | 'losses';
  /** max over calls of max|compiled - eager| / max(max|eager|, 1e-6), per output */
  maxRelErr: number;
  /** 1-based call with the largest error (null when all are 0) */
  worstCall: number | null;
  tolerance: number;
  /**
   * training: gradients of the first step (identical parameters and inputs on both sides), max
   * over parameters of max|compiled - eager| / max(max|eager|, 1e-6); checked against paramTolerance
   */
  gradsMaxRelErr: number | null;
  /**
   * training, informational: parameters after the last step, max|compiled - eager| / max(1, max|eager|).
   * Not a pass/fail criterion: Adam's update m/(sqrt(v)+eps) turns float32 rounding differences
   * in near-zero gradients (summation order) into steps of up to lr, so runs drift apart even
   * when every gradient agrees; losses and first-step gradients are what is checked.
   */
  paramsMaxRelErr: number | null;
  paramTolerance: number;
  /** training with scalar losses: the losses per call */
  losses: { eager: number[]; compiled: number[] } | null;
  detail: string;
}

export interface BackendMeasurement {
  backend: string;
  status: 'ok' | 'failed';
  /** why the compiled variant failed (status 'failed') */
  error: string | null;
  eager: LatencySummary;
  compiled: LatencySummary & { planPeakBytes: number | null };
  /** eager median / compiled median */
  speedup: number;
  /**
   * 95% bootstrap interval of the speedup (percentiles of the ratio of medians over 1000
   * resamples of the steady-state calls, seeded): when it contains 1, the timings are too
   * noisy to tell whether compiled is faster
   */
  speedupInterval: [number, number] | null;
  breakEven: BreakEven;
  /** first compiled call - first eager call (ms) */
  firstCallExtraMs: number;
  perCall: { eagerMs: number[]; compiledMs: number[] };
  accuracy: AccuracyResult;
  compiler: CompilerFacts;
  /** first calls of a restarted process, cold and warm persistent cache (cache-check.ts) */
  cacheCheck: CacheCheck & {
    /** the break-even with the warm-cache warm-up (W less max(0, savedMs)); null without a hit */
    breakEven: BreakEven | null;
  };
}

/** A measurement the issue asks for that this run did not make, and why. */
export interface NotMeasured {
  id: 'warm-cache-first-call' | 'dynamic-shape-policies';
  what: string;
  reason: string;
}

/** What this run did not measure: the warm-cache restart when no backend's check ran, shape policies without a shape list. */
export function notMeasured(checks: readonly CacheCheck[], shapes: readonly string[] | null, dyn: DynamicShapes | null): NotMeasured[] {
  const out: NotMeasured[] = [];
  if (!checks.some((c) => c.status === 'ok')) {
    out.push({
      id: 'warm-cache-first-call',
      what: 'first-call time with a warm persistent cache (process restart)',
      reason: checks.map((c) => c.reason).find((r) => r) ?? 'no backend measured',
    });
  }
  if (dyn === null || dyn.status !== 'ok') {
    const distinct = shapes ? new Set(shapes).size : 0;
    out.push({
      id: 'dynamic-shape-policies',
      what: 'compiles and steady time per shape policy (static, automatic dynamic, buckets)',
      reason: dyn?.reason ??
        (distinct > 1 ? 'not run: the compiled variant failed on every backend' : `the workload declares ${distinct === 0 ? 'no input shapes' : 'one input shape'}: give the shapes seen in production (--shapes 'x[32,784];x[64,784]', or the workload's shapes) to compare the policies`),
    });
  }
  return out;
}

export interface Measurement {
  workload: { name: string; kind: 'training' | 'inference'; description: string | null; source: string; config: string | null; shapes: string[] | null; inputShapes: string[] };
  options: Omit<MeasureOptions, 'progress' | 'config' | 'shapes'>;
  machine: { node: string; platform: string; arch: string; cpuModel: string; logicalCpus: number; kilnThreads: string | null; loadAvg: number[] };
  backends: BackendMeasurement[];
  /** the backend the verdict is about (pickPrimary); the shape policies ran on it */
  primaryBackend: string;
  /** the persistent cache this process's environment configures (the checklist's 'cache' item) */
  cacheConfig: CacheConfig;
  /**
   * training: kiln.compile(model) in an ordinary loop beside the whole-step compile, on the
   * verdict's backend (null for inference)
   */
  trainingForms: TrainingForms | null;
  /** shape policies over the production shapes (more than one distinct), on the primary backend */
  dynamicShapes: DynamicShapes | null;
  notMeasured: NotMeasured[];
  totalMs: number;
}

// ---------------------------------------------------------------- one backend

async function measureBackend(lw: LoadedWorkload, backend: string, o: MeasureOptions): Promise<{ m: BackendMeasurement; inputShapes: string[] }> {
  const w = lw.workload;
  const say = o.progress ?? (() => {});
  const inference = w.kind === 'inference';
  kiln.compiler.reset();
  const config = resolveConfig(w, o.config);
  const setupOpts = config === undefined ? { seed: o.seed } : { seed: o.seed, config };
  const eagerInst = checkInstance(await w.setup(setupOpts), w.name);
  const compInst = checkInstance(await w.setup(setupOpts), w.name);
  const inputShapes = eagerInst.inputs.map(shapeOf);
  // cache: false: this process's first call must be the cold one even if the workload imported
  // 'kilnjs/node' (which registers the disk cache); cache-check.ts measures the warm restart
  const compiled = kiln.compile(compInst.fn as (...a: kiln.Tensor[]) => unknown, { backend, name: w.name, cache: false, ...(compInst.captures ? { captures: { ...compInst.captures } } : {}) });
  const rounds = o.warmup + o.calls;
  const eMs: number[] = [], cMs: number[] = [], ePeak: number[] = [], cPeak: number[] = [];
  const traced: number[] = [];
  const eLoss: number[] = [], cLoss: number[] = [];
  let scalarLosses = !inference;
  let maxRel = 0, worst: number | null = null;
  let error: string | null = null;
  let compileFirst = 0;
  let gradsRel: number | null = null;
  const started = performance.now();
  let lastProgress = started;

  for (let i = 1; i <= rounds; i++) {
    // compiled first: its first call is the cold one
    let c: CallResult | null = null;
    if (error === null) {
      const misses = kiln.stats().cacheMisses;
      try {
        c = timedCall(() => compiled(...compInst.inputs), inference);
      } catch (e) {
        error = `${(e as Error).name}: ${(e as Error).message}`;
        say(`  ${backend}: the compiled call ${i} threw: ${error}`);
      }
      if (c) {
        if (kiln.stats().cacheMisses > misses) traced.push(i);
        if (i === 1) compileFirst = kiln.stats().compileTimeMs;
      }
    }
    let e: CallResult;
    try {
      e = timedCall(() => eagerInst.fn(...eagerInst.inputs), inference);
    } catch (err) {
      dispose(eagerInst);
      dispose(compInst);
      throw new Error(`workload '${w.name}': the eager call ${i} threw (the workload itself is broken): ${(err as Error).message}`, { cause: err });
    }
    eMs.push(e.ms);
    ePeak.push(e.peakBytes);
    if (c) {
      cMs.push(c.ms);
      cPeak.push(c.peakBytes);
      const r = valuesRelErr(c.values, e.values);
      if (r > maxRel || (Number.isNaN(r) && !Number.isNaN(maxRel))) {
        maxRel = r;
        worst = i;
      }
      if (scalarLosses && c.values.length === 1 && c.values[0]!.length === 1 && e.values[0]!.length === 1) {
        cLoss.push(c.values[0]![0]!);
        eLoss.push(e.values[0]![0]!);
      } else scalarLosses = false;
    }
    if (i === 1 && c && !inference) gradsRel = gradsRelErr(compInst, eagerInst);
    if (i === 1) {
      say(`  ${backend}: call 1: compiled ${c ? fmt(c.ms) : 'failed'} (trace + compile ${fmt(compileFirst)} + first run), eager ${fmt(e.ms)}`);
    } else if (performance.now() - lastProgress > 1000 || i === o.warmup || i === rounds) {
      lastProgress = performance.now();
      const recentE = summarizeMs(eMs.slice(-10)).medianMs, recentC = summarizeMs(cMs.slice(-10)).medianMs;
      say(`  ${backend}: call ${i}/${rounds}${i <= o.warmup ? ' (warm-up)' : ''}: eager ${fmt(recentE)}, compiled ${cMs.length ? fmt(recentC) : 'n/a'} (recent median)`);
    }
  }

  // parameters after the last step (training)
  let paramsRel: number | null = null;
  if (!inference && error === null && eagerInst.params && compInst.params) {
    const pe = eagerInst.params, pc = compInst.params;
    if (pe.length !== pc.length) paramsRel = Infinity;
    else {
      paramsRel = 0;
      for (let k = 0; k < pe.length; k++) {
        const a = Float64Array.from(pc[k]!.dataSync() as ArrayLike<number>), b = Float64Array.from(pe[k]!.dataSync() as ArrayLike<number>);
        paramsRel = Math.max(paramsRel, relErr(a, b, 1));
      }
    }
  }

  const st = kiln.stats();
  const report = (compiled as unknown as { compiled?: { report?: { graphs: { ops: number; kernels?: number; peakBytes?: number }[] } | null } }).compiled?.report;
  const graphs = (report?.graphs ?? []).map((g) => ({ ops: g.ops, kernels: g.kernels ?? null, peakBytes: g.peakBytes ?? null }));
  const planPeaks = graphs.map((g) => g.peakBytes).filter((x): x is number => x !== null);
  const breaks = new Map<string, { reason: string; location: string; hint: string; count: number }>();
  for (const b of st.graphBreaks) {
    const key = `${b.location}\u0000${b.reason}`;
    const prev = breaks.get(key);
    if (prev) prev.count++;
    else breaks.set(key, { reason: b.reason, location: b.location, hint: b.hint, count: 1 });
  }
  kiln.compiler.reset();
  dispose(eagerInst);
  dispose(compInst);

  const warm = o.warmup;
  const steadyE = eMs.slice(warm), steadyC = cMs.slice(warm);
  const se = summarizeMs(steadyE.length ? steadyE : eMs), sc = summarizeMs(steadyC.length ? steadyC : cMs);
  const peakOf = (xs: number[]) => (xs.length > warm ? Math.max(...xs.slice(warm)) : xs.length ? Math.max(...xs) : 0);
  const inWarm = traced.filter((t) => t <= Math.max(1, warm));
  const k = inWarm.length ? Math.max(...inWarm) : 1;
  const be = breakEven({ eagerPerCallMs: eMs, compiledPerCallMs: cMs, warmupCalls: k, eagerMedianMs: se.medianMs, compiledMedianMs: error === null ? sc.medianMs : NaN });
  const accOk = error === null && maxRel <= o.tolerance && (gradsRel === null || gradsRel <= o.paramTolerance);
  const compared = inference ? 'outputs' : 'losses';
  const accuracy: AccuracyResult = {
    ok: accOk,
    compared,
    maxRelErr: error === null ? maxRel : Infinity,
    worstCall: maxRel > 0 ? worst : null,
    tolerance: o.tolerance,
    gradsMaxRelErr: gradsRel,
    paramsMaxRelErr: paramsRel,
    paramTolerance: o.paramTolerance,
    losses: scalarLosses && eLoss.length ? { eager: eLoss, compiled: cLoss } : null,
    detail: error !== null
      ? `not compared: the compiled call failed (${error})`
      : `${compared} of ${cMs.length} calls: max rel. error ${maxRel.toExponential(2)}${worst !== null && maxRel > 0 ? ` (call ${worst})` : ''}` +
        (gradsRel !== null ? `; first-step gradients: ${gradsRel.toExponential(2)}` : '') +
        (paramsRel !== null ? `; parameter drift after ${cMs.length} steps (informational): ${paramsRel.toExponential(2)}` : ''),
  };
  // a restarted process, cold then warm cache: the first K calls, as in this process
  let check: CacheCheck;
  if (!o.cacheCheck) check = skippedCheck('skipped (--no-cache-check)', be.warmupCalls);
  else if (error !== null) check = skippedCheck('the compiled variant failed in this process', be.warmupCalls);
  else check = await checkCache(lw, { seed: o.seed, backend, calls: be.warmupCalls, progress: say, ...(config !== undefined ? { config } : {}) });
  const warmBe = check.status === 'ok' && check.hit && check.savedMs !== null ? withWarmCache(be, check.savedMs) : null;
  const m: BackendMeasurement = {
    backend,
    status: error === null ? 'ok' : 'failed',
    error,
    eager: { firstCallMs: round(eMs[0]!), n: se.n, medianMs: round(se.medianMs), p95Ms: round(se.p95Ms), minMs: round(se.minMs), meanMs: round(se.meanMs), peakBytes: peakOf(ePeak), firstCallPeakBytes: ePeak[0] ?? 0 },
    compiled: {
      firstCallMs: round(cMs[0] ?? NaN),
      n: sc.n, medianMs: round(sc.medianMs), p95Ms: round(sc.p95Ms), minMs: round(sc.minMs), meanMs: round(sc.meanMs),
      peakBytes: peakOf(cPeak), firstCallPeakBytes: cPeak[0] ?? 0,
      planPeakBytes: planPeaks.length ? Math.max(...planPeaks) : null,
    },
    speedup: error === null ? round(se.medianMs / sc.medianMs) : 0,
    speedupInterval: error === null ? (speedupInterval(steadyE, steadyC)?.map((x) => round(x)) as [number, number] | undefined) ?? null : null,
    breakEven: { ...be, eagerWarmupMs: round(be.eagerWarmupMs), compiledWarmupMs: round(be.compiledWarmupMs), extraWarmupMs: round(be.extraWarmupMs), perCallSavingMs: round(be.perCallSavingMs) },
    firstCallExtraMs: round((cMs[0] ?? NaN) - eMs[0]!),
    perCall: { eagerMs: eMs.map((x) => round(x)), compiledMs: cMs.map((x) => round(x)) },
    accuracy,
    compiler: {
      compiles: st.compiles,
      graphsCompiled: st.graphsCompiled,
      cacheHits: st.cacheHits,
      cacheMisses: st.cacheMisses,
      segmentHits: st.segmentHits,
      eagerFallbacks: st.eagerFallbacks,
      fallbackReasons: st.fallbackReasons,
      fusionFallbacks: st.fusionFallbacks,
      recompiles: st.recompiles.map((r) => ({ fn: r.fn, reason: r.reason })),
      graphBreaks: [...breaks.values()],
      graphs,
      compileTimeMsFirstCall: round(compileFirst),
      compileTimeMsTotal: round(st.compileTimeMs),
      tracedCalls: traced,
    },
    cacheCheck: { ...check, breakEven: warmBe && { ...warmBe, eagerWarmupMs: round(warmBe.eagerWarmupMs), compiledWarmupMs: round(warmBe.compiledWarmupMs), extraWarmupMs: round(warmBe.extraWarmupMs), perCallSavingMs: round(warmBe.perCallSavingMs) } },
  };
  say(`  ${backend}: done in ${fmt(performance.now() - started)}: eager ${fmt(se.medianMs)}, compiled ${error === null ? fmt(sc.medianMs) : 'failed'} (median of ${se.n})`);
  return { m, inputShapes };
}

// ---------------------------------------------------------------- all backends

/**
 * The backend the verdict is about: the fastest compiled steady state among the backends that
 * ran and passed the accuracy check (the first measured one when none did, so its problems are
 * what the verdict reports).
 */
export function pickPrimary<B extends { status: string; accuracy: { ok: boolean }; compiled: { medianMs: number } }>(bs: readonly B[]): B | undefined {
  const good = bs.filter((b) => b.status === 'ok' && b.accuracy.ok);
  return good.length ? good.reduce((a, b) => (b.compiled.medianMs < a.compiled.medianMs ? b : a)) : bs[0];
}

export async function measure(lw: LoadedWorkload, opts: Partial<MeasureOptions> = {}): Promise<Measurement> {
  const o: MeasureOptions = { ...DEFAULT_MEASURE, ...opts };
  if (!(Number.isInteger(o.calls) && o.calls >= 1)) throw new Error(`calls must be a positive integer, got ${o.calls}`);
  if (!(Number.isInteger(o.warmup) && o.warmup >= 1)) throw new Error(`warmup must be an integer >= 1, got ${o.warmup}`);
  for (const b of o.backends) {
    if (!(KNOWN_BACKENDS as readonly string[]).includes(b)) throw new Error(`backend '${b}' is not available to the advisor (have: ${KNOWN_BACKENDS.join(', ')})`);
  }
  if (o.backends.length === 0) throw new Error('no backend to measure');
  const w = lw.workload;
  const config = resolveConfig(w, o.config) ?? null;
  const say = o.progress ?? (() => {});
  const t0 = performance.now();
  // the production shapes are checked against the workload's inputs before anything is timed
  const shapes = o.shapes ?? w.shapes;
  const distinct = shapes ? [...new Set(shapes)] : [];
  const plan = distinct.length ? await planShapeList(lw, distinct, { seed: o.seed, ...(config !== null ? { config } : {}) }) : null;
  say(`kiln advise: ${w.name}${config !== null ? ` (config ${config})` : ''} (${w.kind}, ${lw.source}): ${o.warmup} warm-up + ${o.calls} timed calls per variant, seed ${o.seed}`);
  const backends: BackendMeasurement[] = [];
  let inputShapes: string[] = [];
  for (const b of o.backends) {
    const r = await measureBackend(lw, b, o);
    backends.push(r.m);
    inputShapes = r.inputShapes;
  }
  const { progress: _p, config: _c, shapes: _s, ...options } = o;
  // the verdict's backend, and the shape policies measured on it: every figure of the verdict
  // comes from the backend (and policy) it recommends
  const primary = pickPrimary(backends)!;
  let dynamicShapes: DynamicShapes | null = null;
  if (plan && distinct.length > 1 && primary.status === 'ok') {
    dynamicShapes = await measureShapePolicies(lw, distinct, plan, { backend: primary.backend, seed: o.seed, calls: o.calls, tolerance: o.tolerance, progress: say, ...(config !== null ? { config } : {}) });
  }
  const trainingForms = w.kind === 'training' && primary.status === 'ok'
    ? await measureTrainingForms(lw, { backend: primary.backend, seed: o.seed, calls: o.calls, warmup: o.warmup, tolerance: o.tolerance, progress: say, ...(config !== null ? { config } : {}) })
    : null;
  return {
    workload: { name: w.name, kind: w.kind, description: w.description ?? null, source: lw.source, config, shapes: shapes ? [...shapes] : null, inputShapes },
    options: { ...options, backends: [...o.backends] },
    machine: {
      node: process.version,
      platform: process.platform,
      arch: process.arch,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      logicalCpus: os.cpus().length,
      kilnThreads: process.env.KILN_THREADS ?? null,
      loadAvg: os.loadavg().map((x) => Math.round(x * 100) / 100),
    },
    backends,
    primaryBackend: primary.backend,
    cacheConfig: cacheConfig(),
    dynamicShapes,
    trainingForms,
    notMeasured: notMeasured(backends.map((b) => b.cacheCheck), shapes ?? null, dynamicShapes),
    totalMs: round(performance.now() - t0, 1),
  };
}
