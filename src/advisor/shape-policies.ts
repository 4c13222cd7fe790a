// Dynamic shapes: for a production shape list (`--shapes`, the workload's `shapes`), a stream
// of calls that cycles through the shapes, run eagerly and under each compile policy:
//   static             { dynamic: false, recompileLimit >= shapes }: one entry per shape
//   automatic dynamic  kiln.compile's default: static first, a dim that changes becomes dynamic
//   buckets            { buckets: { arg, dim, sizes: 'pow2' } } on the varying dim (when the
//                      inputs vary in one dim index only): one static entry per bucket
// Per policy: compiles, traces, compile time, the first pass over the shapes (warm-up of the
// stream), steady time per shape (median over the later passes), outputs vs eager call by
// call, buckets hit; then a recommended policy with its reasons (recommendPolicy, pure).
//
// Every variant gets its own setup() (same seed) and kiln.compiler.reset(), so compiles and
// training state do not leak between policies; inputs at each shape are the setup's inputs
// tiled (shapes.ts), made once per shape before the timed calls.

import * as kiln from '../api/kiln.js';
import { checkInstance, resolveConfig, type LoadedWorkload } from './workload.js';
import { dispose, fmt, round, summarizeMs, timedCall, valuesRelErr, type Values } from './calls.js';
import { planShapes, ShapeListError, tileTo, type ShapePlan } from './shapes.js';

export type ShapePolicy = 'static' | 'automatic dynamic' | 'buckets';

export interface PolicyRun {
  policy: 'eager' | ShapePolicy;
  /** the kiln.compile options, as code */
  options: string;
  /** 'refused': kiln declined the policy (buckets), 'skipped': not applicable, 'failed': a call threw */
  status: 'ok' | 'failed' | 'refused' | 'skipped';
  reason: string | null;
  /** kiln.stats().compiles: entries compiled */
  compiles: number;
  /** kiln.stats().cacheMisses: calls that traced */
  traces: number;
  recompiles: number;
  /** symbols of each dynamic entry (kiln.stats().dynamicCompiles) */
  dynamicCompiles: string[][];
  /** dims that stayed static, refusals (kiln.stats().dynamicFailures) */
  dynamicFailures: string[];
  eagerFallbacks: number;
  compileTimeMs: number;
  /** the first pass over the shapes, summed (ms): what the stream pays before it is warm */
  firstPassMs: number;
  /** the stream's first call (ms): for a compiled policy, trace + compile + first run */
  firstCallMs: number;
  /** per shape (in list order), median over the steady passes (ms) */
  perShapeMs: number[];
  /** mean of perShapeMs: one call of the stream, steady (ms) */
  steadyMs: number | null;
  /** steadyMs / static's steadyMs */
  vsStatic: number | null;
  /** eager steadyMs / steadyMs */
  speedup: number | null;
  /** max relative error of outputs (or losses) vs eager, call by call */
  maxRelErr: number | null;
  /** buckets hit (kiln.stats().buckets) */
  buckets: { dim: string; bucket: number; hits: number; sizes: number[] }[];
}

export interface DynamicShapes {
  status: 'ok' | 'skipped' | 'failed';
  reason: string | null;
  backend: string;
  /** the distinct signatures, in order */
  shapes: string[];
  /** per signature, every input's shape (unlisted inputs follow the listed ones) */
  inputShapes: number[][][];
  varying: ShapePlan['varying'];
  /** passes over the shape list per variant; the first is warm-up */
  passes: number;
  policies: PolicyRun[];
  recommended: ShapePolicy | null;
  reasons: string[];
}

export interface ShapePolicyOptions {
  backend: string;
  seed: number;
  config?: string;
  /** steady-state calls the user asked for (sets the passes) */
  calls: number;
  tolerance: number;
  progress?: (line: string) => void;
}

/** Steady times within this factor of the fastest count as equal; then fewer compiles wins. */
export const STEADY_SLACK = 1.05;

