// The advisor's decisions, as pure functions of measured numbers and the user's usage
// figures: break-even, the monthly projection, the verdict and the go-live checklist.
// Nothing here measures, reads files or touches kiln's state (unit-tested on made-up inputs).

// ---------------------------------------------------------------- break-even

export interface BreakEvenInput {
  /** eager latency of each call, in call order (ms) */
  eagerPerCallMs: readonly number[];
  /** compiled latency of each call, in call order (ms) */
  compiledPerCallMs: readonly number[];
  /**
   * K: the leading calls that count as warm-up: up to and including the last compiled call
   * that traced (kiln.stats().cacheMisses grew during it); at least 1
   */
  warmupCalls: number;
  /** steady-state medians (ms) */
  eagerMedianMs: number;
  compiledMedianMs: number;
}

export interface BreakEven {
  /** K, as given */
  warmupCalls: number;
  /** sum of the first K eager calls (ms) */
  eagerWarmupMs: number;
  /** sum of the first K compiled calls (ms) */
  compiledWarmupMs: number;
  /** W = compiledWarmupMs - eagerWarmupMs: what compiling costs extra at each process start (ms) */
  extraWarmupMs: number;
  /** s = eager median - compiled median (ms); <= 0 means compiled is not faster */
  perCallSavingMs: number;
  /**
   * calls after which compiling has paid for itself: K + max(0, ceil(W / s)); null
   * (never, "Infinity") when s <= 0
   */
  calls: number | null;
}

export const BREAK_EVEN_DEFINITION =
  'break-even calls = K + max(0, ceil(W / s)), where K = warm-up calls (up to the last compiled call that traced), ' +
  'W = extra warm-up cost = sum of the first K compiled call times - sum of the first K eager call times, ' +
  's = per-call saving = eager steady median - compiled steady median; never (null) when s <= 0';

export function breakEven(i: BreakEvenInput): BreakEven {
  const k = Math.max(1, Math.min(i.warmupCalls, i.eagerPerCallMs.length, i.compiledPerCallMs.length));
  let e = 0, c = 0;
  for (let j = 0; j < k; j++) {
    e += i.eagerPerCallMs[j] ?? 0;
    c += i.compiledPerCallMs[j] ?? 0;
  }
  return breakEvenOfWarmup(k, e, c, i.eagerMedianMs, i.compiledMedianMs);
}

/** The break-even of K warm-up calls that took `eagerMs` and `compiledMs` in all, then the steady medians. */
export function breakEvenOfWarmup(k: number, eagerMs: number, compiledMs: number, eagerMedianMs: number, compiledMedianMs: number): BreakEven {
  const extra = compiledMs - eagerMs;
  const saving = eagerMedianMs - compiledMedianMs;
  const calls = saving > 0 && Number.isFinite(saving) ? k + Math.max(0, Math.ceil(extra / saving)) : null;
  return { warmupCalls: k, eagerWarmupMs: eagerMs, compiledWarmupMs: compiledMs, extraWarmupMs: extra, perCallSavingMs: saving, calls };
}

/**
 * The break-even of a process start with a warm persistent cache: the same K warm-up calls,
 * each start paying `savedMs` less (cold minus warm first calls, measured in two restarted
 * processes; clamped at 0, so timing noise never makes the cache look harmful).
 */
export function withWarmCache(be: BreakEven, savedMs: number): BreakEven {
  // the restarts are measured in fresh processes with an empty cache folder, the in-process
  // warm-up may already have found compiled libraries on disk (native): a warm cache can remove
  // at most the whole extra warm-up measured here, never make the warm-up cheaper than eager's
  const compiled = be.compiledWarmupMs - Math.min(Math.max(0, savedMs), Math.max(0, be.extraWarmupMs));
  const extra = compiled - be.eagerWarmupMs;
  const s = be.perCallSavingMs;
  const calls = s > 0 && Number.isFinite(s) ? be.warmupCalls + Math.max(0, Math.ceil(extra / s)) : null;
  return { ...be, compiledWarmupMs: compiled, extraWarmupMs: extra, calls };
}

// ---------------------------------------------------------------- usage and projection

/** How long a process lives: a number of calls, or seconds (calls = seconds x calls per second). */
export type ProcessLifetime = { calls: number } | { seconds: number };

export interface Usage {
  /** calls of the workload's function per day, over the whole fleet */
  callsPerDay: number;
  processLifetime: ProcessLifetime;
  /** what running this workload costs per month today (USD), or null when unknown */
  monthlyComputeCostUsd: number | null;
  /** engineering time to adopt kiln.compile (default 1.5) */
  engineerWeeks: number;
  /** USD per engineer-week (default 4000) */
  engineerWeekCostUsd: number;
  /** months over which the engineering cost is spread (default 12) */
  amortizationMonths: number;
}

