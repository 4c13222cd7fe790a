// Dynamic shapes (issue 7): which dimensions are dynamic (policy, markDynamic/markStatic,
// automatic dynamic after a size change, 0/1 specialization), and how a dynamic program is
// built. JavaScript reads sizes as plain numbers, so sizes cannot be traced as symbols the
// way torch's SymInts are; instead the function is traced (proxies only, nothing runs) at a
// grid of probe sizes, and the graphs and their lowered programs, which must have the same
// structure, are unified: every number that varies is fitted as an integer polynomial in the
// size symbols (s0, s1, ...). Anything that does not fit (a size-dependent float constant
// such as a mean's 1/n, a structure that depends on the size) keeps that dimension static,
// with the reason logged. The real call's own trace must equal the symbolic graph at its
// sizes, or the dynamic program is not used.

import { contiguousStrides } from '../../core/shape.js';
import { defaultGenerator } from '../../core/random.js';
import { runtime } from '../../ops/dispatch.js';
import { Tensor, tensorHooks } from '../../tensor/tensor.js';
import type { Backend } from '../../backend/backend.js';
import { Graph } from '../capture/graph.js';
import { Tracer } from '../capture/tracer.js';
import { commonSubexpressionElimination, deadCodeElimination } from '../schedule/passes.js';
import { lower } from '../schedule/lower.js';
import type { Lowered } from '../schedule/lowered.js';
import { dropDeadStores } from '../schedule/dead-stores.js';
import { groupHorizontally } from '../schedule/horizontal.js';
import { argLeaves } from '../capture/guards.js';
import { probeGrid } from '../../ir/symbolic.js';
import { treesEqual, unifyTrees, UnifyError } from './dynamic-unify.js';
import { specializeTree } from '../../ir/sym-tree.js';
import { DynamicProgram, type SymbolSource } from '../run/dynamic-program.js';
import { traceJoint } from '../aot/joint.js';
import { partitionJoint, type Partition } from '../aot/partition.js';

// ---- marks ----

interface Mark { readonly kind: 'dynamic' | 'static'; readonly min?: number; readonly max?: number }
const marks = new WeakMap<Tensor, Map<number, Mark>>();

function normDim(t: Tensor, dim: number, op: string): number {
  const d = dim < 0 ? dim + t.ndim : dim;
  if (!Number.isInteger(d) || d < 0 || d >= t.ndim) throw new RangeError(`${op}: dim ${dim} is out of range for a tensor of rank ${t.ndim}; pass a dim in [-${t.ndim}, ${t.ndim - 1}]`);
  return d;
}

/** Marks a dimension of a tensor as dynamic: a compiled function taking it compiles for every size in [min, max]. */
export function markDynamic<T extends Tensor>(t: T, dim: number, opts: { min?: number; max?: number } = {}): T {
  const d = normDim(t, dim, 'markDynamic');
  if (opts.min !== undefined && opts.max !== undefined && opts.min > opts.max) throw new RangeError(`markDynamic: min ${opts.min} > max ${opts.max}; pass min <= max`);
  let m = marks.get(t);
  if (!m) marks.set(t, (m = new Map()));
  m.set(d, { kind: 'dynamic', min: opts.min, max: opts.max });
  return t;
}

/** Marks a dimension as static: never made dynamic, even by automatic dynamic or `dynamic: true`. */
export function markStatic<T extends Tensor>(t: T, dim: number): T {
  const d = normDim(t, dim, 'markStatic');
  let m = marks.get(t);
  if (!m) marks.set(t, (m = new Map()));
  m.set(d, { kind: 'static' });
  return t;
}

export const dimKey = (path: string, dim: number): string => `${path}#${dim}`;

// ---- choosing dimensions ----

export interface DynDim {
  readonly path: string;
  readonly dim: number;
  readonly value: number;
  readonly min: number;
  readonly max: number;
  readonly why: string;
}

/** Guard spec of a dynamic entry: per arg path, per dim, its symbol and range. */
export type DynGuardSpec = Map<string, Map<number, { sym: number; name: string; min: number; max: number }>>;

