// Pass: a buffer for every node that has one (inputs, constants, and the materialized nodes
// chosen by choose-buffers.ts), with its layout: inputs keep their strides, the rest are
// contiguous.

import type { TypedArray } from '../../core/dtype.js';
import { contiguousStrides, numel } from '../../core/shape.js';
import type { GraphNode } from '../capture/graph.js';
import type { BufferInfo } from '../../ir/lowered.js';

export interface BufferPlan {
  readonly buffers: BufferInfo[];
  /** the buffer of each node that has one */
  readonly bufOf: Map<number, number>;
  readonly layoutOf: Map<number, { readonly strides: readonly number[]; readonly offset: number }>;
  /** buffer of each graph input node, in input order */
  readonly inputBuffers: number[];
}

export function allocateBuffers(nodes: readonly GraphNode[], mat: ReadonlySet<number>): BufferPlan {
  const plan: BufferPlan = { buffers: [], bufOf: new Map(), layoutOf: new Map(), inputBuffers: [] };
  const add = (node: GraphNode, kind: BufferInfo['kind'], size: number, data?: TypedArray) => {
    const b: BufferInfo = { id: plan.buffers.length, dtype: node.meta.dtype, size, kind, node: node.id, data };
    plan.buffers.push(b);
    plan.bufOf.set(node.id, b.id);
    return b.id;
  };
  for (const n of nodes) {
    if (n.op === 'input') {
      plan.inputBuffers.push(add(n, 'input', span(n.meta)));
      plan.layoutOf.set(n.id, { strides: n.meta.strides, offset: n.meta.offset });
    } else if (n.op === 'constant') {
      add(n, 'constant', numel(n.meta.shape), (n.attrs as { data: TypedArray }).data);
      plan.layoutOf.set(n.id, { strides: contiguousStrides(n.meta.shape), offset: 0 });
    } else if (mat.has(n.id)) {
      add(n, 'scratch', numel(n.meta.shape));
      plan.layoutOf.set(n.id, { strides: contiguousStrides(n.meta.shape), offset: 0 });
    }
  }
  return plan;
}

/** Elements a strided tensor reaches in its buffer (offset included). */
function span(m: { shape: readonly number[]; strides: readonly number[]; offset: number }): number {
  if (m.shape.some((s) => s === 0)) return 0;
  let last = m.offset;
  m.shape.forEach((s, d) => (last += (s - 1) * Math.abs(m.strides[d]!)));
  return last + 1;
}

/** What the plan holds, one buffer a line. */
export function printBufferPlan(plan: BufferPlan): string {
  return plan.buffers.map((b) => `buf${b.id}: %${b.node} ${b.kind} ${b.dtype}[${b.size}]`).join('\n');
}
