// Values that must be read straight from a buffer, as a strided window of it: a matmul's
// operands, an opaque op's inputs and the graph's outputs. A node that is not a view of a buffer
// (a pointwise value inlined elsewhere) comes back as a request to materialize it.

import type { Affine } from '../../ir/affine.js';
import type { LLoad, MatmulOperand } from '../../ir/loop-ir.js';
import { shapeAccess } from './access.js';
import type { BufferView } from '../../ir/lowered.js';
import { nextCtx, type LowerState } from './lower-state.js';
import { exprOf } from './expr.js';
import { newStage } from './stage.js';
import { isBlocked, materialize, type Blocked } from './verdict.js';

/** The load node id resolves to at its identity access, null when it is computed instead. */
function bufferLoad(st: LowerState, id: number): LLoad | null | Blocked {
  const shape = st.nodes[id]!.meta.shape;
  const stage = newStage();
  const r = exprOf(st, id, shapeAccess(shape), nextCtx(st, shape.length), stage);
  if (isBlocked(r)) return r;
  const s = stage.stmts.find((x) => r.k === 'tmp' && x.id === r.id);
  return s && s.e.k === 'load' ? s.e : null;
}

export function stridedView(st: LowerState, id: number): BufferView | Blocked {
  const n = st.nodes[id]!;
  const l = bufferLoad(st, id);
  if (l === null) return materialize(id, 'needs a buffer');
  if (isBlocked(l)) return l;
  return { buf: l.buf, shape: n.meta.shape, strides: l.at.c, offset: l.at.o, dtype: n.meta.dtype };
}

/** A matmul operand: its buffer, the offset per batch index of the output, and its row and column strides. */
export function matmulOperand(st: LowerState, id: number, outBatch: readonly number[]): MatmulOperand | Blocked {
  const shape = st.nodes[id]!.meta.shape;
  const l = bufferLoad(st, id);
  if (l === null) return materialize(id, 'matmul operand is not a strided view of a buffer');
  if (isBlocked(l)) return l;
  const at = l.at, nvOwn = shape.length;
  const lead = outBatch.length - (nvOwn - 2);
  const base: Affine = { c: outBatch.map((_, b) => (b - lead >= 0 && shape[b - lead] !== 1 ? at.c[b - lead]! : 0)), o: at.o };
  return { buf: l.buf, base, sRow: at.c[nvOwn - 2]!, sCol: at.c[nvOwn - 1]! };
}
