// Graph passes: constant folding, common subexpression elimination, dead code
// elimination. Decomposition happens at capture: composite ops record the primitives
// they are made of, so a Graph only ever holds primitives.

import { numel } from '../../core/shape.js';
import { apply, runtime } from '../../ops/dispatch.js';
import { constantPrim } from '../../ops/creation.js';
import { setGradEnabled, isGradEnabled } from '../../autograd/grad-mode.js';
import type { Backend } from '../../backend/backend.js';
import { JsBackend } from '../../backend/js/index.js';
import type { Tensor } from '../../tensor/tensor.js';
import { Graph, attrKey, type GraphNode } from '../capture/graph.js';
import { profileSpan } from '../../core/profiling.js';

const FOLD_LIMIT = 4096;
const NEVER_FOLD = new Set(['input', 'random']);
const SOURCES = new Set(['constant', 'full']);

/** Rebuilds a graph keeping `keep` nodes, with inputs renamed through `remap`. */
function rebuild(g: Graph, keep: (n: GraphNode) => boolean, remap: Map<number, number>, replace = new Map<number, Partial<GraphNode>>()): Graph {
  const out = new Graph(g.name);
  const ids = new Map<number, number>();
  const resolve = (id: number): number => {
    let r = id;
    while (remap.has(r)) r = remap.get(r)!;
    return ids.get(r)!;
  };
  for (const n of g.nodes) {
    if (!keep(n)) continue;
    const { id: _old, ...rest } = { ...n, ...replace.get(n.id) };
    const added = out.add({ ...rest, inputs: rest.inputs.map(resolve) });
    ids.set(n.id, added.id);
  }
  out.outputs = g.outputs.map(resolve);
  out.mutations = g.mutations.map((m) => ({ target: resolve(m.target), value: resolve(m.value) }));
  out.gradEffects = g.gradEffects.map((e) => ({ leaf: resolve(e.leaf), value: e.value === null ? null : resolve(e.value) }));
  return out;
}

export function deadCodeElimination(g: Graph): Graph {
  const live = new Set<number>();
  const mark = (id: number) => {
    if (live.has(id)) return;
    live.add(id);
    for (const i of g.nodes[id]!.inputs) mark(i);
  };
  g.outputs.forEach(mark);
  g.mutations.forEach((m) => (mark(m.value), mark(m.target)));
  g.gradEffects.forEach((e) => (mark(e.leaf), e.value !== null && mark(e.value)));
  // a random draw advances the global generator (as eager does) even when its values go unused
  for (const n of g.nodes) if (n.op === 'random') mark(n.id);
  // inputs stay (they are bound by position), but an argument's .grad nothing reads (it was
  // captured in case a backward inside the function accumulates into it) goes with its guard
  const optional = (n: GraphNode) => n.source?.kind === 'arg' && n.source.grad === true;
  return rebuild(g, (n) => live.has(n.id) || (n.op === 'input' && !optional(n)), new Map());
}

export function commonSubexpressionElimination(g: Graph): Graph {
  const seen = new Map<string, number>();
  const remap = new Map<number, number>();
  const canon = (id: number) => remap.get(id) ?? id;
  for (const n of g.nodes) {
    if (n.op === 'input' || n.op === 'random') continue;
    const key = `${n.op}|${n.inputs.map(canon).join(',')}|${attrKey(n.attrs)}|${n.meta.strides.join(',')}`;
    const prev = seen.get(key);
    if (prev !== undefined) remap.set(n.id, prev);
    else seen.set(key, n.id);
  }
  if (remap.size === 0) return g;
  return rebuild(g, (n) => !remap.has(n.id), remap);
}

let hostBackend: Backend | null = null;

/**
 * Where folds are evaluated: the default backend when it reads synchronously (the CPU backends:
 * unchanged behaviour), else a host JS backend. A GPU backend (`syncReads: false`, WebGPU) cannot
 * hand the folded values back without awaiting, and folding only ever starts from constants
 * known on the host (constant/full nodes: arange, the triu/tril and causal masks), so it never
 * needs the device; captured tensors are input nodes and never fold.
 */
function foldBackend(): Backend {
  if (runtime.backend.syncReads !== false) return runtime.backend;
  return (hostBackend ??= new JsBackend());
}

/** Evaluates small subgraphs whose inputs are all constants, at compile time. */
export function constantFolding(g: Graph): Graph {
  const constant = new Set<number>();
  const replace = new Map<number, Partial<GraphNode>>();
  const values = new Map<number, Tensor>();
  const saved = runtime.tracer;
  const savedBackend = runtime.backend;
  const grad = isGradEnabled();
  runtime.tracer = null;
  runtime.backend = foldBackend();
  setGradEnabled(false);
  try {
    for (const n of g.nodes) {
      if (NEVER_FOLD.has(n.op) || numel(n.meta.shape) > FOLD_LIMIT) continue;
      if (SOURCES.has(n.op) || (n.inputs.length > 0 && n.inputs.every((i) => constant.has(i)))) {
        const t = apply(n.prim!, n.inputs.map((i) => values.get(i)!), n.attrs);
        values.set(n.id, t);
        constant.add(n.id);
        if (!SOURCES.has(n.op) && !n.meta.strides.some((s, d) => n.meta.shape[d]! > 1 && s === 0)) {
          replace.set(n.id, { op: 'constant', prim: constantPrim as never, inputs: [], attrs: { data: t.dataSync(), shape: n.meta.shape, dtype: n.meta.dtype }, meta: { ...n.meta, strides: contiguous(n.meta.shape), offset: 0 } });
        }
      }
    }
  } finally {
    for (const t of values.values()) t.dispose();
    runtime.tracer = saved;
    runtime.backend = savedBackend;
    setGradEnabled(grad);
  }
  if (replace.size === 0) return g;
  return deadCodeElimination(rebuild(g, () => true, new Map(), replace));
}

function contiguous(shape: readonly number[]): number[] {
  const s: number[] = [];
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i]!;
  }
  return s;
}

export interface PassTimings { [pass: string]: number }

/** The pass pipeline, in order, with timings. */
export function runPasses(g: Graph, timings: PassTimings): Graph {
  const passes: [string, (g: Graph) => Graph][] = [
    ['constant_folding', constantFolding],
    ['cse', commonSubexpressionElimination],
    ['dce', deadCodeElimination],
  ];
  let cur = g;
  for (const [name, pass] of passes) {
    const t0 = performance.now();
    cur = pass(cur);
    timings[name] = (timings[name] ?? 0) + performance.now() - t0;
    profileSpan('compile', name, t0, { graph: g.name });
  }
  return cur;
}
