// Warm starts: a compiled function's whole traced entry (the optimized graph with its inputs
// named, the result's shape, whether outputs carry autograd) stored under a key computed
// BEFORE tracing: the function's source, the captured tensors' names and metadata, the
// arguments' guards, grad mode and training flags, the options and the store's fingerprint.
// A later process with the same key binds the captures by name, rebuilds the guards from the
// arguments, takes the program from the program cache, and replays without running the
// function: no tracing at all. Possible for compiled nn.Modules (parameters and buffers by
// state-dict name) and functions compiled with { captures } (e.g. model.stateDict()).
// Training steps (gradient effects), graph breaks, custom ops and unnamed captures are traced
// as usual (their programs still come from the program cache).

import { isGradEnabled } from '../../autograd/grad-mode.js';
import { Tensor } from '../../tensor/tensor.js';
import { InvalidProgramError } from '../../ir/errors.js';
import type { Graph } from '../capture/graph.js';
import { argLeaves, buildGuards, type Guard } from '../capture/guards.js';
import { log } from '../../core/logs.js';
import { counters } from '../../core/stats.js';
import { Blobs, decodeGraph, decodeValue, encodeGraph, encodeValue, NotStorable, type Binder, type StoredGraph } from './serialize.js';
import { SCHEMA_VERSION } from './validate.js';
import { cacheStore, type CacheStore } from './store.js';
import { AotProgram } from '../aot/aot-program.js';
import type { PartitionDecision, SavedSource } from '../aot/partition.js';
import type { Runnable } from '../run/runnable.js';

const FORMAT = 'kiln-warm-1';

interface ModuleLike {
  training: boolean;
  forward(...args: unknown[]): unknown;
  modules?(): Iterable<ModuleLike>;
  namedParameters?(): [string, Tensor][];
  namedBuffers?(): [string, Tensor][];
  namedModules?(): [string, ModuleLike][];
  readonly hooksVersion?: number;
  constructor: { name: string };
}

/** What the compiler driver lends the cache for one compiled function. */
export interface WarmContext {
  readonly name: string;
  readonly opts: { backend?: string; mode?: string; fuse?: boolean; fullgraph?: boolean; cache?: boolean; captures?: Record<string, Tensor>; capturedModule?: { namedModules?(): [string, object][] } };
  readonly argNames: readonly string[];
  readonly fn: (...args: unknown[]) => unknown;
  readonly module?: ModuleLike;
  parameterGuards(): Guard[];
  /** builds (or finds in the program cache) the program of an optimized graph */
  makeProgram(graph: Graph): unknown;
}

/** The compiler's entry, as the driver keeps it. */
export interface WarmEntry {
  readonly guards: Guard[];
  readonly graph: Graph;
  readonly program: unknown;
  readonly resultTemplate: unknown;
  readonly gradLeaves: { leaf: Tensor; outputIndex: number | null }[];
  readonly argGrads: readonly unknown[];
  readonly retrace: boolean;
  readonly interpreted: string | null;
}

interface StoredWarm {
  name: string;
  graph: StoredGraph;
  resultTemplate: unknown;
  autogradOutputs: boolean;
  /** a compiled forward/backward pair (AOTAutograd): `graph` is its forward */
  aot?: StoredAot;
}

interface StoredAot {
  bwd: StoredGraph;
  saved: SavedSource[];
  nResults: number;
  slots: number[];
  gradInputs: number[];
  summary: string;
  savedBytes: number;
  decision: PartitionDecision;
}

/** Captured tensors by stable name, or null when this function has none to bind. */
function captureTable(ctx: WarmContext): Map<string, Tensor> | null {
  const m = ctx.module;
  if (m?.namedParameters) return new Map([...m.namedParameters(), ...(m.namedBuffers?.() ?? [])]);
  if (ctx.opts.captures) return new Map(Object.entries(ctx.opts.captures).filter(([, t]) => t instanceof Tensor));
  return null;
}

const tensorDesc = (t: Tensor) => `${t.dtype}[${t.shape.join(',')}]s[${t.strides.join(',')}]@${t.offset}${t.backendName}${t.requiresGrad ? 'g' : ''}`;

/** Own configuration of a module (numbers, strings, flags): e.g. heads, eps, p. */
function moduleConfig(m: object): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(m)) {
    if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') parts.push(`${k}=${String(v)}`);
    else if (Array.isArray(v) && v.every((x) => typeof x === 'number')) parts.push(`${k}=[${v.join(',')}]`);
  }
  return parts.join(',');
}

/**
 * The source of a module's class and every class it extends (up to Object): forward and any
 * other method it calls (an edited helper method must not replay a stale graph), plus an own
 * `forward` assigned to the instance.
 */