const emptyRun = (policy: PolicyRun['policy'], options: string, status: PolicyRun['status'], reason: string | null): PolicyRun => ({
  policy, options, status, reason, compiles: 0, traces: 0, recompiles: 0, dynamicCompiles: [], dynamicFailures: [], eagerFallbacks: 0, compileTimeMs: 0,
  firstPassMs: 0, firstCallMs: 0, perShapeMs: [], steadyMs: null, vsStatic: null, speedup: null, maxRelErr: null, buckets: [],
});

interface Variant {
  policy: PolicyRun['policy'];
  options: string;
  compileOpts: kiln.CompileOptions | null;
}

async function runVariant(lw: LoadedWorkload, o: ShapePolicyOptions, plan: ShapePlan, passes: number, v: Variant, eager: Values[] | null): Promise<{ run: PolicyRun; values: Values[] }> {
  const w = lw.workload;
  const inference = w.kind === 'inference';
  kiln.compiler.reset();
  const config = resolveConfig(w, o.config);
  const inst = checkInstance(await w.setup(config === undefined ? { seed: o.seed } : { seed: o.seed, config }), w.name);
  const inputs = plan.shapes.map((sh) => inst.inputs.map((t, i) => tileTo(t, sh[i]!)));
  const fn = v.compileOpts ? kiln.compile(inst.fn as (...a: kiln.Tensor[]) => unknown, { backend: o.backend, name: w.name, cache: false, ...v.compileOpts }) : inst.fn;
  const n = plan.shapes.length;
  const ms: number[][] = plan.shapes.map(() => []);
  const values: Values[] = [];
  let firstPass = 0, firstCall = 0, maxRel = 0;
  let error: string | null = null;
  try {
    for (let p = 0; p < passes && error === null; p++) {
      for (let j = 0; j < n; j++) {
        let r;
        try {
          r = timedCall(() => fn(...inputs[j]!), inference);
        } catch (e) {
          error = `call at ${plan.shapes[j]!.map((s) => `[${s.join(',')}]`).join(' ')} threw ${(e as Error).name}: ${(e as Error).message}`;
          break;
        }
        if (p === 0) firstPass += r.ms;
        if (p === 0 && j === 0) firstCall = r.ms;
        else ms[j]!.push(r.ms);
        const k = values.length;
        values.push(r.values);
        if (eager) maxRel = Math.max(maxRel, valuesRelErr(r.values, eager[k]!));
      }
    }
  } finally {
    for (const args of inputs) for (const t of args) t.dispose();
    dispose(inst);
  }
  const st = kiln.stats();
  kiln.compiler.reset();
  const run = emptyRun(v.policy, v.options, error === null ? 'ok' : 'failed', error);
  const perShape = ms.map((xs) => summarizeMs(xs).medianMs);
  const steady = error === null ? perShape.reduce((a, b) => a + b, 0) / n : NaN;
  Object.assign(run, {
    compiles: st.compiles,
    traces: st.cacheMisses,
    recompiles: st.recompiles.length,
    dynamicCompiles: st.dynamicCompiles.map((d) => d.symbols),
    dynamicFailures: st.dynamicFailures.map((d) => d.reason),
    eagerFallbacks: st.eagerFallbacks,
    compileTimeMs: round(st.compileTimeMs),
    firstPassMs: round(firstPass),
    firstCallMs: round(firstCall),
    perShapeMs: perShape.map((x) => round(x)),
    steadyMs: Number.isFinite(steady) ? round(steady) : null,
    maxRelErr: eager && error === null ? maxRel : null,
    buckets: st.buckets.map((b) => ({ dim: b.dim, bucket: b.bucket, hits: b.hits, sizes: [...b.sizes].sort((x, y) => x - y) })),
  } satisfies Partial<PolicyRun>);
  if (v.policy === 'buckets' && error === null) {
    const refused = st.dynamicFailures.find((d) => /bucketing refused/.test(d.reason));
    if (refused) Object.assign(run, { status: 'refused', reason: refused.reason.replace(/^bucketing refused:\s*/, '').replace(/\s+/g, ' ') });
    else if (st.buckets.length === 0) Object.assign(run, { status: 'refused', reason: 'no call was bucketed' });
  }
  return { run, values };
}

/**
 * Every input's shape at each of `shapes` (distinct signatures), from a throw-away setup (the
 * inputs' own shapes); a ShapeListError when a signature does not parse or fit. Run before
 * anything is measured, so a bad list is reported at once.
 */
