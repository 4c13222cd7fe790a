// The captured Graph: a small FX-like op graph. Nodes are primitives in execution order;
// inputs are user arguments or tensors captured by reference (parameters, optimizer state).
// It prints, and keys its structure exactly (graphKey: the compiled entry's and the cache's key).

import type { DType } from '../../core/dtype.js';
import type { PrimDef } from '../../ops/dispatch.js';
import type { Tensor } from '../../tensor/tensor.js';
import { symToString, type Sym } from '../../ir/symbolic.js';

export type InputSource =
  /** a tensor argument at `path`, or (`grad`) the .grad that argument had when called */
  | { readonly kind: 'arg'; readonly path: string; readonly grad?: true }
  /** a tensor the function reads but did not receive as an argument (parameter, buffer, state) */
  | { readonly kind: 'ref'; readonly tensor: Tensor; readonly label: string }
  /** the current .grad of a leaf (grads are new tensors every step: captured by owner) */
  | { readonly kind: 'grad'; readonly leaf: Tensor; readonly label: string; readonly seen: Tensor };

export interface TensorMeta {
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
  readonly dtype: DType;
  /** dynamic graphs (issue 7): dims that are size expressions (s0, 768*s0, ...) */
  readonly shapeSym?: readonly (Sym | null)[];
}

export interface GraphNode {
  readonly id: number;
  /** 'input' nodes have no prim */
  readonly op: string;
  readonly prim?: PrimDef<unknown>;
  readonly inputs: readonly number[];
  readonly attrs?: unknown;
  readonly meta: TensorMeta;
  readonly source?: InputSource;
  /** whether the traced value required grad (autograd must see this output) */
  readonly requiresGrad: boolean;
}

/** Writes the graph performs on tensors it did not create (functionalized in-place ops). */
export interface Mutation {
  /** input node whose tensor is written */
  readonly target: number;
  /** node holding the new value */
  readonly value: number;
}

/** A parameter's .grad after the graph ran: a node's value, or null (zeroGrad). */
export interface GradEffect {
  readonly leaf: number;
  readonly value: number | null;
}

export class Graph {
  readonly nodes: GraphNode[] = [];
  outputs: number[] = [];
  mutations: Mutation[] = [];
  gradEffects: GradEffect[] = [];

  constructor(readonly name: string) {}

  add(node: Omit<GraphNode, 'id'>): GraphNode {
    const n = { ...node, id: this.nodes.length } as GraphNode;
    this.nodes.push(n);
    return n;
  }

  get inputNodes(): GraphNode[] {
    return this.nodes.filter((n) => n.op === 'input');
  }

  get opCount(): number {
    return this.nodes.filter((n) => n.op !== 'input').length;
  }
}

function fmtMeta(m: TensorMeta): string {
  const short = m.dtype === 'float32' ? 'f32' : m.dtype === 'float64' ? 'f64' : m.dtype === 'int32' ? 'i32' : 'bool';
  return `${short}[${m.shape.map((d, i) => (m.shapeSym?.[i] ? symToString(m.shapeSym[i]!) : d)).join(',')}]`;
}

function fmtAttrs(n: GraphNode): string {
  if (!n.prim || n.attrs === undefined) return '';
  if (n.prim.formatAttrs) return n.prim.formatAttrs(n.attrs);
  return '';
}

/** The graph as readable text (the `graph` stage printer). */
export function printGraph(g: Graph): string {
  const inputs = g.inputNodes;
  const args = inputs.filter((n) => n.source?.kind === 'arg').length;
  const lines = [`graph ${g.name}  (${args} inputs, ${inputs.length - args} captured, ${g.outputs.length} outputs, ${g.opCount} ops)`];
  for (const n of g.nodes) {
    let rhs: string;
    if (n.op === 'input') {
      rhs = n.source?.kind === 'arg' ? `input ${n.source.path}${n.source.grad ? '.grad' : ''}` : `captured ${n.source?.label ?? '?'}`;
    } else {
      // pointwise attrs print their operands ($k = k-th input); others print after the inputs
      const attrText = fmtAttrs(n);
      const operands = attrText.includes('$') ? attrText.replace(/\$(\d+)/g, (_, k: string) => `%${n.inputs[Number(k)]}`) : '';
      const ins = n.inputs.map((i) => `%${i}`).join(', ');
      rhs = operands ? `${n.op} ${operands}` : `${n.op} ${[ins, attrText].filter(Boolean).join(', ')}`;
    }
    lines.push(`  %${String(n.id).padEnd(4)}= ${rhs.padEnd(48)} ${fmtMeta(n.meta)}`);
  }
  lines.push(`  return ${g.outputs.map((o) => `%${o}`).join(', ')}`);
  for (const m of g.mutations) lines.push(`  write %${m.value} -> %${m.target}  (in-place update, functionalized)`);
  for (const e of g.gradEffects) lines.push(`  grad of %${e.leaf} := ${e.value === null ? 'null' : `%${e.value}`}`);
  return lines.join('\n');
}

/** A structural key: same ops, attrs, metas and wiring give the same key (tensor identity does not count). */
export function graphKey(g: Graph): string {
  const parts: string[] = [];
  for (const n of g.nodes) {
    const src = n.source ? (n.source.kind === 'arg' ? `arg:${n.source.path}${n.source.grad ? '.grad' : ''}` : n.source.kind) : '';
    parts.push(`${n.op}(${n.inputs.join(',')})${src}|${fmtMeta(n.meta)}|${n.meta.strides.join(',')}@${n.meta.offset}|${attrKey(n.attrs)}|${n.requiresGrad ? 'g' : ''}`);
  }
  parts.push(`out:${g.outputs.join(',')}`);
  parts.push(`mut:${g.mutations.map((m) => `${m.target}<-${m.value}`).join(',')}`);
  parts.push(`grad:${g.gradEffects.map((e) => `${e.leaf}<-${e.value}`).join(',')}`);
  return parts.join(';');
}

/** A node's attrs as an exact key: typed arrays by their bytes, -0, NaN and infinities spelled out. */
export function attrKey(a: unknown): string {
  if (a === undefined) return '';
  return JSON.stringify(a, (_k, v) => {
    if (ArrayBuffer.isView(v)) return `#${exactBits(v)}`;
    if (typeof v === 'number' && (!Number.isFinite(v) || Object.is(v, -0))) return String(Object.is(v, -0) ? '-0' : v);
    return v;
  });
}

/** A typed array's exact bytes, one char per byte (a one-byte string in V8, safe in JSON and UTF-8 digests):
 *  keys must tell 1e-7 from 2e-7, and -0 from 0. */
function exactBits(a: ArrayBufferView): string {
  const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  let s = `${a.constructor.name}:${a.byteLength}:`;
  for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return s;
}
