// Lowering + scheduling: Graph -> a list of fused loop kernels and opaque steps over
// planned buffers. Every fusion decision is recorded with its reason (KILN_LOGS=fusion).
//
// Rules, in order:
//  - views are index arithmetic: they never get a kernel unless a graph output needs a copy;
//  - pointwise nodes are inlined into their consumers, except when a consumer needs a buffer
//    (matmul operand, opaque op, graph output, in-place write), when a view cannot be
//    expressed as affine indexing, or when several kernels would recompute an expensive value;
//  - reductions over the same input shape and dims share one row kernel (softmax, layer norm,
//    cross-entropy: all their reductions and the elementwise epilogue in one kernel);
//  - a matmul takes the pointwise consumers of its output as its epilogue (bias, activation,
//    residual add, scaling);
//  - everything else (gather, scatter, im2col, cumsum, random, custom ops) is an opaque step
//    that runs the eager kernel on planned buffers.

import type { DType, TypedArray } from '../../core/dtype.js';
import { contiguousStrides, numel } from '../../core/shape.js';
import type { ReduceOp } from '../../ir/kernel-spec.js';
import { BINARY_OPS, TERNARY_OPS, UNARY_OPS, type ScalarOp } from '../../ir/scalar-expr.js';
import type { PointwiseAttrs } from '../../ops/pointwise.js';
import type { Graph, GraphNode } from '../capture/graph.js';
import type { BufferInfo, BufferView, FusionDecision } from '../../ir/lowered.js';
import type { Lowered, Step } from './lowered.js';
import type { Affine, LExpr, LoopKernel, MatmulKernel, MatmulOperand, PointwiseKernel, RowKernel, Stmt, Store } from '../../ir/loop-ir.js';
import { kernelLoadExprs, kernelLoads, kernelStores, someLeaf } from '../../ir/loop-ir.js';
import { sharedMatmulSums } from './materialize-shared.js';

const SCALAR_OPS = new Set<string>([...UNARY_OPS, ...BINARY_OPS, ...TERNARY_OPS]);
export const VIEWS: ReadonlySet<string> = new Set(['reshape', 'permute', 'expand', 'slice']);
const REDUCTIONS = new Set(['sum', 'prod', 'max', 'min', 'argmax', 'argmin']);
const EXPENSIVE = new Set([
  'exp', 'log', 'log1p', 'expm1', 'tanh', 'sigmoid', 'gelu', 'geluTanh', 'silu', 'softplus', 'erf', 'pow', 'sin', 'cos', 'sqrt', 'rsqrt',
  'tan', 'atan', 'asin', 'acos', 'sinh', 'cosh', 'log2', 'log10', 'atan2', 'hypot',
]);

export function isPointwiseNode(n: GraphNode): boolean {
  return SCALAR_OPS.has(n.op) || n.op === 'cast' || n.op === 'full';
}

class NeedMaterialize extends Error {
  constructor(readonly node: number, readonly why: string) {
    super(`materialize %${node}: ${why}`);
  }
}
class CannotFuse extends Error {}

const unit = (nv: number, v: number): Affine => ({ c: Array.from({ length: nv }, (_, i) => (i === v ? 1 : 0)), o: 0 });
const zero = (nv: number): Affine => ({ c: new Array<number>(nv).fill(0), o: 0 });
const scaleAdd = (a: Affine, s: number, o: number): Affine => ({ c: a.c.map((x) => x * s), o: a.o * s + o });
const addAff = (a: Affine, b: Affine): Affine => ({ c: a.c.map((x, i) => x + b.c[i]!), o: a.o + b.o });
const affKey = (a: Affine): string => `${a.c.join(',')}+${a.o}`;
const accessKey = (acc: readonly Affine[]): string => acc.map(affKey).join(';');
const sameAff = (a: Affine, b: Affine): boolean => a.o === b.o && a.c.every((x, i) => x === b.c[i]);

/** Flat offset into a strided layout for a multi-index access. */
function flatten(acc: readonly Affine[], strides: readonly number[], offset: number, nv: number): Affine {
  let r: Affine = { c: new Array<number>(nv).fill(0), o: offset };
  acc.forEach((a, d) => (r = addAff(r, scaleAdd(a, strides[d]!, 0))));
  return r;
}

/** Maps an access of a broadcast result back to an operand of shape `from`. */
function broadcastAccess(acc: readonly Affine[], from: readonly number[], to: readonly number[], nv: number): Affine[] {
  const lead = to.length - from.length;
  return from.map((s, e) => (s === 1 ? zero(nv) : acc[e + lead]!));
}

/** Reshape as index arithmetic when it only splits dims (each parent dim = a run of child dims). */
function reshapeAccess(acc: readonly Affine[], parent: readonly number[], child: readonly number[], nv: number): Affine[] | null {
  const out: Affine[] = parent.map(() => zero(nv));
  let c = 0;
  for (let p = 0; p < parent.length; p++) {
    if (parent[p] === 1) continue;
    while (c < child.length && child[c] === 1) c++;
    let prod = 1;
    const group: number[] = [];
    while (c < child.length && prod < parent[p]!) {
      if (child[c] !== 1) {
        prod *= child[c]!;
        group.push(c);
      }
      c++;
    }
    if (prod !== parent[p]) return null; // a merge of parent dims: not affine
    let r = zero(nv);
    let stride = 1;
    for (let g = group.length - 1; g >= 0; g--) {
      r = addAff(r, scaleAdd(acc[group[g]!]!, stride, 0));
      stride *= child[group[g]!]!;
    }
    out[p] = r;
  }
  return out;
}

