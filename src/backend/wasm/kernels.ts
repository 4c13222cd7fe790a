// Pointwise, row-reduction and horizontal-group kernels as wasm function bodies (matmul is
// matmul.ts). Parameters: one base address per buffer, then lo, hi (the range of the split
// outer loop), then the thread's scratch and the kernel's aux addresses.

import type { PointwiseKernel, Reduction, RowKernel } from '../../ir/loop-ir.js';
import { dims as dimsText, sharedStmts, splitInvariant } from '../../ir/loop-ir.js';
import { Gen, KIND, NotVectorizable, VT, type Kind } from './gen.js';
import { accessesOf, constDim, loops, startPointers, vectorSafe, type Dim } from './loops.js';
import { Op, Simd, T } from './opcodes.js';
import { vconst } from './vmath.js';
import { VecGen } from './vector.js';

export interface Params {
  readonly lo: number;
  readonly hi: number;
}


export function renderPointwise(g: Gen, k: PointwiseKernel, p: Params, ranged: boolean, notes: string[]): void {
  const fb = g.fb;
  const { invariant, variant } = splitInvariant(k.body);
  const accs = accessesOf(k.body, k.stores);
  const saved = g.ptr;
  g.ptr = new Map();
  startPointers(g, accs, ranged && k.shape.length > 0 ? { v: 0, start: () => fb.get(p.lo) } : undefined);
  g.stmts(invariant);
  const dims: Dim[] = k.shape.map((s, d) => (d === 0 && ranged ? { v: 0, lo: () => fb.get(p.lo), hi: () => fb.get(p.hi) } : constDim(g, d, s, k.shapeSym?.[d])));
  const vg = new VecGen(g);
  const vec = vectorSafe(accs, k.stores) && k.shape.length > 0
    ? (lanes: number | null) => {
        vg.stmts(variant);
        for (const s of k.stores) vg.store(s, lanes);
      }
    : undefined;
  const v = loops(g, dims, accs, () => {
    g.stmts(variant);
    for (const s of k.stores) g.store(s);
  }, vec);
  notes.push(`${k.name}: pointwise [${dimsText(k.shape, k.shapeSym)}], inner loop ${v ? 'f32x4' : 'scalar'}`);
  g.ptr = saved;
}


interface RedState {
  readonly r: Reduction;
  /** scalar accumulator (sum/prod: f64; max/min: the value's float kind; arg*: the value) */
  readonly acc: number;
  readonly kind: Kind;
  /** argmax/argmin: index and count */
  readonly ai: number;
  readonly an: number;
  /** vector accumulators (sum: two f64x2; max/min: one f32x4) */
  readonly v0: number;
  readonly v1: number;
}

const IDENTITY: Record<string, number> = { sum: 0, prod: 1, max: -Infinity, min: Infinity, argmax: -Infinity, argmin: Infinity };

/** One loop over the row computing a reduction and its siblings; results in g.red. */
function renderReductionLoop(g: Gen, group: readonly Reduction[], all: readonly Reduction[], dims: readonly Dim[], notes: string[], name: string): void {
  const fb = g.fb;
  const shared = sharedStmts(group, all);
  const body = [...shared, ...group.flatMap((r) => r.body)];
  g.inferKinds(body);
  const accs = accessesOf(body, [], group.map((r) => r.value));
  const states: RedState[] = group.map((r) => {
    const vk = g.kindOf(r.value) ?? 'f64';
    const kind: Kind = r.op === 'sum' || r.op === 'prod' ? 'f64' : vk === 'f32' ? 'f32' : 'f64';
    const st: RedState = { r, acc: fb.local(VT[kind]), kind, ai: fb.local(T.i32), an: fb.local(T.i32), v0: fb.local(T.v128), v1: fb.local(T.v128) };
    g.constIn(IDENTITY[r.op]!, kind);
    fb.set(st.acc).i32(0).set(st.ai).i32(0).set(st.an);
    if (r.op === 'sum') fb.f64(0).simd(Simd.f64x2Splat).tee(st.v0).set(st.v1);
    else if (r.op === 'max' || r.op === 'min') vconst(fb, IDENTITY[r.op]!).set(st.v0);
    return st;
  });
  const scalar = () => {
    g.stmts(body);
    for (const s of states) accumulate(g, s);
  };
  const vg = new VecGen(g);
  const vector = (lanes: number | null) => {
    for (const s of states) {
      if (!['sum', 'max', 'min'].includes(s.r.op) || (s.r.op !== 'sum' && s.kind !== 'f32')) throw new NotVectorizable(`a ${s.r.op} reduction`);
    }
    vg.stmts(body);
    const mask = fb.local(T.v128);
    if (lanes !== null) {
      fb.get(lanes).simd(Simd.i32x4Splat).v128([0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]).simd(Simd.i32x4GtS).set(mask);
    }
    for (const s of states) {
      const x = fb.local(T.v128);
      vg.f(s.r.value);
      // lanes past the row's end hold the identity (bitselect takes its first operand where the mask is set)
      if (lanes !== null) {
        vconst(fb, IDENTITY[s.r.op]!);
        fb.get(mask).simd(Simd.bitselect);
      }
      fb.set(x);
      if (s.r.op === 'sum') {
        fb.get(s.v0).get(x).simd(Simd.f64x2PromoteLowF32x4).simd(Simd.f64x2Add).set(s.v0);
        fb.get(s.v1).get(x).get(x).simd(Simd.shuffle).op(8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15);
        fb.simd(Simd.f64x2PromoteLowF32x4).simd(Simd.f64x2Add).set(s.v1);
      } else fb.get(s.v0).get(x).simd(s.r.op === 'max' ? Simd.f32x4Max : Simd.f32x4Min).set(s.v0);
    }
  };
  const v = loops(g, dims, accs, scalar, vector);
  for (const s of states) {
    if (v) {
      if (s.r.op === 'sum') {
        fb.get(s.v0).get(s.v1).simd(Simd.f64x2Add).set(s.v0);
        fb.get(s.v0).lane(Simd.f64x2ExtractLane, 0).get(s.v0).lane(Simd.f64x2ExtractLane, 1).op(Op.f64Add).set(s.acc);
      } else {
        const mx = s.r.op === 'max' ? Op.f32Max : Op.f32Min;
        fb.get(s.v0).lane(Simd.f32x4ExtractLane, 0).get(s.v0).lane(Simd.f32x4ExtractLane, 1).op(mx);
        fb.get(s.v0).lane(Simd.f32x4ExtractLane, 2).get(s.v0).lane(Simd.f32x4ExtractLane, 3).op(mx, mx).set(s.acc);
      }
    }
    const arg = s.r.op === 'argmax' || s.r.op === 'argmin';
    g.red.set(s.r.id, arg ? { local: s.ai, kind: 'i32' } : { local: s.acc, kind: s.kind });
  }
  notes.push(`${name}: ${group.map((r) => r.op).join(' + ')} over the row, ${v ? 'f32x4' : 'scalar'}`);
}