export const DEFAULT_USAGE = {
  callsPerDay: 100_000,
  engineerWeeks: 1.5,
  engineerWeekCostUsd: 4000,
  amortizationMonths: 12,
} as const;

export const DAYS_PER_MONTH = 30;

/**
 * Parses --process-lifetime: a plain number is calls per process start ("1", "50000"); a
 * number with a unit is a duration ("90s", "30m", "12h", "7d").
 */
export function parseProcessLifetime(s: string): ProcessLifetime {
  const m = /^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*(calls?|s|sec|m|min|h|d)?\s*$/i.exec(s);
  if (!m) throw new Error(`--process-lifetime: expected calls per process start (e.g. 1, 50000) or a duration (90s, 30m, 12h, 7d), got '${s}'`);
  const v = Number(m[1]);
  const unit = (m[2] ?? '').toLowerCase();
  if (!(v > 0)) throw new Error(`--process-lifetime must be positive, got '${s}'`);
  if (unit === '' || unit.startsWith('call')) return { calls: v };
  const mult = unit === 's' || unit === 'sec' ? 1 : unit === 'm' || unit === 'min' ? 60 : unit === 'h' ? 3600 : 86400;
  return { seconds: v * mult };
}

/** Calls one process serves before it exits (at least 1). */
export function callsPerProcess(u: Pick<Usage, 'callsPerDay' | 'processLifetime'>): number {
  const l = u.processLifetime;
  const calls = 'calls' in l ? l.calls : (l.seconds * u.callsPerDay) / 86400;
  return Math.max(1, calls);
}

export interface ProjectionInput {
  eagerMedianMs: number;
  compiledMedianMs: number;
  /** the cold break-even (this process's first calls) */
  breakEven: BreakEven;
  /**
   * the break-even with a warm persistent cache (withWarmCache), when a restarted process hit
   * it: then each process start is charged this warm-up instead of the cold one
   */
  warmCacheBreakEven?: BreakEven | null;
}

export interface Projection {
  callsPerDay: number;
  callsPerMonth: number;
  callsPerProcess: number;
  processStartsPerMonth: number;
  /** compute time of the workload per month, eager (hours) */
  eagerHoursPerMonth: number;
  /** compiled: steady calls plus the extra warm-up at every process start (hours) */
  compiledHoursPerMonth: number;
  /**
   * which warm-up a process start pays in this projection: 'warm cache' when a restarted
   * process measurably hit the persistent cache (the projection assumes it is configured),
   * else 'cold'
   */
  warmupBasis: 'cold' | 'warm cache';
  /** W of the basis: extra warm-up per process start (ms) */
  extraWarmupMsPerStart: number;
  /** extra warm-up time per month: process starts x W (hours) */
  warmupHoursPerMonth: number;
  /** the same with the cold W (no persistent cache) (hours) */
  coldWarmupHoursPerMonth: number;
  /** eager - compiled, net of warm-up (hours; negative: compiling costs time) */
  savedHoursPerMonth: number;
  /** savedHours / eagerHours */
  savedFraction: number;
  /** break-even (of the basis) reached within one process lifetime */
  breakEvenWithinProcess: boolean;
  /** the same without the persistent cache (cold warm-up at every start) */
  breakEvenWithinProcessCold: boolean;
  monthlyComputeCostUsd: number | null;
  /** monthlyComputeCost x savedFraction */
  computeSavingUsdPerMonth: number | null;
  engineeringCostUsd: number;
  amortizationMonths: number;
  engineeringCostUsdPerMonth: number;
  /** computeSaving - engineering cost per month */
  netSavingUsdPerMonth: number | null;
  /** engineering cost / compute saving per month; null when there is no saving or no cost figure */
  paybackMonths: number | null;
}

const MS_PER_HOUR = 3_600_000;

/**
 * Monthly figures. The model: the workload's compute cost is proportional to the time its
 * calls take, every call takes the steady median, and each process start pays the extra
 * warm-up W once (W < 0 counts as a gain): the warm-cache W when a restarted process hit the
 * persistent cache (a service that restarts N times a day pays the warm first call once the
 * cache is configured; only the first start after a deploy compiles cold), else the cold W.
 */
