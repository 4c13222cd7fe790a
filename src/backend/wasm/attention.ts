// The wasm attention kernel (loop-ir.ts AttentionKernel, made by src/compiler/schedule/fuse-attention.ts):
// one query row at a time over [lo, hi) of the flattened (batch entry, row) pairs (threads split
// the rows). Per row, in the thread's scratch: the dot products with every key (f32x4 over the
// depth when q and k are contiguous there), the score statements on each (scale, mask; scalar),
// their max (f32.max propagates NaN, as eager's max), e = exp(s - g(max)) (f32x4 vexp, masked
// -inf lanes exactly 0; sums in double as eager's), o = sum e·v (f32x4 over the value width),
// then the epilogue with acc = o / l. softmax(s)·v as eager computes it (two passes over the
// row's scores, which stay in scratch), without the scores or probabilities reaching memory.

import type { Affine, AttentionKernel, LExpr, Stmt, Store } from '../../ir/loop-ir.js';
import { accessKey, Gen, VT } from './gen.js';
import { accessesOf, loops } from './loops.js';
import { Op, Simd, T, type ValType } from './opcodes.js';
import { vconst, vexp } from './vmath.js';
import type { Params } from './kernels.js';

const I32_DIV_U = 0x6e, I32_REM_U = 0x70;
/** pseudo-buffers: the row's scores, and its output accumulator (bases set by render.ts) */
export const SCORES = -2, OUT = -3;
/** a temporary id no kernel uses: the row's l (the softmax's sum) */
const L_ID = -100;
const roundUp16 = (n: number) => Math.ceil(n / 16) * 16;

/** Replaces `acc` by `by`. */
function subst(e: LExpr, by: LExpr): LExpr {
  if (e.k === 'acc') return by;
  if (e.k === 'op') return { ...e, a: e.a.map((x) => subst(x, by)) };
  if (e.k === 'cast') return { ...e, a: subst(e.a, by) };
  return e;
}

/** Per-thread scratch bytes of an attention kernel: the row's scores, then its output row. */
export function attentionScratch(k: AttentionKernel): { scores: number; total: number } {
  const sz = k.dtype === 'float32' ? 4 : 8;
  const scores = roundUp16(k.keys * sz);
  return { scores, total: scores + roundUp16(k.width * sz) };
}

