// The value of a node at an access, as a loop-IR expression of the kernel being built: loaded
// from its buffer when it has one the kernel may read, else computed from its inputs (views are
// index arithmetic, pointwise nodes scalar ops). What the kernel cannot compute comes back as a
// refusal (verdict.ts) instead of an expression.

import { contiguousStrides } from '../../core/shape.js';
import type { DType } from '../../core/dtype.js';
import { accessKey, affKey, flattenAccess, scaleAddAff, type Affine } from '../../ir/affine.js';
import type { LExpr } from '../../ir/loop-ir.js';
import type { ScalarOp } from '../../ir/scalar-expr.js';
import type { PointwiseAttrs } from '../../ops/pointwise.js';
import type { GraphNode } from '../capture/graph.js';
import { broadcastAccess, canonical, isContiguousLayout, reshapeAccess } from './access.js';
import type { KernelCtx } from './host.js';
import type { LowerState } from './lower-state.js';
import { isInlinable, isPointwiseNode, VIEWS } from './node-kinds.js';
import { intern, type Stage } from './stage.js';
import { isBlocked, materialize, noFuse, type Blocked, type Built } from './verdict.js';

export function exprOf(st: LowerState, id: number, access: readonly Affine[], ctx: KernelCtx, stage: Stage): Built {
  const n = st.nodes[id]!;
  // a size-1 dim is always index 0: one canonical access, so equal reads compare equal
  const acc = canonical(access, n.meta.shape, ctx.nv);
  const local = ctx.local(id, acc, stage);
  if (local) return local;
  if (!st.mat.has(id)) return defineExpr(st, n, acc, ctx, stage);
  const b = st.bufOf.get(id)!;
  if (ctx.writes.has(b)) {
    // written by this kernel but not available here (another index, or an earlier loop): recompute
    if (isInlinable(n)) return defineExpr(st, n, acc, ctx, stage);
    return noFuse(`%${id} is written by this kernel and read at another index`);
  }
  if (!readable(st, id, ctx)) return noFuse(`%${id} is not computed before this kernel`);
  const l = st.layoutOf.get(id)!;
  return load(st, b, flattenAccess(acc, l.strides, l.offset, ctx.nv), n.meta.dtype, stage);
}

/** Whether node id's buffer is written by a step before this kernel. */
function readable(st: LowerState, id: number, ctx: KernelCtx): boolean {
  const at = st.producedAt.get(id);
  return at !== undefined && at < ctx.seq;
}

/** The value of a view or pointwise node computed from its inputs (not loaded from its buffer). */
export function defineExpr(st: LowerState, n: GraphNode, acc: readonly Affine[], ctx: KernelCtx, stage: Stage): Built {
  if (n.op === 'reshape') {
    const flat = flatReshape(st, n, acc, ctx, stage);
    if (flat) return flat;
  }
  if (VIEWS.has(n.op)) {
    const inner = viewAccess(st, n, acc, ctx.nv);
    return isBlocked(inner) ? inner : exprOf(st, n.inputs[0]!, inner, ctx, stage);
  }
  if (isPointwiseNode(n)) return pointwiseExpr(st, n, acc, ctx, stage);
  return materialize(n.id, `${n.op} is read by a kernel that cannot compute it`);
}

/** A reshape of a contiguous buffer is read by flat index (null: the parent is not one this kernel may read). */
function flatReshape(st: LowerState, n: GraphNode, acc: readonly Affine[], ctx: KernelCtx, stage: Stage): LExpr | null {
  const parent = st.nodes[n.inputs[0]!]!;
  const layout = st.mat.has(parent.id) ? st.layoutOf.get(parent.id)! : null;
  const buf = st.bufOf.get(parent.id);
  if (!layout || buf === undefined || !isContiguousLayout(parent.meta.shape, layout.strides) || ctx.writes.has(buf) || !readable(st, parent.id, ctx)) return null;
  return load(st, buf, flattenAccess(acc, contiguousStrides(n.meta.shape), layout.offset, ctx.nv), parent.meta.dtype, stage);
}

/** The access of a view's input that reads what the view shows at `acc`. */
function viewAccess(st: LowerState, n: GraphNode, acc: readonly Affine[], nv: number): Affine[] | Blocked {
  const parent = st.nodes[n.inputs[0]!]!;
  const a = n.attrs as Record<string, unknown>;
  switch (n.op) {
    case 'permute': {
      const out: Affine[] = new Array(parent.meta.shape.length);
      (a.dims as number[]).forEach((p, d) => (out[p] = acc[d]!));
      return out;
    }
    case 'expand':
      return broadcastAccess(acc, parent.meta.shape, n.meta.shape, nv);
    case 'slice': {
      const out = [...acc];
      out[a.dim as number] = scaleAddAff(acc[a.dim as number]!, a.step as number, a.start as number);
      return out;
    }
    default: {
      // reshape of a value not read from a buffer (buffers take the flat path in defineExpr)
      const r = reshapeAccess(acc, parent.meta.shape, n.meta.shape, nv);
      if (!r && st.mat.has(parent.id)) return noFuse(`reshape of %${parent.id} before its buffer is written`);
      if (!r) return materialize(parent.id, `reshape ${JSON.stringify(parent.meta.shape)} -> ${JSON.stringify(n.meta.shape)} merges dims of a value that is not in a buffer`);
      return r;
    }
  }
}

function load(st: LowerState, buf: number, at: Affine, dtype: DType, stage: Stage): LExpr {
  return intern(st, stage, `load:${buf}:${affKey(at)}`, { k: 'load', buf, at, dtype }, [at]);
}

function pointwiseExpr(st: LowerState, n: GraphNode, acc: readonly Affine[], ctx: KernelCtx, stage: Stage): Built {
  const key = `n${n.id}@${accessKey(acc)}`;
  const hit = stage.memo.get(key) ?? stage.outer?.memo.get(key);
  if (hit) return hit;
  if (n.op === 'full') return { k: 'const', v: (n.attrs as { value: number }).value };
  let e: LExpr;
  if (n.op === 'cast') {
    const a = exprOf(st, n.inputs[0]!, acc, ctx, stage);
    if (isBlocked(a)) return a;
    e = { k: 'cast', a, dtype: (n.attrs as { dtype: DType }).dtype };
  } else {
    const a = n.attrs as PointwiseAttrs;
    const args: LExpr[] = [];
    for (const o of a.operands) {
      if ('scalar' in o) {
        args.push({ k: 'const', v: o.scalar });
        continue;
      }
      const input = st.nodes[n.inputs[o.input]!]!;
      const arg = exprOf(st, input.id, broadcastAccess(acc, input.meta.shape, n.meta.shape, ctx.nv), ctx, stage);
      if (isBlocked(arg)) return arg;
      args.push(arg);
    }
    if (a.op === 'identity' && args[0]!.k !== 'const') return args[0]!;
    e = { k: 'op', op: a.op as ScalarOp, a: args, dtype: a.dtype };
  }
  return intern(st, stage, key, e, acc);
}