export function project(m: ProjectionInput, u: Usage): Projection {
  const callsPerMonth = u.callsPerDay * DAYS_PER_MONTH;
  const perProcess = callsPerProcess(u);
  const starts = callsPerMonth / perProcess;
  const eagerH = (callsPerMonth * m.eagerMedianMs) / MS_PER_HOUR;
  const warmBe = m.warmCacheBreakEven ?? null;
  const be = warmBe ?? m.breakEven;
  const warmupH = (starts * be.extraWarmupMs) / MS_PER_HOUR;
  const compiledH = (callsPerMonth * m.compiledMedianMs) / MS_PER_HOUR + warmupH;
  const savedH = eagerH - compiledH;
  const savedFraction = eagerH > 0 ? savedH / eagerH : 0;
  const cost = u.monthlyComputeCostUsd;
  const eng = u.engineerWeeks * u.engineerWeekCostUsd;
  const engMonth = u.amortizationMonths > 0 ? eng / u.amortizationMonths : eng;
  const computeSaving = cost === null ? null : cost * savedFraction;
  return {
    callsPerDay: u.callsPerDay,
    callsPerMonth,
    callsPerProcess: perProcess,
    processStartsPerMonth: starts,
    eagerHoursPerMonth: eagerH,
    compiledHoursPerMonth: compiledH,
    warmupBasis: warmBe ? 'warm cache' : 'cold',
    extraWarmupMsPerStart: be.extraWarmupMs,
    warmupHoursPerMonth: warmupH,
    coldWarmupHoursPerMonth: (starts * m.breakEven.extraWarmupMs) / MS_PER_HOUR,
    savedHoursPerMonth: savedH,
    savedFraction,
    breakEvenWithinProcess: be.calls !== null && be.calls <= perProcess,
    breakEvenWithinProcessCold: m.breakEven.calls !== null && m.breakEven.calls <= perProcess,
    monthlyComputeCostUsd: cost,
    computeSavingUsdPerMonth: computeSaving,
    engineeringCostUsd: eng,
    amortizationMonths: u.amortizationMonths,
    engineeringCostUsdPerMonth: engMonth,
    netSavingUsdPerMonth: computeSaving === null ? null : computeSaving - engMonth,
    paybackMonths: computeSaving !== null && computeSaving > 0 ? eng / computeSaving : null,
  };
}

// ---------------------------------------------------------------- verdict

/** Every verdict the advisor gives (scripts/package-check.ts checks a report's against them). */
export const VERDICTS = [
  'compile',
  'compile with warm-up and the persistent cache',
  'compile with dynamic shapes or buckets',
  'do not compile',
  'keep eager for now',
] as const;
export type Verdict = (typeof VERDICTS)[number];

/** A training step's warm-up runs a real step: it restores only the state kiln knows. */
function warmupStateHint(i: Pick<VerdictInput, 'kind'>): string {
  return i.kind === 'training' ? ' (a training step: compile it with `{ captures: model }` so warm-up restores the weights and grads; optimizer state reached only through the closure is reported, not restored)' : '';
}

export interface VerdictInput {
  kind: 'training' | 'inference';
  /** the compiler backend every figure below comes from (the one the verdict recommends) */
  backend: string;
  /**
   * the shape policy the figures come from, when several production shapes were measured
   * (per call = the mean over the shape stream, warm-up = its first pass); null: one shape
   */
  policy?: { name: 'static' | 'automatic dynamic' | 'buckets'; options: string; shapes: number } | null;
  eagerMedianMs: number;
  compiledMedianMs: number;
  /** eager median / compiled median */
  speedup: number;
  /** 95% interval of the speedup (measure.ts speedupInterval), null when unknown */
  speedupInterval?: readonly [number, number] | null;
  breakEven: BreakEven;
  /** first compiled call minus first eager call (ms): the latency the first request sees extra */
  firstCallExtraMs: number;
  /** kiln.stats().compileTimeMs over the measurement (ms) */
  compileTimeMs: number;
  graphBreaks: readonly { reason: string; location: string; count?: number }[];
  accuracy: {
    ok: boolean;
    /** 'outputs' (inference) or 'losses' (training) */
    compared: 'outputs' | 'losses';
    maxRelErr: number;
    tolerance: number;
    /** training: first-step gradients (checked against paramTolerance) */
    gradsMaxRelErr?: number | null;
    /** training: parameter drift after the last step (informational) */
    paramsMaxRelErr: number | null;
    paramTolerance: number;
  };
  /** replays of compiled code: kiln.stats().cacheHits + segmentHits */
  replays: number;
  eagerFallbacks: number;
  fallbackReasons: readonly string[];
  fusionFallbacks: number;
  recompileReasons: readonly string[];
  /** distinct input shapes seen in production (the workload's `shapes`), null when not declared */
  productionShapes: readonly string[] | null;
  /** the compiled variant failed to run at all */
  error?: string | null;
  /** the restarted-process measurement of the persistent cache (null/absent: not run) */
  cache?: CacheFacts | null;
  /** the shape policies measured over the production shapes (null/absent: not run) */
  dynamic?: DynamicFacts | null;
  /** training: which form to compile, measured (train-forms.ts); null/absent: not measured */
  trainingForm?: { recommended: 'whole step' | 'compiled module'; why: string } | null;
}