export async function planShapeList(lw: LoadedWorkload, shapes: readonly string[], o: { seed: number; config?: string }): Promise<ShapePlan> {
  const w = lw.workload;
  const config = resolveConfig(w, o.config);
  const probe = checkInstance(await w.setup(config === undefined ? { seed: o.seed } : { seed: o.seed, config }), w.name);
  const baseShapes = probe.inputs.map((t) => [...t.shape]);
  dispose(probe);
  kiln.compiler.reset();
  try {
    return planShapes([...new Set(shapes)], baseShapes);
  } catch (e) {
    if (e instanceof ShapeListError) throw new ShapeListError(`the shape list does not fit the workload's inputs (${baseShapes.map((s) => `[${s.join(',')}]`).join(' ')}): ${e.message}`);
    throw e;
  }
}

/** Measures the policies over the distinct signatures of `plan` (see the file comment). */
export async function measureShapePolicies(lw: LoadedWorkload, shapes: readonly string[], plan: ShapePlan, o: ShapePolicyOptions): Promise<DynamicShapes> {
  const say = o.progress ?? (() => {});
  const distinct = [...new Set(shapes)];
  const base: DynamicShapes = { status: 'skipped', reason: null, backend: o.backend, shapes: distinct, inputShapes: [], varying: [], passes: 0, policies: [], recommended: null, reasons: [] };
  base.inputShapes = plan.shapes;
  base.varying = plan.varying;
  if (plan.varying.length === 0) return { ...base, reason: 'the declared shapes do not differ' };
  const passes = Math.min(8, Math.max(4, Math.ceil(o.calls / distinct.length) + 1));
  base.passes = passes;
  say(`  dynamic shapes (${o.backend}): ${distinct.length} shapes x ${passes} passes per variant: eager, static, automatic dynamic, buckets`);

  const t0 = performance.now();
  const eager = await runVariant(lw, o, plan, passes, { policy: 'eager', options: '(not compiled)', compileOpts: null }, null).catch((e: Error) => e);
  if (eager instanceof Error) return { ...base, status: 'failed', reason: `the eager stream failed: ${eager.message}` };
  if (eager.run.status !== 'ok') return { ...base, status: 'failed', reason: `the workload fails eagerly at these shapes: ${eager.run.reason}` };
  const runs: PolicyRun[] = [eager.run];
  const limit = Math.max(8, distinct.length + 2);
  const dims = [...new Set(plan.varying.map((v) => v.dim))];
  const variants: Variant[] = [
    { policy: 'static', options: `{ dynamic: false${limit > 8 ? `, recompileLimit: ${limit}` : ''} }`, compileOpts: { dynamic: false, recompileLimit: limit } },
    { policy: 'automatic dynamic', options: '{} (default)', compileOpts: {} },
  ];
  const first = plan.varying[0]!;
  const bucketOpts = `{ buckets: { arg: ${first.arg}, dim: ${first.dim}, sizes: 'pow2' } }`;
  if (dims.length === 1) variants.push({ policy: 'buckets', options: bucketOpts, compileOpts: { buckets: { arg: first.arg, dim: first.dim, sizes: 'pow2' } } });
  for (const v of variants) {
    const r = await runVariant(lw, o, plan, passes, v, eager.values).catch((e: Error) => ({ run: emptyRun(v.policy, v.options, 'failed', e.message), values: [] }));
    runs.push(r.run);
    say(`  dynamic shapes: ${v.policy}: ${r.run.status === 'ok' ? `${r.run.compiles} compile(s), steady ${fmt(r.run.steadyMs ?? NaN)} per call` : `${r.run.status}: ${r.run.reason}`}`);
  }
  if (dims.length !== 1) runs.push(emptyRun('buckets', bucketOpts, 'skipped', `the inputs vary in ${dims.length} dim indexes (${plan.varying.map((v) => `input ${v.arg} dim ${v.dim}`).join(', ')}): a bucket pads one dim`));
  const st = runs.find((r) => r.policy === 'static');
  for (const r of runs) {
    if (r.steadyMs === null) continue;
    if (st?.steadyMs) r.vsStatic = round(r.steadyMs / st.steadyMs);
    if (eager.run.steadyMs) r.speedup = round(eager.run.steadyMs / r.steadyMs);
  }
  const rec = recommendPolicy(runs, { shapes: distinct.length, tolerance: o.tolerance });
  say(`  dynamic shapes: done in ${fmt(performance.now() - t0)}: ${rec.recommended ?? 'no policy'} recommended`);
  return { ...base, status: 'ok', policies: runs, recommended: rec.recommended, reasons: rec.reasons };
}

