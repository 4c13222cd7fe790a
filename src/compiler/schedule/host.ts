// A kernel under construction that later nodes may fuse into (a "host"): the kernel, the stages
// its values are built in, what it has in registers, and what it writes.

import { accessKey, type Affine } from '../../ir/affine.js';
import type { LExpr, MatmulKernel, PointwiseKernel, RowKernel } from '../../ir/loop-ir.js';
import type { GraphNode } from '../capture/graph.js';
import { canonical } from './access.js';
import type { Stage } from './stage.js';
import type { Built } from './verdict.js';

export interface KernelCtx {
  readonly nv: number;
  /** the step index of this kernel: it may only load buffers written by earlier steps */
  readonly seq: number;
  /** node values this kernel has in registers for this stage, by node and access (null: none) */
  local(node: number, acc: readonly Affine[], stage: Stage): Built | null;
  /** buffers this kernel writes: reading them here would race */
  readonly writes: Set<number>;
}

/** A value a host already computed and stored, by node and canonical access. */
type Stored = Map<string, { readonly v: LExpr; readonly stage: Stage }>;

interface HostBase {
  readonly ctx: KernelCtx;
  readonly stored: Stored;
}

export interface PointwiseHost extends HostBase {
  readonly kind: 'pointwise';
  readonly kernel: PointwiseKernel;
  readonly body: Stage;
}

export interface RowHost extends HostBase {
  readonly kind: 'row';
  readonly kernel: RowKernel;
  readonly outer: Stage;
  readonly row: Stage;
  /** the reduced input's shape, the reduced dims, and the loop var of each dim */
  readonly full: readonly number[];
  readonly reduced: readonly number[];
  readonly dimsToVar: readonly number[];
  /** the reduction id of each reduction node the kernel computes */
  readonly reds: Map<number, number>;
}

export interface MatmulHost extends HostBase {
  readonly kind: 'matmul';
  readonly kernel: MatmulKernel;
  readonly body: Stage;
}

export type Host = PointwiseHost | RowHost | MatmulHost;

export function hostStages(h: Host): Stage[] {
  return h.kind === 'row' ? [h.outer, h.row] : [h.body];
}

/** A value this host already computed at the same index, in this stage or the one around it. */
export function storedLocal(h: HostBase, id: number, acc: readonly Affine[], stage: Stage): LExpr | null {
  const hit = h.stored.get(`${id}@${accessKey(acc)}`);
  if (!hit || (hit.stage !== stage && hit.stage !== stage.outer)) return null;
  return hit.v;
}

export function rememberStored(h: HostBase, n: GraphNode, acc: readonly Affine[], v: LExpr, stage: Stage): void {
  const nv = acc[0]?.c.length ?? 0;
  h.stored.set(`${n.id}@${accessKey(canonical(acc, n.meta.shape, nv))}`, { v, stage });
}