/** What the verdict and checklist need of cache-check.ts's CacheCheck and CacheConfig. */
export interface CacheFacts {
  status: 'ok' | 'skipped' | 'failed';
  /** why skipped or failed */
  reason: string | null;
  /** K: calls each restarted process ran */
  calls: number;
  /** the K calls summed, cold and warm cache (ms) */
  coldMs: number | null;
  warmMs: number | null;
  hit: boolean;
  hits: number;
  traceSkips: number;
  /** entries the cold process wrote (0: this backend stores nothing in the cache) */
  coldWrites: number;
  skipped: 'tracing' | 'code generation' | 'nothing' | null;
  /** withWarmCache(breakEven, cold - warm) when the warm run hit */
  warmBreakEven: BreakEven | null;
  /** the user's cache folder, from this process's environment */
  config: { dir: string; from: string; disabled: boolean; writable: boolean; untrusted?: string | null };
}

/** What the verdict needs of shape-policies.ts's DynamicShapes. */
export interface DynamicFacts {
  status: 'ok' | 'skipped' | 'failed';
  reason: string | null;
  recommended: 'static' | 'automatic dynamic' | 'buckets' | null;
  /** the recommended policy's steady speedup over eager on the shape stream */
  speedup: number | null;
  reasons: readonly string[];
}

export interface VerdictThresholds {
  /** rel. error above which outputs/losses count as an accuracy problem (default 1e-3) */
  tolerance: number;
  /** W at or above this many ms (and above one eager call) is a noticeable warm-up (default 50) */
  noticeableWarmupMs: number;
  /** speedups below this count as "not faster" (default 1: any real speedup) */
  minSpeedup: number;
}

export const DEFAULT_THRESHOLDS: VerdictThresholds = { tolerance: 1e-3, noticeableWarmupMs: 50, minSpeedup: 1 };

export interface VerdictResult {
  verdict: Verdict;
  /** the verdict with its qualifier, e.g. 'do not compile (too short-lived)' */
  headline: string;
  /** the compiler backend the verdict is about: every figure in it was measured there */
  backend: string;
  /** the shape policy its figures come from, or null (one shape) */
  policy: string | null;
  /** where the figures come from, in words */
  basis: string;
  /** the code to adopt (imports, compile options, warm-up), for the verdicts that compile; null otherwise */
  code: string | null;
  /**
   * 'uncertain' when the speedup's interval contains minSpeedup (noisy timings: the answer
   * to "is compiled faster?" could flip on a rerun); 'clear' otherwise
   */
  confidence: 'clear' | 'uncertain';
  reasons: string[];
}

const ms = (x: number): string => (Math.abs(x) >= 100 ? `${x.toFixed(0)} ms` : Math.abs(x) >= 1 ? `${x.toFixed(2)} ms` : `${x.toFixed(3)} ms`);
const sci = (x: number): string => (Number.isFinite(x) ? x.toExponential(2) : String(x));
const usd = (x: number): string => `${x < 0 ? '-' : ''}$${Math.abs(x).toLocaleString('en-US', { maximumFractionDigits: 0 })}`;
const hours = (h: number): string => (Math.abs(h) >= 10 ? `${h.toFixed(0)} h` : `${h.toFixed(2)} h`);

/** Whether the extra warm-up is something a first request or a restart notices. */
export function warmupNoticeable(i: Pick<VerdictInput, 'breakEven' | 'eagerMedianMs' | 'firstCallExtraMs'>, t: VerdictThresholds = DEFAULT_THRESHOLDS): boolean {
  const w = Math.max(i.breakEven.extraWarmupMs, i.firstCallExtraMs);
  return w >= t.noticeableWarmupMs && w > i.eagerMedianMs;
}

/**
 * The verdict, rules in order:
 *  1. the compiled variant failed, a graph break, an accuracy problem (outputs/losses rel.
 *     error > tolerance, or final parameters > their tolerance), or compiled code that did
 *     not run (eager fallbacks, no replays) -> 'keep eager for now', each cause listed;
 *  2. not faster (speedup <= minSpeedup) -> 'do not compile';
 *  3. break-even not reached within one process lifetime, with the warm persistent cache
 *     where a restarted process hit it (else cold) -> 'do not compile (too short-lived)';
 *     3b. shape policies measured and none ran cleanly or is faster than eager over the
 *     production shapes -> 'do not compile (too dynamic)';
 *  4. a monthly cost given and the saving below the amortized engineering cost ->
 *     'do not compile (saving below the engineering cost)';
 *  5. several production shapes, or recompiles on shape changes -> 'compile with dynamic
 *     shapes or buckets', with the measured policy in the headline;
 *  6. the cold warm-up breaks even too late but the warm-cache one does not, or a noticeable
 *     warm-up (W >= noticeableWarmupMs and more than one eager call) -> 'compile with warm-up
 *     and the persistent cache';
 *  7. otherwise 'compile'.
 */