function classSources(m: object): string {
  const out: string[] = [];
  const own = (m as { forward?: unknown }).forward;
  if (Object.prototype.hasOwnProperty.call(m, 'forward') && typeof own === 'function') out.push(Function.prototype.toString.call(own));
  for (let p = Object.getPrototypeOf(m); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    out.push(Function.prototype.toString.call(p.constructor));
  }
  return out.join('\n');
}

/** The key of a warm start for these arguments, or null when they cannot be keyed. */
function warmKey(store: CacheStore, ctx: WarmContext, args: readonly unknown[], caps: Map<string, Tensor>): string | null {
  const parts: string[] = [FORMAT, store.fingerprint, ctx.name, JSON.stringify({ b: ctx.opts.backend ?? 'auto', m: ctx.opts.mode ?? 'default', f: ctx.opts.fuse !== false, g: !!ctx.opts.fullgraph })];
  const m = ctx.module;
  if (m) {
    const mods: [string, ModuleLike][] = m.namedModules ? m.namedModules() : [['', m]];
    // a forward hook is a closure of this process: its effect on the graph cannot be keyed
    if (mods.some(([, sub]) => (sub.hooksVersion ?? 0) > 0)) return null;
    for (const [path, sub] of mods) parts.push(`module ${path} ${sub.constructor.name} ${sub.training} ${moduleConfig(sub)}\n${classSources(sub)}`);
  } else {
    parts.push(Function.prototype.toString.call(ctx.fn));
    // captures given as a module: its code is keyed like a compiled module's
    const cm = ctx.opts.capturedModule;
    if (cm) for (const [path, sub] of cm.namedModules ? cm.namedModules() : [['', cm] as [string, object]]) parts.push(`captured module ${path} ${sub.constructor.name} ${moduleConfig(sub)}\n${classSources(sub)}`);
  }
  for (const [name, t] of [...caps].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (t.isDisposed) return null;
    parts.push(`capture ${name} ${tensorDesc(t)}`);
  }
  for (const leaf of argLeaves(args, ctx.argNames)) {
    const v = leaf.value;
    if (v instanceof Tensor) parts.push(`arg ${leaf.path} ${tensorDesc(v)}`);
    else if (v === null || v === undefined || ['number', 'string', 'boolean'].includes(typeof v)) parts.push(`arg ${leaf.path} = ${typeof v}:${String(v)}`);
    else if (typeof v === 'object' && ('arrayLength' in v || 'keys' in v)) parts.push(`arg ${leaf.path} ${JSON.stringify(v)}`);
    else return null; // an object guarded by identity cannot match in another process
  }
  parts.push(`grad ${isGradEnabled()}`);
  return store.digest(parts);
}

/** A warm start for these arguments from the cache, or null (then the driver traces). */
export function tryWarmStart(ctx: WarmContext, args: readonly unknown[]): WarmEntry | null {
  const store = cacheStore(ctx.opts);
  if (!store || ctx.opts.backend === 'eager') return null;
  const caps = captureTable(ctx);
  if (!caps) return null;
  const t0 = performance.now();
  const key = warmKey(store, ctx, args, caps);
  if (!key) return null;
  const payload = store.get('warm', key);
  if (!payload) {
    log('cache', `${ctx.name}: no warm start stored for these arguments; tracing`);
    return null;
  }
  try {
    const stored = payload.meta as StoredWarm;
    const bind: Binder = (s) => {
      const t = caps.get(s.name);
      if (!t || s.kind !== 'capture') throw new NotStorable(`capture ${s.name} is not in this module`);
      return t;
    };
    // graphs this user's kiln checked when it wrote them are these bytes, under its seal: only the bindings are checked again
    const checked = { checked: payload.checked === SCHEMA_VERSION };
    const graph = decodeGraph(stored.graph, payload.blobs, bind, checked);
    const program = stored.aot ? aotProgram(ctx, graph, stored.aot, decodeGraph(stored.aot.bwd, payload.blobs, bind, checked)) : ctx.makeProgram(graph);
    const modules = ctx.module?.modules ? [...ctx.module.modules()] : ctx.module ? [ctx.module] : [];
    const guards = [...buildGuards(args, ctx.argNames, graph, modules), ...ctx.parameterGuards()];
    counters.cache.traceSkips++;
    if (stored.aot) counters.aotCompiles++; // the pair set up from the cache is this process's compiled pair
    log('cache', `${ctx.name}: warm start: tracing skipped (${graph.inputNodes.length} inputs bound by name, guards checked) in ${(performance.now() - t0).toFixed(1)} ms`);
    return { guards, graph, program: program as never, resultTemplate: decodeValue(stored.resultTemplate, payload.blobs), gradLeaves: [], argGrads: [], retrace: false, interpreted: stored.autogradOutputs ? 'the stored entry predates compiled backward' : null };
  } catch (e) {
    const schema = e instanceof InvalidProgramError;
    counters.cache[schema ? 'invalid' : 'corrupt']++;
    log('cache', `${ctx.name}: warm start entry ${schema ? 'does not follow the schema' : 'unusable'} (${(e as Error).message}); tracing`);
    return null;
  }
}

