// Bucketing (issue 7): `kiln.compile(fn, { buckets: { arg: 0, dim: 0, sizes: 'pow2' } })`
// pads that dim of that argument up to the next bucket size, runs the static program of
// the bucket, and slices the outputs back, so a bounded set of static kernels serves every
// size. Exactness is proved, not hoped: the graph is analysed once (a proxy trace at a
// bucket size) to find, for every value, the axis that carries the padded rows; an op that
// would mix padded rows into real ones (a reduction or contraction over that axis, a
// reshape that interleaves them, an op the analysis does not know) refuses bucketing with
// the reason logged, and the function then compiles as without buckets.

import { Tensor } from '../../tensor/tensor.js';
import { pad, slice } from '../../ops/movement.js';
import type { Graph, GraphNode } from '../capture/graph.js';
import { isPointwiseNode } from '../schedule/node-kinds.js';
import { markStatic, probeGraph, dimKey } from './dynamic.js';
import { log, warnOnce } from '../../core/logs.js';
import { counters } from '../../core/stats.js';

export interface BucketSpec {
  /** the argument to pad (index into the call's arguments; default 0) */
  readonly arg?: number;
  /** its dim to pad (e.g. 0: batch) */
  readonly dim: number;
  /** 'pow2': the next power of two; or ascending sizes (a size above the last runs unbucketed) */
  readonly sizes: 'pow2' | readonly number[];
}

/** Where the padded rows of a value are: indices >= n * factor along `axis`. */
export interface Pad { readonly axis: number; readonly factor: number }

interface State {
  verdict: RowVerdict | null;
  hits: Map<number, { hits: number; sizes: Set<number> }>;
  last: { size: number; bucket: number } | null;
}

export function bucketFor(n: number, sizes: BucketSpec['sizes']): number | null {
  if (sizes === 'pow2') return n <= 1 ? n : 2 ** Math.ceil(Math.log2(n));
  return sizes.find((s) => s >= n) ?? null;
}

interface Host {
  readonly name: string;
  readonly opts: { buckets?: BucketSpec; recompileLimit?: number };
  readonly traced: (...a: unknown[]) => unknown;
  readonly parameterNames: readonly string[];
  bucketState: unknown;
}

/** Buckets one call (see the file comment); `inner` is the unbucketed compiled call. */
export function bucketCall(cf: Host, args: unknown[], inner: (a: unknown[]) => unknown): unknown {
  const spec = cf.opts.buckets!;
  const argIndex = spec.arg ?? 0;
  const x = args[argIndex];
  if (!(x instanceof Tensor) || spec.dim >= x.ndim || spec.dim < -x.ndim) return inner(args);
  const dim = spec.dim < 0 ? spec.dim + x.ndim : spec.dim;
  const n = x.shape[dim]!;
  const b = bucketFor(n, spec.sizes);
  let st = cf.bucketState as State | undefined;
  if (!st) {
    cf.bucketState = st = { verdict: null, hits: new Map(), last: null };
    // every bucket is its own static entry: the limit must leave room for them
    if (cf.opts.recompileLimit === undefined) (cf.opts as { recompileLimit?: number }).recompileLimit = 8 + (spec.sizes === 'pow2' ? 32 : spec.sizes.length);
  }
  if (b === null) {
    warnOnce(`bucket-over:${cf.name}`, `${cf.name}: size ${n} of arg ${argIndex} dim ${dim} is above the largest bucket; such calls run unbucketed`);
    return inner(args);
  }
  const path = cf.parameterNames[argIndex] ?? `arg${argIndex}`;
  if (!st.verdict) {
    st.verdict = analyse(cf, args, path, dim, b === n ? b + 1 : b);
    if (!st.verdict.ok) {
      log('recompiles', `${cf.name}: bucketing refused: ${st.verdict.reason}`);
      warnOnce(`bucket-refused:${cf.name}`, `${cf.name}: bucketing arg ${path} dim ${dim} refused (${st.verdict.reason}); compiling without buckets`);
      counters.dynamicFailures.push({ fn: cf.name, reason: `bucketing refused: ${st.verdict.reason}` });
    }
  }
  if (!st.verdict.ok) return inner(args);
  const leaves = st.verdict.leaves;
  record(cf, st, dim, argIndex, n, b);
  const padded = b === n ? x : padDim(x, dim, b - n);
  markStatic(padded, dim); // buckets are static programs: no automatic dynamic on this dim
  const a2 = [...args];
  a2[argIndex] = padded;
  try {
    const out = inner(a2);
    if (b === n) return out;
    let i = 0;
    const cut = (v: unknown, depth: number): unknown => {
      if (v instanceof Tensor) {
        const p = leaves[i++];
        if (!p) return v;
        const r = slice(v, p.axis, 0, n * p.factor);
        v.dispose(); // the slice holds the storage
        return r;
      }
      if (depth < 6 && Array.isArray(v)) return v.map((y) => cut(y, depth + 1));
      if (depth < 6 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) return Object.fromEntries(Object.entries(v).map(([k, y]) => [k, cut(y, depth + 1)]));
      return v;
    };
    return cut(out, 0);
  } finally {
    if (padded !== x) padded.dispose();
  }
}