export function decide(i: VerdictInput, p: Projection, t: VerdictThresholds = DEFAULT_THRESHOLDS): VerdictResult {
  const rules = decideRules(i, p, t);
  const basis = i.policy
    ? `backend ${i.backend}, shape policy ${i.policy.name} over the ${i.policy.shapes} production shapes (per call: the mean over the shape stream; warm-up: its first pass)`
    : `backend ${i.backend}, one input shape`;
  const code = rules.verdict.startsWith('compile') ? adoptionCode(i, rules.verdict) : null;
  const f = i.trainingForm;
  const reasons = f ? [...rules.reasons, `training form: ${f.recommended === 'compiled module' ? 'kiln.compile(model) in your loop' : 'the whole step compiled'}: ${f.why}`] : rules.reasons;
  const r = { ...rules, reasons, backend: i.backend, policy: i.policy?.name ?? null, basis, code };
  const iv = i.speedupInterval;
  if (r.verdict === 'keep eager for now' || !iv || !(iv[0] <= t.minSpeedup && t.minSpeedup <= iv[1])) return { ...r, confidence: 'clear' };
  return {
    ...r,
    confidence: 'uncertain',
    reasons: [
      `uncertain: the speedup's 95% interval ${iv[0].toFixed(2)}x-${iv[1].toFixed(2)}x contains ${t.minSpeedup}x: the timings are too noisy to tell whether compiled is faster; rerun with more --calls on a quieter machine`,
      ...r.reasons,
    ],
  };
}

/**
 * What to write to adopt the verdict: the imports (kilnjs; kilnjs/node for the native backend
 * and the persistent cache), kiln.compile with the measured backend and shape policy, and the
 * warm-up call where the verdict asks for one. `fn`, `model` and `exampleArgs` stand for the
 * user's names.
 */
export function adoptionCode(i: Pick<VerdictInput, 'backend' | 'policy' | 'kind' | 'trainingForm'>, verdict: Verdict): string {
  const withCache = verdict === 'compile with warm-up and the persistent cache';
  const node = i.backend === 'native' || withCache;
  const policy = i.policy ? i.policy.options.replace(/\s*\(default\)\s*$/, '').trim().replace(/^\{\s*/, '').replace(/\s*\}$/, '') : '';
  // the compiled module keeps the user's loop (train-forms.ts); else the function or whole step is compiled
  const module = i.kind === 'training' && i.trainingForm?.recommended === 'compiled module';
  const opts = [`backend: '${i.backend}'`, ...(policy ? [policy] : []), ...(i.kind === 'training' && !module ? ['captures: model'] : [])].join(', ');
  const name = module ? 'compiledModel' : 'compiled';
  return [
    "import * as kiln from 'kilnjs';",
    ...(node ? [`import 'kilnjs/node'; // ${[i.backend === 'native' ? 'registers the native backend' : '', withCache ? 'the persistent compile cache (set KILN_CACHE_DIR to persistent storage)' : ''].filter(Boolean).join('; ')}`] : []),
    `const ${name} = kiln.compile(${module ? 'model' : i.kind === 'training' ? 'step' : 'fn'}, { ${opts} });`,
    ...(withCache || verdict === 'compile with dynamic shapes or buckets' ? [`await ${name}.warmup([[...exampleArgs]]); // at process start, before serving`] : []),
    ...(module ? ['for (const [x, y] of batches) kiln.scope(() => {', '  opt.zeroGrad();', '  const loss = lossFn(compiledModel(x), y);', '  loss.backward();', '  opt.step();', '});'] : []),
  ].join('\n');
}

