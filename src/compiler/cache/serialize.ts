// Graphs and lowered programs as JSON plus binary blobs (typed-array data: constants, weights),
// for cache entries and artifacts. Browser-safe; the file format (header, checksum) is the
// disk store's (container.ts). Non-finite numbers and -0 survive; functions and tensors do not
// (a graph holding a custom op, or attrs holding objects, cannot be stored: NotStorable).
// Every decoded graph and program is validated against the schema before it is returned
// (validate.ts): nothing decoded reaches a renderer or a kernel unchecked. `checked`: the caller
// holds proof that these exact bytes were decoded and validated before (a cache entry's
// SCHEMA_VERSION mark, under this user's seal); then only what depends on this process (the captures
// bound by name) is checked again.

import type { TypedArray } from '../../core/dtype.js';
import type { Tensor } from '../../tensor/tensor.js';
import { Graph, type GraphNode, type InputSource } from '../capture/graph.js';
import type { Lowered, Step } from '../schedule/lowered.js';
import { isRegisteredPrim, primByName } from '../../ops/registry.js';
import { counters } from '../../core/stats.js';
import { validateBindings, validateGraph, validateLowered } from './validate.js';

/** Something in a graph or program that has no stored form (the entry is skipped, not an error). */
export class NotStorable extends Error {}

const TYPED: Record<string, new (b: ArrayBuffer) => TypedArray> = {
  Float32Array, Float64Array, Int32Array, Uint8Array,
} as unknown as Record<string, new (b: ArrayBuffer) => TypedArray>;

/** Collects binary blobs while encoding. */
export class Blobs {
  readonly list: Uint8Array[] = [];
  add(bytes: Uint8Array): number {
    this.list.push(bytes);
    return this.list.length - 1;
  }
}

/** A JSON-safe copy of v: typed arrays become blob references, odd numbers are tagged. */
export function encodeValue(v: unknown, blobs: Blobs): unknown {
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return { $n: 'NaN' };
    if (v === Infinity) return { $n: 'Infinity' };
    if (v === -Infinity) return { $n: '-Infinity' };
    if (Object.is(v, -0)) return { $n: '-0' };
    return v;
  }
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (v === undefined) return { $u: 1 };
  if (ArrayBuffer.isView(v)) {
    const name = v.constructor.name;
    if (!(name in TYPED)) throw new NotStorable(`a ${name} cannot be stored`);
    const ta = v as unknown as TypedArray;
    return { $t: name, b: blobs.add(new Uint8Array(ta.buffer, ta.byteOffset, ta.byteLength)) };
  }
  if (Array.isArray(v)) return v.map((x) => encodeValue(x, blobs));
  if (typeof v === 'object' && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = encodeValue(x, blobs);
    return out;
  }
  throw new NotStorable(`a ${typeof v === 'object' ? (v as object).constructor?.name ?? 'object' : typeof v} cannot be stored`);
}

export function decodeValue(v: unknown, blobs: readonly Uint8Array[]): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => decodeValue(x, blobs));
  const o = v as Record<string, unknown>;
  if ('$n' in o) return o.$n === '-0' ? -0 : Number(o.$n);
  if ('$u' in o) return undefined;
  if ('$t' in o) {
    const bytes = blobs[o.b as number];
    const T = TYPED[o.$t as string];
    if (!bytes || !T) throw new Error(`bad blob reference ${JSON.stringify(o)}`);
    return new T(bytes.slice().buffer as ArrayBuffer); // a copy: aligned, and owned by the array
  }
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(o)) {
    if (k === '__proto__') throw new Error('a stored object has a __proto__ key');
    out[k] = decodeValue(x, blobs);
  }
  return out;
}

// ---------------------------------------------------------------- graphs

export type StoredSource = { kind: 'arg'; path: string; grad?: true } | { kind: 'capture'; name: string } | { kind: 'grad'; name: string };

interface StoredNode {
  id: number;
  op: string;
  inputs: number[];
  attrs?: unknown;
  meta: unknown;
  requiresGrad: boolean;
  source?: StoredSource;
}

export interface StoredGraph {
  name: string;
  nodes: StoredNode[];
  outputs: number[];
  mutations: { target: number; value: number }[];
  gradEffects: { leaf: number; value: number | null }[];
}

/** Stable names of captured tensors (null: it has none, so the graph cannot be re-bound). */
export type NameOf = (t: Tensor) => string | null;

function encodeNode(n: GraphNode, blobs: Blobs, nameOf: NameOf): StoredNode {
  if (n.op !== 'input' && !isRegisteredPrim(n.prim)) throw new NotStorable(`node %${n.id} is a custom op (${n.op})`);
  let source: StoredSource | undefined;
  if (n.source) {
    if (n.source.kind === 'arg') source = { kind: 'arg', path: n.source.path, ...(n.source.grad ? { grad: true as const } : {}) };
    else {
      const t = n.source.kind === 'ref' ? n.source.tensor : n.source.leaf;
      const name = nameOf(t);
      if (name === null) throw new NotStorable(`captured ${n.source.label} has no stable name`);
      source = n.source.kind === 'ref' ? { kind: 'capture', name } : { kind: 'grad', name };
    }
  }
  return {
    id: n.id, op: n.op, inputs: [...n.inputs], meta: encodeValue(n.meta, blobs), requiresGrad: n.requiresGrad,
    ...(n.attrs !== undefined ? { attrs: encodeValue(n.attrs, blobs) } : {}),
    ...(source ? { source } : {}),
  };
}