/** Stores a freshly traced entry for warm starts, where it can be re-bound by name (best effort). */
export function saveWarmStart(ctx: WarmContext, args: readonly unknown[], e: WarmEntry, gradWrites: number): void {
  const store = cacheStore(ctx.opts);
  if (!store || ctx.opts.backend === 'eager') return;
  const caps = captureTable(ctx);
  if (!caps) return;
  const why = e.retrace ? 'graph breaks' : gradWrites > 0 || e.gradLeaves.length > 0 || e.graph.gradEffects.length > 0 ? 'it writes gradients' : null;
  if (why) {
    log('cache', `${ctx.name}: no warm start stored (${why}); later processes trace it and take its program from the cache`);
    return;
  }
  const key = warmKey(store, ctx, args, caps);
  if (!key) return;
  const names = new Map([...caps].map(([n, t]) => [t, n]));
  try {
    const blobs = new Blobs();
    const nameOf = (t: Tensor) => names.get(t) ?? null;
    const p = e.program;
    const aot = p instanceof AotProgram
      ? { bwd: encodeGraph(p.bwdGraph, blobs, nameOf), saved: [...p.partition.saved], nResults: p.nResults, slots: [...p.slots], gradInputs: [...p.gradInputs], summary: p.partition.summary, savedBytes: p.partition.savedBytes, decision: p.partition.decision }
      : undefined;
    const meta: StoredWarm = { name: ctx.name, graph: encodeGraph(e.graph, blobs, nameOf), resultTemplate: encodeValue(e.resultTemplate, blobs), autogradOutputs: e.interpreted !== null, ...(aot ? { aot } : {}) };
    // the stored graphs are decoded and checked now, on the cold path, so warm starts need not check them again
    const bind: Binder = (s) => caps.get(s.name)!;
    const fwd = decodeGraph(meta.graph, blobs.list, bind);
    if (aot) {
      decodeGraph(aot.bwd, blobs.list, bind);
      checkAot(aot, fwd);
    }
    store.put('warm', key, { meta, blobs: blobs.list, checked: SCHEMA_VERSION });
  } catch (err) {
    if (!(err instanceof NotStorable) && !(err instanceof InvalidProgramError)) throw err;
    log('cache', `${ctx.name}: no warm start stored: ${err.message}`);
  }
}

/** A stored pair's wiring refers only to what its graphs have (results, saved values, inputs). */
function checkAot(a: StoredAot, fwd: Graph): void {
  const bad = (what: string): never => {
    throw new InvalidProgramError(`warm start: the stored forward/backward pair has ${what}`, 'kiln.compile', 'the entry was not made by this kiln: compile it again');
  };
  const index = (x: unknown, n: number) => Number.isSafeInteger(x) && (x as number) >= 0 && (x as number) < n;
  const nOut = fwd.outputs.length, nIn = fwd.inputNodes.length;
  if (!index(a.nResults, nOut + 1)) bad(`${String(a.nResults)} results of ${nOut} outputs`);
  if (!Array.isArray(a.saved) || !a.saved.every((s) => s && ((s.from === 'output' && index(s.index, nOut)) || (s.from === 'input' && index(s.index, nIn))))) bad('a saved value that is not an output or input of its forward');
  if (!Array.isArray(a.slots) || !a.slots.every((r) => index(r, a.nResults))) bad('a gradient slot that is not a result');
  if (!Array.isArray(a.gradInputs) || !a.gradInputs.every((i) => index(i, nIn))) bad('a gradient input that is not an input');
  if (typeof a.summary !== 'string' || typeof a.savedBytes !== 'number') bad('no summary');
  const d = a.decision;
  if (!d || ![d.backward, d.saved, d.recomputed].every((l) => Array.isArray(l) && l.every((x) => Number.isSafeInteger(x)))) bad('a malformed partition decision');
}

/** A stored forward/backward pair, rebuilt: both programs come from the program cache. */
function aotProgram(ctx: WarmContext, fwd: Graph, a: StoredAot, bwd: Graph): AotProgram {
  checkAot(a, fwd);
  const partition = { fwd, bwd, saved: a.saved, summary: a.summary, savedBytes: a.savedBytes, unsupported: null, decision: a.decision };
  return new AotProgram(ctx.name, ctx.makeProgram(fwd) as Runnable, ctx.makeProgram(bwd) as Runnable, partition, a.nResults, a.slots, a.gradInputs);
}