interface Stage {
  readonly stmts: Stmt[];
  readonly memo: Map<string, LExpr>;
  /** a stage to share values with when they do not depend on this stage's own vars */
  readonly outer?: Stage;
  /** vars this stage loops over that the outer stage does not */
  readonly ownVars?: readonly number[];
}

interface KernelCtx {
  readonly nv: number;
  /** the step index of this kernel: it may only load buffers written by earlier steps */
  readonly seq: number;
  /** node values this kernel has in registers for this stage, by node and access */
  local(node: number, acc: readonly Affine[], stage: Stage): LExpr | null;
  /** buffers this kernel writes: reading them here would race */
  readonly writes: Set<number>;
}

export function lower(graph: Graph): Lowered {
  const shared = sharedMatmulSums(graph, isPointwiseNode);
  const forced = new Set<number>(shared.forced);
  for (let attempt = 0; attempt <= graph.nodes.length; attempt++) {
    try {
      const l = lowerOnce(graph, forced);
      l.decisions.unshift(...shared.decisions);
      return l;
    } catch (e) {
      if (e instanceof NeedMaterialize && !forced.has(e.node)) {
        forced.add(e.node);
        continue;
      }
      throw e;
    }
  }
  throw new Error('kiln internal: lowering did not converge');
}

function lowerOnce(graph: Graph, forced: Set<number>): Lowered {
  const nodes = graph.nodes;
  const decisions: FusionDecision[] = [];
  const consumers = nodes.map(() => [] as number[]);
  for (const n of nodes) for (const i of n.inputs) consumers[i]!.push(n.id);

  // ---- which nodes get a buffer ----
  const mat = new Set<number>(forced);
  const needBuffer = (id: number, why: string) => {
    let r = id;
    while (VIEWS.has(nodes[r]!.op)) r = nodes[r]!.inputs[0]!; // a view reads its root's buffer
    if (!mat.has(r) && nodes[r]!.op !== 'input') decisions.push({ decision: 'materialized', nodes: [r], reason: why });
    mat.add(r);
  };
  for (const n of nodes) {
    if (n.op === 'input' || n.op === 'constant') mat.add(n.id);
    else if (REDUCTIONS.has(n.op) || n.op === 'matmul') mat.add(n.id);
    else if (!isPointwiseNode(n) && !VIEWS.has(n.op)) {
      mat.add(n.id);
      n.inputs.forEach((i) => needBuffer(i, `input of opaque ${n.op} (%${n.id})`));
    }
    if (n.op === 'matmul') n.inputs.forEach((i) => needBuffer(i, `operand of matmul %${n.id}`));
  }
  for (const o of graph.outputs) if (!VIEWS.has(nodes[o]!.op)) mat.add(o);
  for (const m of graph.mutations) if (nodes[m.value]!.op !== 'input') mat.add(m.value);
  // cost rule: an expensive pointwise value read by several kernels is computed once
  for (const n of nodes) {
    if (!isPointwiseNode(n) || mat.has(n.id)) continue;
    const readers = realConsumers(n.id, nodes, consumers);
    if (readers.length > 1 && expensive(n.id, nodes, mat)) {
      mat.add(n.id);
      decisions.push({ decision: 'materialized', nodes: [n.id], reason: `${readers.length} consumers (%${readers.join(', %')}) and recomputing ${n.op} would repeat transcendental work` });
    }
  }

  // ---- buffers ----
  const buffers: BufferInfo[] = [];
  const bufOf = new Map<number, number>();
  const layoutOf = new Map<number, { strides: readonly number[]; offset: number }>();
  const inputBuffers: number[] = [];
  const newBuffer = (node: GraphNode, kind: BufferInfo['kind'], size: number, data?: TypedArray) => {
    const b: BufferInfo = { id: buffers.length, dtype: node.meta.dtype, size, kind, node: node.id, data };
    buffers.push(b);
    bufOf.set(node.id, b.id);
    return b.id;
  };
  for (const n of nodes) {
    if (n.op === 'input') {
      inputBuffers.push(newBuffer(n, 'input', span(n.meta)));
      layoutOf.set(n.id, { strides: n.meta.strides, offset: n.meta.offset });
    } else if (n.op === 'constant') {
      newBuffer(n, 'constant', numel(n.meta.shape), (n.attrs as { data: TypedArray }).data);
      layoutOf.set(n.id, { strides: contiguousStrides(n.meta.shape), offset: 0 });
    } else if (mat.has(n.id)) {
      newBuffer(n, 'scratch', numel(n.meta.shape));
      layoutOf.set(n.id, { strides: contiguousStrides(n.meta.shape), offset: 0 });
    }
  }

  // ---- expressions ----
  let tmpId = 0;
  const producedAt = new Map<number, number>(); // step index that writes each materialized node's buffer
  for (const n of nodes) if (n.op === 'input' || n.op === 'constant') producedAt.set(n.id, -1);

  function exprOf(id: number, access: readonly Affine[], ctx: KernelCtx, stage: Stage): LExpr {
    const n = nodes[id]!;
    // a size-1 dim is always index 0: one canonical access, so equal reads compare equal
    const acc = canonical(access, n.meta.shape, ctx.nv);
    const local = ctx.local(id, acc, stage);
    if (local) return local;
    if (mat.has(id)) {
      const b = bufOf.get(id)!;
      if (ctx.writes.has(b)) {
        // written by this kernel but not available here (another index, or an earlier loop): recompute
        if (isPointwiseNode(n) || VIEWS.has(n.op)) return defineExpr(n, acc, ctx, stage);
        throw new CannotFuse(`%${id} is written by this kernel and read at another index`);
      }
      const at = producedAt.get(id);
      if (at === undefined || at >= ctx.seq) throw new CannotFuse(`%${id} is not computed before this kernel`);
      const l = layoutOf.get(id)!;
      return load(b, flatten(acc, l.strides, l.offset, ctx.nv), n.meta.dtype, stage, ctx);
    }
    return defineExpr(n, acc, ctx, stage);
  }

  /** The value of a view or pointwise node computed from its inputs (not loaded from its buffer). */
  function defineExpr(n: GraphNode, acc: readonly Affine[], ctx: KernelCtx, stage: Stage): LExpr {
    if (n.op === 'reshape') {
      // a reshape of a contiguous buffer is read by flat index
      const parent = nodes[n.inputs[0]!]!;
      const layout = mat.has(parent.id) ? layoutOf.get(parent.id)! : null;
      const at = producedAt.get(parent.id);
      const buf = bufOf.get(parent.id);
      if (layout && buf !== undefined && isContiguousLayout(parent.meta.shape, layout.strides) && !ctx.writes.has(buf) && at !== undefined && at < ctx.seq) {
        return load(buf, flatten(acc, contiguousStrides(n.meta.shape), layout.offset, ctx.nv), parent.meta.dtype, stage, ctx);
      }
    }
    if (VIEWS.has(n.op)) return exprOf(n.inputs[0]!, viewAccess(n, acc, ctx.nv), ctx, stage);
    if (isPointwiseNode(n)) return pointwiseExpr(n, acc, ctx, stage);
    throw new NeedMaterialize(n.id, `${n.op} is read by a kernel that cannot compute it`);
  }

  function viewAccess(n: GraphNode, acc: readonly Affine[], nv: number): Affine[] {
    const parent = nodes[n.inputs[0]!]!;
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
        out[a.dim as number] = scaleAdd(acc[a.dim as number]!, a.step as number, a.start as number);
        return out;
      }
      default: {
        // reshape of a value not read from a buffer (buffers take the flat path in defineExpr)
        const r = reshapeAccess(acc, parent.meta.shape, n.meta.shape, nv);
        if (!r && mat.has(parent.id)) throw new CannotFuse(`reshape of %${parent.id} before its buffer is written`);
        if (!r) throw new NeedMaterialize(parent.id, `reshape ${JSON.stringify(parent.meta.shape)} -> ${JSON.stringify(n.meta.shape)} merges dims of a value that is not in a buffer`);
        return r;
      }
    }
  }

  function load(buf: number, at: Affine, dtype: DType, stage: Stage, ctx: KernelCtx): LExpr {
    return intern(stage, `load:${buf}:${affKey(at)}`, { k: 'load', buf, at, dtype }, ctx, [at]);
  }

  /** Adds e as a statement of the right stage (memoized), returning a reference. */
  function intern(stage: Stage, key: string, e: LExpr, _ctx: KernelCtx, uses: readonly Affine[]): LExpr {
    let s = stage;
    // hoist to the outer stage when nothing depends on this stage's own loop vars
    while (s.outer && s.ownVars && uses.every((u) => s.ownVars!.every((v) => u.c[v] === 0)) && !dependsOnStage(e, s)) s = s.outer;
    const hit = s.memo.get(key) ?? stage.memo.get(key);
    if (hit) return hit;
    const id = tmpId++;
    s.stmts.push({ id, e });
    const ref: LExpr = { k: 'tmp', id };
    s.memo.set(key, ref);
    return ref;
  }

  function dependsOnStage(e: LExpr, s: Stage): boolean {
    return someLeaf(e, (x) => x.k === 'tmp' && s.stmts.some((st) => st.id === x.id));
  }

  function pointwiseExpr(n: GraphNode, acc: readonly Affine[], ctx: KernelCtx, stage: Stage): LExpr {
    const key = `n${n.id}@${accessKey(acc)}`;
    const hit = stage.memo.get(key) ?? stage.outer?.memo.get(key);
    if (hit) return hit;
    let e: LExpr;
    const uses: Affine[] = [...acc];
    if (n.op === 'full') {
      return { k: 'const', v: (n.attrs as { value: number }).value };
    } else if (n.op === 'cast') {
      e = { k: 'cast', a: exprOf(n.inputs[0]!, acc, ctx, stage), dtype: (n.attrs as { dtype: DType }).dtype };
    } else {
      const a = n.attrs as PointwiseAttrs;
      const args = a.operands.map((o) => {
        if ('scalar' in o) return { k: 'const', v: o.scalar } as LExpr;
        const input = nodes[n.inputs[o.input]!]!;
        return exprOf(input.id, broadcastAccess(acc, input.meta.shape, n.meta.shape, ctx.nv), ctx, stage);
      });
      if (a.op === 'identity' && args[0]!.k !== 'const') return args[0]!;
      e = { k: 'op', op: a.op as ScalarOp, a: args, dtype: a.dtype };
    }
    return intern(stage, key, e, ctx, uses);
  }

  // ---- kernels ----
  const steps: Step[] = [];
  interface Entry { kernel: LoopKernel; ctx: KernelCtx; stages: Record<string, Stage>; meta: Record<string, unknown> }
  let current: Entry | null = null;
  const entries: Entry[] = [];
  const open = (e: Entry): Entry => {
    steps.push({ kind: 'kernel', kernel: e.kernel });
    entries.push(e);
    current = e;
    return e;
  };
  const newStage = (outer?: Stage, ownVars?: number[]): Stage => ({ stmts: [], memo: new Map(), outer, ownVars });

  const snapshot = (cur: Entry) => {
    const st = Object.values(cur.stages).map((x) => ({ s: x, n: x.stmts.length, memo: new Map(x.memo) }));
    const k = cur.kernel;
    if (k.kind === 'group') throw new Error('kiln internal: groups are formed after scheduling');
    const lens = k.kind === 'row' ? [k.reductions.length, k.outerStores.length, k.rowStores.length] : [k.stores.length];
    const writes = new Set(cur.ctx.writes);
    const stored = new Map(storedValues.get(k) ?? []);
    const t = tmpId;
    return () => {
      for (const x of st) {
        x.s.stmts.length = x.n;
        x.s.memo.clear();
        for (const [a, b] of x.memo) x.s.memo.set(a, b);
      }
      if (k.kind === 'row') {
        k.reductions.length = lens[0]!;
        k.outerStores.length = lens[1]!;
        k.rowStores.length = lens[2]!;
      } else k.stores.length = lens[0]!;
      cur.ctx.writes.clear();
      writes.forEach((w) => cur.ctx.writes.add(w));
      storedValues.set(k, stored);
      tmpId = t;
    };
  };

  const flush = () => {
    current = null;
  };

  const storeTo = (n: GraphNode, at: Affine, value: LExpr, ctx: KernelCtx): Store => {
    const b = bufOf.get(n.id)!;
    ctx.writes.add(b);
    return { buf: b, at, value, dtype: n.meta.dtype, node: n.id };
  };

  let kernelCount = 0;
  const kname = (what: string) => `k${kernelCount++}_${what}`;

  function startPointwise(n: GraphNode): void {
    const nv = n.meta.shape.length;
    const body = newStage();
    const kernel: PointwiseKernel = { kind: 'pointwise', name: kname(n.op), shape: n.meta.shape, body: body.stmts, stores: [] };
    const ctx: KernelCtx = { nv, seq: steps.length, writes: new Set(), local: (id, acc, stage) => storedLocal(kernel, id, acc, stage) };
    open({ kernel, ctx, stages: { body }, meta: { shape: n.meta.shape } });
  }

  /** A value this kernel already computed at the same index, in this stage or the one around it. */
  const storedValues = new Map<LoopKernel, Map<string, { v: LExpr; stage: Stage }>>();
  function storedLocal(k: LoopKernel, id: number, acc: readonly Affine[], stage: Stage): LExpr | null {
    const hit = storedValues.get(k)?.get(`${id}@${accessKey(acc)}`);
    if (!hit || (hit.stage !== stage && hit.stage !== stage.outer)) return null;
    return hit.v;
  }
  function rememberStored(k: LoopKernel, id: number, acc: readonly Affine[], v: LExpr, stage: Stage): void {
    let m = storedValues.get(k);
    if (!m) storedValues.set(k, (m = new Map()));
    const nv = acc[0]?.c.length ?? 0;
    m.set(`${id}@${accessKey(canonical(acc, nodes[id]!.meta.shape, nv))}`, { v, stage });
  }

  function identityAccess(nv: number, dims: readonly number[]): Affine[] {
    return dims.map((v) => unit(nv, v));
  }

  function addPointwise(n: GraphNode): void {
    const tryIn = (current: Entry): boolean => {
      const undo = snapshot(current);
      try {
        const k = current.kernel;
        if (k.kind === 'pointwise') {
          if (!sameShape(k.shape, n.meta.shape)) return false;
          const acc = identityAccess(k.shape.length, k.shape.map((_, d) => d));
          const v = defineExpr(n, acc, current.ctx, current.stages.body!);
          k.stores.push(storeTo(n, flatten(acc, layoutOf.get(n.id)!.strides, 0, acc.length), v, current.ctx));
          rememberStored(k, n.id, acc, v, current.stages.body!);
          decisions.push({ decision: 'fused', nodes: [n.id], reason: `pointwise into ${k.name} (same shape, another output)` });
          return true;
        }
        if (k.kind === 'row') {
          const full = current.meta.full as number[];
          const dimsToVar = current.meta.dimsToVar as number[];
          const reduced = current.meta.reduced as number[];
          const nv = current.ctx.nv;
          let acc: Affine[] | null = null;
          let stage: Stage;
          let list: Store[];
          if (sameShape(n.meta.shape, full)) {
            acc = full.map((_, d) => unit(nv, dimsToVar[d]!));
            stage = current.stages.row!;
            list = k.rowStores;
          } else {
            const outerShapes = [full.filter((_, d) => !reduced.includes(d)), full.map((s, d) => (reduced.includes(d) ? 1 : s))];
            const keepdim = sameShape(n.meta.shape, outerShapes[1]!);
            if (!keepdim && !sameShape(n.meta.shape, outerShapes[0]!)) return false;
            const kept = full.map((_, d) => d).filter((d) => !reduced.includes(d));
            acc = keepdim ? full.map((_, d) => (reduced.includes(d) ? zero(nv) : unit(nv, dimsToVar[d]!))) : kept.map((d) => unit(nv, dimsToVar[d]!));
            stage = current.stages.outer!;
            list = k.outerStores;
          }
          const v = defineExpr(n, acc, current.ctx, stage);
          list.push(storeTo(n, flatten(acc, layoutOf.get(n.id)!.strides, 0, nv), v, current.ctx));
          rememberStored(k, n.id, acc, v, stage);
          decisions.push({ decision: 'fused', nodes: [n.id], reason: `epilogue of row kernel ${k.name}` });
          return true;
        }
        if (k.kind === 'matmul') {
          const shape = [...k.batch, k.m, k.n];
          if (!sameShape(shape, n.meta.shape)) return false;
          const acc = identityAccess(shape.length, shape.map((_, d) => d));
          const v = defineExpr(n, acc, current.ctx, current.stages.body!);
          k.stores.push(storeTo(n, flatten(acc, layoutOf.get(n.id)!.strides, 0, shape.length), v, current.ctx));
          rememberStored(k, n.id, acc, v, current.stages.body!);
          decisions.push({ decision: 'fused', nodes: [n.id], reason: `epilogue of matmul ${k.name}` });
          return true;
        }
        return false;
      } catch (e) {
        undo();
        if (e instanceof CannotFuse) {
          if (current === entries[entries.length - 1]) decisions.push({ decision: 'materialized', nodes: [n.id], reason: `not fused into ${current.kernel.name}: ${e.message}` });
          return false;
        }
        throw e;
      }
    };
    // the latest kernel first, then earlier ones (a backward matmul's epilogue often comes
    // after an unrelated kernel in graph order)
    const candidates = entries.slice(-8).reverse();
    const host = candidates.find((e) => tryIn(e));
    if (host) {
      producedAt.set(n.id, host.ctx.seq);
      return;
    }
    {
      flush();
      startPointwise(n);
      const k = current!.kernel as PointwiseKernel;
      const acc = identityAccess(k.shape.length, k.shape.map((_, d) => d));
      const v = defineExpr(n, acc, current!.ctx, current!.stages.body!);
      k.stores.push(storeTo(n, flatten(acc, layoutOf.get(n.id)!.strides, 0, acc.length), v, current!.ctx));
      rememberStored(k, n.id, acc, v, current!.stages.body!);
      producedAt.set(n.id, current!.ctx.seq);
    }
  }

  function addReduction(n: GraphNode): void {
    const x = nodes[n.inputs[0]!]!;
    const a = n.attrs as { dims: number[]; keepdim: boolean };
    const full = x.meta.shape;
    const reduced = a.dims.length ? a.dims : [];
    const fits = current?.kernel.kind === 'row' && sameShape(current.meta.full as number[], full) && JSON.stringify(current.meta.reduced) === JSON.stringify(reduced);
    const build = () => {
      const k = current!.kernel as RowKernel;
      const nv = current!.ctx.nv;
      const dimsToVar = current!.meta.dimsToVar as number[];
      const body = newStage();
      const acc = full.map((_, d) => unit(nv, dimsToVar[d]!));
      const value = exprOf(x.id, acc, current!.ctx, body);
      const rid = tmpId++;
      k.reductions.push({ id: rid, op: n.op as ReduceOp, body: body.stmts, value, node: n.id });
      (current!.meta.reds as Map<number, number>).set(n.id, rid);
      // the reduction's own buffer (dropped later if nobody reads it)
      const kept = full.map((_, d) => d).filter((d) => !reduced.includes(d));
      const outAcc = a.keepdim ? full.map((_, d) => (reduced.includes(d) ? zero(nv) : unit(nv, dimsToVar[d]!))) : kept.map((d) => unit(nv, dimsToVar[d]!));
      k.outerStores.push(storeTo(n, flatten(outAcc, layoutOf.get(n.id)!.strides, 0, nv), { k: 'red', id: rid }, current!.ctx));
    };
    if (fits) {
      const undo = snapshot(current!);
      try {
        build();
        const k = current!.kernel as RowKernel;
        const online = detectOnline(k, k.inner.reduce((x, y) => x * y, 1));
        decisions.push({ decision: 'fused', nodes: [n.id], reason: `${n.op} joins row kernel ${k.name} (same input shape and dims)${online ? `, in the same pass as the reduction before it (${online} formulation)` : ''}` });
        producedAt.set(n.id, current!.ctx.seq);
        return;
      } catch (e) {
        undo();
        if (!(e instanceof CannotFuse)) throw e;
      }
    }
    flush();
    const kept = full.map((_, d) => d).filter((d) => !reduced.includes(d));
    const dimsToVar = full.map((_, d) => (reduced.includes(d) ? kept.length + reduced.indexOf(d) : kept.indexOf(d)));
    const nv = full.length;
    const outerVars = kept.map((_, i) => i);
    const innerVars = reduced.map((_, i) => kept.length + i);
    const outer = newStage();
    const row = newStage(outer, innerVars);
    void outerVars;
    const kernel: RowKernel = {
      kind: 'row', name: kname(n.op), outer: kept.map((d) => full[d]!), inner: reduced.map((d) => full[d]!),
      reductions: [], outerBody: outer.stmts, outerStores: [], rowBody: row.stmts, rowStores: [],
    };
    const reds = new Map<number, number>();
    const ctx: KernelCtx = {
      nv, seq: steps.length, writes: new Set(),
      local: (id, acc, stage) => {
        const rid = reds.get(id);
        if (rid !== undefined) {
          const rn = nodes[id]!;
          const ra = rn.attrs as { dims: number[]; keepdim: boolean };
          const keptDims = full.map((_, d) => d).filter((d) => !ra.dims.includes(d));
          const want = ra.keepdim ? full.map((_, d) => (ra.dims.includes(d) ? null : full[d] === 1 ? zero(nv) : unit(nv, dimsToVar[d]!))) : keptDims.map((d) => (full[d] === 1 ? zero(nv) : unit(nv, dimsToVar[d]!)));
          if (want.length === acc.length && want.every((w, i) => w === null || sameAff(w, acc[i]!))) return { k: 'red', id: rid };
          throw new CannotFuse(`reduction %${id} read at another index`);
        }
        return storedLocal(kernel, id, acc, stage);
      },
    };
    open({ kernel, ctx, stages: { outer, row }, meta: { full, reduced, dimsToVar, reds } });
    build();
    producedAt.set(n.id, ctx.seq);
  }

  function operand(id: number, outBatch: readonly number[]): MatmulOperand {
    const n = nodes[id]!;
    const shape = n.meta.shape;
    const nvOwn = shape.length;
    const acc = identityAccess(nvOwn, shape.map((_, d) => d));
    // the operand resolves to a load of a buffer: find it
    const stage = newStage();
    const r = exprOf(id, acc, { nv: nvOwn, seq: steps.length, writes: new Set(), local: () => null }, stage);
    const loadStmt = stage.stmts.find((s) => r.k === 'tmp' && s.id === r.id);
    if (!loadStmt || loadStmt.e.k !== 'load') throw new NeedMaterialize(id, 'matmul operand is not a strided view of a buffer');
    const at = loadStmt.e.at;
    const lead = outBatch.length - (nvOwn - 2);
    const base: Affine = { c: outBatch.map((_, b) => (b - lead >= 0 && shape[b - lead] !== 1 ? at.c[b - lead]! : 0)), o: at.o };
    return { buf: loadStmt.e.buf, base, sRow: at.c[nvOwn - 2]!, sCol: at.c[nvOwn - 1]! };
  }

  function addMatmul(n: GraphNode): void {
    flush();
    const shape = n.meta.shape;
    const batch = shape.slice(0, -2);
    const nv = shape.length;
    const a = operand(n.inputs[0]!, batch);
    const b = operand(n.inputs[1]!, batch);
    const body = newStage();
    const kernel: MatmulKernel = {
      kind: 'matmul', name: kname('matmul'), dtype: n.meta.dtype, batch, m: shape[nv - 2]!, n: shape[nv - 1]!, k: nodes[n.inputs[0]!]!.meta.shape.at(-1)!,
      a, b, body: body.stmts, stores: [],
    };
    const ctx: KernelCtx = {
      nv, seq: steps.length, writes: new Set(),
      local: (id, acc, stage) => {
        if (id === n.id) {
          if (acc.every((x, d) => sameAff(x, shape[d] === 1 ? zero(nv) : unit(nv, d)))) return { k: 'acc' };
          throw new CannotFuse(`matmul %${id} read at another index`);
        }
        return storedLocal(kernel, id, acc, stage);
      },
    };
    open({ kernel, ctx, stages: { body }, meta: {} });
    const acc = identityAccess(nv, shape.map((_, d) => d));
    kernel.stores.push(storeTo(n, flatten(acc, layoutOf.get(n.id)!.strides, 0, nv), { k: 'acc' }, ctx));
    producedAt.set(n.id, ctx.seq);
  }

  function stridedView(id: number): BufferView {
    const n = nodes[id]!;
    const nv = n.meta.shape.length;
    const stage = newStage();
    const r = exprOf(id, identityAccess(nv, n.meta.shape.map((_, d) => d)), { nv, seq: steps.length, writes: new Set(), local: () => null }, stage);
    const s = stage.stmts.find((x) => r.k === 'tmp' && x.id === r.id);
    if (!s || s.e.k !== 'load') throw new NeedMaterialize(id, 'needs a buffer');
    return { buf: s.e.buf, shape: n.meta.shape, strides: s.e.at.c, offset: s.e.at.o, dtype: n.meta.dtype };
  }

  for (const n of nodes) {
    if (n.op === 'input' || n.op === 'constant') continue;
    if (!mat.has(n.id)) continue; // inlined where used, or a view
    if (REDUCTIONS.has(n.op)) addReduction(n);
    else if (n.op === 'matmul') addMatmul(n);
    else if (isPointwiseNode(n) || VIEWS.has(n.op)) addPointwise(n); // a materialized view is a copy
    else {
      flush();
      const inputs = n.inputs.map(stridedView);
      producedAt.set(n.id, steps.length);
      steps.push({ kind: 'opaque', node: n, inputs, out: { buf: bufOf.get(n.id)!, shape: n.meta.shape, strides: contiguousStrides(n.meta.shape), offset: 0, dtype: n.meta.dtype } });
      decisions.push({ decision: 'opaque', nodes: [n.id], reason: `${n.op} runs its eager kernel (no loop IR lowering)` });
    }
  }
  flush();

  // in-place writes: the kernel that computes the new value writes it straight into the
  // target (parameters, optimizer state) when that is safe; otherwise a final copy kernel
  for (const m of graph.mutations) {
    const target = nodes[m.target]!;
    if (writeInPlace(m.target, m.value)) {
      decisions.push({ decision: 'fused', nodes: [m.value, m.target], reason: `in-place update: %${m.value} is written straight into %${m.target}'s buffer` });
      continue;
    }
    const nv = target.meta.shape.length;
    const acc = identityAccess(nv, target.meta.shape.map((_, d) => d));
    const body = newStage();
    const kernel: PointwiseKernel = { kind: 'pointwise', name: kname('writeback'), shape: target.meta.shape, body: body.stmts, stores: [] };
    const ctx: KernelCtx = { nv, seq: steps.length, writes: new Set(), local: () => null };
    const v = exprOf(m.value, acc, ctx, body);
    const l = layoutOf.get(target.id)!;
    kernel.stores.push({ buf: bufOf.get(target.id)!, at: flatten(acc, l.strides, l.offset, nv), value: v, dtype: target.meta.dtype, node: target.id });
    steps.push({ kind: 'kernel', kernel });
  }

  const outputs = graph.outputs.map((o) => stridedView(o));
  return { steps, buffers, inputBuffers, outputs, decisions, nodeOps: nodes.map((n) => n.op) };

  function writeInPlace(targetId: number, valueId: number): boolean {
    const target = nodes[targetId]!;
    const bt = bufOf.get(targetId)!, bv = bufOf.get(valueId);
    const lt = layoutOf.get(targetId)!;
    if (bv === undefined || buffers[bv]!.kind !== 'scratch') return false;
    if (lt.offset !== 0 || !isContiguousLayout(target.meta.shape, lt.strides) || buffers[bv]!.dtype !== target.meta.dtype || buffers[bv]!.size !== numel(target.meta.shape)) return false;
    if (graph.outputs.some((o) => rootOf(o) === valueId) || graph.mutations.some((m) => m.target !== targetId && m.value === valueId)) return false;
    const at = steps.findIndex((st) => st.kind === 'kernel' && kernelStores(st.kernel).some((x) => x.buf === bv));
    if (at < 0) return false;
    const step = steps[at] as Extract<Step, { kind: 'kernel' }>;
    const k = step.kernel;
    const store = kernelStores(k).find((x) => x.buf === bv)!;
    if (kernelStores(k).some((x) => x.buf === bt)) return false;
    if (k.kind === 'matmul' && (k.a.buf === bt || k.b.buf === bt)) return false;
    if (!kernelLoadExprs(k).every((l) => l.buf !== bt || sameAff(l.at, store.at))) return false;
    for (let i = at + 1; i < steps.length; i++) {
      const st = steps[i]!;
      const reads = st.kind === 'kernel' ? kernelLoads(st.kernel) : new Set(st.inputs.map((v) => v.buf));
      if (reads.has(bt) || reads.has(bv)) return false;
    }
    (store as { buf: number }).buf = bt;
    return true;
  }

  function rootOf(id: number): number {
    let r = id;
    while (VIEWS.has(nodes[r]!.op)) r = nodes[r]!.inputs[0]!;
    return r;
  }
}