export function renderAttention(g: Gen, k: AttentionKernel, p: Params & { scratch: number; out: number }, notes: string[]): number {
  const fb = g.fb;
  const f32 = k.dtype === 'float32', t = f32 ? 'f32' : 'f64', sz = f32 ? 4 : 8;
  const [LD, ST, MAX, SUB, MUL, ADD] = f32 ? [Op.f32Load, Op.f32Store, Op.f32Max, Op.f32Sub, Op.f32Mul, Op.f32Add] : [Op.f64Load, Op.f64Store, Op.f64Max, Op.f64Sub, Op.f64Mul, Op.f64Add];
  const al = f32 ? 2 : 3;
  const nb = k.batch.length, iVar = nb, jVar = nb + 1, nv = nb + 2;
  const q = k.query, kk = k.key, v = k.value;
  const { scores, total } = attentionScratch(k);
  const L = (ty: ValType = T.i32) => fb.local(ty);
  fb.get(p.scratch).i32(scores).op(Op.i32Add).set(p.out);
  const fr = L(), i = L(), te = L(), j = L(), d = L(), c = L(), qp = L(), kp = L(), sp = L(), vp = L(), op_ = L(), qRow = L(), kB = L(), vB = L();
  const bv = k.batch.map(() => L());
  const m = L(VT[t]), gsh = L(VT[t]), lRow = L(VT[t]), e = L(VT[t]), lsum = L(T.f64), acc = L(VT[t]);
  const vacc = L(T.v128), x4 = L(T.v128), s0 = L(T.v128), s1 = L(T.v128);
  const acc4 = [0, 1, 2, 3].map(() => L(T.v128));
  const s0Mask = L(T.v128);
  /** pushes o + sum over the batch vars (and i) of c[v] * v, as an i32 element index */
  const index = (a: Affine, withRow: boolean) => {
    fb.i32(a.o);
    a.c.forEach((cv, vi) => {
      if (cv === 0) return;
      if (vi < nb) fb.get(bv[vi]!);
      else if (vi === iVar && withRow) fb.get(i);
      else return;
      fb.i32(cv).op(Op.i32Mul, Op.i32Add);
    });
  };
  /** pointers of accesses at j (or c) = 0 of this row, into g.ptr */
  const rowPointers = (accs: ReturnType<typeof accessesOf>) => {
    g.ptr = new Map();
    for (const a of accs) {
      const ptr = L();
      g.address(a.buf, a.dtype, () => index(a.at, true));
      fb.set(ptr);
      g.ptr.set(accessKey(a), ptr);
    }
  };
  const unit = (vi: number): Affine => ({ c: Array.from({ length: nv }, (_, x) => (x === vi ? 1 : 0)), o: 0 });
  const vecDot = f32 && q.sCol === 1 && kk.sRow === 1 && k.depth >= 4;
  const vecPV = f32 && v.sCol === 1 && k.width >= 4;
  const d4 = k.depth - (k.depth % 4), w4 = k.width - (k.width % 4), n4 = k.keys - (k.keys % 4);

  fb.forLoop(fr, () => fb.get(p.lo), () => fb.get(p.hi), 1, () => {
    fb.get(fr).i32(k.rows).op(I32_REM_U).set(i);
    fb.get(fr).i32(k.rows).op(I32_DIV_U).set(te);
    for (let x = nb - 1; x >= 0; x--) {
      fb.get(te).i32(k.batch[x]!).op(I32_REM_U).set(bv[x]!);
      fb.get(te).i32(k.batch[x]!).op(I32_DIV_U).set(te);
    }
    g.address(q.buf, k.dtype, () => (index(q.base, false), fb.get(i).i32(q.sRow).op(Op.i32Mul, Op.i32Add)));
    fb.set(qRow);
    g.address(kk.buf, k.dtype, () => index(kk.base, false));
    fb.set(kB);
    g.address(v.buf, k.dtype, () => index(v.base, false));
    fb.set(vB);

    // 1. q·k for every key, into the scores: four keys at a time (one q load for four k loads)
    fb.get(p.scratch).set(sp);
    if (vecDot && n4 > 0) {
      fb.forLoop(j, () => fb.i32(0), () => fb.i32(n4), 4, () => {
        fb.get(qRow).set(qp);
        fb.get(kB).get(j).i32(kk.sCol * sz).op(Op.i32Mul, Op.i32Add).set(kp);
        for (const a of acc4) fb.v128(new Array(16).fill(0)).set(a);
        fb.forLoop(d, () => fb.i32(0), () => fb.i32(d4), 4, () => {
          fb.get(qp).simdMem(Simd.load, 2).set(x4);
          acc4.forEach((a, r) => fb.get(a).get(x4).get(kp).simdMem(Simd.load, 2, r * kk.sCol * sz).simd(Simd.f32x4Mul).simd(Simd.f32x4Add).set(a));
          fb.get(qp).i32(16).op(Op.i32Add).set(qp);
          fb.get(kp).i32(16).op(Op.i32Add).set(kp);
        });
        acc4.forEach((a, r) => {
          fb.get(a).lane(Simd.f32x4ExtractLane, 0).get(a).lane(Simd.f32x4ExtractLane, 1).op(Op.f32Add);
          fb.get(a).lane(Simd.f32x4ExtractLane, 2).get(a).lane(Simd.f32x4ExtractLane, 3).op(Op.f32Add, Op.f32Add).set(acc);
          // the rest of the depth
          if (d4 < k.depth) {
            fb.get(qRow).i32(d4 * 4).op(Op.i32Add).set(qp);
            fb.get(kB).get(j).i32(r).op(Op.i32Add).i32(kk.sCol * sz).op(Op.i32Mul, Op.i32Add).i32(d4 * 4).op(Op.i32Add).set(kp);
            fb.forLoop(d, () => fb.i32(d4), () => fb.i32(k.depth), 1, () => {
              fb.get(acc).get(qp).mem(LD, al).get(kp).mem(LD, al).op(MUL, ADD).set(acc);
              fb.get(qp).i32(4).op(Op.i32Add).set(qp);
              fb.get(kp).i32(4).op(Op.i32Add).set(kp);
            });
          }
          fb.get(sp).get(acc).mem(ST, al, r * sz);
        });
        fb.get(sp).i32(4 * sz).op(Op.i32Add).set(sp);
      });
    }
    fb.forLoop(j, () => fb.i32(vecDot ? n4 : 0), () => fb.i32(k.keys), 1, () => {
      fb.get(qRow).set(qp);
      fb.get(kB).get(j).i32(kk.sCol * sz).op(Op.i32Mul, Op.i32Add).set(kp);
      if (t === 'f32') fb.f32(0).set(acc);
      else fb.f64(0).set(acc);
      if (vecDot) {
        fb.v128(new Array(16).fill(0)).set(vacc);
        fb.forLoop(d, () => fb.i32(0), () => fb.i32(d4), 4, () => {
          fb.get(vacc).get(qp).simdMem(Simd.load, 2).get(kp).simdMem(Simd.load, 2).simd(Simd.f32x4Mul).simd(Simd.f32x4Add).set(vacc);
          fb.get(qp).i32(16).op(Op.i32Add).set(qp);
          fb.get(kp).i32(16).op(Op.i32Add).set(kp);
        });
        fb.get(vacc).lane(Simd.f32x4ExtractLane, 0).get(vacc).lane(Simd.f32x4ExtractLane, 1).op(Op.f32Add);
        fb.get(vacc).lane(Simd.f32x4ExtractLane, 2).get(vacc).lane(Simd.f32x4ExtractLane, 3).op(Op.f32Add, Op.f32Add).set(acc);
      }
      // the rest of the depth (all of it when not vectorized), one element a step
      fb.forLoop(d, () => fb.i32(vecDot ? d4 : 0), () => fb.i32(k.depth), 1, () => {
        fb.get(acc).get(qp).mem(LD, al).get(kp).mem(LD, al).op(MUL, ADD).set(acc);
        fb.get(qp).i32(q.sCol * sz).op(Op.i32Add).set(qp);
        fb.get(kp).i32(kk.sRow * sz).op(Op.i32Add).set(kp);
      });
      fb.get(sp).get(acc).mem(ST, al);
      fb.get(sp).i32(sz).op(Op.i32Add).set(sp);
    });

    // 2. the score statements on each (acc = the dot product), in place
    const dot: LExpr = { k: 'load', buf: SCORES, at: unit(jVar), dtype: k.dtype };
    const body: Stmt[] = k.score.body.map((s) => ({ id: s.id, e: subst(s.e, dot) }));
    const put: Store = { buf: SCORES, at: unit(jVar), value: subst(k.score.value, dot), dtype: k.dtype, node: -1 };
    const sAccs = accessesOf(body, [put]);
    rowPointers(sAccs);
    loops(g, [{ v: jVar, lo: () => fb.i32(0), hi: () => fb.i32(k.keys) }], sAccs, () => {
      g.stmts(body);
      g.store(put);
    });

    // 3. the max (NaN-propagating), and the shift of the softmax
    if (t === 'f32') fb.f32(-Infinity).set(m);
    else fb.f64(-Infinity).set(m);
    fb.get(p.scratch).set(sp);
    fb.forLoop(j, () => fb.i32(0), () => fb.i32(k.keys), 1, () => {
      fb.get(m).get(sp).mem(LD, al).op(MAX).set(m);
      fb.get(sp).i32(sz).op(Op.i32Add).set(sp);
    });
    g.red.set(k.maxId, { local: m, kind: t });
    g.emit(k.shift, t);
    fb.set(gsh);

    // 4. e = exp(s - g) in place, l = sum e in double
    fb.f64(0).set(lsum);
    fb.get(p.scratch).set(sp);
    if (f32) {
      const ve = vexp(g.mc);
      fb.v128(new Array(16).fill(0)).set(s0);
      fb.v128(new Array(16).fill(0)).set(s1);
      fb.forLoop(j, () => fb.i32(0), () => fb.i32(n4), 4, () => {
        // a -inf score (masked) is exactly 0, as exp(-inf); its lane computes exp(0) meanwhile
        // (vexp of -inf runs through subnormals, which x64 handles ~100x slower)
        fb.get(sp).simdMem(Simd.load, 2).get(gsh).simd(Simd.f32x4Splat).simd(Simd.f32x4Sub).tee(x4);
        vconst(fb, -Infinity).simd(Simd.f32x4Eq).set(s0Mask);
        fb.get(x4).get(s0Mask).simd(Simd.andnot);
        fb.call(ve);
        fb.get(s0Mask).simd(Simd.andnot).set(vacc);
        fb.get(sp).get(vacc).simdMem(Simd.store, 2);
        fb.get(s0).get(vacc).simd(Simd.f64x2PromoteLowF32x4).simd(Simd.f64x2Add).set(s0);
        fb.get(s1).get(vacc).get(vacc).simd(Simd.shuffle).op(8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7).simd(Simd.f64x2PromoteLowF32x4).simd(Simd.f64x2Add).set(s1);
        fb.get(sp).i32(16).op(Op.i32Add).set(sp);
      });
      fb.get(s0).get(s1).simd(Simd.f64x2Add).tee(s0).lane(Simd.f64x2ExtractLane, 0).get(s0).lane(Simd.f64x2ExtractLane, 1).op(Op.f64Add).set(lsum);
    }
    fb.forLoop(j, () => fb.i32(f32 ? n4 : 0), () => fb.i32(k.keys), 1, () => {
      fb.get(sp).get(sp).mem(LD, al).get(gsh).op(SUB);
      if (f32) fb.op(Op.f64PromoteF32);
      fb.call(g.mc.mathFn('exp'));
      if (f32) fb.op(Op.f32DemoteF64);
      fb.tee(e).mem(ST, al);
      fb.get(lsum).get(e);
      if (f32) fb.op(Op.f64PromoteF32);
      fb.op(Op.f64Add).set(lsum);
      fb.get(sp).i32(sz).op(Op.i32Add).set(sp);
    });

    // 5. o = sum e_j v_j
    fb.get(p.out).set(op_);
    fb.forLoop(c, () => fb.i32(0), () => fb.i32(k.width), 1, () => {
      fb.get(op_);
      if (f32) fb.f32(0);
      else fb.f64(0);
      fb.mem(ST, al);
      fb.get(op_).i32(sz).op(Op.i32Add).set(op_);
    });
    fb.get(p.scratch).set(sp);
    if (vecPV && n4 > 0) {
      // four keys at a time: o is loaded and stored once per four multiply-adds
      const e4 = [0, 1, 2, 3].map(() => L(T.v128));
      fb.forLoop(j, () => fb.i32(0), () => fb.i32(n4), 4, () => {
        e4.forEach((x, r) => fb.get(sp).simdMem(Simd.load32Splat, 2, r * 4).set(x));
        fb.get(vB).get(j).i32(v.sRow * sz).op(Op.i32Mul, Op.i32Add).set(vp);
        fb.get(p.out).set(op_);
        fb.forLoop(c, () => fb.i32(0), () => fb.i32(w4), 4, () => {
          fb.get(op_).get(op_).simdMem(Simd.load, 2);
          e4.forEach((x, r) => fb.get(x).get(vp).simdMem(Simd.load, 2, r * v.sRow * sz).simd(Simd.f32x4Mul).simd(Simd.f32x4Add));
          fb.simdMem(Simd.store, 2);
          fb.get(op_).i32(16).op(Op.i32Add).set(op_);
          fb.get(vp).i32(16).op(Op.i32Add).set(vp);
        });
        // the rest of the width, one element a step
        for (let r = 0; r < 4; r++) {
          fb.get(vB).get(j).i32(r).op(Op.i32Add).i32(v.sRow * sz).op(Op.i32Mul, Op.i32Add).i32(w4 * sz).op(Op.i32Add).set(vp);
          fb.get(p.out).i32(w4 * sz).op(Op.i32Add).set(op_);
          fb.get(e4[r]!).lane(Simd.f32x4ExtractLane, 0).set(e);
          fb.forLoop(c, () => fb.i32(w4), () => fb.i32(k.width), 1, () => {
            fb.get(op_).get(op_).mem(LD, al).get(e).get(vp).mem(LD, al).op(MUL, ADD).mem(ST, al);
            fb.get(op_).i32(sz).op(Op.i32Add).set(op_);
            fb.get(vp).i32(sz).op(Op.i32Add).set(vp);
          });
        }
        fb.get(sp).i32(16).op(Op.i32Add).set(sp);
      });
    }
    fb.forLoop(j, () => fb.i32(vecPV ? n4 : 0), () => fb.i32(k.keys), 1, () => {
      fb.get(sp).mem(LD, al).set(e);
      fb.get(vB).get(j).i32(v.sRow * sz).op(Op.i32Mul, Op.i32Add).set(vp);
      fb.get(p.out).set(op_);
      if (vecPV) {
        fb.get(e).simd(Simd.f32x4Splat).set(x4);
        fb.forLoop(c, () => fb.i32(0), () => fb.i32(w4), 4, () => {
          fb.get(op_).get(op_).simdMem(Simd.load, 2).get(x4).get(vp).simdMem(Simd.load, 2).simd(Simd.f32x4Mul).simd(Simd.f32x4Add).simdMem(Simd.store, 2);
          fb.get(op_).i32(16).op(Op.i32Add).set(op_);
          fb.get(vp).i32(16).op(Op.i32Add).set(vp);
        });
      }
      fb.forLoop(c, () => fb.i32(vecPV ? w4 : 0), () => fb.i32(k.width), 1, () => {
        fb.get(op_).get(op_).mem(LD, al).get(e).get(vp).mem(LD, al).op(MUL, ADD).mem(ST, al);
        fb.get(op_).i32(sz).op(Op.i32Add).set(op_);
        fb.get(vp).i32(v.sCol * sz).op(Op.i32Add).set(vp);
      });
      fb.get(sp).i32(sz).op(Op.i32Add).set(sp);
    });

    // 6. the epilogue with acc = o / l, over (batch..., i, c)
    fb.get(lsum);
    if (f32) fb.op(Op.f32DemoteF64);
    fb.set(lRow);
    g.tmp.set(L_ID, { local: lRow, kind: t });
    const o: LExpr = { k: 'op', op: 'div', a: [{ k: 'load', buf: OUT, at: unit(jVar), dtype: k.dtype }, { k: 'tmp', id: L_ID }], dtype: k.dtype };
    const epiBody: Stmt[] = k.body.map((s) => ({ id: s.id, e: subst(s.e, o) }));
    const epiStores: Store[] = k.stores.map((s) => ({ ...s, value: subst(s.value, o) }));
    const eAccs = accessesOf(epiBody, epiStores);
    rowPointers(eAccs);
    loops(g, [{ v: jVar, lo: () => fb.i32(0), hi: () => fb.i32(k.width) }], eAccs, () => {
      g.stmts(epiBody);
      for (const s of epiStores) g.store(s);
    });
    g.ptr = new Map();
  });
  notes.push(`${k.name}: attention [${k.batch.join(', ')}${k.batch.length ? ', ' : ''}${k.rows} x ${k.keys}], depth ${k.depth}, width ${k.width} ${k.dtype}: one query row at a time, q·k ${vecDot ? 'f32x4' : 'scalar'}, exp ${f32 ? 'f32x4' : 'scalar'}, p·v ${vecPV ? 'f32x4' : 'scalar'}, scores in ${total} bytes of scratch per thread`);
  return total;
}