/** The dynamic forward/backward pair of a joint trace (AOTAutograd). */
export interface DynamicAot {
  readonly fwd: DynamicProgram;
  readonly bwd: DynamicProgram;
  /** the symbolic joint graph partitioned as the probes were: saved values, printers */
  readonly partition: Partition;
  readonly nForward: number;
}

export interface DynamicPlan {
  readonly program: DynamicProgram;
  /** set when the probes traced the backward too: `program` is its forward */
  readonly aot: DynamicAot | null;
  readonly graph: Graph;
  readonly symbols: readonly SymbolSource[];
  readonly guardSpec: DynGuardSpec;
  readonly notes: string[];
  /** whether the real call's graph is the symbolic graph at its sizes */
  matches(real: Graph): boolean;
  used: boolean;
}

/** The dimensions this call makes dynamic, and notes on those kept static (0/1, marks, layout). */
export function chooseDims(args: readonly unknown[], names: readonly string[], policy: boolean | undefined, auto: ReadonlySet<string>): { dims: DynDim[]; notes: string[] } {
  const dims: DynDim[] = [];
  const notes: string[] = [];
  if (policy === false) return { dims, notes };
  for (const leaf of argLeaves(args, names)) {
    const t = leaf.value;
    if (!(t instanceof Tensor)) continue;
    const m = marks.get(t);
    t.shape.forEach((size, d) => {
      const mark = m?.get(d);
      if (mark?.kind === 'static') return;
      const why = mark ? 'markDynamic' : policy === true ? 'dynamic: true' : auto.has(dimKey(leaf.path, d)) ? 'automatic dynamic (it changed between calls)' : null;
      if (!why) return;
      if (size <= 1) {
        notes.push(`arg ${leaf.path} dim ${d} is ${size} at trace time: specialized to ${size} (0/1 specialization, as torch), not dynamic`);
        return;
      }
      if (!t.isContiguous || t.offset !== 0) {
        notes.push(`arg ${leaf.path} dim ${d} kept static: the tensor is not contiguous (dynamic sizes need a contiguous input; call .contiguous() first)`);
        return;
      }
      dims.push({ path: leaf.path, dim: d, value: size, min: Math.max(2, mark?.min ?? 2), max: mark?.max ?? Number.MAX_SAFE_INTEGER, why });
    });
  }
  return { dims, notes };
}

// ---- probing ----

class ProbeAbort extends Error {}

const PRIMES = [17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 101, 103, 107, 109, 113];
const HINTS = [4099, 4111, 4127, 4129, 4133, 4139];

interface SymDef { readonly dims: DynDim[]; readonly min: number; readonly max: number; readonly value: number }

/**
 * Builds the dynamic program for `dims`, or returns why not. Symbols: dims of equal size at
 * this call share one (torch's duck sizing); the guards then check they stay equal.
 */
export function planDynamic(ctx: {
  fn: (...a: unknown[]) => unknown;
  args: readonly unknown[];
  names: readonly string[];
  name: string;
  dims: DynDim[];
  backend: Backend;
  kernelBackend?: Backend;
  /** reduce-overhead: per-size programs recycle their outputs (and prerecord where the backend can) */
  reuseOutputs?: boolean;
  /** trace the backward of results that require grad too (AOTAutograd, aot/joint.ts) */
  aot?: boolean;
}): DynamicPlan | { failed: string } {
  let syms = groupSymbols(ctx.dims);
  if (syms.length > 4) return { failed: `${syms.length} distinct dynamic sizes; at most 4 are supported (mark the others static)` };
  let r = tryPlan(ctx, syms) as DynamicPlan | { failed: string };
  if ('failed' in r && syms.length > 1) {
    // keep the symbols that work alone
    const ok = syms.filter((s) => !('failed' in tryPlan(ctx, [s], true)));
    if (ok.length > 0 && ok.length < syms.length) {
      const dropped = syms.filter((s) => !ok.includes(s));
      syms = ok;
      r = tryPlan(ctx, syms) as DynamicPlan | { failed: string };
      if (!('failed' in r)) r.notes.push(...dropped.map((s) => `${s.dims.map((d) => `arg ${d.path} dim ${d.dim}`).join(', ')} kept static (${(tryPlan(ctx, [s], true) as { failed: string }).failed})`));
    }
  }
  return r;
}

