// The advisor's report: measurement + usage -> projection, verdict and checklist, as a JSON
// document (docs/advisor-report.schema.json) and as a terminal summary.

import type { BackendMeasurement, Measurement } from './measure.js';
import type { CacheConfig } from './cache-check.js';
import type { DynamicShapes } from './shape-policies.js';
import { trainingFormLines, type TrainingForms } from './train-forms.js';
import {
  BREAK_EVEN_DEFINITION, breakEvenOfWarmup, checklist, decide, DEFAULT_THRESHOLDS, project,
  type CacheFacts, type CheckItem, type DynamicFacts, type Projection, type Usage, type VerdictInput, type VerdictResult, type VerdictThresholds,
} from './verdict.js';

export const REPORT_SCHEMA_VERSION = 3;

export interface AdvisorReport {
  schemaVersion: number;
  tool: 'kiln advise';
  generatedAt: string;
  command: string | null;
  workload: Measurement['workload'];
  machine: Measurement['machine'];
  options: Measurement['options'];
  usage: {
    callsPerDay: number;
    processLifetime: { calls: number | null; seconds: number | null };
    monthlyComputeCostUsd: number | null;
    engineerWeeks: number;
    engineerWeekCostUsd: number;
    amortizationMonths: number;
    /** defaults the user did not give */
    assumptions: string[];
  };
  /** the backend the verdict is about (the fastest accurate one; the shape policies ran on it) */
  primaryBackend: string;
  backends: BackendMeasurement[];
  /** the persistent cache this environment configures (folder, off, writable) */
  cacheConfig: CacheConfig;
  /** shape policies over the production shapes (null: fewer than two shapes, or not run) */
  dynamicShapes: DynamicShapes | null;
  /** training: kiln.compile(model) in an ordinary loop beside the whole-step compile (null: inference) */
  trainingForms: TrainingForms | null;
  breakEvenDefinition: string;
  projection: Projection;
  verdict: VerdictResult;
  checklist: CheckItem[];
  /** what the issue asks to measure that this build cannot yet (see measure.ts notMeasured) */
  notMeasured: Measurement['notMeasured'];
  measurementMs: number;
}

/** Finite numbers stay, NaN and +-Infinity become null (JSON has neither). */
function finiteOrNull<T>(x: T): T {
  return JSON.parse(JSON.stringify(x, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v))) as T;
}

/** The verdict's view of one backend's cache check, with the user's cache folder. */
export function cacheFacts(m: BackendMeasurement, config: CacheConfig): CacheFacts {
  const c = m.cacheCheck;
  return {
    status: c.status, reason: c.reason, calls: c.calls,
    coldMs: c.cold?.totalMs ?? null, warmMs: c.warm?.totalMs ?? null,
    hit: c.hit, hits: c.warm?.cache.hits ?? 0, traceSkips: c.warm?.cache.traceSkips ?? 0, coldWrites: c.cold?.cache.writes ?? 0, skipped: c.skipped,
    warmBreakEven: c.breakEven, config,
  };
}

export function dynamicFacts(d: DynamicShapes | null): DynamicFacts | null {
  if (!d) return null;
  const rec = d.policies.find((p) => p.policy === d.recommended);
  return { status: d.status, reason: d.reason, recommended: d.recommended, speedup: rec?.speedup ?? null, reasons: d.reasons };
}

/**
 * The recommended shape policy's figures over the production shape stream (per call: the mean
 * over the shapes; warm-up: the first pass), or null when no policy was recommended.
 */
export function policyFigures(d: DynamicShapes | null): Pick<VerdictInput, 'policy' | 'eagerMedianMs' | 'compiledMedianMs' | 'speedup' | 'speedupInterval' | 'breakEven' | 'firstCallExtraMs' | 'compileTimeMs'> | null {
  if (!d || d.status !== 'ok' || !d.recommended) return null;
  const rec = d.policies.find((p) => p.policy === d.recommended), eager = d.policies.find((p) => p.policy === 'eager');
  if (!rec || !eager || rec.steadyMs === null || eager.steadyMs === null) return null;
  const n = d.shapes.length;
  return {
    policy: { name: d.recommended, options: rec.options, shapes: n },
    eagerMedianMs: eager.steadyMs,
    compiledMedianMs: rec.steadyMs,
    speedup: eager.steadyMs / rec.steadyMs,
    speedupInterval: null,
    breakEven: breakEvenOfWarmup(n, eager.firstPassMs, rec.firstPassMs, eager.steadyMs, rec.steadyMs),
    firstCallExtraMs: rec.firstCallMs - eager.firstCallMs,
    compileTimeMs: rec.compileTimeMs,
  };
}

