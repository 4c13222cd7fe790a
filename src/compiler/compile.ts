// kiln.compile: trace on the first call, guard, replay while the guards hold, recompile
// (with the reason) when they do not, and report every graph break and fallback.

import { placeCaptures } from './cache/placement.js';
import { runtime, readContiguous } from '../ops/dispatch.js';
import { checkOutputsFinite } from './run/check-numerics.js';
import { copy } from '../ops/pointwise.js';
import { Tensor, isTensor, tensorHooks } from '../tensor/tensor.js';
import { keep, SteppedScope } from '../core/scope.js';
import { isGradEnabled } from '../autograd/grad-mode.js';
import { Graph, graphKey, printGraph } from './capture/graph.js';
import { Tracer, type BreakRequest } from './capture/tracer.js';
import { buildProgram, interpret } from './run/program.js';
import { FusedProgram } from './run/fused-program.js';
import { lower } from './schedule/lower.js';
import { dropDeadStores } from './schedule/dead-stores.js';
import { groupHorizontally } from './schedule/horizontal.js';
import { printDecisions } from './schedule/print.js';
import { fuseAttention } from './schedule/fuse-attention.js';
import { runPasses, type PassTimings } from './schedule/passes.js';
import { argLeaves, buildGuards, checkGuards, moduleAttributeGuards, paramNames, type Guard } from './capture/guards.js';
import { GraphBreakError, RecompileError } from './errors.js';
import { KilnError, SyncReadError } from '../core/errors.js';
import { log, warnOnce } from '../core/logs.js';
import { raiseInjectedLoweringFault } from './testing.js';
import { counters } from '../core/stats.js';
import { userLocation } from './capture/location.js';
import { debugDump } from './observe/debug-dir.js';
import { allSizeChanges, type SizeChange } from './capture/guards.js';
import { chooseDims, dimKey, planDynamic, type DynamicPlan } from './dynamic/dynamic.js';
import { DynamicProgram } from './run/dynamic-program.js';
import { bucketCall, type BucketSpec } from './dynamic/bucket.js';
import { announceStateWrites } from './run/state-writes.js';
import { applyGradEffects, bindArgGrads, gradStateGuards, releaseReplacedGrads, type ArgGradEffect } from './capture/grad-effects.js';
import { fillTemplate, templateOf } from './capture/result-template.js';
import { prewarmKernelBackend, resolveKernelBackend, type BackendChoice } from '../backend/registry.js';
import { cachedProgram, storeProgram } from './cache/program-cache.js';
import { saveWarmStart, tryWarmStart, type WarmContext, type WarmEntry } from './cache/warm-start.js';
import { closeQuietly, driveGenerator, isGenerator, isGeneratorFunction, runEagerly, type ReadRequest } from './capture/async-read.js';
import { traceJoint, type JointTrace } from './aot/joint.js';
import { isTangent, partitionJoint, type Partition } from './aot/partition.js';
import { AotProgram } from './aot/aot-program.js';
import type { Runnable } from './run/runnable.js';
import { profileSpan } from '../core/profiling.js';

export type CompileMode = 'default' | 'reduce-overhead' | 'max-autotune';
export type Stance = 'default' | 'forceEager' | 'eagerOnRecompile' | 'failOnRecompile';

export interface CompileOptions {
  mode?: CompileMode;
  /** throw at the first graph break instead of splitting the graph */
  fullgraph?: boolean;
  /**
   * dynamic shapes (issue 7): undefined (default) = static first, then a dim whose size changed
   * becomes dynamic (automatic dynamic); true = every size dynamic from the start (except
   * sizes 0 and 1); false = never (each new shape recompiles, up to recompileLimit)
   */
  dynamic?: boolean;
  /** pad a dim up to the next bucket size so a bounded set of static programs serves every size (see bucket.ts) */
  buckets?: BucketSpec;
  /**
   * 'auto' (the default: the fastest that can run here, with the reason in explain), 'js' (the
   * JS renderer: readable generated code, for debugging), 'eager' (capture and replay, each node
   * with eager kernels), or a kernel
   * backend registered by a Node entry point: 'native' (C compiled at run time; import
   * 'kilnjs/node'). An explicitly named backend that cannot run here throws, never falls back.
   */
  backend?: string;
  /** run eagerly, never trace */
  disable?: boolean;
  /** name used in logs (defaults to the function's name) */
  name?: string;
  /** maximum compiled entries before falling back (default 8) */
  recompileLimit?: number;
  /** false: replay recorded eager kernels instead of fused generated kernels (for debugging) */
  fuse?: boolean;
  /** false: do not read or write the persistent compile cache (also KILN_CACHE=0; Node only) */
  cache?: boolean;
  /**
   * Replay does not run the function's JavaScript, so a value it reads from outside without a
   * guard (a closure variable, Math.random(), a field of a non-module object) would be frozen at
   * trace time. kiln traces the first replay of each entry once more and compares the graphs
   * (default); `N` also re-checks every Nth call, `true` every call, `false` never. A difference
   * recompiles with the reason logged and warned, and is checked again on the next call.
   */
  check?: boolean | number;
  /**
   * Tensors the function reads, by stable name: a module (its parameters and buffers by
   * state-dict key; preferred) or a record such as model.stateDict(). kiln.compile places them
   * where kernels read them, and a warm start in a later process binds them by name and skips
   * tracing. The key covers the function's source, these tensors' names, shapes and dtypes, and,
   * for a module, the source of every class in it (so edited model code traces again); with a
   * record, code the function reaches through its closure is not covered (change `name` or clear
   * the cache when it changes).
   */
  captures?: Record<string, Tensor> | CapturedModule;
  /** set by kiln.compile when `captures` is a module: its classes are part of warm-start keys */
  capturedModule?: CapturedModule;
}

/** A module given as `captures` (kiln.nn.Module has all of these). */
export interface CapturedModule {
  namedParameters(): [string, Tensor][];
  namedBuffers?(): [string, Tensor][];
  namedModules?(): [string, object][];
}

function isCapturedModule(x: unknown): x is CapturedModule {
  return typeof x === 'object' && x !== null && typeof (x as CapturedModule).namedParameters === 'function';
}

/** `captures` as named tensors; a module becomes its state by name and is kept for warm-start keys. */
export function normalizeCaptures(opts: CompileOptions): CompileOptions & { captures?: Record<string, Tensor> } {
  const c = opts.captures;
  if (!isCapturedModule(c)) return opts as CompileOptions & { captures?: Record<string, Tensor> };
  return { ...opts, captures: Object.fromEntries([...c.namedParameters(), ...(c.namedBuffers?.() ?? [])]), capturedModule: c };
}

