// The partitioner of AOTAutograd: splits a joint forward+backward graph (joint.ts) into a
// forward graph, which also returns what backward needs, and a backward graph, which takes
// those saved values and the results' gradients (tangents) and returns the inputs' gradients.
// Like Inductor's min-cut partitioner, it recomputes cheap pointwise values and views in the
// backward instead of saving them, whenever that does not save more bytes: a GELU's output
// is recomputed from its (saved) input, a transpose of a weight is taken again in backward.

import { itemSize } from '../../core/dtype.js';
import { contiguousStrides, numel } from '../../core/shape.js';
import { Graph, type GraphNode } from '../capture/graph.js';
import { isPointwiseNode, VIEWS } from '../schedule/node-kinds.js';
import { SAVED_ARG, TANGENT_ARG } from './joint.js';

/** Where the backward's i-th saved value comes from when the forward runs. */
export type SavedSource =
  /** the forward program's output `index` (results first, then saved intermediates) */
  | { readonly from: 'output'; readonly index: number }
  /** the forward's input `index` (in input-node order), kept by reference */
  | { readonly from: 'input'; readonly index: number };

export interface Partition {
  /** outputs: the joint's forward outputs, then the intermediates backward needs */
  readonly fwd: Graph;
  /** inputs: '@saved[i]' then '@tangent[j]'; outputs: the gradients, in the joint's order */
  readonly bwd: Graph;
  readonly saved: readonly SavedSource[];
  /** readable summary of the decision (explain, KILN_LOGS=aot) */
  readonly summary: string;
  /** bytes the forward keeps for backward beyond its results and inputs */
  readonly savedBytes: number;
  /** why this pair cannot run (then only `fwd` is meaningful: replay interprets it with autograd) */
  readonly unsupported: string | null;
  /** which nodes backward computes and which it reads saved: applies to any graph of the same structure */
  readonly decision: PartitionDecision;
}

export interface PartitionDecision {
  readonly backward: readonly number[];
  readonly saved: readonly number[];
  readonly recomputed: readonly number[];
}

/** Whether an input node is a tangent of a joint trace ('@tangent[j]'). */
export function isTangent(n: GraphNode): boolean {
  return n.source?.kind === 'arg' && n.source.path.startsWith(`${TANGENT_ARG}[`);
}

/**
 * `joint`'s outputs are the forward's `nForward` outputs, then the gradients; its tangents are
 * its '@tangent[j]' input nodes. `decision`: the choices made for another graph of the same
 * structure (the probes of a dynamic trace are partitioned alike, whatever their sizes).
 */
export function partitionJoint(joint: Graph, nForward: number, decision?: PartitionDecision): Partition {
  const nodes = joint.nodes;
  const isInput = (id: number) => nodes[id]!.op === 'input';
  const fwdOutputs = joint.outputs.slice(0, nForward);
  const gradOutputs = joint.outputs.slice(nForward);
  const tangents = joint.inputNodes.filter(isTangent).map((n) => n.id);
  const tangentSet = new Set(tangents);
  const forward = ancestors(nodes, [...fwdOutputs, ...joint.mutations.flatMap((m) => [m.value, m.target])]);
  const results = new Set(fwdOutputs);
  const chosen = decision ?? decide(nodes, forward, results, gradOutputs, tangentSet);
  const backward = new Set(chosen.backward);
  const saved = new Set(chosen.saved);
  const recomputed = [...chosen.recomputed];

  const written = new Set(joint.mutations.map((m) => m.target));
  const savedList = [...saved].sort((a, b) => a - b);
  const overwritten = savedList.find((s) => written.has(s));

  // forward: every input but the tangents, the forward nodes; outputs: results, then saved intermediates
  const fwd = new Graph(`${joint.name}.fwd`);
  const fwdId = new Map<number, number>();
  for (const n of nodes) {
    if (tangentSet.has(n.id) || !(isInput(n.id) || forward.has(n.id))) continue;
    const { id: _old, ...rest } = n;
    fwdId.set(n.id, fwd.add({ ...rest, inputs: n.inputs.map((i) => fwdId.get(i)!) }).id);
  }
  const fwdInputs = nodes.filter((n) => isInput(n.id) && !tangentSet.has(n.id)).map((n) => n.id);
  const extra = savedList.filter((s) => !isInput(s) && !results.has(s));
  fwd.outputs = [...fwdOutputs, ...extra].map((id) => fwdId.get(id)!);
  fwd.mutations = joint.mutations.map((m) => ({ target: fwdId.get(m.target)!, value: fwdId.get(m.value)! }));
  const sources: SavedSource[] = savedList.map((s) =>
    isInput(s) ? { from: 'input', index: fwdInputs.indexOf(s) } : { from: 'output', index: results.has(s) ? fwdOutputs.indexOf(s) : fwdOutputs.length + extra.indexOf(s) });

  // backward: saved values and tangents as arguments, then the backward nodes in trace order
  const bwd = new Graph(`${joint.name}.bwd`);
  const bwdId = new Map<number, number>();
  savedList.forEach((s, i) => {
    const m = nodes[s]!.meta;
    // an input keeps its (guarded) layout; computed values arrive contiguous (compiled-node.ts ensures it)
    const meta = isInput(s) ? m : { ...m, strides: contiguousStrides(m.shape), offset: 0 };
    bwdId.set(s, bwd.add({ op: 'input', inputs: [], meta, source: { kind: 'arg', path: `${SAVED_ARG}[${i}]` }, requiresGrad: false }).id);
  });
  tangents.forEach((t, j) => bwdId.set(t, bwd.add({ op: 'input', inputs: [], meta: nodes[t]!.meta, source: { kind: 'arg', path: `${TANGENT_ARG}[${j}]` }, requiresGrad: false }).id));
  for (const n of nodes) {
    if (!backward.has(n.id)) continue;
    const { id: _old, ...rest } = n;
    bwdId.set(n.id, bwd.add({ ...rest, requiresGrad: false, inputs: n.inputs.map((i) => bwdId.get(i)!) }).id);
  }
  bwd.outputs = gradOutputs.map((id) => bwdId.get(id)!);

  const savedBytes = extra.reduce((a, s) => a + bytes(nodes[s]!), 0);
  const summary = [
    `saved for backward: ${savedList.length ? savedList.map((s) => `%${s} ${label(nodes[s]!)}${isInput(s) ? ' (input, by reference)' : results.has(s) ? ' (a result)' : ''}`).join(', ') : 'nothing'}`,
    `saved intermediates: ${extra.length} tensors, ${savedBytes} bytes`,
    `recomputed in backward: ${recomputed.length ? recomputed.sort((a, b) => a - b).map((s) => `%${s} ${label(nodes[s]!)}`).join(', ') : 'nothing'}`,
  ].join('\n');
  const unsupported = overwritten === undefined ? null : `backward reads ${label(nodes[overwritten]!)}, which the forward writes in place`;
  return { fwd, bwd, saved: sources, summary, savedBytes, unsupported, decision: chosen };
}