function groupSymbols(dims: readonly DynDim[]): SymDef[] {
  const by = new Map<number, DynDim[]>();
  for (const d of dims) by.set(d.value, [...(by.get(d.value) ?? []), d]);
  return [...by.values()].map((ds) => ({ dims: ds, min: Math.max(...ds.map((d) => d.min)), max: Math.min(...ds.map((d) => d.max)), value: ds[0]!.value }));
}

const DRY_OK = { dryOk: true } as const;

function tryPlan(ctx: Parameters<typeof planDynamic>[0], syms: readonly SymDef[], dry = false): DynamicPlan | { failed: string } | typeof DRY_OK {
  const k = syms.length;
  const deg = k <= 2 ? 2 : 1;
  // probe values: distinct, within each range, unlike every static size of the arguments
  const avoid = new Set<number>([0, 1]);
  for (const leaf of argLeaves(ctx.args, ctx.names)) if (leaf.value instanceof Tensor) leaf.value.shape.forEach((s) => avoid.add(s));
  const values: number[][] = [];
  for (const s of syms) {
    const pool = [...PRIMES, ...Array.from({ length: 64 }, (_, i) => i + 2)];
    const vs: number[] = [];
    for (const v of pool) {
      if (vs.length > deg) break;
      if (v >= s.min && v <= s.max && !avoid.has(v)) (vs.push(v), avoid.add(v));
    }
    if (vs.length <= deg) return { failed: `range [${s.min}, ${s.max}] of ${s.dims[0]!.path} dim ${s.dims[0]!.dim} is too narrow to probe; mark it static` };
    values.push(vs);
  }
  const grid = probeGrid(values);
  const hint = syms.map((_, i) => HINTS[i]!);
  const probes: ProbedGraph[] = [];
  try {
    for (const pt of grid) probes.push(probeTrace(ctx, syms, pt));
  } catch (e) {
    return { failed: `tracing at probe sizes failed: ${(e as Error).message}` };
  }
  const graphs = probes.map((p) => p.graph);
  const nForward = probes[0]!.nForward;
  let symNodes: Graph['nodes'];
  let rest: { outputs: number[]; mutations: Graph['mutations']; gradEffects: Graph['gradEffects'] };
  try {
    if (!graphs.every((g) => g.nodes.length === graphs[0]!.nodes.length)) throw new UnifyError('$', `the graph has ${graphs.map((g) => g.nodes.length).join(' / ')} nodes at different sizes (the code branches on a size)`);
    if (!probes.every((p) => p.nForward === nForward)) throw new UnifyError('$', 'the results require grad at some sizes only');
    symNodes = unifyTrees(graphs.map((g) => g.nodes), values, hint);
    rest = unifyTrees(graphs.map((g) => ({ outputs: g.outputs, mutations: g.mutations, gradEffects: g.gradEffects })), values, hint);
  } catch (e) {
    return { failed: describe(e, graphs[0]!) };
  }
  if (dry) return DRY_OK;
  // a joint trace is partitioned once (its choices depend on sizes through bytes) and every probe the same way
  let parts: Partition[] | null = null;
  if (nForward !== null) {
    const first = partitionJoint(graphs[0]!, nForward);
    if (first.unsupported) return { failed: first.unsupported };
    parts = graphs.map((g, i) => (i === 0 ? first : partitionJoint(g, nForward, first.decision)));
  }
  // symbols are read from the program's inputs at call time
  const inputs = (parts ? parts[0]!.fwd : graphs[0]!).inputNodes;
  const symbols: SymbolSource[] = [];
  for (let i = 0; i < k; i++) {
    const at = syms[i]!.dims.map((d) => ({ d, input: inputs.findIndex((n) => n.source?.kind === 'arg' && !n.source.grad && n.source.path === d.path) })).find((x) => x.input >= 0);
    if (!at) return { failed: `size s${i} (${syms[i]!.dims[0]!.path} dim ${syms[i]!.dims[0]!.dim}) is read in JavaScript but its tensor is not used by the graph` };
    symbols.push({ name: `s${i}`, input: at.input, dim: at.d.dim, label: `arg ${at.d.path} dim ${at.d.dim}` });
  }
  const lowerAll = (gs: readonly Graph[]): Lowered => {
    const lows = gs.map((g) => {
      const l = lower(g);
      dropDeadStores(l, new Set(l.outputs.map((o) => o.buf)));
      groupHorizontally(l);
      return l;
    });
    return { ...unifyTrees(lows.map((l) => ({ steps: l.steps, buffers: l.buffers, inputBuffers: l.inputBuffers, outputs: l.outputs })), values, hint), decisions: lows[0]!.decisions, nodeOps: lows[0]!.nodeOps };
  };
  let lowered: Lowered;
  let bwdLowered: Lowered | null = null;
  let bwdSymbols: SymbolSource[] | null = null;
  try {
    lowered = lowerAll(parts ? parts.map((p) => p.fwd) : graphs);
    if (parts) {
      bwdLowered = lowerAll(parts.map((p) => p.bwd));
      bwdSymbols = symbolsByValue(parts.map((p) => p.bwd), grid, symbols);
      if (!bwdSymbols) return { failed: 'the backward takes no input whose size is a dynamic size' };
    }
  } catch (e) {
    return { failed: e instanceof UnifyError ? `the lowered program depends on the size in a way kernels cannot take as a parameter (${e.message})` : `lowering failed: ${(e as Error).message}` };
  }
  const graph = new Graph(`${ctx.name}#dynamic`);
  graph.nodes.push(...symNodes);
  graph.outputs = rest.outputs;
  graph.mutations = rest.mutations;
  graph.gradEffects = rest.gradEffects;
  const guardSpec: DynGuardSpec = new Map();
  syms.forEach((s, i) => {
    for (const d of s.dims) {
      let m = guardSpec.get(d.path);
      if (!m) guardSpec.set(d.path, (m = new Map()));
      m.set(d.dim, { sym: i, name: `s${i}`, min: s.min, max: s.max });
    }
  });
  // the symbolic graph at this call's sizes must be this call's graph (traced once more)
  const real = syms.map((s) => s.value);
  let verified: boolean;
  try {
    const g = probeTrace(ctx, syms, real).graph;
    verified = sameAtSizes(graph, g, real);
  } catch {
    verified = false;
  }
  if (!verified) return { failed: 'the graph at the traced size differs from the symbolic graph at that size (the code treats this size specially)' };
  const opts = { kernelBackend: ctx.kernelBackend, name: ctx.name, reuseOutputs: ctx.reuseOutputs };
  const program = new DynamicProgram(lowered, ctx.backend, symbols, opts);
  const aot = parts && nForward !== null ? { fwd: program, bwd: new DynamicProgram(bwdLowered!, ctx.backend, bwdSymbols!, opts), partition: partitionJoint(graph, nForward, parts[0]!.decision), nForward } : null;
  const notes = syms.map((s, i) => `s${i} = ${s.dims.map((d) => `arg ${d.path} dim ${d.dim}`).join(' = ')} (${s.dims[0]!.why}; ${s.min} <= s${i}${s.max < Number.MAX_SAFE_INTEGER ? ` <= ${s.max}` : ''}; traced at ${s.value})`);
  return {
    program, aot, graph, symbols, guardSpec, notes, used: false,
    // the real trace (constant folding included) binds the same inputs in the same order
    matches: (g) => sameInputs(graph, g),
  };
}