let stance: Stance = 'default';
let epoch = 0;

export function setStance(s: Stance): void {
  stance = s;
}
export function getStance(): Stance {
  return stance;
}
/** Drops every compiled entry (the next call of each compiled function traces again). */
export function resetCompiled(): void {
  epoch++;
}

interface ModuleLike {
  training: boolean;
  forward(...args: unknown[]): unknown;
  modules?(): Iterable<ModuleLike>;
  constructor: { name: string };
}

interface Entry {
  readonly guards: Guard[];
  /** the graph the program runs (for a forward/backward pair: the forward) */
  readonly graph: Graph;
  readonly program: Runnable | AotProgram | null;
  /** node ids (in graph.outputs order) that are the result's tensors */
  readonly resultTemplate: unknown;
  readonly gradLeaves: { leaf: Tensor; outputIndex: number | null }[];
  /** arguments whose .grad the graph sets (by path: each call's own tensors) */
  readonly argGrads: readonly ArgGradEffect[];
  /** re-trace on every call (graph breaks); segments are looked up by structure */
  readonly retrace: boolean;
  /** why replay runs node by node with autograd (null: the compiled program runs) */
  readonly interpreted: string | null;
  /** structural key of `graph`: a check trace must give the same */
  readonly key: string;
  /** the argument shapes the trace saw (a check trace needs a call with these) */
  readonly shapes: string;
  /** whether a second trace confirmed the graph (entries from the persistent cache are) */
  checked: boolean;
  /** replays so far (for `check: N`) */
  calls: number;
}

export interface CompileReport {
  name: string;
  graphs: { text: string; ops: number; key: string; program?: string; kernels?: number; fusion?: string; peakBytes?: number; partition?: string }[];
  breaks: { reason: string; location: string; hint: string }[];
  guards: string[];
  /** ms: total = trace + passes + codegen + firstRun (the segments' first execution) */
  timings: { trace: number; passes: PassTimings; codegen: number; firstRun: number; total: number };
  /** which backend ran the loop kernels of the last program built, and why */
  backend?: BackendChoice;
}

/** The per-function compiler state behind a compiled callable. */
export class CompiledFunction {
  readonly name: string;
  private entries: Entry[] = [];
  private epoch = epoch;
  private readonly segments = new Map<string, Runnable | AotProgram>();
  private readonly argNames: string[];
  private limitWarned = false;
  /** a `function*` (or a forward that returned a generator): reads are explicit async breaks (async-read.ts) */
  isGeneratorFn: boolean;
  /** filled while tracing; explain() reads it */
  report: CompileReport | null = null;

  /** the options, `captures` as named tensors (normalizeCaptures) */
  readonly opts: CompileOptions & { captures?: Record<string, Tensor> };

  constructor(
    private readonly fn: (...args: unknown[]) => unknown,
    options: CompileOptions,
    private readonly module?: ModuleLike,
  ) {
    const opts = (this.opts = normalizeCaptures(options));
    this.name = opts.name ?? (module ? module.constructor.name : fn.name || 'anonymous');
    this.argNames = paramNames(module ? module.forward : fn);
    this.isGeneratorFn = isGeneratorFunction(module ? module.forward : fn);
    // the kernel backend loads now (libraries, worker threads), not inside the first call
    if (opts.fuse !== false) prewarmKernelBackend(opts.backend, runtime.backend);
    // named captures are the function's weights: placed for its kernels now, not in the first call
    placeCaptures(opts);
  }

  /** dims made dynamic by automatic dynamic (arg path # dim) */
  private readonly autoDynamic = new Set<string>();
  /** the dynamic program planned for the call being traced (used if its graph matches) */
  private pendingDynamic: DynamicPlan | null = null;
  /** bucketing state (bucket.ts) */
  bucketState: unknown = undefined;

  /** Dynamic shapes (issue 7): plans the dynamic program for this call, or null (static). */
  private planDynamicFor(args: unknown[]): DynamicPlan | null {
    if (this.opts.dynamic === false || this.opts.backend === 'eager' || this.opts.fuse === false) return null;
    const { dims, notes } = chooseDims(args, this.argNames, this.opts.dynamic, this.autoDynamic);
    for (const n of notes) log('recompiles', `${this.name}: ${n}`);
    if (dims.length === 0) return null;
    const t0 = performance.now();
    const r = planDynamic({ fn: this.fn, args, names: this.argNames, name: this.name, dims, backend: runtime.backend, kernelBackend: resolveKernelBackend(this.opts.backend, runtime.backend).backend, reuseOutputs: this.opts.mode === 'reduce-overhead', aot: isGradEnabled() });
    if ('failed' in r) {
      log('recompiles', `${this.name}: ${dims.map((d) => `arg ${d.path} dim ${d.dim}`).join(', ')} stay static: ${r.failed}`);
      counters.dynamicFailures.push({ fn: this.name, reason: r.failed });
      return null;
    }
    log('perf', `${this.name}: dynamic program planned in ${(performance.now() - t0).toFixed(1)} ms (probe traces + lowering)`);
    return r;
  }

  get entryCount(): number {
    return this.entries.length;
  }

  /** The state kiln knows for this function (a module's parameters and buffers, the { captures }): warm-up restores it. */
  knownState(): Tensor[] {
    const m = this.module as (ModuleLike & { parameters?(): Tensor[]; buffers?(): Tensor[] }) | undefined;
    const out = [...(m?.parameters?.() ?? []), ...(m?.buffers?.() ?? [])];
    for (const t of Object.values(this.opts.captures ?? {})) if (t instanceof Tensor) out.push(t);
    return [...new Set(out)];
  }

  /** The compiled entries, newest last (artifacts export them: src/compiler/cache/artifact.ts). */
  get compiledEntries(): readonly Readonly<Entry>[] {
    return this.entries;
  }

  call(args: unknown[]): unknown {
    if (this.opts.buckets && !this.opts.disable && stance !== 'forceEager' && !runtime.tracer) return bucketCall(this, args, (a) => this.callUnbucketed(a));
    return this.callUnbucketed(args);
  }

  /** The traced function itself (bucketing probes it). */
  get traced(): (...args: unknown[]) => unknown {
    return this.fn;
  }
  get parameterNames(): readonly string[] {
    return this.argNames;
  }