/** Binds a stored source to live tensors (throws NotStorable when it cannot); the graph checks their metas. */
export type Binder = (s: Exclude<StoredSource, { kind: 'arg' }>) => Tensor;

function decodeNode(s: StoredNode, blobs: readonly Uint8Array[], bind: Binder): Omit<GraphNode, 'id'> {
  const prim = s.op === 'input' ? undefined : primByName(s.op);
  if (s.op !== 'input' && !prim) throw new NotStorable(`unknown op ${s.op}`);
  let source: InputSource | undefined;
  if (s.source?.kind === 'arg') source = { kind: 'arg', path: s.source.path, ...(s.source.grad === true ? { grad: true as const } : {}) };
  else if (s.source?.kind === 'capture') source = { kind: 'ref', tensor: bind(s.source), label: s.source.name };
  else if (s.source?.kind === 'grad') {
    const leaf = bind(s.source);
    source = { kind: 'grad', leaf, label: `${s.source.name}.grad`, seen: leaf.grad! };
  }
  return {
    op: s.op, prim, inputs: s.inputs, meta: decodeValue(s.meta, blobs) as GraphNode['meta'], requiresGrad: s.requiresGrad,
    ...(s.attrs !== undefined ? { attrs: decodeValue(s.attrs, blobs) } : {}),
    ...(source ? { source } : {}),
  };
}

export function encodeGraph(g: Graph, blobs: Blobs, nameOf: NameOf): StoredGraph {
  return {
    name: g.name, nodes: g.nodes.map((n) => encodeNode(n, blobs, nameOf)),
    outputs: [...g.outputs], mutations: g.mutations.map((m) => ({ ...m })), gradEffects: g.gradEffects.map((e) => ({ ...e })),
  };
}

export function decodeGraph(s: StoredGraph, blobs: readonly Uint8Array[], bind: Binder, opts: { checked?: boolean } = {}): Graph {
  const g = new Graph(s.name);
  for (const n of s.nodes) {
    const added = g.add(decodeNode(n, blobs, bind));
    if (added.id !== n.id) throw new Error(`stored graph node ids are not dense (${n.id})`);
  }
  g.outputs = [...s.outputs];
  g.mutations = s.mutations.map((m) => ({ target: m.target, value: m.value }));
  g.gradEffects = s.gradEffects.map((e) => ({ leaf: e.leaf, value: e.value }));
  timedCheck(() => (opts.checked ? validateBindings(g) : validateGraph(g)));
  return g;
}

// ---------------------------------------------------------------- lowered programs

export interface StoredLowered {
  steps: ({ kind: 'kernel'; kernel: unknown } | { kind: 'opaque'; node: StoredNode; inputs: unknown; out: unknown })[];
  buffers: unknown;
  inputBuffers: number[];
  outputs: unknown;
  decisions: unknown;
  nodeOps?: string[];
}

const noCaptures: NameOf = () => null;
const noBinder: Binder = () => {
  throw new NotStorable('an opaque step reads a captured tensor directly');
};

export function encodeLowered(l: Lowered, blobs: Blobs): StoredLowered {
  return {
    steps: l.steps.map((s) => (s.kind === 'kernel'
      ? { kind: 'kernel' as const, kernel: encodeValue(s.kernel, blobs) }
      : { kind: 'opaque' as const, node: encodeNode({ ...s.node, source: undefined }, blobs, noCaptures), inputs: encodeValue(s.inputs, blobs), out: encodeValue(s.out, blobs) })),
    buffers: encodeValue(l.buffers, blobs),
    inputBuffers: [...l.inputBuffers],
    outputs: encodeValue(l.outputs, blobs),
    decisions: encodeValue(l.decisions, blobs),
    nodeOps: l.nodeOps ? [...l.nodeOps] : undefined,
  };
}

export function decodeLowered(s: StoredLowered, blobs: readonly Uint8Array[], name?: string, opts: { checked?: boolean } = {}): Lowered {
  const steps: Step[] = s.steps.map((st) => (st.kind === 'kernel'
    ? { kind: 'kernel', kernel: decodeValue(st.kernel, blobs) } as Step
    : { kind: 'opaque', node: { id: st.node.id, ...decodeNode(st.node, blobs, noBinder) } as GraphNode, inputs: decodeValue(st.inputs, blobs), out: decodeValue(st.out, blobs) } as Step));
  const l: Lowered = {
    steps,
    buffers: decodeValue(s.buffers, blobs) as Lowered['buffers'],
    inputBuffers: [...s.inputBuffers],
    outputs: decodeValue(s.outputs, blobs) as Lowered['outputs'],
    decisions: decodeValue(s.decisions, blobs) as Lowered['decisions'],
    nodeOps: Array.isArray(s.nodeOps) && s.nodeOps.every((x) => typeof x === 'string') ? s.nodeOps : undefined,
  };
  if (!opts.checked) timedCheck(() => validateLowered(l, name));
  return l;
}

/** Schema checks count as verification (stats().cache.verifyMs). */
function timedCheck(check: () => void): void {
  const t0 = performance.now();
  try {
    check();
  } finally {
    counters.cache.verifyMs += performance.now() - t0;
  }
}