/** Expands temporaries into whole expression trees (for structural comparison). */
function expand(e: LExpr, defs: ReadonlyMap<number, LExpr>): LExpr {
  if (e.k === 'tmp') {
    const d = defs.get(e.id);
    return d ? expand(d, defs) : e;
  }
  if (e.k === 'op') return { ...e, a: e.a.map((x) => expand(x, defs)) };
  if (e.k === 'cast') return { ...e, a: expand(e.a, defs) };
  return e;
}

const exprText = (e: LExpr): string => JSON.stringify(e);

function usesRed(e: LExpr, id: number): boolean {
  return someLeaf(e, (x) => x.k === 'red' && x.id === id);
}

/**
 * Marks the last reduction of a row kernel as computed in the same pass as the one before
 * it when it is softmax's normalizer (sum of exp(v - max)) or a variance (sum of squared
 * deviations from sum/n) over the same values. Returns the formulation, or null.
 */
function detectOnline(k: RowKernel, n: number): string | null {
  const r2 = k.reductions[k.reductions.length - 1]!;
  const r1 = k.reductions[k.reductions.length - 2];
  if (!r1) return null;
  // independent of every reduction before it: the same loop (sibling reductions)
  const before = k.reductions.slice(0, -1);
  if (!before.some((r) => r2.body.some((st) => usesRed(st.e, r.id)) || usesRed(r2.value, r.id)) && r1.online?.kind !== 'softmax' && r1.online?.kind !== 'welford') {
    r2.online = { kind: 'sibling' };
    return 'sibling';
  }
  if (r1.online || r2.op !== 'sum') return null;
  const d1 = new Map(r1.body.map((x) => [x.id, x.e]));
  const d2 = new Map(r2.body.map((x) => [x.id, x.e]));
  const v = exprText(expand(r1.value, d1));
  const e = expand(r2.value, d2);
  if (r1.op === 'max' && e.k === 'op' && e.op === 'exp' && e.a[0]!.k === 'op' && e.a[0]!.op === 'sub') {
    const [a, g] = e.a[0]!.a as [LExpr, LExpr];
    if (exprText(a) === v && !usesRed(a, r1.id) && usesRed(g, r1.id)) {
      r2.online = { kind: 'softmax', shift: g };
      return 'online softmax';
    }
  }
  if (r1.op === 'sum' && e.k === 'op' && e.op === 'mul' && exprText(e.a[0]!) === exprText(e.a[1]!) && e.a[0]!.k === 'op' && e.a[0]!.op === 'sub') {
    const [a, mean] = e.a[0]!.a as [LExpr, LExpr];
    const isMean = mean.k === 'op' && mean.a[0]!.k === 'red' && mean.a[0]!.id === r1.id && mean.a[1]!.k === 'const' &&
      ((mean.op === 'mul' && Math.abs(mean.a[1]!.v * n - 1) < 1e-12) || (mean.op === 'div' && mean.a[1]!.v === n));
    if (exprText(a) === v && !usesRed(a, r1.id) && isMean) {
      r2.online = { kind: 'welford', n };
      return 'Welford';
    }
  }
  return null;
}