function padDim(x: Tensor, dim: number, extra: number): Tensor {
  const pads = new Array<number>(2 * (x.ndim - dim)).fill(0);
  pads[2 * (x.ndim - 1 - dim) + 1] = extra;
  return pad(x, pads, 0);
}

function record(cf: Host, st: State, dim: number, arg: number, n: number, b: number): void {
  let h = st.hits.get(b);
  if (!h) st.hits.set(b, (h = { hits: 0, sizes: new Set() }));
  h.hits++;
  h.sizes.add(n);
  st.last = { size: n, bucket: b };
  const label = `arg ${arg} dim ${dim}`;
  let rec = counters.buckets.find((r) => r.fn === cf.name && r.dim === label && r.bucket === b);
  if (!rec) counters.buckets.push((rec = { fn: cf.name, dim: label, bucket: b, hits: 0, sizes: [] }));
  rec.hits++;
  if (!rec.sizes.includes(n) && rec.sizes.length < 64) rec.sizes.push(n);
  log('perf', () => `${cf.name}: size ${n} runs in bucket ${b} (${label})`);
}

/** Buckets hit by a compiled function so far (explain and the advisor read this). */
export function bucketSummary(state: unknown): { bucket: number; hits: number; sizes: number[] }[] | null {
  const st = state as State | undefined;
  if (!st) return null;
  return [...st.hits].map(([bucket, h]) => ({ bucket, hits: h.hits, sizes: [...h.sizes].sort((a, b) => a - b) })).sort((a, b) => a.bucket - b.bucket);
}

/** Traces at a padded size (proxies only) and finds the padded axis of every value. */
function analyse(cf: Host, args: unknown[], path: string, dim: number, size: number): RowVerdict {
  let g: Graph, leaves: number[];
  try {
    ({ graph: g, leaves } = probeGraph({ fn: cf.traced, args, names: cf.parameterNames, name: cf.name }, new Map([[dimKey(path, dim), size]])));
  } catch (e) {
    return { ok: false, reason: `tracing at a bucket size failed: ${(e as Error).message}` };
  }
  return rowAxes(g, leaves, new Set([path]), dim);
}

export type RowVerdict = { ok: true; leaves: (Pad | null)[] } | { ok: false; reason: string };

/**
 * Whether the rows along `dim` of the arguments at `paths` stay separate through graph `g`:
 * every output row depends only on the matching input rows (so padded rows stay a suffix that
 * never reaches real ones, and rows of different requests batched together never mix), and
 * for each output leaf (`leaves`: indices into g.outputs) the axis and factor of its rows (null:
 * no rows of the arguments). Padding to a bucket and a server's batching both rely on it.
 */