  private callUnbucketed(args: unknown[]): unknown {
    if (this.opts.disable || stance === 'forceEager') return this.eager(args, this.opts.disable ? null : 'stance forceEager');
    if (runtime.tracer) return this.inlined(args);
    if (this.epoch !== epoch) {
      this.entries = [];
      this.segments.clear();
      this.epoch = epoch;
    }
    let reason: string | null = null;
    let changes: SizeChange[] = [];
    for (const e of this.entries) {
      const r = checkGuards(e.guards, args);
      if (r === null) {
        if (e.retrace) return this.trace(args, e);
        if (this.wantsCheck(e, args)) return this.trace(args, null, e);
        counters.cacheHits++;
        return this.replay(e, args);
      }
      if (reason === null && this.opts.dynamic === undefined) changes = allSizeChanges(e.guards, args);
      reason = r; // the newest entry's failure is the nearest miss
    }
    if (this.entries.length > 0) {
      const limit = this.opts.recompileLimit ?? 8;
      if (stance === 'failOnRecompile') throw new RecompileError(`recompiling ${this.name}: ${reason}`, 'compile', 'stance failOnRecompile forbids recompiles; mark the changing dimension dynamic or keep the inputs stable');
      if (stance === 'eagerOnRecompile') return this.eager(args, `eagerOnRecompile: ${reason}`);
      if (this.entries.length >= limit) {
        if (!this.limitWarned) {
          this.limitWarned = true;
          warnOnce(`limit:${this.name}`, `${this.name} hit the recompile limit (${limit}); last reason: ${reason}. Running eagerly from now on. Raise recompileLimit, use dynamic shapes, or check what changes between calls.`);
        }
        return this.eager(args, `recompile limit ${limit} reached: ${reason}`);
      }
      // automatic dynamic: a size that changed is compiled as dynamic from now on
      const fresh = changes.filter((c) => !this.autoDynamic.has(dimKey(c.path, c.dim)));
      if (fresh.length > 0) {
        for (const c of fresh) this.autoDynamic.add(dimKey(c.path, c.dim));
        reason = `${reason}; ${fresh.map((c) => `arg ${c.path} dim ${c.dim}`).join(', ')} ${fresh.length > 1 ? 'become' : 'becomes'} dynamic (automatic dynamic: ${fresh.map((c) => `${c.expected} -> ${c.got}`).join(', ')})`;
      }
      counters.recompiles.push({ fn: this.name, reason: reason! });
      log('recompiles', `recompiling ${this.name} (entry ${this.entries.length + 1}): ${reason}`);
    }
    // the persistent cache: a stored entry for these arguments replays without tracing
    const warm = tryWarmStart(this.cacheContext(), args) as Omit<Entry, 'key' | 'shapes' | 'checked' | 'calls'> | null;
    if (warm) {
      // keyed by the module's class sources and configuration, and guarded like a trace
      const entry: Entry = { ...warm, key: graphKey(warm.graph), shapes: shapeSignature(args, this.argNames), checked: true, calls: 0 };
      this.entries.push(entry);
      counters.compiles++;
      return this.replay(entry, args);
    }
    return this.trace(args, null);
  }

  /** Whether this replay is traced once more to check the graph (the `check` option). */
  private wantsCheck(e: Entry, args: unknown[]): boolean {
    const check = this.opts.check;
    if (check === false || this.opts.backend === 'eager' || this.isGeneratorFn) return false;
    e.calls++;
    if (check === true || (typeof check === 'number' && check > 0 && e.calls % check === 0)) return true;
    // a dynamic entry is checked at a call with the traced sizes
    return !e.checked && shapeSignature(args, this.argNames) === e.shapes;
  }

  /** What the persistent compile cache needs of this function (src/compiler/cache/warm-start.ts). */
  private cacheContext(): WarmContext {
    return {
      name: this.name, opts: this.opts, argNames: this.argNames, fn: this.fn, module: this.module,
      parameterGuards: () => [...this.parameterGuards(), ...this.attributeGuards()],
      makeProgram: (g) => (this.opts.backend === 'eager' ? null : makeProgram(g, this.opts, { name: this.name, graphs: [], breaks: [], guards: [], timings: { trace: 0, passes: {}, codegen: 0, firstRun: 0, total: 0 } })),
    };
  }

  /** The configuration kept in plain properties of the compiled module and of a `captures` module (guards.ts). */
  private attributeGuards(): Guard[] {
    const named = (m: { namedModules?(): [string, object][] } | undefined): [string, object][] => (m ? m.namedModules?.() ?? [['', m]] : []);
    return moduleAttributeGuards([...named(this.module as never), ...named(this.opts.capturedModule)]);
  }

  /** A compiled module's parameters by identity: assigning a new tensor to a layer recompiles. */
  private parameterGuards(): Guard[] {
    const m = this.module as (ModuleLike & { namedParameters?(): [string, Tensor][] }) | undefined;
    if (!m?.namedParameters) return [];
    const named = m.namedParameters();
    return [{
      text: `module parameters: ${named.length} tensors by identity`,
      check: () => {
        const now = m.namedParameters!();
        if (now.length !== named.length) return `module parameter count changed: expected ${named.length}, got ${now.length}`;
        const i = now.findIndex(([, t], k) => t !== named[k]![1]);
        return i < 0 ? null : `module parameter ${now[i]![0]} was replaced by another tensor`;
      },
    }];
  }

  private eager(args: unknown[], reason: string | null): unknown {
    if (reason) {
      counters.eagerFallbacks++;
      if (counters.fallbackReasons.length < 100) counters.fallbackReasons.push(`${this.name}: ${reason}`);
    }
    const result = this.fn(...args);
    return isGenerator(result) ? runEagerly(result, this.name) : result;
  }

  private replay(e: Entry, args: unknown[]): unknown {
    const inputs = resolveInputs(e.graph, args, this.argNames);
    const gradLeaves = e.argGrads.length ? [...e.gradLeaves, ...bindArgGrads(e.argGrads, args, this.argNames)] : e.gradLeaves;
    announceStateWrites(e.graph, inputs, gradLeaves);
    releaseReplacedGrads(gradLeaves, inputs);
    let outs: Tensor[];
    if (e.program && e.interpreted === null) {
      outs = e.program.run(inputs);
      if (runtime.checkNumerics) checkOutputsFinite(this.name, outs);
    } else {
      if (e.interpreted !== null) countInterpreted(this.name, e.interpreted);
      outs = interpret(e.graph, inputs);
    }
    applyGradEffects(gradLeaves, outs);
    return fillTemplate(e.resultTemplate, outs);
  }

  /** Called while another compiled function traces: the code is traced into the caller's graph. */
  private inlined(args: unknown[]): unknown {
    if (!this.isGeneratorFn) {
      const result = this.fn(...args);
      if (!isGenerator(result)) return result;
      this.isGeneratorFn = true;
      closeQuietly(result);
    }
    throw new GraphBreakError(`compiled generator ${this.name} was called inside another compiled function`, 'its reads need a Promise the caller cannot wait for: from a compiled generator, call the uncompiled generator with `yield* gen(...)`; or call it outside compiled code');
  }