/** Elements a strided tensor reaches in its buffer (offset included). */
function span(m: { shape: readonly number[]; strides: readonly number[]; offset: number }): number {
  if (m.shape.some((s) => s === 0)) return 0;
  let last = m.offset;
  m.shape.forEach((s, d) => (last += (s - 1) * Math.abs(m.strides[d]!)));
  return last + 1;
}

function canonical(acc: readonly Affine[], shape: readonly number[], nv: number): readonly Affine[] {
  return shape.some((s, d) => s === 1 && !isZero(acc[d]!)) ? acc.map((a, d) => (shape[d] === 1 ? zero(nv) : a)) : acc;
}

function isZero(a: Affine): boolean {
  return a.o === 0 && a.c.every((c) => c === 0);
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function isContiguousLayout(shape: readonly number[], strides: readonly number[]): boolean {
  const cs = contiguousStrides(shape);
  return shape.every((s, d) => s === 1 || strides[d] === cs[d]);
}


function realConsumers(id: number, nodes: readonly GraphNode[], consumers: readonly number[][]): number[] {
  const out: number[] = [];
  const walk = (i: number) => {
    for (const c of consumers[i]!) {
      if (VIEWS.has(nodes[c]!.op)) walk(c);
      else out.push(c);
    }
  };
  walk(id);
  return [...new Set(out)];
}

function expensive(id: number, nodes: readonly GraphNode[], mat: Set<number>, depth = 0): boolean {
  const n = nodes[id]!;
  if (depth > 0 && mat.has(id)) return false;
  if (depth > 12) return true;
  const op = n.op === 'cast' || n.op === 'full' ? n.op : (n.attrs as PointwiseAttrs | undefined)?.op ?? n.op;
  if (EXPENSIVE.has(op)) return true;
  return n.inputs.some((i) => {
    const c = nodes[i]!;
    return (isPointwiseNode(c) || VIEWS.has(c.op)) && expensive(i, nodes, mat, depth + 1);
  });
}

/**
 * Horizontal fusion: runs of consecutive pointwise kernels become one kernel (the order of
 * their loops is kept, so dependencies between them still hold).
 */
export function groupHorizontally(l: Lowered): void {
  const out: Step[] = [];
  let run: PointwiseKernel[] = [];
  const flushRun = () => {
    if (run.length === 1) out.push({ kind: 'kernel', kernel: run[0]! });
    else if (run.length > 1) {
      const name = `${run[0]!.name}_group${run.length}`;
      out.push({ kind: 'kernel', kernel: { kind: 'group', name, parts: run } });
      l.decisions.push({ decision: 'fused', nodes: run.flatMap((k) => k.stores.map((st) => st.node)), reason: `horizontal: ${run.map((k) => k.name).join(', ')} launched as one kernel ${name}` });
    }
    run = [];
  };
  for (const s of l.steps) {
    if (s.kind === 'kernel' && s.kernel.kind === 'pointwise') run.push(s.kernel);
    else {
      flushRun();
      out.push(s);
    }
  }
  flushRun();
  l.steps.length = 0;
  l.steps.push(...out);
}

/** Scratch buffers nobody reads: their stores are dropped (a reduction or matmul value used only in registers). */
export function dropDeadStores(l: Lowered, keep: Set<number>): void {
  const read = new Set<number>(keep);
  for (const s of l.steps) {
    if (s.kind === 'kernel') kernelLoads(s.kernel).forEach((b) => read.add(b));
    else s.inputs.forEach((v) => read.add(v.buf));
  }
  for (const s of l.steps) {
    if (s.kind !== 'kernel') continue;
    const k = s.kernel;
    const dead = (st: Store) => l.buffers[st.buf]!.kind === 'scratch' && !read.has(st.buf);
    if (k.kind === 'group') continue; // formed after this pass
    if (k.kind === 'row') {
      const o = k.outerStores.filter((x) => !dead(x));
      const r = k.rowStores.filter((x) => !dead(x));
      k.outerStores.length = 0;
      k.outerStores.push(...o);
      k.rowStores.length = 0;
      k.rowStores.push(...r);
    } else {
      const st = k.stores.filter((x) => !dead(x));
      k.stores.length = 0;
      k.stores.push(...st);
    }
  }
  // kernels left with nothing to store are dead
  const live = l.steps.filter((s) => s.kind !== 'kernel' || kernelStores(s.kernel).length > 0);
  l.steps.length = 0;
  l.steps.push(...live);
}