function decideRules(i: VerdictInput, p: Projection, t: VerdictThresholds): Pick<VerdictResult, 'verdict' | 'headline' | 'reasons'> {
  // 1. blockers
  const blockers: string[] = [];
  if (i.error) blockers.push(`the compiled function failed: ${i.error}`);
  for (const b of i.graphBreaks) {
    blockers.push(`graph break at ${b.location}: ${b.reason}${b.count && b.count > 1 ? ` (${b.count} times)` : ''}`);
  }
  if (!i.error) {
    const a = i.accuracy;
    if (!(a.maxRelErr <= a.tolerance)) {
      blockers.push(`accuracy: compiled ${a.compared} differ from eager by max rel. error ${sci(a.maxRelErr)} (tolerance ${sci(a.tolerance)})`);
    }
    if (a.gradsMaxRelErr != null && !(a.gradsMaxRelErr <= a.paramTolerance)) {
      blockers.push(`accuracy: first-step gradients differ from eager by max rel. error ${sci(a.gradsMaxRelErr)} (tolerance ${sci(a.paramTolerance)})`);
    }
    if (i.eagerFallbacks > 0) blockers.push(`${i.eagerFallbacks} call(s) fell back to eager: ${i.fallbackReasons.slice(0, 3).join('; ') || 'no reason recorded'}`);
    if (i.replays === 0 && i.graphBreaks.length === 0) blockers.push('compiled code was never replayed (no cache hits): every call traced');
  }
  if (blockers.length) {
    return {
      verdict: 'keep eager for now',
      headline: 'keep eager for now',
      reasons: [
        ...blockers,
        ...(i.error ? [] : [`for reference: compiled ${ms(i.compiledMedianMs)} vs eager ${ms(i.eagerMedianMs)} per call (median): ${i.speedup.toFixed(2)}x`]),
        'fix these (kiln.explain(fn)(...inputs) shows each graph break with a hint), then run kilnjs advise again',
      ],
    };
  }

  const per = i.policy ? `per call (mean over the ${i.policy.shapes} production shapes, policy ${i.policy.name})` : 'per call (median)';
  const speed = `compiled (${i.backend}) ${ms(i.compiledMedianMs)} vs eager ${ms(i.eagerMedianMs)} ${per}: ${i.speedup.toFixed(2)}x`;
  const be = i.breakEven;
  const beText = be.calls === null ? 'never' : `${be.calls.toLocaleString('en-US')} calls`;
  const c = i.cache ?? null;
  const wbe = c?.warmBreakEven ?? null;
  const warm = `extra warm-up ${ms(be.extraWarmupMs)} per process start over ${be.warmupCalls} call(s) (compile time ${ms(i.compileTimeMs)})` +
    (wbe ? `; ${ms(wbe.extraWarmupMs)} with a warm persistent cache` : '');
  const monthly = (): string => {
    const base = `projected: ${hours(p.savedHoursPerMonth)} of compute saved per month net of warm-up (${(p.savedFraction * 100).toFixed(1)}%${p.warmupBasis === 'warm cache' ? ', process starts with a warm persistent cache' : ''})`;
    if (p.computeSavingUsdPerMonth === null) return `${base}; give --monthly-compute-cost for a cost figure`;
    return `${base}, ${usd(p.computeSavingUsdPerMonth)}/month of ${usd(p.monthlyComputeCostUsd!)}; engineering ${usd(p.engineeringCostUsd)} amortized over ${p.amortizationMonths} months (${usd(p.engineeringCostUsdPerMonth)}/month): net ${usd(p.netSavingUsdPerMonth!)}/month`;
  };
  const restart = cacheSentence(c);

  // 2. not faster
  if (!(i.speedup > t.minSpeedup) || be.calls === null) {
    return { verdict: 'do not compile', headline: 'do not compile', reasons: [`not faster: ${speed}`, 'compiling only adds warm-up and complexity here'] };
  }
  // 3. too short-lived, even with the warm cache where it was measured
  if (!p.breakEvenWithinProcess) {
    return {
      verdict: 'do not compile',
      headline: 'do not compile (too short-lived)',
      reasons: [
        `break-even after ${beText}${wbe ? ` cold, ${wbe.calls === null ? 'never' : `${wbe.calls.toLocaleString('en-US')} calls`} with a warm persistent cache` : ''}, but a process serves only ${fmtCalls(p.callsPerProcess)} call(s) before it exits`,
        speed,
        warm,
        ...(restart ? [restart] : []),
        'compiling pays only in processes that live past break-even (a server, a training run)',
      ],
    };
  }
  // 3b. too dynamic: no compile policy ran cleanly, or none is faster, over the shape stream
  const d = i.dynamic ?? null;
  if (d && d.status === 'ok' && (d.recommended === null || !(d.speedup !== null && d.speedup > t.minSpeedup))) {
    return {
      verdict: 'do not compile',
      headline: 'do not compile (too dynamic)',
      reasons: [
        d.recommended === null
          ? 'over the production shapes, no compile policy ran cleanly (see below)'
          : `over the production shapes, the best policy (${d.recommended}) is not faster than eager: ${d.speedup === null ? 'n/a' : `${d.speedup.toFixed(2)}x`}`,
        ...d.reasons,
        `for one shape: ${speed}`,
      ],
    };
  }
  // 4. not worth the engineering time
  if (p.netSavingUsdPerMonth !== null && p.netSavingUsdPerMonth < 0) {
    return {
      verdict: 'do not compile',
      headline: 'do not compile (saving below the engineering cost)',
      reasons: [speed, monthly(), `the compute saved does not repay ${usd(p.engineeringCostUsd)} of engineering within ${p.amortizationMonths} months`],
    };
  }
  const common = [speed, `break-even after ${beText}${wbe ? ` (${wbe.calls === null ? 'never' : `${wbe.calls.toLocaleString('en-US')} calls`} with a warm persistent cache)` : ''}; a process serves ${fmtCalls(p.callsPerProcess)} calls`, warm, monthly()];
  // the cold start breaks even too late, the warm-cache start does not: the cache is what makes compiling pay
  const cacheNeeded = p.warmupBasis === 'warm cache' && !p.breakEvenWithinProcessCold;
  const cacheLines = cacheNeeded
    ? [`without the persistent cache every process start pays the cold warm-up and breaks even after ${beText}, past the ${fmtCalls(p.callsPerProcess)} calls a process serves: configure the cache (import 'kilnjs/node'; KILN_CACHE_DIR on persistent storage)`, ...(restart ? [restart] : [])]
    : [];
  // 5. shapes
  const shapeRecompiles = i.recompileReasons.filter((r) => /dim|shape|rank/i.test(r));
  const distinct = i.productionShapes ? [...new Set(i.productionShapes)] : [];
  if (distinct.length > 1 || shapeRecompiles.length > 0) {
    const why: string[] = [];
    if (distinct.length > 1) why.push(`${distinct.length} distinct input shapes in production (${distinct.slice(0, 5).join(', ')}${distinct.length > 5 ? ', ...' : ''})`);
    if (shapeRecompiles.length) why.push(`${shapeRecompiles.length} recompile(s) on shape changes: ${shapeRecompiles.slice(0, 3).join('; ')}`);
    const policy = d && d.status === 'ok' && d.recommended
      ? [`recommended shape policy: ${d.recommended}`, ...d.reasons]
      : [`shape policies not measured${d?.reason ? ` (${d.reason})` : ''}: kiln.compile(fn) makes a dim that changes dynamic after one recompile (automatic dynamic); { buckets: { dim, sizes: 'pow2' } } pads to a few static sizes; { dynamic: false } compiles one entry per shape up to the recompile limit (8). The measured speedup is for one shape only`];
    return {
      verdict: 'compile with dynamic shapes or buckets',
      headline: `compile with dynamic shapes or buckets${d?.recommended ? ` (policy: ${d.recommended})` : ''}`,
      reasons: [...why, ...policy, ...common, ...cacheLines],
    };
  }
  // 6. warm-up and the persistent cache
  if (cacheNeeded || warmupNoticeable(i, t)) {
    return {
      verdict: 'compile with warm-up and the persistent cache',
      headline: 'compile with warm-up and the persistent cache',
      reasons: [
        ...common,
        ...cacheLines,
        `the first call takes ${ms(i.firstCallExtraMs)} longer than eager: run a warm-up call at process start, before serving traffic (\`await compiled.warmup([[...exampleArgs]])\`)${warmupStateHint(i)}`,
        ...(!cacheNeeded && restart ? [restart] : []),
      ],
    };
  }
  return { verdict: 'compile', headline: 'compile', reasons: common };
}