  /**
   * Traces fn; runs segments as it goes (graph breaks); records an entry when replayable.
   * `existing`: an entry with graph breaks, traced on every call. `checking`: an entry whose
   * guards held, traced again to confirm its graph (wantsCheck).
   */
  private trace(args: unknown[], existing: Entry | null, checking: Entry | null = null): unknown {
    if (checking) counters.traceChecks++;
    else counters.cacheMisses++;
    const t0 = performance.now();
    // a generator is never replayed without its JavaScript (its reads decide what runs next)
    this.pendingDynamic = existing || checking || this.isGeneratorFn ? null : this.planDynamicFor(args);
    const report: CompileReport = { name: this.name, graphs: [], breaks: [], guards: [], timings: { trace: 0, passes: {}, codegen: 0, firstRun: 0, total: 0 } };
    // a generator's call is a scope of its own: its code runs in stretches, where kiln.scope cannot reach
    const run: TraceRun = { tracer: null!, report, codegen: 0, t0, args, deferred: [], prevHooks: { ...tensorHooks }, asyncReads: 0, scope: this.isGeneratorFn ? new SteppedScope() : null, installed: false, gradWritesBefore: 0, checking };
    run.tracer = new Tracer(this.name, (tr, req) => this.onBreak(tr, req, run));
    let finished = false;
    let handedOff = false;
    installTracer(run);
    try {
      const proxied = args.map((a, i) => proxify(a, this.argNames[i] ?? `arg${i}`, run.tracer));
      const result = this.fn(...proxied);
      if (isGenerator(result)) {
        uninstallTracer(run);
        if (!run.scope) {
          // found out only now (a module's forward written as a generator): the argument proxies join its scope
          this.isGeneratorFn = true;
          run.scope = new SteppedScope();
          for (const list of run.tracer.proxies.values()) for (const p of list) run.scope.adopt(p);
        }
        handedOff = true;
        return this.driveTrace(run, result, existing);
      }
      if (result instanceof Promise) {
        result.catch(() => undefined); // its own failure (e.g. an asynchronous read) is superseded by this error
        throw new GraphBreakError('the compiled function returned a Promise', `compile synchronous tensor code and await outside the compiled function, or ${GENERATOR_HINT}`);
      }
      const out = this.finishTrace(run, result, existing);
      finished = true;
      return out;
    } finally {
      if (!handedOff) endTrace(run, finished);
    }
  }

  /**
   * A compiled generator: runs each stretch of the user's code between reads with the tracer
   * installed, and at each `yield` runs the graph so far, awaits the read and resumes with the
   * values (async-read.ts says why a generator and not an async function).
   */
  private async driveTrace(run: TraceRun, gen: Generator<unknown, unknown, unknown>, existing: Entry | null): Promise<unknown> {
    let result: unknown;
    try {
      result = await driveGenerator(gen, this.name, {
        run: (f) => {
          installTracer(run);
          try {
            return f();
          } finally {
            uninstallTracer(run);
          }
        },
        atRead: (req) => this.asyncReadBreak(run, req),
        done: (value) => this.finishTrace(run, value, existing),
      });
    } catch (e) {
      this.report = run.report; // explain() shows the breaks before the error
      endTrace(run, false);
      run.scope!.abort();
      throw e;
    }
    endTrace(run, true);
    return run.scope!.close(result, isTensor);
  }

  /** A `yield` in a compiled generator: a graph break that runs the graph so far so its values can be read. */
  private asyncReadBreak(run: TraceRun, req: ReadRequest): void {
    run.asyncReads++;
    counters.asyncReads++;
    const location = req.location || `yield #${run.asyncReads} in ${this.name}`;
    const reason = `asynchronous read of ${req.tensors.length} tensor${req.tensors.length === 1 ? '' : 's'} (kiln.read)`;
    const hint = 'an explicit read: the graph before it runs and its values are read back (awaited on webgpu); keep the values on tensors (kiln.where, masks) to stay in one graph';
    if (this.opts.fullgraph) throw new GraphBreakError(`graph break in ${this.name}: ${reason}`, `${hint}; fullgraph forbids breaks`, location);
    this.recordBreak(run.report, reason, location, hint);
    this.flushSegment(run);
  }

  /**
   * A graph break: the graph so far runs on the live proxies' behalf, and tracing goes on in a new
   * one. Live values that require grad get a compiled backward (AOTAutograd) unless this segment
   * ran backward itself; then autograd's saved values are outputs too, for the backward to come.
   */
  private flushSegment(run: TraceRun): void {
    const tracer = run.tracer;
    const graph = tracer.graph;
    const live = tracer.liveNodes(true);
    const joint = this.traceBackward(run, live.flatMap((id) => tracer.proxies.get(id)!.filter((p) => !p.isDisposed && p.trace?.id === id).slice(0, 1)));
    graph.outputs = joint ? live : tracer.liveNodes();
    this.finishSegment(tracer, graph, run.report, (ms) => (run.codegen += ms), run.args, joint);
    run.gradWritesBefore = tracer.gradWrites.size;
    tracer.startSegment();
  }

  /**
   * AOTAutograd: when `results` (proxies of this segment) require grad, grad mode is on and the
   * segment did not run backward itself, traces their backward into the graph (aot/joint.ts).
   */
  private traceBackward(run: TraceRun, results: readonly Tensor[]): JointTrace | null {
    const tracer = run.tracer;
    if (this.opts.backend === 'eager' || !isGradEnabled() || tracer.gradWrites.size > run.gradWritesBefore) return null;
    const roots = results.filter((t) => t.requiresGrad && t.trace?.tracer === tracer);
    if (roots.length === 0) return null;
    const joint = traceJoint(tracer, roots);
    if (joint.dropped > 0) log('aot', `${this.name}: ${joint.dropped} gradient(s) reached tensors made inside the function that require grad; their .grad is not set (return them, or make them outside)`);
    return joint;
  }