/**
 * Where each size symbol is read in a family of graphs (one per probe point): the first input
 * dim that equals the symbol at every point (a backward's tangents and saved values carry the
 * batch size). Null when some symbol appears in no input.
 */
function symbolsByValue(graphs: readonly Graph[], grid: readonly (readonly number[])[], named: readonly SymbolSource[]): SymbolSource[] | null {
  const inputs = graphs.map((g) => g.inputNodes);
  const out: SymbolSource[] = [];
  for (let i = 0; i < named.length; i++) {
    let found: SymbolSource | null = null;
    for (let k = 0; k < inputs[0]!.length && !found; k++) {
      const rank = inputs[0]![k]!.meta.shape.length;
      for (let d = 0; d < rank && !found; d++) {
        if (inputs.every((ins, p) => ins[k]!.meta.shape[d] === grid[p]![i])) {
          const src = inputs[0]![k]!.source;
          found = { name: named[i]!.name, input: k, dim: d, label: `${src?.kind === 'arg' ? src.path : 'input'} dim ${d}` };
        }
      }
    }
    if (!found) return null;
    out.push(found);
  }
  return out;
}

function sameInputs(a: Graph, b: Graph): boolean {
  const ia = a.inputNodes, ib = b.inputNodes;
  return ia.length === ib.length && ia.every((n, i) => {
    const x = n.source!, y = ib[i]!.source!;
    if (x.kind !== y.kind) return false;
    if (x.kind === 'arg') return x.path === (y as typeof x).path && !!x.grad === !!(y as typeof x).grad;
    if (x.kind === 'ref') return x.tensor === (y as typeof x).tensor;
    return x.leaf === (y as typeof x).leaf;
  });
}