/** One sentence on what a restarted process measured with the persistent cache, or null when not measured. */
export function cacheSentence(c: CacheFacts | null): string | null {
  if (!c || c.status !== 'ok' || c.coldMs === null || c.warmMs === null) return null;
  const first = `the first ${c.calls === 1 ? 'call' : `${c.calls} calls`} of a restarted process took ${ms(c.warmMs)} with a warm persistent cache vs ${ms(c.coldMs)} cold`;
  if (!c.hit) return `${first}: the warm run found nothing in the cache (0 hits), so it compiled again`;
  return `${first} (${c.hits} cache hit(s), ${c.skipped === 'tracing' ? 'tracing and code generation skipped' : 'code generation skipped; the function still traced'})`;
}

function fmtCalls(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : String(Math.round(n * 100) / 100);
}

// ---------------------------------------------------------------- checklist

/**
 * 'cache': the folder the user's processes would use is enabled, writable and trusted (nobody
 * else can write it), and a restarted process hit a warm cache (pass); off, unwritable,
 * untrusted or no hit (fail); not measured (unknown).
 */
function cacheItem(c: CacheFacts | null): CheckItem {
  const item = 'persistent compile cache configured';
  if (!c) return { id: 'cache', item, status: 'unknown', detail: "not checked: import 'kilnjs/node' in the service (it registers the disk cache) and set KILN_CACHE_DIR to persistent storage" };
  const cfg = c.config;
  const where = `${cfg.dir} (${cfg.from === 'default' ? 'the default folder' : `from ${cfg.from}`})`;
  if (cfg.disabled) return { id: 'cache', item, status: 'fail', detail: `KILN_CACHE turns the cache off in this environment: every process start compiles again (folder would be ${where})` };
  if (!cfg.writable) return { id: 'cache', item, status: 'fail', detail: `the cache folder ${where} is not writable: set KILN_CACHE_DIR to a writable folder on persistent storage` };
  if (cfg.untrusted) return { id: 'cache', item, status: 'fail', detail: `kiln will not use the cache folder ${where}: ${cfg.untrusted} (it runs code from a cache folder only if the user owns it and nobody else can write it): chmod go-w it, or set KILN_CACHE_DIR to a folder of the service's own` };
  if (c.status !== 'ok') return { id: 'cache', item, status: 'unknown', detail: `cache folder ${where} is writable; the restart was not measured: ${c.reason ?? c.status}` };
  if (!c.hit && c.coldWrites === 0) return { id: 'cache', item, status: 'unknown', detail: `cache folder ${where} is writable, but this backend wrote no entries in a cold process: restarts have nothing to reuse` };
  if (!c.hit) return { id: 'cache', item, status: 'fail', detail: `cache folder ${where} is writable, but a restarted process found nothing to reuse (0 hits of ${c.coldWrites} entries written): every start compiles again` };
  return {
    id: 'cache',
    item,
    status: 'pass',
    detail: `cache folder ${where} is writable (import 'kilnjs/node' in the service to use it); a restarted process hit it: ${cacheSentence(c)}`,
  };
}