  /** The end of a trace: the last segment's outputs are the result, new grads, and tensors that escaped (kept). */
  private finishTrace(run: TraceRun, result: unknown, existing: Entry | null): unknown {
    const { tracer, report, t0, args } = run;
    const modules = this.module?.modules ? [...this.module.modules()] : this.module ? [this.module] : [];
    const resultIds = collectProxies(result, tracer);
    const gradLeaves = [...tracer.gradWrites.keys()];
    const gradIds = gradLeaves.map((l) => (l.grad?.trace?.tracer === tracer ? l.grad.trace.id : null));
    const escaped = tracer.liveNodes().filter((id) => tracer.proxies.get(id)!.some((p) => p.kept && !p.isDisposed && !gradLeaves.some((l) => l.grad === p)));
    const extra = escaped.filter((id) => !resultIds.includes(id) && !gradIds.includes(id));
    const graph = tracer.graph;
    const joint = extra.length === 0 ? this.traceBackward(run, collectTensors(result)) : null;
    graph.outputs = dedupe([...resultIds, ...gradIds.filter((x): x is number => x !== null), ...extra]);
    const replayable = tracer.segment === 0 && extra.length === 0 && !this.isGeneratorFn;
    const compiled = this.finishSegment(tracer, graph, report, (ms) => (run.codegen += ms), args, joint, run.checking);
    handArgGrads(tracer, args, this.argNames);
    report.timings.total = performance.now() - t0;
    profileSpan('compile', `compile ${this.name}`, t0, { graphs: report.graphs.length, breaks: report.breaks.length });
    report.timings.codegen = run.codegen;
    report.timings.trace = report.timings.total - run.codegen - report.timings.firstRun - Object.values(report.timings.passes).reduce((a, b) => a + b, 0);
    // compile time is what compiling cost, not the first run of the program
    counters.compileTimeMs += report.timings.total - report.timings.firstRun;
    this.report = report;
    log('perf', () => `${this.name}: traced and compiled in ${(report.timings.total - report.timings.firstRun).toFixed(1)} ms (trace ${report.timings.trace.toFixed(1)}, passes ${Object.entries(report.timings.passes).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}, codegen ${run.codegen.toFixed(1)}), then ran in ${report.timings.firstRun.toFixed(1)} ms`);
    if (!existing) {
      if (replayable) {
        const resultTemplate = templateOf(result);
        const pending = this.pendingDynamic;
        const dyn = pending?.used && (compiled.program === pending.program || (compiled.program instanceof AotProgram && compiled.program.fwd === pending.program)) ? pending : null;
        const guards = [...buildGuards(args, this.argNames, compiled.graph, modules, dyn?.guardSpec), ...this.parameterGuards(), ...this.attributeGuards(), ...gradStateGuards(tracer, args, this.argNames)];
        report.guards = guards.map((g) => g.text);
        log('guards', () => `${this.name} guards:\n  ${report.guards.join('\n  ')}`);
        const outIndex = (id: number | null) => (id === null ? null : compiled.graph.outputs.indexOf(compiled.idMap.get(id)!));
        if (dyn) {
          counters.dynamicCompiles.push({ fn: this.name, symbols: dyn.notes });
          log('recompiles', `${this.name}: compiled with dynamic sizes:\n  ${dyn.notes.join('\n  ')}`);
        }
        const entry: Entry = {
          guards, graph: compiled.graph, program: compiled.program, resultTemplate,
          gradLeaves: gradLeaves.flatMap((leaf, i) => (tracer.argPathOf(leaf) === undefined ? [{ leaf, outputIndex: outIndex(gradIds[i] ?? null) }] : [])),
          argGrads: gradLeaves.flatMap((leaf, i) => { const path = tracer.argPathOf(leaf); return path === undefined ? [] : [{ path, outputIndex: outIndex(gradIds[i] ?? null) }]; }),
          retrace: false, interpreted: compiled.interpreted, key: compiled.key, shapes: shapeSignature(args, this.argNames), checked: false, calls: 0,
        };
        if (run.checking) this.settleCheck(run.checking, entry);
        else {
          this.entries.push(entry);
          counters.compiles++;
          saveWarmStart(this.cacheContext(), args, entry as unknown as WarmEntry, tracer.gradWrites.size);
        }
      } else if (tracer.segment > 0 || this.isGeneratorFn) {
        const guards = buildGuards(args, this.argNames, new Graph('none'), modules);
        report.guards = guards.map((g) => g.text);
        this.entries.push({ guards, graph: compiled.graph, program: null, resultTemplate: null, gradLeaves: [], argGrads: [], retrace: true, interpreted: null, key: compiled.key, shapes: '', checked: true, calls: 0 });
        counters.compiles++;
        if (run.checking) this.settleCheck(run.checking, null);
      } else {
        if (run.checking) this.settleCheck(run.checking, null);
        log('recompiles', `${this.name}: tensors created while tracing escaped the function (${extra.length}; e.g. optimizer state made on the first step), so this trace ran once and was not cached`);
      }
    }
    return result;
  }

  /**
   * The end of a check trace: the same graph confirms the entry (the call counts as a replay);
   * another one replaces it, as a recompile with the reason, checked again on the next call.
   */
  private settleCheck(old: Entry, fresh: Entry | null): void {
    if (fresh && fresh.key === old.key) {
      old.checked = true;
      counters.cacheHits++;
      return;
    }
    const i = this.entries.indexOf(old);
    if (fresh) this.entries[i] = fresh;
    else this.entries.splice(i, 1);
    const reason = `the traced graph changed although every guard held: the function read a value kiln does not guard (a closure variable, a field of a non-module object, Math.random()) and it changed since the trace`;
    counters.compiles++;
    counters.recompiles.push({ fn: this.name, reason });
    log('recompiles', `recompiling ${this.name}: ${reason}`);
    warnOnce(`stale:${this.name}`, `${this.name}: ${reason}. Compiled code replays without running the function's JavaScript: pass values that change as arguments (numbers are guarded) or tensors, or keep them on modules (their attributes are guarded). kiln recompiles and checks again on the next call.`);
  }

  /** Counts and logs a graph break once per function, location and reason; explain lists every one. */
  private recordBreak(report: CompileReport, reason: string, location: string, hint: string): void {
    report.breaks.push({ reason, location, hint });
    if (!counters.graphBreaks.some((b) => b.fn === this.name && b.location === location && b.reason === reason)) {
      counters.graphBreaks.push({ fn: this.name, reason, location, hint });
      log('graph_breaks', `graph break in ${this.name} at ${location}: ${reason}\n  hint: ${hint}`);
    }
  }