function describe(e: unknown, g: Graph): string {
  if (!(e instanceof UnifyError)) return `unification failed: ${(e as Error).message}`;
  const m = /^\$\[(\d+)\]/.exec(e.path);
  const node = m ? g.nodes[Number(m[1])] : undefined;
  return node ? `node %${node.id} (${node.op}${node.attrs && (node.attrs as { op?: string }).op ? ` ${(node.attrs as { op?: string }).op}` : ''}): ${e.why} [${e.path}]` : e.message;
}

/** The real graph equals the symbolic one evaluated at the real sizes (same structure and numbers). */
function sameAtSizes(sym: Graph, real: Graph, values: readonly number[]): boolean {
  if (sym.nodes.length !== real.nodes.length) return false;
  try {
    const specialized = specializeGraphNodes(sym, values);
    return treesEqual(specialized, { nodes: real.nodes, outputs: real.outputs, mutations: real.mutations, gradEffects: real.gradEffects });
  } catch {
    return false;
  }
}

function specializeGraphNodes(g: Graph, values: readonly number[]): unknown {
  return specializeTree({ nodes: g.nodes, outputs: g.outputs, mutations: g.mutations, gradEffects: g.gradEffects }, values);
}

/** A probe's graph; for a joint trace, how many of its outputs are the forward's (then the gradients). */
interface ProbedGraph {
  readonly graph: Graph;
  readonly nForward: number | null;
}

/** Traces fn on proxies at probe sizes; runs nothing and leaves no trace behind. */
function probeTrace(ctx: Parameters<typeof planDynamic>[0], syms: readonly SymDef[], pt: readonly number[]): ProbedGraph {
  const sizeOf = new Map<string, number>();
  syms.forEach((s, i) => s.dims.forEach((d) => sizeOf.set(dimKey(d.path, d.dim), pt[i]!)));
  const { graph, nForward } = probeGraph(ctx, sizeOf);
  return { graph, nForward };
}

/**
 * Traces fn on proxies with some argument dims replaced (`sizeOf`: arg path # dim -> size);
 * runs nothing. `leaves[i]` is the graph output index of the i-th tensor of the result.
 */