/**
 * The verdict's figures for backend `m`: its single-shape measurement, or, where shape policies
 * ran on it and one is recommended, that policy's figures over the shape stream (then the warm
 * restart, measured at one shape, does not enter the break-even).
 */
export function verdictInput(
  m: BackendMeasurement, kind: 'training' | 'inference', productionShapes: readonly string[] | null,
  extra: { cacheConfig?: CacheConfig; dynamicShapes?: DynamicShapes | null; trainingForms?: TrainingForms | null } = {},
): VerdictInput {
  const tf = extra.trainingForms;
  const d = extra.dynamicShapes ?? null;
  const policy = d && d.backend === m.backend ? policyFigures(d) : null;
  const cache = m.cacheCheck && extra.cacheConfig ? cacheFacts(m, extra.cacheConfig) : null;
  return {
    kind,
    backend: m.backend,
    policy: null,
    eagerMedianMs: m.eager.medianMs,
    compiledMedianMs: m.compiled.medianMs,
    speedup: m.speedup,
    speedupInterval: m.speedupInterval,
    breakEven: m.breakEven,
    firstCallExtraMs: m.firstCallExtraMs,
    compileTimeMs: m.compiler.compileTimeMsTotal,
    graphBreaks: m.compiler.graphBreaks,
    accuracy: {
      ok: m.accuracy.ok,
      compared: m.accuracy.compared,
      maxRelErr: m.accuracy.maxRelErr,
      tolerance: m.accuracy.tolerance,
      gradsMaxRelErr: m.accuracy.gradsMaxRelErr,
      paramsMaxRelErr: m.accuracy.paramsMaxRelErr,
      paramTolerance: m.accuracy.paramTolerance,
    },
    replays: m.compiler.cacheHits + m.compiler.segmentHits,
    eagerFallbacks: m.compiler.eagerFallbacks,
    fallbackReasons: m.compiler.fallbackReasons,
    fusionFallbacks: m.compiler.fusionFallbacks,
    recompileReasons: m.compiler.recompiles.map((r) => r.reason),
    productionShapes,
    error: m.error,
    cache: cache && policy ? { ...cache, warmBreakEven: null } : cache,
    dynamic: dynamicFacts(d),
    trainingForm: tf && tf.status === 'ok' && tf.backend === m.backend ? { recommended: tf.recommended, why: tf.why } : null,
    ...policy,
  };
}

export function buildReport(meas: Measurement, usage: Usage, opts: { assumptions?: string[]; command?: string | null; thresholds?: VerdictThresholds } = {}): AdvisorReport {
  const primary = meas.backends.find((b) => b.backend === meas.primaryBackend);
  if (!primary) throw new Error('no backend was measured');
  const vi = verdictInput(primary, meas.workload.kind, meas.workload.shapes, { cacheConfig: meas.cacheConfig, dynamicShapes: meas.dynamicShapes, trainingForms: meas.trainingForms });
  // the projection uses exactly the verdict's figures (backend, and shape policy where measured)
  const projection = project({ eagerMedianMs: vi.eagerMedianMs, compiledMedianMs: vi.compiledMedianMs, breakEven: vi.breakEven, warmCacheBreakEven: vi.cache?.warmBreakEven ?? null }, usage);
  const verdict = decide(vi, projection, { ...DEFAULT_THRESHOLDS, tolerance: primary.accuracy.tolerance, ...opts.thresholds });
  const lt = usage.processLifetime;
  return finiteOrNull({
    schemaVersion: REPORT_SCHEMA_VERSION,
    tool: 'kiln advise',
    generatedAt: new Date().toISOString(),
    command: opts.command ?? null,
    workload: meas.workload,
    machine: meas.machine,
    options: meas.options,
    usage: {
      callsPerDay: usage.callsPerDay,
      processLifetime: { calls: 'calls' in lt ? lt.calls : null, seconds: 'seconds' in lt ? lt.seconds : null },
      monthlyComputeCostUsd: usage.monthlyComputeCostUsd,
      engineerWeeks: usage.engineerWeeks,
      engineerWeekCostUsd: usage.engineerWeekCostUsd,
      amortizationMonths: usage.amortizationMonths,
      assumptions: opts.assumptions ?? [],
    },
    primaryBackend: primary.backend,
    backends: meas.backends,
    cacheConfig: meas.cacheConfig,
    dynamicShapes: meas.dynamicShapes,
    trainingForms: meas.trainingForms,
    breakEvenDefinition: BREAK_EVEN_DEFINITION,
    projection,
    verdict,
    checklist: checklist(vi),
    notMeasured: meas.notMeasured,
    measurementMs: meas.totalMs,
  } satisfies AdvisorReport);
}

