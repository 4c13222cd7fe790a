// The state of one lowering, passed explicitly to every rule: the graph, which nodes have
// buffers and where, the steps scheduled so far, the kernels later nodes may fuse into, and the
// decisions made.

import type { Affine, LExpr, Store } from '../../ir/loop-ir.js';
import type { Graph, GraphNode } from '../capture/graph.js';
import type { BufferPlan } from './allocate-buffers.js';
import type { Host, KernelCtx } from './host.js';
import type { Step } from './lowered.js';
import type { FusionDecision } from '../../ir/lowered.js';
import type { TmpIds } from './stage.js';

export interface LowerState extends BufferPlan, TmpIds {
  readonly graph: Graph;
  readonly nodes: readonly GraphNode[];
  /** the nodes that have a buffer */
  readonly mat: ReadonlySet<number>;
  /** the step that writes each materialized node's buffer (-1: inputs and constants) */
  readonly producedAt: Map<number, number>;
  readonly steps: Step[];
  /** every kernel opened so far, in order */
  readonly hosts: Host[];
  /** the kernel a reduction may join (none after an opaque step) */
  open: Host | null;
  readonly decisions: FusionDecision[];
  kernelCount: number;
}

export function newLowerState(graph: Graph, mat: ReadonlySet<number>, plan: BufferPlan, decisions: FusionDecision[]): LowerState {
  const producedAt = new Map<number, number>();
  for (const n of graph.nodes) if (n.op === 'input' || n.op === 'constant') producedAt.set(n.id, -1);
  return { ...plan, graph, nodes: graph.nodes, mat, producedAt, steps: [], hosts: [], open: null, decisions, tmpId: 0, kernelCount: 0 };
}

export function kernelName(st: LowerState, what: string): string {
  return `k${st.kernelCount++}_${what}`;
}

/** A kernel context for the next step. */
export function nextCtx(st: LowerState, nv: number, local: KernelCtx['local'] = () => null): KernelCtx {
  return { nv, seq: st.steps.length, writes: new Set(), local };
}

/** Schedules a host's kernel as the next step; later nodes may fuse into it. */
export function openHost<H extends Host>(st: LowerState, h: H): H {
  st.steps.push({ kind: 'kernel', kernel: h.kernel });
  st.hosts.push(h);
  st.open = h;
  return h;
}

/** A store of node n's buffer by this kernel (which from now on may not read that buffer). */
export function storeTo(st: LowerState, n: GraphNode, at: Affine, value: LExpr, ctx: KernelCtx): Store {
  const b = st.bufOf.get(n.id)!;
  ctx.writes.add(b);
  return { buf: b, at, value, dtype: n.meta.dtype, node: n.id };
}