  private onBreak(tracer: Tracer, req: BreakRequest, run: TraceRun): Float32Array | ReturnType<typeof readContiguous> | undefined {
    const report = run.report;
    const location = userLocation();
    // a backend that reads only asynchronously (webgpu): the break would need `await`, which a
    // synchronous trace cannot do, so it is reported and raised as the backend's typed error
    const asyncRead = req.tensor !== undefined && runtime.backend.syncReads === false;
    const reason = asyncRead ? `${req.reason}; on ${runtime.backend.name} reading a tensor is asynchronous (await t.data()), so this read is a graph break the compiled function cannot wait for` : req.reason;
    const hint = asyncRead ? ASYNC_READ_HINT : breakHint(req.reason);
    if (this.opts.fullgraph && !asyncRead) throw new GraphBreakError(`graph break in ${this.name}: ${reason}`, hint, location);
    this.recordBreak(report, reason, location, hint);
    if (asyncRead) {
      this.report = report; // explain() shows the break it stopped at
      const message = `graph break in ${this.name} at ${location}: ${reason}`;
      throw runtime.backend.syncReadError?.(message, 'compile', hint) ?? new SyncReadError(message, 'compile', hint);
    }
    this.flushSegment(run);
    runtime.tracer = tracer;
    if (!req.tensor) return undefined;
    const saved = runtime.tracer;
    runtime.tracer = null;
    try {
      return readContiguous(req.tensor);
    } finally {
      runtime.tracer = saved;
    }
  }

  /**
   * Optimizes, compiles (or finds by structure) and runs one segment, then gives its proxies
   * their data. With `joint` (AOTAutograd) the graph holds the backward too: it is partitioned
   * into a forward/backward pair, and the results get the pair's grad node. `checking`: the
   * entry a check trace confirms; the same graph runs its program (nothing is compiled).
   */
  private finishSegment(tracer: Tracer, graph: Graph, report: CompileReport, addCodegen: (ms: number) => void, args: unknown[] | null, joint: JointTrace | null = null, checking: Entry | null = null): { graph: Graph; program: Runnable | AotProgram | null; idMap: Map<number, number>; interpreted: string | null; key: string } {
    // keep original ids reachable after passes renumber nodes: outputs keep their order
    const originalOutputs = [...graph.outputs];
    if (joint) graph.outputs = [...originalOutputs, ...joint.grads.map((g) => g.value)];
    const optimized = runPasses(graph, report.timings.passes);
    const key = graphKey(optimized);
    let program: Runnable | AotProgram | null = null;
    let runGraph = optimized;
    let interpreted: string | null = null;
    const useProgram = this.opts.backend !== 'eager';
    const dyn = this.pendingDynamic;
    const compileOnce = (make: () => Runnable | AotProgram) => {
      const t0 = performance.now();
      const staged = stagedMs(report);
      const p = make();
      // codegen is what makeProgram spent beyond the stages it timed itself (lowering, cache reads)
      addCodegen(performance.now() - t0 - (stagedMs(report) - staged));
      this.segments.set(key, p);
      counters.graphsCompiled++;
      return p;
    };
    if (checking && checking.key === key) {
      // the checked entry's program runs, on this trace's inputs (the same graph: the same order)
      program = checking.program;
      if (joint) runGraph = partitionJoint(optimized, originalOutputs.length).fwd;
    } else if (joint && useProgram && dyn?.aot && !dyn.used && args && dyn.aot.nForward === originalOutputs.length && dyn.matches(optimized)) {
      // the dynamic forward/backward pair serves this call
      const part = dyn.aot.partition;
      runGraph = part.fwd;
      program = new AotProgram(this.name, dyn.aot.fwd, dyn.aot.bwd, part, originalOutputs.length, joint.diffResults.map((id) => originalOutputs.indexOf(id)), joint.grads.map((g) => forwardInputs(graph).indexOf(g.input)));
      counters.aotCompiles++;
      counters.graphsCompiled++;
      dyn.used = true;
    } else if (joint) {
      const part = partitionJoint(optimized, originalOutputs.length);
      runGraph = part.fwd;
      if (part.unsupported !== null || !useProgram) {
        interpreted = useProgram ? part.unsupported : null;
        if (interpreted) log('perf', `${this.name}: the results require grad, but ${interpreted}: replay runs node by node with autograd`);
      } else {
        program = this.segments.get(key) ?? null;
        if (program) counters.segmentHits++;
        else program = compileOnce(() => this.makeAot(part, graph, originalOutputs, joint, report));
      }
    } else if (useProgram && dyn && !dyn.used && args && dyn.matches(optimized)) {
      // the dynamic program serves this call (its graph at these sizes is this graph)
      program = dyn.program;
      counters.graphsCompiled++;
      dyn.used = true;
    } else if (useProgram) {
      program = this.segments.get(key) ?? null;
      if (program) counters.segmentHits++;
      else program = compileOnce(() => makeProgram(optimized, this.opts, report));
    }
    const idMap = new Map<number, number>(originalOutputs.map((id, i) => [id, runGraph.outputs[i]!]));
    if (program instanceof AotProgram) {
      recordGraph(this.name, report, program.fwdGraph, program.fwd, key, null, program.partition.summary);
      recordGraph(this.name, report, program.bwdGraph, program.bwd, key, null, null);
    } else recordGraph(this.name, report, runGraph, program, key, program instanceof DynamicProgram ? dyn : null, null);
    // run it now on the real tensors
    runtime.tracer = null;
    const inputs = resolveInputs(runGraph, args ?? [], this.argNames, tracer);
    announceStateWrites(runGraph, inputs, [...tracer.gradWrites.keys()].map((leaf) => ({ leaf })));
    const r0 = performance.now();
    const outs = program ? program.run(inputs) : interpret(runGraph, inputs);
    report.timings.firstRun += performance.now() - r0;
    if (runtime.checkNumerics && program) checkOutputsFinite(this.name, outs);
    // give every live proxy of each output node its data (and the autograd node of a result that needs one)
    // values CSE merged (e.g. every Adam step counter starts as 0 + 1) still become separate
    // tensors: each distinct traced value gets its own memory
    const given = new Set<unknown>();
    const made: Tensor[] = [];
    originalOutputs.forEach((id, i) => {
      let out = outs[i]!;
      if (given.has(out.storage)) made.push((out = copy(out)));
      given.add(out.storage);
      for (const p of tracer.proxies.get(id) ?? []) {
        if (!p.isDisposed && p.trace?.id === id && p.trace.tracer === tracer) {
          p.materialize(out.storage, out.strides, out.offset);
          tracer.materialized.add(p);
          if (joint && out.gradFn && p.requiresGrad) p.setGradFn(out.gradFn, out.gradSlot);
        }
      }
    });
    for (const t of new Set([...outs, ...made])) t.dispose();
    return { graph: runGraph, program, idMap, interpreted, key };
  }