/** Whether compiled is faster on the primary backend (for --fail-if-slower). */
export function compiledIsFaster(r: AdvisorReport): boolean {
  const b = r.backends.find((x) => x.backend === r.primaryBackend);
  return !!b && b.status === 'ok' && typeof b.speedup === 'number' && b.speedup > 1;
}

// ---------------------------------------------------------------- terminal

const fmtMs = (x: number | null): string => (x === null || !Number.isFinite(x) ? 'n/a' : x >= 100 ? `${x.toFixed(0)} ms` : x >= 1 ? `${x.toFixed(2)} ms` : `${x.toFixed(3)} ms`);
const fmtBytes = (b: number | null): string => (b === null ? 'n/a' : b >= 2 ** 20 ? `${(b / 2 ** 20).toFixed(1)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${b} B`);
const fmtUsd = (x: number | null): string => (x === null ? 'n/a' : `${x < 0 ? '-' : ''}$${Math.abs(x).toLocaleString('en-US', { maximumFractionDigits: 0 })}`);
const fmtNum = (x: number | null): string => (x === null ? 'never' : x.toLocaleString('en-US', { maximumFractionDigits: 2 }));
const sci = (x: number | null): string => (x === null ? 'n/a (not comparable)' : x.toExponential(2));

/** The summary printed at the end of `kilnjs advise`. */
export function formatSummary(r: AdvisorReport): string {
  const L: string[] = [];
  const w = r.workload;
  L.push('');
  L.push(`kiln advise: ${w.name} (${w.kind}) from ${w.source}`);
  if (w.description) L.push(`  ${w.description}`);
  L.push(`  inputs: ${w.inputShapes.join(', ')}; ${r.options.warmup} warm-up + ${r.options.calls} timed calls per variant; ${r.machine.cpuModel}, ${r.machine.logicalCpus} CPUs, load ${r.machine.loadAvg.join(' ')}`);
  if ((r.machine.loadAvg[0] ?? 0) > r.machine.logicalCpus) L.push(`  note: the machine is busy (load ${r.machine.loadAvg[0]} on ${r.machine.logicalCpus} CPUs): timings are noisy`);
  L.push('');
  L.push('  backend  eager med/p95         compiled med/p95      speedup  1st eager  1st compiled  compile   break-even');
  for (const b of r.backends) {
    if (b.status !== 'ok') {
      L.push(`  ${b.backend.padEnd(7)}  ${`${fmtMs(b.eager.medianMs)} / ${fmtMs(b.eager.p95Ms)}`.padEnd(20)}  FAILED: ${b.error}`);
      continue;
    }
    L.push(
      `  ${b.backend.padEnd(7)}  ${`${fmtMs(b.eager.medianMs)} / ${fmtMs(b.eager.p95Ms)}`.padEnd(20)}  ${`${fmtMs(b.compiled.medianMs)} / ${fmtMs(b.compiled.p95Ms)}`.padEnd(20)}  ` +
        `${`${b.speedup.toFixed(2)}x`.padEnd(7)}  ${fmtMs(b.eager.firstCallMs).padEnd(9)}  ${fmtMs(b.compiled.firstCallMs).padEnd(12)}  ${fmtMs(b.compiler.compileTimeMsTotal).padEnd(8)}  ${b.breakEven.calls === null ? 'never' : `${fmtNum(b.breakEven.calls)} calls`}`,
    );
  }
  const p = r.backends.find((b) => b.backend === r.primaryBackend)!;
  L.push('');
  if (r.backends.length > 1) L.push(`  verdict backend: ${p.backend} (the fastest compiled steady state with accurate results)`);
  L.push(`  warm-up: ${p.breakEven.warmupCalls} call(s) traced; they took ${fmtMs(p.breakEven.compiledWarmupMs)} compiled vs ${fmtMs(p.breakEven.eagerWarmupMs)} eager: ${fmtMs(p.breakEven.extraWarmupMs)} extra per process start`);
  for (const b of r.backends) L.push(`  ${restartLine(b)}`);
  if (p.speedupInterval) L.push(`  speedup ${p.speedup.toFixed(2)}x, 95% interval ${p.speedupInterval[0].toFixed(2)}x-${p.speedupInterval[1].toFixed(2)}x (bootstrap over the timed calls)${p.speedupInterval[0] <= 1 && p.speedupInterval[1] >= 1 ? ': NOISY, compiled may or may not be faster' : ''}`);
  L.push(`  per-call saving ${fmtMs(p.breakEven.perCallSavingMs)} -> ${p.breakEven.calls === null ? 'no break-even (compiled is not faster)' : `break-even after ${fmtNum(p.breakEven.calls)} calls`}`);
  L.push(`  accuracy: ${p.accuracy.compared} max rel. error ${sci(p.accuracy.maxRelErr)} (tolerance ${p.accuracy.tolerance.toExponential(0)})${p.accuracy.gradsMaxRelErr != null ? `, first-step gradients ${sci(p.accuracy.gradsMaxRelErr)}` : ''}${p.accuracy.paramsMaxRelErr != null ? `, parameter drift ${sci(p.accuracy.paramsMaxRelErr)} (informational)` : ''}: ${p.accuracy.ok ? 'ok' : 'PROBLEM'}`);
  const c = p.compiler;
  L.push(`  compiler: ${c.compiles} compile(s), ${c.graphsCompiled} graph(s), ${c.cacheHits + c.segmentHits} replays${c.segmentHits ? ` (${c.segmentHits} of graph segments)` : ''}, ${c.recompiles.length} recompiles, ${c.graphBreaks.length} graph break(s), ${c.eagerFallbacks} eager fallbacks, ${c.fusionFallbacks} fusion fallbacks`);
  for (const b of c.graphBreaks) L.push(`    graph break at ${b.location}: ${b.reason}${b.count > 1 ? ` (x${b.count})` : ''}`);
  for (const x of c.recompiles.slice(0, 5)) L.push(`    recompile: ${x.reason}`);
  L.push(`  memory (peak growth during a call): eager ${fmtBytes(p.eager.peakBytes)}, compiled ${fmtBytes(p.compiled.peakBytes)} + planned program buffers ${fmtBytes(p.compiled.planPeakBytes)}`);
  if (r.dynamicShapes) L.push('', ...dynamicLines(r.dynamicShapes));
  if (r.trainingForms) L.push('', ...trainingFormLines(r.trainingForms));
  const j = r.projection;
  L.push('');
  L.push(`  usage: ${fmtNum(j.callsPerDay)} calls/day, ${fmtNum(Math.round(j.callsPerProcess))} calls per process (${fmtNum(Math.round(j.processStartsPerMonth))} starts/month)${r.usage.assumptions.length ? ` [assumed: ${r.usage.assumptions.join('; ')}]` : ''}`);
  L.push(`  per month: eager ${j.eagerHoursPerMonth.toFixed(2)} h, compiled ${j.compiledHoursPerMonth.toFixed(2)} h (warm-up ${j.warmupHoursPerMonth.toFixed(3)} h${j.warmupBasis === 'warm cache' ? `, starts with a warm persistent cache; cold: ${j.coldWarmupHoursPerMonth.toFixed(3)} h` : ''}): ${j.savedHoursPerMonth.toFixed(2)} h saved (${(j.savedFraction * 100).toFixed(1)}%)`);
  if (j.monthlyComputeCostUsd !== null) {
    L.push(`  cost: ${fmtUsd(j.computeSavingUsdPerMonth)}/month saved of ${fmtUsd(j.monthlyComputeCostUsd)}; engineering ${fmtUsd(j.engineeringCostUsd)} (${fmtUsd(j.engineeringCostUsdPerMonth)}/month over ${j.amortizationMonths}): net ${fmtUsd(j.netSavingUsdPerMonth)}/month${j.paybackMonths !== null ? `, pays back in ${j.paybackMonths.toFixed(1)} months` : ''}`);
  } else {
    L.push(`  cost: give --monthly-compute-cost USD for a cost projection (engineering: ${fmtUsd(j.engineeringCostUsd)})`);
  }
  L.push('');
  L.push(`  VERDICT: ${r.verdict.headline}${r.verdict.confidence === 'uncertain' ? ' (uncertain: noisy timings)' : ''}`);
  L.push(`    figures from: ${r.verdict.basis}`);
  for (const x of r.verdict.reasons) L.push(`    - ${x}`);
  if (r.verdict.code) {
    L.push('    adopt it:');
    for (const line of r.verdict.code.split('\n')) L.push(`      ${line}`);
  }
  if (r.notMeasured.length) {
    L.push('');
    L.push('  not measured:');
    for (const x of r.notMeasured) L.push(`    - ${x.what}: ${x.reason}`);
  }
  L.push('');
  L.push('  go-live checklist:');
  for (const x of r.checklist) L.push(`    [${x.status === 'pass' ? 'pass' : x.status === 'fail' ? 'FAIL' : ' ?? '}] ${x.item}: ${x.detail}`);
  return L.join('\n');
}

