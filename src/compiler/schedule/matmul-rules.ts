// Rule for a matmul: a kernel of its own over strided views of its operands' buffers, whose
// accumulator later pointwise consumers read as their epilogue (bias, activation, residual add,
// scaling: pointwise-rules.ts).

import { flattenAccess, sameAff, unitAff, zeroAff, type Affine } from '../../ir/affine.js';
import type { MatmulKernel } from '../../ir/loop-ir.js';
import type { GraphNode } from '../capture/graph.js';
import { shapeAccess } from './access.js';
import { matmulOperand } from './buffer-reads.js';
import { storedLocal, type MatmulHost } from './host.js';
import { kernelName, nextCtx, openHost, storeTo, type LowerState } from './lower-state.js';
import { newStage } from './stage.js';
import { isBlocked, noFuse, type Blocked } from './verdict.js';

export function scheduleMatmul(st: LowerState, n: GraphNode): Blocked | null {
  st.open = null;
  const shape = n.meta.shape;
  const batch = shape.slice(0, -2);
  const nv = shape.length;
  const a = matmulOperand(st, n.inputs[0]!, batch);
  if (isBlocked(a)) return a;
  const b = matmulOperand(st, n.inputs[1]!, batch);
  if (isBlocked(b)) return b;
  const body = newStage();
  const kernel: MatmulKernel = {
    kind: 'matmul', name: kernelName(st, 'matmul'), dtype: n.meta.dtype, batch, m: shape[nv - 2]!, n: shape[nv - 1]!, k: st.nodes[n.inputs[0]!]!.meta.shape.at(-1)!,
    a, b, body: body.stmts, stores: [],
  };
  // the accumulator is the matmul's value at the output index (elsewhere: not in registers)
  const accumulator = (acc: readonly Affine[]) =>
    acc.every((x, d) => sameAff(x, shape[d] === 1 ? zeroAff(nv) : unitAff(nv, d))) ? { k: 'acc' as const } : noFuse(`matmul %${n.id} read at another index`);
  const h: MatmulHost = { kind: 'matmul', kernel, body, stored: new Map(), ctx: nextCtx(st, nv, (id, acc, stage) => (id === n.id ? accumulator(acc) : storedLocal(h, id, acc, stage))) };
  openHost(st, h);
  kernel.stores.push(storeTo(st, n, flattenAccess(shapeAccess(shape), st.layoutOf.get(n.id)!.strides, 0, nv), { k: 'acc' }, h.ctx));
  st.producedAt.set(n.id, h.ctx.seq);
  return null;
}