  /** Compiles a partitioned joint graph into a forward/backward pair (AOTAutograd). */
  private makeAot(part: Partition, original: Graph, fwdOutputs: readonly number[], joint: JointTrace, report: CompileReport): AotProgram {
    const fwd = makeProgram(part.fwd, this.opts, report);
    const bwd = makeProgram(part.bwd, this.opts, report);
    const inputs = forwardInputs(original);
    counters.aotCompiles++;
    log('aot', () => `${this.name}: forward ${part.fwd.opCount} ops, backward ${part.bwd.opCount} ops\n  ${part.summary.replace(/\n/g, '\n  ')}`);
    return new AotProgram(this.name, fwd, bwd, part, fwdOutputs.length,
      joint.diffResults.map((id) => fwdOutputs.indexOf(id)), joint.grads.map((g) => inputs.indexOf(g.input)));
  }
}

/** Reports a compiled graph (explain, logs, debug dumps); the printed forms are made when read. */
function recordGraph(fnName: string, report: CompileReport, graph: Graph, program: Runnable | null, key: string, dyn: DynamicPlan | null, partition: string | null): void {
  const fused = program instanceof FusedProgram || program instanceof DynamicProgram ? program : null;
  // printing a program's kernels is text for every kernel, work a first call should not pay for
  let text: string | undefined, printed: string | undefined;
  const graphText = () => (text ??= dyn ? printGraph(dyn.graph) : printGraph(graph));
  const programText = () => (program ? (printed ??= program.print()) : undefined);
  report.graphs.push({
    get text() { return graphText(); },
    get program() { return programText(); },
    get fusion() { return fused ? printDecisions(fused.lowered.decisions) : undefined; },
    ops: graph.opCount, key, kernels: fused?.kernels.length, peakBytes: fused instanceof FusedProgram ? fused.peakBytes : undefined,
    ...(partition ? { partition } : {}),
  });
  log('graph', graphText);
  debugDump(fnName, graph.name, { get 'graph.txt'() { return graphText(); }, get 'program.txt'() { return programText() ?? '(eager backend: node by node)'; }, ...(partition ? { 'partition.txt': partition } : {}) });
}

/** A graph's input nodes other than a joint trace's tangents (the forward's inputs, in order). */
function forwardInputs(g: Graph): number[] {
  return g.inputNodes.filter((n) => !isTangent(n)).map((n) => n.id);
}

/** Time makeProgram records as stages of its own (report.timings.passes). */
function stagedMs(report: CompileReport): number {
  return (report.timings.passes.lower ?? 0) + (report.timings.passes.cached_program ?? 0);
}


/** Lowers and schedules a graph into fused kernels; the recorded eager-kernel program is the fallback. */
function makeProgram(graph: Graph, opts: CompileOptions, report: CompileReport): Runnable {
  // an explicitly requested kernel backend that cannot run throws here (no silent fallback)
  const { backend: kernelBackend, choice } = opts.fuse !== false ? resolveKernelBackend(opts.backend, runtime.backend) : { backend: runtime.backend, choice: { requested: opts.backend ?? 'js', chosen: 'js', reason: 'fuse: false (recorded eager kernels)' } };
  const jsRenderer = choice.chosen === 'js';
  report.backend = choice;
  if (opts.fuse !== false) {
    try {
      const t0 = performance.now();
      // the persistent compile cache (src/compiler/cache): a hit skips lowering and codegen
      const hit = cachedProgram(graph, opts, kernelBackend);
      if (!hit) raiseInjectedLoweringFault();
      const lowered = hit?.lowered ?? lower(graph);
      if (!hit) {
        dropDeadStores(lowered, new Set(lowered.outputs.map((o) => o.buf)));
        if (kernelBackend.attentionKernels) fuseAttention(lowered);
        groupHorizontally(lowered);
      }
      // a cache hit's time is reading and decoding the stored program, not lowering
      const stage = hit ? 'cached_program' : 'lower';
      report.timings.passes[stage] = (report.timings.passes[stage] ?? 0) + performance.now() - t0;
      profileSpan('compile', stage, t0, { graph: graph.name });
      // reduce-overhead: scratch is already allocated once; outputs are recycled when disposed
      const p = new FusedProgram(lowered, runtime.backend, { reuseOutputs: opts.mode === 'reduce-overhead', autotune: opts.mode === 'max-autotune' && !hit, kernelBackend });
      if (hit) hit.done(p);
      else storeProgram(graph, opts, kernelBackend, p, performance.now() - t0);
      log('fusion', () => `${graph.name}: ${graph.opCount} ops -> ${p.kernels.length} kernels + ${lowered.steps.length - p.kernels.length} opaque\n${printDecisions(lowered.decisions)}`);
      log('output_code', () => `${graph.name}:\n${p.print()}\n\n${p.source()}`);
      // getters: the texts are made only when KILN_DEBUG_DIR is set (p.source() renders every
      // kernel again, e.g. all the C of a native program loaded from the compile cache)
      const codeFile = jsRenderer ? 'output_code.js' : `output_code.${kernelBackend.name === 'native' ? 'c' : 'txt'}`;
      debugDump(report.name, graph.name, {
        get 'loop_ir.txt'() { return p.print(); },
        get 'fusion.txt'() { return printDecisions(lowered.decisions); },
        get [codeFile]() { return p.source(); },
      });
      return p;
    } catch (e) {
      // a bug in lowering or code generation surfaces, and so does a kernel backend's own
      // failure (e.g. the C compiler rejected the code); only a typed refusal of the JS
      // renderer falls back, counted and warned about (an error under fullgraph)
      if (!(e instanceof KilnError) || !jsRenderer) throw e;
      if (opts.fullgraph) throw new GraphBreakError(`${graph.name} could not be fused: ${e.message}`, 'fullgraph forbids running recorded eager kernels instead; compile without fullgraph to fall back, or report the graph (KILN_LOGS=graph)');
      counters.fusionFallbacks++;
      log('fusion', `${graph.name}: fusion failed, running recorded eager kernels instead: ${e.message}`);
      warnOnce(`fusion:${report.name}`, `${report.name}: a graph could not be fused and runs recorded eager kernels instead (slower): ${e.message.split('\n')[0]}. kiln.stats().fusionFallbacks counts these.`);
    }
  }
  const p = buildProgram(graph, runtime.backend, { persistentScratch: opts.mode === 'reduce-overhead' });
  log('output_code', () => `${graph.name}:\n${p.print()}`);
  return p;
}

/** A replay that runs node by node with autograd: counted, and warned about once per function and reason. */
function countInterpreted(fn: string, why: string): void {
  counters.interpretedReplays++;
  const reason = `${fn}: ${why}`;
  if (!counters.interpretedReasons.includes(reason) && counters.interpretedReasons.length < 100) counters.interpretedReasons.push(reason);
  warnOnce(`interpreted:${reason}`, `${fn} replays node by node with eager kernels and autograd (slow): ${why}. kiln.stats().interpretedReplays counts these replays.`);
}