export function probeGraph(ctx: { fn: (...a: unknown[]) => unknown; args: readonly unknown[]; names: readonly string[]; name: string; aot?: boolean }, sizeOf: ReadonlyMap<string, number>): { graph: Graph; leaves: number[]; nForward: number | null } {
  const tracer = new Tracer(ctx.name, () => {
    throw new ProbeAbort('a graph break (a tensor value is read, or an explicit break)');
  });
  const prev = { ...tensorHooks };
  const gen = defaultGenerator.getState();
  const standIns: Tensor[] = [];
  runtime.tracer = tracer;
  tensorHooks.onGradWrite = (leaf, old, next) => tracer.onGradWrite(leaf, old, next);
  tensorHooks.deferDispose = (t) => t.hasStorage; // real tensors are never disposed by a probe
  try {
    const proxied = ctx.args.map((a, i) => proxify(a, ctx.names[i] ?? `arg${i}`, tracer, sizeOf, standIns));
    const result = ctx.fn(...proxied);
    const ids: number[] = [];
    collect(result, tracer, ids);
    const gradIds = [...tracer.gradWrites.keys()].map((l) => (l.grad?.trace?.tracer === tracer ? l.grad.trace.id : null)).filter((x): x is number => x !== null);
    const escaped = tracer.liveNodes().filter((id) => tracer.proxies.get(id)!.some((p) => p.kept && !p.isDisposed && !ids.includes(id) && !gradIds.includes(id)));
    if (escaped.length) throw new ProbeAbort('tensors created while tracing escape the function');
    const g = tracer.graph;
    g.outputs = [...new Set([...ids, ...gradIds])];
    const leaves = ids.map((id) => g.outputs.indexOf(id));
    // as the driver does (compile.ts traceBackward): results that require grad get their backward traced
    const roots = ctx.aot && tracer.gradWrites.size === 0 ? collectTensors(result).filter((t) => t.requiresGrad && t.trace?.tracer === tracer) : [];
    const nForward = roots.length ? g.outputs.length : null;
    if (roots.length) g.outputs = [...g.outputs, ...traceJoint(tracer, roots).grads.map((x) => x.value)];
    // no constant folding: it folds small size-dependent constants (a causal mask) into data,
    // so the graph's structure would depend on the size; CSE and DCE do not
    return { graph: deadCodeElimination(commonSubexpressionElimination(g)), leaves, nForward };
  } finally {
    runtime.tracer = null;
    tensorHooks.onGradWrite = prev.onGradWrite;
    tensorHooks.deferDispose = prev.deferDispose;
    defaultGenerator.setState(gen);
    for (const [leaf, w] of tracer.gradWrites) if (leaf.grad !== w.initial) leaf.grad = w.initial;
    for (const list of tracer.proxies.values()) for (const p of list) if (!p.hasStorage && !p.isDisposed) p.dispose();
    for (const t of standIns) if (!t.isDisposed) t.dispose();
  }
}

function proxify(v: unknown, path: string, tracer: Tracer, sizeOf: ReadonlyMap<string, number>, standIns: Tensor[], depth = 0): unknown {
  if (v instanceof Tensor) {
    const shape = v.shape.map((s, d) => sizeOf.get(dimKey(path, d)) ?? s);
    if (shape.every((s, d) => s === v.shape[d])) return tracer.argInput(v, path);
    const t = new Tensor(null, shape, contiguousStrides(shape), 0, v.dtype);
    if (v.requiresGrad) t.requiresGrad = true;
    standIns.push(t);
    return tracer.argInput(t, path);
  }
  if (depth < 6 && Array.isArray(v)) return v.map((x, i) => proxify(x, `${path}[${i}]`, tracer, sizeOf, standIns, depth + 1));
  if (depth < 6 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, proxify(x, `${path}.${k}`, tracer, sizeOf, standIns, depth + 1)]));
  }
  return v;
}

function collectTensors(v: unknown, into: Tensor[] = [], depth = 0): Tensor[] {
  if (v instanceof Tensor) into.push(v);
  else if (depth < 6 && Array.isArray(v)) v.forEach((x) => collectTensors(x, into, depth + 1));
  else if (depth < 6 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach((x) => collectTensors(x, into, depth + 1));
  return into;
}

function collect(v: unknown, tracer: Tracer, into: number[], depth = 0): void {
  if (v instanceof Tensor) into.push(v.trace?.tracer === tracer ? v.trace.id : tracer.nodeOf(v));
  else if (depth < 6 && Array.isArray(v)) v.forEach((x) => collect(x, tracer, into, depth + 1));
  else if (depth < 6 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach((x) => collect(x, tracer, into, depth + 1));
}