export type CheckStatus = 'pass' | 'fail' | 'unknown';

export interface CheckItem {
  id: string;
  item: string;
  status: CheckStatus;
  detail: string;
}

/** The go-live checklist for putting a compiled function in production. */
export function checklist(i: VerdictInput): CheckItem[] {
  const a = i.accuracy;
  const accOk = !i.error && a.maxRelErr <= a.tolerance && (a.gradsMaxRelErr == null || a.gradsMaxRelErr <= a.paramTolerance);
  const unlocated = i.graphBreaks.filter((b) => !b.location || b.location === '<unknown>');
  const ran = !i.error && i.replays > 0 && i.eagerFallbacks === 0 && i.fusionFallbacks === 0;
  return [
    {
      id: 'accuracy',
      item: 'accuracy verified against eager',
      status: accOk ? 'pass' : 'fail',
      detail: i.error
        ? `compiled function failed: ${i.error}`
        : `${a.compared}: max rel. error ${sci(a.maxRelErr)} (tolerance ${sci(a.tolerance)})${a.gradsMaxRelErr != null ? `; first-step gradients ${sci(a.gradsMaxRelErr)} (tolerance ${sci(a.paramTolerance)})` : ''}${a.paramsMaxRelErr !== null ? `; parameter drift after the last step ${sci(a.paramsMaxRelErr)} (informational)` : ''}`,
    },
    {
      id: 'compiled-ran',
      item: 'compiled code actually ran (replays, no silent fallback)',
      status: ran ? 'pass' : 'fail',
      detail: `${i.replays} replays, ${i.eagerFallbacks} eager fallbacks, ${i.fusionFallbacks} fusion fallbacks`,
    },
    {
      id: 'graph-breaks',
      item: 'graph breaks counted and located',
      status: unlocated.length === 0 ? 'pass' : 'fail',
      detail: i.graphBreaks.length === 0 ? '0 graph breaks' : `${i.graphBreaks.length} graph break(s): ${i.graphBreaks.map((b) => b.location).join(', ')}`,
    },
    cacheItem(i.cache ?? null),
    {
      id: 'warm-up',
      item: 'warm-up call at process start configured',
      status: 'unknown',
      detail: 'the advisor cannot see your deployment: call `await compiled.warmup([[...exampleArgs]])` at process start' + warmupStateHint(i) +
        (i.productionShapes && new Set(i.productionShapes).size > 1 ? ` (or { shapes: [...] } with each of the ${new Set(i.productionShapes).size} production shapes)` : '') +
        ` before serving; measured first call: ${ms(i.firstCallExtraMs)} more than eager` +
        (i.cache?.status === 'ok' && i.cache.warmMs !== null && i.cache.coldMs !== null ? `; in a restarted process ${ms(i.cache.warmMs)} warm cache vs ${ms(i.cache.coldMs)} cold (first ${i.cache.calls} call(s))` : ''),
    },
    {
      id: 'serving',
      item: 'served with warm-up, readiness, metrics, canary and rollback',
      status: 'unknown',
      detail: 'the advisor cannot see your deployment: `npx kilnjs serve model.kiln` (an artifact from kiln.export) or `npx kilnjs serve model.ts --weights model.safetensors` compiles every batch bucket before /readyz answers 200, batches requests into those buckets (varying sizes never recompile), exports compile time, recompiles, graph breaks, fallbacks and cache hits on /metrics, shadows a fraction of batches eagerly and switches itself to eager past a mismatch threshold (POST /admin/mode switches back), and drains on SIGTERM; --remote-cache redis://... lets a fleet start warm (README: Serving)',
    },
    {
      id: 'compile-time-metric',
      item: 'compile time exported as a metric',
      status: 'pass',
      detail: `kiln.stats().compileTimeMs is available (${ms(i.compileTimeMs)} here): export it with your service metrics (kilnjs serve exports it on /metrics as kiln_compile_seconds_total)`,
    },
    {
      id: 'eager-path',
      item: 'eager path kept for debugging',
      status: 'pass',
      detail: "kiln.compile is opt-in: the eager function stays callable, and kiln.compiler.setStance('forceEager') switches every compiled function back",
    },
  ];
}