/** What backward computes (recomputing cheap values) and what it reads saved from the forward. */
function decide(nodes: readonly GraphNode[], forward: ReadonlySet<number>, results: ReadonlySet<number>, gradOutputs: readonly number[], tangentSet: ReadonlySet<number>): PartitionDecision {
  const isInput = (id: number) => nodes[id]!.op === 'input';
  const needed = ancestors(nodes, gradOutputs);
  // backward computes what the gradients need and the forward does not compute anyway
  const backward = new Set([...needed].filter((id) => !forward.has(id) && !isInput(id)));
  const saved = new Set<number>();
  for (const id of backward) for (const i of nodes[id]!.inputs) if (!backward.has(i) && !tangentSet.has(i)) saved.add(i);
  for (const id of gradOutputs) if (!backward.has(id) && !tangentSet.has(id)) saved.add(id);

  // recompute instead of save: a cheap value whose inputs cost no more bytes to keep
  const cost = (id: number) => (isInput(id) || results.has(id) ? 0 : bytes(nodes[id]!));
  const recomputed: number[] = [];
  for (let changed = true; changed; ) {
    changed = false;
    for (const s of [...saved].sort((a, b) => b - a)) {
      const n = nodes[s]!;
      if (isInput(s) || !recomputable(n) || results.has(s)) continue;
      const fresh = n.inputs.filter((i) => !saved.has(i) && !backward.has(i));
      if (fresh.reduce((a, i) => a + cost(i), 0) > cost(s)) continue;
      saved.delete(s);
      for (const i of n.inputs) if (!backward.has(i)) saved.add(i);
      backward.add(s);
      recomputed.push(s);
      changed = true;
    }
  }
  // a saved value no backward node reads any more (its readers were recomputed from elsewhere)
  for (const s of [...saved]) if (!gradOutputs.includes(s) && ![...backward].some((b) => nodes[b]!.inputs.includes(s))) saved.delete(s);

  return { backward: [...backward], saved: [...saved], recomputed };
}

/** Pointwise values, views and constants: recomputing them fuses into the backward's kernels. Random draws never are. */
function recomputable(n: GraphNode): boolean {
  return isPointwiseNode(n) || VIEWS.has(n.op) || n.op === 'constant';
}

function bytes(n: GraphNode): number {
  return numel(n.meta.shape) * itemSize(n.meta.dtype);
}

function label(n: GraphNode): string {
  const src = n.source;
  const what = src ? (src.kind === 'arg' ? src.path : src.label) : n.op;
  return `${what} ${n.meta.dtype}[${n.meta.shape.join(',')}]`;
}

function ancestors(nodes: readonly GraphNode[], roots: readonly number[]): Set<number> {
  const out = new Set<number>();
  const stack = [...roots];
  while (stack.length) {
    const id = stack.pop()!;
    if (out.has(id)) continue;
    out.add(id);
    stack.push(...nodes[id]!.inputs);
  }
  return out;
}