/** One line on a backend's restarted-process measurement (cold and warm persistent cache). */
export function restartLine(b: BackendMeasurement): string {
  const c = b.cacheCheck;
  if (c.status !== 'ok' || !c.cold || !c.warm) return `restart (${b.backend}): ${c.status === 'failed' ? 'FAILED' : 'not measured'}: ${c.reason}`;
  const be = c.breakEven;
  return `restart (${b.backend}): first ${c.calls === 1 ? 'call' : `${c.calls} calls`} in a fresh process: ${fmtMs(c.cold.totalMs)} cold cache, ${fmtMs(c.warm.totalMs)} warm cache ` +
    `(${c.warm.cache.hits} hits, ${c.warm.cache.traceSkips} trace skips: ${c.skipped === 'tracing' ? 'tracing skipped' : c.skipped === 'code generation' ? 'code generation skipped, traced' : 'nothing reused'})` +
    (be ? `: warm-up ${fmtMs(be.extraWarmupMs)} extra per start, break-even after ${be.calls === null ? 'never' : `${fmtNum(be.calls)} calls`}` : '');
}

/** The dynamic-shapes table of the terminal summary. */
export function dynamicLines(d: DynamicShapes): string[] {
  const L: string[] = [];
  L.push(`  dynamic shapes (${d.backend}): ${d.shapes.length} shapes (${d.shapes.join('; ')}), cycled ${d.passes} times per variant`);
  if (d.status !== 'ok') {
    L.push(`    ${d.status === 'failed' ? 'FAILED' : 'not measured'}: ${d.reason}`);
    return L;
  }
  L.push(`    varying: ${d.varying.map((v) => `input ${v.arg} dim ${v.dim} (${v.sizes.join(', ')})`).join(', ')}`);
  L.push('    policy             compiles  traces  compile    1st pass   steady/call  vs static  vs eager');
  for (const x of d.policies) {
    if (x.status !== 'ok') {
      L.push(`    ${x.policy.padEnd(17)}  ${x.status}: ${x.reason}`);
      continue;
    }
    const rx = (v: number | null) => (v === null ? 'n/a' : `${v.toFixed(2)}x`);
    L.push(`    ${x.policy.padEnd(17)}  ${String(x.policy === 'eager' ? '-' : x.compiles).padEnd(8)}  ${String(x.policy === 'eager' ? '-' : x.traces).padEnd(6)}  ${(x.policy === 'eager' ? '-' : fmtMs(x.compileTimeMs)).padEnd(9)}  ${fmtMs(x.firstPassMs).padEnd(9)}  ${fmtMs(x.steadyMs).padEnd(11)}  ${rx(x.vsStatic).padEnd(9)}  ${rx(x.speedup)}`);
    if (x.buckets.length) L.push(`      buckets hit: ${x.buckets.map((b) => `${b.bucket} <- ${b.sizes.join(', ')} (${b.hits} calls)`).join('; ')}`);
  }
  L.push(`    recommended: ${d.recommended ?? 'none'}`);
  for (const x of d.reasons) L.push(`      - ${x}`);
  return L;
}