/** The .grad a traced backward gave the argument proxies (now with data) goes to the caller's tensors, as eager would set it. */
function handArgGrads(tracer: Tracer, args: readonly unknown[], names: readonly string[]): void {
  let leaves: Map<string, unknown> | null = null;
  for (const proxy of tracer.gradWrites.keys()) {
    const path = tracer.argPathOf(proxy);
    if (path === undefined) continue;
    leaves ??= new Map(argLeaves(args, names).map((l) => [l.path, l.value]));
    const t = leaves.get(path) as Tensor;
    const g = proxy.grad;
    proxy.grad = null; // the proxy's disposal would take its grad along
    if (t.grad === g) continue;
    const old = t.grad;
    t.grad = g && g.hasStorage ? keep(g) : null;
    if (old && old !== t.grad) old.dispose();
  }
}

/** The shapes of a call's tensor arguments, as one string. */
function shapeSignature(args: readonly unknown[], names: readonly string[]): string {
  return argLeaves(args, names).map((l) => (l.value instanceof Tensor ? `${l.path}[${l.value.shape.join(',')}]` : '')).join(';');
}

/** The tensors in a result (nested in arrays and plain objects). */
function collectTensors(v: unknown, into: Tensor[] = [], depth = 0): Tensor[] {
  if (v instanceof Tensor) into.push(v);
  else if (depth < 6 && Array.isArray(v)) v.forEach((x) => collectTensors(x, into, depth + 1));
  else if (depth < 6 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach((x) => collectTensors(x, into, depth + 1));
  return into;
}

function dedupe(ids: number[]): number[] {
  return [...new Set(ids)];
}

/** Replaces tensor leaves of the arguments by proxies. */
function proxify(v: unknown, path: string, tracer: Tracer, depth = 0): unknown {
  if (v instanceof Tensor) return tracer.argInput(v, path);
  if (depth < 6 && Array.isArray(v)) return v.map((x, i) => proxify(x, `${path}[${i}]`, tracer, depth + 1));
  if (depth < 6 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, proxify(x, `${path}.${k}`, tracer, depth + 1)]));
  }
  return v;
}

function collectProxies(v: unknown, tracer: Tracer, into: number[] = [], depth = 0): number[] {
  if (v instanceof Tensor) {
    if (v.trace?.tracer === tracer) into.push(v.trace.id);
    else into.push(tracer.nodeOf(v)); // a concrete tensor returned as is: an input passed through
  } else if (depth < 6 && Array.isArray(v)) v.forEach((x) => collectProxies(x, tracer, into, depth + 1));
  else if (depth < 6 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach((x) => collectProxies(x, tracer, into, depth + 1));
  return into;
}

/** The real tensors bound to a graph's input nodes (while tracing: the grads seen then). */
function resolveInputs(graph: Graph, args: readonly unknown[], names: readonly string[], tracer?: Tracer): Tensor[] {
  let leaves: Map<string, unknown> | null = null;
  return graph.inputNodes.map((n) => {
    const src = n.source!;
    if (src.kind === 'ref') return src.tensor;
    if (src.kind === 'grad') return tracer ? src.seen : src.leaf.grad!;
    leaves ??= new Map(argLeaves(args, names).map((l) => [l.path, l.value]));
    const t = leaves.get(src.path);
    if (!(t instanceof Tensor)) throw new Error(`kiln internal: argument ${src.path} is not a tensor`);
    if (!src.grad) return t;
    if (!t.grad) throw new Error(`kiln internal: argument ${src.path} has no .grad`);
    return t.grad;
  });
}

function disposeProxies(tracer: Tracer): void {
  for (const list of tracer.proxies.values()) for (const p of list) if (!p.hasStorage) p.dispose();
}

const GENERATOR_HINT = 'write the compiled function as a generator and read with `const v = yield* kiln.read(t)` (an explicit asynchronous graph break; the compiled function then returns a Promise)';
const ASYNC_READ_HINT = GENERATOR_HINT + ', or split it at the read into two compiled functions with `await t.data()` between them, or keep the value on tensors (kiln.where, masks) so no read is needed. item(), dataSync() and toArray() inside compiled code raise WebGpuSyncReadError on webgpu';

/** One trace of a call: its tracer, report and the state its hooks need, across the stretches of a generator. */
interface TraceRun {
  tracer: Tracer;
  readonly report: CompileReport;
  codegen: number;
  readonly t0: number;
  /** the call's arguments (segments bind their inputs from them) */
  readonly args: unknown[];
  /** concrete tensors the user disposed while tracing: released when the trace ends */
  readonly deferred: Tensor[];
  readonly prevHooks: typeof tensorHooks;
  /** explicit reads (kiln.read) so far */
  asyncReads: number;
  /** a generator's call: what its code makes is disposed when it settles, except the result and kept tensors */
  scope: SteppedScope | null;
  /** whether the tracer (and the scope) is installed now: the user's code is running */
  installed: boolean;
  /** tracer.gradWrites.size when the current segment started (a segment that ran backward gets no compiled backward) */
  gradWritesBefore: number;
  /** the entry this trace checks (its graph must come out the same) */
  readonly checking: Entry | null;
}

/** The tracer records ops, .grad writes and postponed disposals while the user's code runs. */
function installTracer(run: TraceRun): void {
  run.installed = true;
  run.scope?.enter();
  const tracer = run.tracer;
  runtime.tracer = tracer;
  tensorHooks.onGradWrite = (leaf, old, next) => tracer.onGradWrite(leaf, old, next);
  tensorHooks.deferDispose = (t) => {
    if (!t.hasStorage || runtime.tracer !== tracer) return false;
    run.deferred.push(t);
    return true;
  };
}

function uninstallTracer(run: TraceRun): void {
  if (!run.installed) return;
  run.installed = false;
  run.scope?.exit();
  runtime.tracer = null;
  tensorHooks.onGradWrite = run.prevHooks.onGradWrite;
  tensorHooks.deferDispose = run.prevHooks.deferDispose;
}

function endTrace(run: TraceRun, finished: boolean): void {
  uninstallTracer(run);
  for (const t of run.deferred) t.dispose();
  if (!finished) disposeProxies(run.tracer);
}


function breakHint(reason: string): string {
  if (reason.includes('read')) return 'keep the value on tensors (kiln.where, masks) or move the read outside the compiled function';
  if (reason.includes('graphBreak')) return 'remove the explicit kiln.compiler.graphBreak() call to get one graph';
  if (reason.includes('disable')) return 'the function is excluded with kiln.compiler.disable(); compile it or move the call out';
  return 'see kiln.explain(fn)(...args) for the graphs on each side of the break';
}