function accumulate(g: Gen, s: RedState): void {
  const fb = g.fb;
  const { r, acc, kind } = s;
  if (r.op === 'sum' || r.op === 'prod') {
    fb.get(acc);
    g.emit(r.value, 'f64');
    fb.op(r.op === 'sum' ? Op.f64Add : Op.f64Mul).set(acc);
    return;
  }
  const f32 = kind === 'f32';
  if (r.op === 'max' || r.op === 'min') {
    fb.get(acc);
    g.emit(r.value, kind);
    fb.op(r.op === 'max' ? (f32 ? Op.f32Max : Op.f64Max) : f32 ? Op.f32Min : Op.f64Min).set(acc);
    return;
  }
  // argmax/argmin: the first extreme, or the first NaN (as the JS renderer)
  const x = fb.local(VT[kind]);
  g.emit(r.value, kind);
  fb.set(x);
  const [eq, ne, cmp] = f32 ? [Op.f32Eq, Op.f32Ne, r.op === 'argmax' ? Op.f32Gt : Op.f32Lt] : [Op.f64Eq, Op.f64Ne, r.op === 'argmax' ? Op.f64Gt : Op.f64Lt];
  fb.get(s.an).op(Op.i32Eqz);
  fb.get(acc).get(acc).op(eq);
  fb.get(x).get(acc).op(cmp).get(x).get(x).op(ne, Op.i32Or, Op.i32And, Op.i32Or);
  fb.if().get(x).set(acc).get(s.an).set(s.ai).end();
  fb.get(s.an).i32(1).op(Op.i32Add).set(s.an);
}

export function renderRow(g: Gen, k: RowKernel, p: Params, notes: string[]): void {
  const fb = g.fb;
  const no = k.outer.length;
  const allAccs = accessesOf([...k.reductions.flatMap((r) => r.body), ...k.outerBody, ...k.rowBody], [...k.outerStores, ...k.rowStores], k.reductions.map((r) => r.value));
  g.ptr = new Map();
  startPointers(g, allAccs, no > 0 ? { v: 0, start: () => fb.get(p.lo) } : undefined);
  const outerDims: Dim[] = k.outer.map((s, d) => (d === 0 ? { v: 0, lo: () => fb.get(p.lo), hi: () => fb.get(p.hi) } : constDim(g, d, s, k.outerSym?.[d])));
  const innerDims: Dim[] = k.inner.map((s, i) => constDim(g, no + i, s, k.innerSym?.[i]));
  loops(g, outerDims, allAccs, () => {
    for (let ri = 0; ri < k.reductions.length;) {
      const group = [k.reductions[ri]!];
      let j = ri + 1;
      for (; k.reductions[j]?.online?.kind === 'sibling'; j++) group.push(k.reductions[j]!);
      renderReductionLoop(g, group, k.reductions, innerDims, notes, k.name);
      ri = j;
    }
    g.stmts(k.outerBody);
    for (const s of k.outerStores) g.store(s);
    if (k.rowBody.length || k.rowStores.length) {
      const accs = accessesOf(k.rowBody, k.rowStores);
      const vg = new VecGen(g);
      const v = loops(g, innerDims, accs, () => {
        g.stmts(k.rowBody);
        for (const s of k.rowStores) g.store(s);
      }, vectorSafe(accs, k.rowStores) ? (lanes) => {
        vg.stmts(k.rowBody);
        for (const s of k.rowStores) vg.store(s, lanes);
      } : undefined);
      notes.push(`${k.name}: per-element epilogue of the row, ${v ? 'f32x4' : 'scalar'}`);
    }
  });
}

export { KIND };