const x2 = (v: number | null): string => (v === null ? 'n/a' : `${v.toFixed(2)}x`);

/** Why a measured policy cannot be recommended, or null. */
function disqualified(r: PolicyRun, tolerance: number): string | null {
  if (r.status !== 'ok') return r.reason ?? r.status;
  if (r.eagerFallbacks > 0) return `${r.eagerFallbacks} call(s) fell back to eager (recompile limit)`;
  if (r.maxRelErr !== null && !(r.maxRelErr <= tolerance)) return `outputs differ from eager by max rel. error ${r.maxRelErr.toExponential(2)}`;
  if (r.steadyMs === null) return 'no steady time';
  return null;
}

function describe(r: PolicyRun): string {
  const dyn = r.dynamicCompiles.length ? ` (${r.dynamicCompiles.length} dynamic: ${r.dynamicCompiles.map((s) => s.map((x) => x.replace(/\s*\(.*$/, '')).join(', ')).join('; ')})` : '';
  const bk = r.buckets.length ? `; buckets hit: ${r.buckets.map((b) => `${b.bucket} (sizes ${b.sizes.join(', ')}; ${b.hits} calls)`).join(', ')}` : '';
  return `${r.compiles} compile(s)${dyn}, steady ${x2(r.vsStatic)} static, ${x2(r.speedup)} eager, compile time ${fmt(r.compileTimeMs)}${bk}`;
}

/**
 * The policy to use: among those that ran with no eager fallback and outputs within
 * tolerance, the fastest steady time; any within STEADY_SLACK of it with fewer compiles wins
 * (each compile is warm-up at every process start, and entries count against the limit).
 */
export function recommendPolicy(runs: readonly PolicyRun[], o: { shapes: number; tolerance: number }): { recommended: ShapePolicy | null; reasons: string[] } {
  const compiled = runs.filter((r): r is PolicyRun & { policy: ShapePolicy } => r.policy !== 'eager');
  const ok = compiled.filter((r) => disqualified(r, o.tolerance) === null);
  const others = (chosen: PolicyRun | null): string[] => compiled.filter((r) => r !== chosen).map((r) => {
    const why = disqualified(r, o.tolerance);
    if (r.status === 'refused') return `${r.policy} refused: ${r.reason}`;
    if (r.status === 'skipped') return `${r.policy} not measured: ${r.reason}`;
    return why === null ? `${r.policy}: ${describe(r)}` : `${r.policy} ruled out: ${why}`;
  });
  if (ok.length === 0) return { recommended: null, reasons: ['no compile policy ran cleanly over the shape list', ...others(null)] };
  const fastest = Math.min(...ok.map((r) => r.steadyMs!));
  const close = ok.filter((r) => r.steadyMs! <= fastest * STEADY_SLACK).sort((a, b) => a.compiles - b.compiles || a.steadyMs! - b.steadyMs!);
  const c = close[0]!;
  const why = close.length > 1 || c.steadyMs! > fastest ? `fewest compiles among the policies within ${Math.round((STEADY_SLACK - 1) * 100)}% of the fastest steady time` : 'fastest steady time';
  const how = c.policy === 'automatic dynamic' ? 'kiln.compile(fn) (the default)' : `kiln.compile(fn, ${c.options})`;
  const reasons = [`${c.policy}: ${describe(c)} (${why}): use ${how}`, ...others(c)];
  if (c.policy === 'static' && o.shapes > 8) reasons.push(`static needs recompileLimit >= ${o.shapes} (default 8), or calls past the limit run eagerly`);
  return { recommended: c.policy, reasons };
}