export function rowAxes(g: Graph, leaves: readonly number[], paths: ReadonlySet<string>, dim: number): RowVerdict {
  const pads = new Map<number, Pad | null>();
  try {
    for (const nd of g.nodes) pads.set(nd.id, padOf(nd, g, pads, paths, dim));
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  for (const m of g.mutations) if (pads.get(m.value)) return { ok: false, reason: `in-place update of %${m.target} would write padded rows into state` };
  for (const e of g.gradEffects) if (e.value !== null && pads.get(e.value)) return { ok: false, reason: 'a gradient would include padded rows' };
  return { ok: true, leaves: leaves.map((o) => pads.get(g.outputs[o]!) ?? null) };
}

class Mix extends Error {}

function padOf(n: GraphNode, g: Graph, pads: ReadonlyMap<number, Pad | null>, paths: ReadonlySet<string>, dim: number): Pad | null {
  if (n.op === 'input') return n.source?.kind === 'arg' && paths.has(n.source.path) ? { axis: dim, factor: 1 } : null;
  const ins = n.inputs.map((i) => pads.get(i) ?? null);
  if (ins.every((p) => p === null)) return null;
  const where = `%${n.id} (${n.op}${(n.attrs as { op?: string } | undefined)?.op ? ` ${(n.attrs as { op: string }).op}` : ''})`;
  const rank = n.meta.shape.length;
  const inShape = (k: number) => g.nodes[n.inputs[k]!]!.meta.shape;
  const a = n.attrs as Record<string, unknown>;
  if (isPointwiseNode(n)) {
    let out: Pad | null = null;
    ins.forEach((p, k) => {
      if (!p) return;
      const q = { axis: p.axis + rank - inShape(k).length, factor: p.factor };
      if (out && (out.axis !== q.axis || out.factor !== q.factor)) throw new Mix(`${where} combines values padded along different axes`);
      out = q;
    });
    return out;
  }
  const p = ins[0]!;
  switch (n.op) {
    case 'sum': case 'prod': case 'max': case 'min': case 'argmax': case 'argmin': {
      const dims = a.dims as number[];
      const all = dims.length === 0 ? inShape(0).map((_, d) => d) : dims;
      if (all.includes(p.axis)) throw new Mix(`${where} reduces over the bucketed axis, mixing padded rows into real ones`);
      return { axis: a.keepdim ? p.axis : p.axis - all.filter((d) => d < p.axis).length, factor: p.factor };
    }
    case 'permute':
      return { axis: (a.dims as number[]).indexOf(p.axis), factor: p.factor };
    case 'expand':
      return { axis: p.axis + rank - inShape(0).length, factor: p.factor };
    case 'slice':
      if (a.dim !== p.axis) return p;
      if (a.start === 0 && a.step === 1 && n.meta.shape[p.axis] === inShape(0)[p.axis]) return p;
      throw new Mix(`${where} slices the bucketed axis`);
    case 'reshape': {
      const from = inShape(0), to = n.meta.shape;
      if (from.slice(0, p.axis).some((s) => s !== 1)) throw new Mix(`${where} reshapes with the bucketed axis inside other dims (it would interleave padded rows)`);
      const innerFrom = from.slice(p.axis + 1).reduce((x, y) => x * y, 1);
      const c = to.findIndex((s) => s !== 1);
      const innerTo = to.slice(c + 1).reduce((x, y) => x * y, 1);
      const f = (p.factor * innerFrom) / innerTo;
      if (c < 0 || !Number.isInteger(f)) throw new Mix(`${where} reshapes the bucketed axis so that padded rows do not stay a suffix`);
      return { axis: c, factor: f };
    }
    case 'matmul': {
      const [pa, pb] = ins;
      const ra = inShape(0).length, rb = inShape(1).length;
      let out: Pad | null = null;
      const join = (q: Pad) => {
        if (out && (out.axis !== q.axis || out.factor !== q.factor)) throw new Mix(`${where} has padded rows in both operands along different axes`);
        out = q;
      };
      if (pa) {
        if (pa.axis === ra - 1) throw new Mix(`${where} contracts over the bucketed axis`);
        join({ axis: pa.axis === ra - 2 ? rank - 2 : pa.axis + rank - ra, factor: pa.factor });
      }
      if (pb) {
        if (pb.axis === rb - 2) throw new Mix(`${where} contracts over the bucketed axis`);
        join({ axis: pb.axis === rb - 1 ? rank - 1 : pb.axis + rank - rb, factor: pb.factor });
      }
      return out;
    }
    default:
      throw new Mix(`${where} is not analysed for bucketing (only pointwise, reductions, views and matmul are)`);
  }
}
