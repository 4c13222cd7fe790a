// Matmul kernels: the blocked algorithm of the JS and C engines in wasm. B is packed into
// panels of NR columns and A into slivers of MR rows (in the thread's scratch), an MR x NR
// register-blocked micro-kernel (f32x4 or f64x2 accumulators in locals) computes each tile,
// and the fused epilogue runs on each finished block (rows i0.., cols j0..) while it is in
// cache. Tiles honour `kernel.tiles` (max-autotune's candidates).

import type { DType } from '../../core/dtype.js';
import type { Affine, LExpr, MatmulKernel, Stmt, Store } from '../../ir/loop-ir.js';
import { splitsBatch } from '../../ir/loop-ir.js';
import { accessKey, Gen, KIND, SIZE } from './gen.js';
import { accessesOf, loops, vectorSafe, type Dim } from './loops.js';
import { Op, Simd, T, type ValType } from './opcodes.js';
import type { FuncBuilder } from './encoder.js';
import type { ModuleContext } from './module-context.js';
import { VecGen } from './vector.js';
import type { Params } from './kernels.js';
import { symConst, symIsConst, symMul, symScale, symToString, type Sym } from '../../ir/symbolic.js';

/** micro-kernel rows and columns (f32: 4 x 8 = eight f32x4 accumulators; f64: 4 x 4) */
export const MR = 4;
const nrOf = (f32: boolean) => (f32 ? 8 : 4);
const TILE_BYTES = 512;
/** i32.div_u (not in opcodes.ts's list; only the column split divides) */
const I32_DIV_U = 0x6e;

export interface MatmulInfo {
  scratchBytes: number;
  auxBytes: number;
  /** dynamic kernels: aux bytes at the call's sizes */
  auxSym?: Sym;
}

/** Replaces `acc` by a load of the accumulation target. */
function substAcc(e: LExpr, load: LExpr): LExpr {
  if (e.k === 'acc') return load;
  if (e.k === 'op') return { ...e, a: e.a.map((x) => substAcc(x, load)) };
  if (e.k === 'cast') return { ...e, a: substAcc(e.a, load) };
  return e;
}

/**
 * The micro-kernel `(kc, pa, pb, c, rows, cols, first, tile)` for C strides scm, scn (elements).
 * `dyn` (dynamic kernels whose C strides are sizes): the strides come as two more parameters,
 * in bytes, and row addresses are computed from them instead of constant offsets.
 */
function micro(mc: ModuleContext, f32: boolean, scm: number, scn: number, dyn = false): number {
  const NR = nrOf(f32), NV = 2, sz = f32 ? 4 : 8;
  const add = f32 ? Simd.f32x4Add : Simd.f64x2Add, mul = f32 ? Simd.f32x4Mul : Simd.f64x2Mul;
  const params = [T.i32, T.i32, T.i32, T.i32, T.i32, T.i32, T.i32, T.i32, ...(dyn ? [T.i32, T.i32] : [])];
  return mc.helper(`micro_${f32 ? 'f32' : 'f64'}_${dyn ? 'dyn' : `${scm}_${scn}`}`, { params, results: [] }, (fb) => {
    const [kc, pa, pb, c, rows, cols, first, tile, scmB, scnB] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    /** pushes a C stride in bytes */
    const stride = (sElems: number, local: number) => (dyn ? fb.get(local) : fb.i32(sElems * sz));
    const acc = Array.from({ length: MR * NV }, () => fb.local(T.v128));
    const b = Array.from({ length: NV }, () => fb.local(T.v128));
    const a = fb.local(T.v128);
    const p = fb.local(T.i32);
    for (const x of acc) fb.v128(new Array(16).fill(0)).set(x);
    // One k step per iteration: NV vectors of B, then each row's A element broadcast by
    // load*_splat (on x64 one vbroadcastss) into NV multiply-adds. Not unrolled: TurboFan
    // hoists every load of an unrolled body to its top, which needs more than x64's 16 xmm
    // registers and spills accumulators (measured 40 -> 25 GFLOP/s per thread); this way
    // the 2*MR accumulators, B and A stay in registers over the whole loop. kc >= 1.
    fb.get(kc).set(p);
    fb.loop();
    for (let v = 0; v < NV; v++) fb.get(pb).simdMem(Simd.load, 4, v * 16).set(b[v]!);
    for (let r = 0; r < MR; r++) {
      fb.get(pa).simdMem(f32 ? Simd.load32Splat : Simd.load64Splat, f32 ? 2 : 3, r * sz).set(a);
      for (let v = 0; v < NV; v++) fb.get(acc[r * NV + v]!).get(a).get(b[v]!).simd(mul).simd(add).set(acc[r * NV + v]!);
    }
    fb.get(pa).i32(MR * sz).op(Op.i32Add).set(pa);
    fb.get(pb).i32(NR * sz).op(Op.i32Add).set(pb);
    fb.get(p).i32(1).op(Op.i32Sub).tee(p).brIf(0);
    fb.end();
    // dynamic: the address of each row of the tile (constant offsets otherwise)
    const rowAt = dyn ? Array.from({ length: MR }, () => fb.local(T.i32)) : [];
    const store = (r: number, v: number, onto: boolean) => {
      const off = dyn ? v * 16 : r * scm * sz + v * 16;
      const at = dyn ? rowAt[r]! : c;
      fb.get(at);
      if (onto) fb.get(at).simdMem(Simd.load, 2, off).get(acc[r * NV + v]!).simd(add);
      else fb.get(acc[r * NV + v]!);
      fb.simdMem(Simd.store, 2, off);
    };
    if (scn === 1 && scm >= 0) {
      if (dyn) for (let r = 0; r < MR; r++) (r === 0 ? fb.get(c) : fb.get(rowAt[r - 1]!).get(scmB).op(Op.i32Add)).set(rowAt[r]!);
      // a full tile over contiguous rows of C: vector stores
      fb.get(rows).i32(MR).op(Op.i32Eq).get(cols).i32(NR).op(Op.i32Eq, Op.i32And).if();
      fb.get(first).if();
      for (let r = 0; r < MR; r++) for (let v = 0; v < NV; v++) store(r, v, false);
      fb.else();
      for (let r = 0; r < MR; r++) for (let v = 0; v < NV; v++) store(r, v, true);
      fb.end();
      fb.op(Op.return);
      fb.end();
    }
    // a partial tile (or strided C): through the tile buffer, element by element
    for (let r = 0; r < MR; r++) for (let v = 0; v < NV; v++) fb.get(tile).get(acc[r * NV + v]!).simdMem(Simd.store, 2, (r * NR) * sz + v * 16);
    const i = fb.local(T.i32), j = fb.local(T.i32), q = fb.local(T.i32);
    const [ld, st, fadd] = f32 ? [Op.f32Load, Op.f32Store, Op.f32Add] : [Op.f64Load, Op.f64Store, Op.f64Add];
    fb.forLoop(i, () => fb.i32(0), () => fb.get(rows), 1, () => {
      fb.forLoop(j, () => fb.i32(0), () => fb.get(cols), 1, () => {
        fb.get(c).get(i);
        stride(scm, scmB).op(Op.i32Mul, Op.i32Add).get(j);
        stride(scn, scnB).op(Op.i32Mul, Op.i32Add).set(q);
        fb.get(q);
        fb.get(tile).get(i).i32(NR * sz).op(Op.i32Mul, Op.i32Add).get(j).i32(sz).op(Op.i32Mul, Op.i32Add).mem(ld, 0);
        fb.get(first).op(Op.i32Eqz).if(f32 ? T.f32 : T.f64).get(q).mem(ld, 0).else();
        if (f32) fb.f32(0);
        else fb.f64(0);
        fb.end().op(fadd).mem(st, 0);
      });
    });
  });
}

/** i8x16.shuffle bytes picking 32-bit lanes (0-3 of the first operand, 4-7 of the second). */
const lanes32 = (...l: number[]) => l.flatMap((x) => [x * 4, x * 4 + 1, x * 4 + 2, x * 4 + 3]);

/** A packing stride: static (elements), or a dynamic kernel's size (pushes it in bytes). */
type PackStride = number | (() => void);

/**
 * Packs a full float32 panel of W (4 or 8) lanes by f32x4 loads and stores instead of element
 * by element: `kc` k steps from the byte address in `src` into `dst` (W floats per k step),
 * advancing both. Source strides in elements: `ls` between lanes, `ks` between k steps; the
 * one that is not 1 may be a dynamic size. Lanes contiguous (ls = 1: B as stored, A
 * transposed): W/4 vector copies per k step. k contiguous (ks = 1: A as stored, B = W^T of a
 * Linear): 4 k steps at a time, one vector per lane transposed 4x4 by shuffles, then the last
 * kc % 4 steps element by element. Returns false (emitting nothing) for other strides.
 */
function packVec(fb: FuncBuilder, W: number, ls: PackStride, ks: PackStride, kc: number, src: number, dst: number, kk: number): boolean {
  const L = (t: ValType) => fb.local(t);
  if (ls === 1) {
    fb.forLoop(kk, () => fb.i32(0), () => fb.get(kc), 1, () => {
      for (let v = 0; v < W / 4; v++) fb.get(dst).get(src).simdMem(Simd.load, 0, v * 16).simdMem(Simd.store, 4, v * 16);
      fb.get(dst).i32(W * 4).op(Op.i32Add).set(dst);
      fb.get(src);
      if (typeof ks === 'number') fb.i32(ks * 4);
      else ks();
      fb.op(Op.i32Add).set(src);
    });
    return true;
  }
  if (ks !== 1) return false;
  // a dynamic lane stride: each lane's byte offset from src, computed once
  const laneOff = typeof ls === 'number' ? null : Array.from({ length: W }, () => L(T.i32));
  if (laneOff && typeof ls !== 'number') {
    const lsB = laneOff[1]!;
    ls();
    fb.set(lsB);
    fb.i32(0).set(laneOff[0]!);
    for (let r = 2; r < W; r++) fb.get(laneOff[r - 1]!).get(lsB).op(Op.i32Add).set(laneOff[r]!);
  }
  /** pushes the address of lane r's element at src (with the constant offset the load adds) */
  const lane = (r: number): number => {
    if (!laneOff) return fb.get(src), r * (ls as number) * 4;
    fb.get(src).get(laneOff[r]!).op(Op.i32Add);
    return 0;
  };
  fb.get(kc).set(kk);
  const v = Array.from({ length: 4 }, () => L(T.v128));
  const t = Array.from({ length: 4 }, () => L(T.v128));
  const shuf = (x: number, y: number, l: number[]) => fb.get(x).get(y).simd(Simd.shuffle).op(...lanes32(...l));
  fb.block().loop();
  fb.get(kk).i32(4).op(Op.i32LtS).brIf(1);
  for (let g = 0; g < W / 4; g++) {
    for (let r = 0; r < 4; r++) {
      const off = lane(g * 4 + r);
      fb.simdMem(Simd.load, 0, off).set(v[r]!);
    }
    shuf(v[0]!, v[1]!, [0, 4, 1, 5]).set(t[0]!);
    shuf(v[2]!, v[3]!, [0, 4, 1, 5]).set(t[1]!);
    shuf(v[0]!, v[1]!, [2, 6, 3, 7]).set(t[2]!);
    shuf(v[2]!, v[3]!, [2, 6, 3, 7]).set(t[3]!);
    const rows: [number, number, number[]][] = [[t[0]!, t[1]!, [0, 1, 4, 5]], [t[0]!, t[1]!, [2, 3, 6, 7]], [t[2]!, t[3]!, [0, 1, 4, 5]], [t[2]!, t[3]!, [2, 3, 6, 7]]];
    rows.forEach(([x, y, l], k) => {
      fb.get(dst);
      shuf(x, y, l).simdMem(Simd.store, 4, k * W * 4 + g * 16);
    });
  }
  fb.get(dst).i32(4 * W * 4).op(Op.i32Add).set(dst);
  fb.get(src).i32(16).op(Op.i32Add).set(src);
  fb.get(kk).i32(4).op(Op.i32Sub).set(kk);
  fb.br(0);
  fb.end().end();
  // the last kc % 4 steps
  const x = L(T.i32);
  fb.block().loop();
  fb.get(kk).op(Op.i32Eqz).brIf(1);
  fb.forLoop(x, () => fb.i32(0), () => fb.i32(W), 1, () => {
    fb.get(dst).get(x).i32(4).op(Op.i32Mul, Op.i32Add);
    fb.get(src).get(x);
    if (laneOff) fb.get(laneOff[1]!);
    else fb.i32((ls as number) * 4);
    fb.op(Op.i32Mul, Op.i32Add).mem(Op.f32Load, 2, 0);
    fb.mem(Op.f32Store, 2, 0);
  });
  fb.get(dst).i32(W * 4).op(Op.i32Add).set(dst);
  fb.get(src).i32(4).op(Op.i32Add).set(src);
  fb.get(kk).i32(1).op(Op.i32Sub).set(kk);
  fb.br(0);
  fb.end().end();
  return true;
}

const LOAD: Record<DType, number> = { float32: Op.f32Load, float64: Op.f64Load, int32: Op.i32Load, bool: Op.i32Load8U };

/** Columns of a packed B panel of this dtype (the layout `prepackB` and the kernel share). */
export const panelColumns = (dtype: DType): number => nrOf(dtype === 'float32');

/**
 * Whether a matmul kernel takes its B prepacked (one more parameter after its buffers, `pk`:
 * the address of B packed in panels of NR columns over all of k, or 0 to pack per call): B is
 * one matrix (the same for every batch entry) in the kernel's float type, sizes static.
 */
export function prepackable(k: MatmulKernel, dtypes: ReadonlyMap<number, DType>): boolean {
  return !k.sizes && (k.dtype === 'float32' || k.dtype === 'float64') && (dtypes.get(k.b.buf) ?? k.dtype) === k.dtype && k.b.base.c.every((c) => c === 0) && k.k > 0;
}

export function renderMatmul(g: Gen, k: MatmulKernel, p: Params & { scratch: number; aux: number; pk?: number }, dtypes: ReadonlyMap<number, DType>, notes: string[]): MatmulInfo {
  const fb = g.fb;
  const f32 = k.dtype === 'float32';
  // integer matmuls accumulate in f64 (exact below 2^53) in the scratch accumulator, and the
  // epilogue stores them into C with typed-array conversion: C itself is never the accumulator
  const accT: DType = f32 ? 'float32' : 'float64';
  const t = f32 ? 'f32' : 'f64';
  const sz = f32 ? 4 : 8;
  const NR = nrOf(f32);
  const nb = k.batch.length, iVar = nb, jVar = nb + 1;
  const identity = (st: Store) => st.value.k === 'acc';
  const raw = k.stores.find((st) => identity(st) && st.dtype === accT) ?? k.stores.find((st) => st.dtype === accT && st.at.c[iVar] !== 0 && st.at.c[jVar] !== 0);
  const total = k.batch.reduce((x, y) => x * y, 1);
  // sizes as polynomials (constants for a static kernel): the scratch accumulator's layout
  const S = (x: number, s?: Sym | null): Sym => s ?? symConst(x);
  const bs = k.batch.map((b, i) => S(b, k.batchSym?.[i]));
  const mnSym = symMul(S(k.m, k.mSym), S(k.n, k.nSym));
  const prodSym = (xs: readonly Sym[]) => xs.reduce((x, y) => symMul(x, y), symConst(1));
  const dynSym = (x: Sym): Sym | null => (g.sizes && !symIsConst(x) ? x : null);
  const rawAt: Affine = raw ? raw.at : (() => {
    const cs = [...bs.map((_, b) => symMul(prodSym(bs.slice(b + 1)), mnSym)), S(k.n, k.nSym), symConst(1)];
    return { c: [...k.batch.map((_, b) => k.batch.slice(b + 1).reduce((x, y) => x * y, 1) * k.m * k.n), k.n, 1], o: 0, cSym: cs.map(dynSym) };
  })();
  const auxSym = raw ? null : dynSym(symScale(symMul(prodSym(bs), mnSym), f32 ? 4 : 8));
  /** pushes a number of the kernel (a size's local in dynamic kernels), for chaining */
  const N = (v: number, sym?: Sym | null, scale = 1) => (g.num(v, sym, scale), fb);
  const rawBuf = raw ? raw.buf : -1;
  const accLoad: LExpr = { k: 'load', buf: rawBuf, at: rawAt, dtype: accT };
  const epiStores: Store[] = k.stores.filter((st) => !(raw && st === raw && identity(st))).map((st) => ({ ...st, value: substAcc(st.value, accLoad) }));
  const epiBody: Stmt[] = k.body.map((s) => ({ id: s.id, e: substAcc(s.e, accLoad) }));
  const hasEpi = epiBody.length > 0 || epiStores.length > 0;
  const tiles = k.tiles ?? { kc: 256, mc: 64, nc: 1024 };
  // blocks never depend on a dynamic size (only clamped to a static one, saving scratch)
  const dk = !!(g.sizes && k.kSym), dm = !!(g.sizes && k.mSym), dn = !!(g.sizes && k.nSym);
  const KC = Math.max(1, dk ? tiles.kc : Math.min(tiles.kc, k.k));
  const MC = Math.min(Math.max(MR, Math.floor(tiles.mc / MR) * MR), dm ? Infinity : Math.ceil(k.m / MR) * MR);
  const NC = Math.min(Math.max(NR, Math.floor(tiles.nc / NR) * NR), dn ? Infinity : Math.ceil(k.n / NR) * NR);
  const scm = rawAt.c[iVar]!, scn = rawAt.c[jVar]!;
  const scmSym = g.sizes ? rawAt.cSym?.[iVar] ?? null : null, scnSym = g.sizes ? rawAt.cSym?.[jVar] ?? null : null;
  const dA = dtypes.get(k.a.buf) ?? k.dtype, dB = dtypes.get(k.b.buf) ?? k.dtype;
  const PA = TILE_BYTES, PB = PA + KC * MC * sz;
  const info: MatmulInfo = { scratchBytes: PB + KC * NC * sz, auxBytes: raw ? 0 : total * k.m * k.n * sz, auxSym: auxSym ?? undefined };
  const L = () => fb.local(T.i32);

  // the batch loops (the first over [lo, hi) when the batch is split)
  const splitBatch = splitsBatch(k);
  const bv = k.batch.map(() => L());
  const r0 = L(), rows = L();
  const elem = (a: Affine, at: Map<number, () => void>) => {
    g.num(a.o, a.oSym);
    a.c.forEach((c, v) => {
      if (c === 0) return;
      const val = at.get(v);
      if (val) val();
      else if (v < nb) fb.get(bv[v]!);
      else return;
      N(c, a.cSym?.[v]).op(Op.i32Mul, Op.i32Add);
    });
  };
  const batchLoop = (d: number, inner: () => void): void => {
    if (d === nb) return inner();
    fb.forLoop(bv[d]!, () => (d === 0 && splitBatch ? fb.get(p.lo) : fb.i32(0)), () => (d === 0 && splitBatch ? fb.get(p.hi) : N(k.batch[d]!, k.batchSym?.[d])), 1, () => batchLoop(d + 1, inner));
  };

  const epilogue = (i0: number, mc: number, j0: number, nc: number) => {
    const accs = accessesOf(epiBody, epiStores);
    g.ptr = new Map();
    const rowStart = () => fb.get(r0).get(i0).op(Op.i32Add);
    for (const a of accs) {
      const pl = L();
      g.address(a.buf, a.dtype, () => elem(a.at, new Map([[iVar, rowStart], [jVar, () => fb.get(j0)]])));
      fb.set(pl);
      g.ptr.set(accessKey(a), pl);
    }
    const dims: Dim[] = [
      { v: iVar, lo: rowStart, hi: () => { rowStart(); fb.get(mc).op(Op.i32Add); } },
      { v: jVar, lo: () => fb.get(j0), hi: () => fb.get(j0).get(nc).op(Op.i32Add) },
    ];
    const vg = new VecGen(g);
    const v = loops(g, dims, accs, () => {
      g.stmts(epiBody);
      for (const s of epiStores) g.store(s);
    }, vectorSafe(accs, epiStores) ? (lanes) => {
      vg.stmts(epiBody);
      for (const s of epiStores) vg.store(s, lanes);
    } : undefined);
    return v;
  };

  /**
   * Few rows and many columns (an MLP layer at batch 128, a decoder's projections): threads
   * split the columns, not the rows, so each packs only its share of B (packing B is the
   * bigger cost there, and a row split made every thread pack all of it). A dynamic m or n:
   * the kernel makes the same test at run time (`splitRt`), and the launch sizes its chunks
   * for it (dynamic.ts), so a dynamic kernel splits as the static one at every size.
   */
  const splitRt = !splitBatch && k.k > 0 && !!g.sizes && !!(k.mSym || k.nSym);
  const splitN = splitRt || (!splitBatch && k.k > 0 && k.m <= 512 && k.m < k.n && Math.ceil(k.n / NR) >= 8);
  const jLo = splitN ? L() : -1, jHi = splitN ? L() : -1;
  const min = (a: () => void, b: () => void) => { a(); b(); a(); b(); fb.op(Op.i32LtS, Op.select); };
  let epiVec = false;
  batchLoop(0, () => {
    if (splitBatch) fb.i32(0).set(r0), N(k.m, k.mSym).set(rows);
    else if (splitN) {
      const m = () => N(k.m, k.mSym), n = () => N(k.n, k.nSym);
      if (splitRt) {
        // the static test at these sizes: 0 < m <= 512, m < n, ceil(n / NR) >= 8
        m().i32(0).op(Op.i32GtS);
        m().i32(512).op(Op.i32LeS, Op.i32And);
        m();
        n().op(Op.i32LtS, Op.i32And);
        n().i32(7 * NR).op(Op.i32GtS, Op.i32And).if();
      }
      // [lo, hi) of the m rows stands for the same fraction of the column panels: all rows,
      // columns [jLo, jHi) (any partition of [0, m) maps to a partition of [0, n))
      fb.i32(0).set(r0);
      m().set(rows);
      const P = () => (k.nSym && g.sizes ? n().i32(NR - 1).op(Op.i32Add).i32(NR).op(I32_DIV_U) : fb.i32(Math.ceil(k.n / NR)));
      fb.get(p.lo);
      P().op(Op.i32Mul);
      m().op(I32_DIV_U).i32(NR).op(Op.i32Mul).set(jLo);
      min(n, () => {
        fb.get(p.hi);
        P().op(Op.i32Mul);
        m().op(I32_DIV_U).i32(NR).op(Op.i32Mul);
      });
      fb.set(jHi);
      if (splitRt) {
        // rows [lo, hi), every column
        fb.else().get(p.lo).set(r0).get(p.hi).get(p.lo).op(Op.i32Sub).set(rows);
        fb.i32(0).set(jLo);
        n().set(jHi);
        fb.end();
      }
    } else fb.get(p.lo).set(r0).get(p.hi).get(p.lo).op(Op.i32Sub).set(rows);
    const cAddr = (i: () => void, j: () => void) => g.address(rawBuf, accT, () => elem(rawAt, new Map([[iVar, i], [jVar, j]])));
    if (k.k === 0) {
      const i = L(), j = L();
      fb.forLoop(i, () => fb.i32(0), () => fb.get(rows), 1, () => fb.forLoop(j, () => fb.i32(0), () => N(k.n, k.nSym), 1, () => {
        cAddr(() => fb.get(r0).get(i).op(Op.i32Add), () => fb.get(j));
        if (f32) fb.f32(0).mem(Op.f32Store, 0);
        else fb.f64(0).mem(Op.f64Store, 0);
      }));
      if (hasEpi) {
        const z = L(), mcL = L(), ncL = L();
        fb.i32(0).set(z).get(rows).set(mcL);
        N(k.n, k.nSym).set(ncL);
        epiVec = epilogue(z, mcL, z, ncL);
      }
      return;
    }
    const j0 = L(), k0 = L(), i0 = L(), jp = L(), ii = L(), kk = L(), x = L();
    const nc = L(), kc = L(), mc = L(), w = L(), h = L(), src = L(), dst = L(), first = L(), cols = L();
    const pa = () => fb.get(p.scratch).i32(PA).op(Op.i32Add);
    const pb = () => fb.get(p.scratch).i32(PB).op(Op.i32Add);
    const loadAs = (d: DType) => {
      fb.mem(LOAD[d], 0);
      g.convert(KIND[d], t);
    };
    const storeT = () => fb.mem(f32 ? Op.f32Store : Op.f64Store, 0);
    const zeroT = () => (f32 ? fb.f32(0) : fb.f64(0));
    const szA = SIZE[dA], szB = SIZE[dB];
    /** a packing stride: static, or (dynamic kernels) a size pushed in bytes */
    const ps = (v: number, sym: Sym | undefined): PackStride => (g.sizes && sym ? () => g.num(v, sym, 4) : v);
    const rowS = (o: MatmulKernel['a']) => ps(o.sRow, o.sRowSym), colS = (o: MatmulKernel['a']) => ps(o.sCol, o.sColSym);
    /** f32x4 packing (packVec) of full panels: float32 data with one static stride of 1 */
    const vecPack = (o: MatmulKernel['a']) => f32 && (o === k.a ? dA : dB) === 'float32' && (rowS(o) === 1 || colS(o) === 1);
    // j0 blocks
    const nEnd = () => (splitN ? fb.get(jHi) : N(k.n, k.nSym));
    if (splitN) fb.get(jLo).set(j0);
    else fb.i32(0).set(j0);
    fb.block().loop();
    fb.get(j0);
    nEnd().op(Op.i32GeS).brIf(1);
    min(() => fb.i32(NC), () => nEnd().get(j0).op(Op.i32Sub));
    fb.set(nc);
    fb.i32(0).set(k0);
    fb.block().loop();
    fb.get(k0);
    N(k.k, k.kSym).op(Op.i32GeS).brIf(1);
    min(() => fb.i32(KC), () => N(k.k, k.kSym).get(k0).op(Op.i32Sub));
    fb.set(kc);
    fb.get(k0).op(Op.i32Eqz).set(first);
    // pack B: panels of NR columns, zero-padded (unless it came prepacked)
    if (p.pk !== undefined) fb.get(p.pk).op(Op.i32Eqz).if();
    fb.i32(0).set(jp);
    fb.block().loop();
    fb.get(jp).get(nc).op(Op.i32GeS).brIf(1);
    min(() => fb.i32(NR), () => fb.get(nc).get(jp).op(Op.i32Sub));
    fb.set(w);
    pb();
    fb.get(jp).get(kc).op(Op.i32Mul).i32(sz).op(Op.i32Mul, Op.i32Add).set(dst);
    g.address(k.b.buf, dB, () => {
      elem(k.b.base, new Map());
      fb.get(k0);
      N(k.b.sRow, k.b.sRowSym).op(Op.i32Mul, Op.i32Add).get(j0).get(jp).op(Op.i32Add);
      N(k.b.sCol, k.b.sColSym).op(Op.i32Mul, Op.i32Add);
    });
    fb.set(src);
    const vecB = vecPack(k.b);
    if (vecB) {
      fb.get(w).i32(NR).op(Op.i32Eq).if();
      packVec(fb, NR, colS(k.b), rowS(k.b), kc, src, dst, kk);
      fb.else();
    }
    fb.forLoop(kk, () => fb.i32(0), () => fb.get(kc), 1, () => {
      fb.forLoop(x, () => fb.i32(0), () => fb.get(w), 1, () => {
        fb.get(dst).get(x).i32(sz).op(Op.i32Mul, Op.i32Add);
        fb.get(src).get(x);
        N(k.b.sCol, k.b.sColSym, szB).op(Op.i32Mul, Op.i32Add);
        loadAs(dB);
        storeT();
      });
      fb.forLoop(x, () => fb.get(w), () => fb.i32(NR), 1, () => {
        fb.get(dst).get(x).i32(sz).op(Op.i32Mul, Op.i32Add);
        zeroT();
        storeT();
      });
      fb.get(dst).i32(NR * sz).op(Op.i32Add).set(dst);
      fb.get(src);
      N(k.b.sRow, k.b.sRowSym, szB).op(Op.i32Add).set(src);
    });
    if (vecB) fb.end();
    fb.get(jp).i32(NR).op(Op.i32Add).set(jp).br(0);
    fb.end().end();
    if (p.pk !== undefined) fb.end();
    // row blocks
    fb.i32(0).set(i0);
    fb.block().loop();
    fb.get(i0).get(rows).op(Op.i32GeS).brIf(1);
    min(() => fb.i32(MC), () => fb.get(rows).get(i0).op(Op.i32Sub));
    fb.set(mc);
    // pack A: slivers of MR rows, zero-padded
    fb.i32(0).set(ii);
    fb.block().loop();
    fb.get(ii).get(mc).op(Op.i32GeS).brIf(1);
    min(() => fb.i32(MR), () => fb.get(mc).get(ii).op(Op.i32Sub));
    fb.set(h);
    pa();
    fb.get(ii).get(kc).op(Op.i32Mul).i32(sz).op(Op.i32Mul, Op.i32Add).set(dst);
    g.address(k.a.buf, dA, () => {
      elem(k.a.base, new Map());
      fb.get(r0).get(i0).op(Op.i32Add).get(ii).op(Op.i32Add);
      N(k.a.sRow, k.a.sRowSym).op(Op.i32Mul, Op.i32Add).get(k0);
      N(k.a.sCol, k.a.sColSym).op(Op.i32Mul, Op.i32Add);
    });
    fb.set(src);
    const vecA = vecPack(k.a);
    if (vecA) {
      fb.get(h).i32(MR).op(Op.i32Eq).if();
      packVec(fb, MR, rowS(k.a), colS(k.a), kc, src, dst, kk);
      fb.else();
    }
    fb.forLoop(kk, () => fb.i32(0), () => fb.get(kc), 1, () => {
      fb.forLoop(x, () => fb.i32(0), () => fb.get(h), 1, () => {
        fb.get(dst).get(x).i32(sz).op(Op.i32Mul, Op.i32Add);
        fb.get(src).get(x);
        N(k.a.sRow, k.a.sRowSym, szA).op(Op.i32Mul, Op.i32Add);
        loadAs(dA);
        storeT();
      });
      fb.forLoop(x, () => fb.get(h), () => fb.i32(MR), 1, () => {
        fb.get(dst).get(x).i32(sz).op(Op.i32Mul, Op.i32Add);
        zeroT();
        storeT();
      });
      fb.get(dst).i32(MR * sz).op(Op.i32Add).set(dst);
      fb.get(src);
      N(k.a.sCol, k.a.sColSym, szA).op(Op.i32Add).set(src);
    });
    if (vecA) fb.end();
    fb.get(ii).i32(MR).op(Op.i32Add).set(ii).br(0);
    fb.end().end();
    // tiles
    const dynC = !!(scmSym || scnSym);
    const mk = micro(g.mc, f32, scm, scn, dynC);
    fb.i32(0).set(jp);
    fb.block().loop();
    fb.get(jp).get(nc).op(Op.i32GeS).brIf(1);
    min(() => fb.i32(NR), () => fb.get(nc).get(jp).op(Op.i32Sub));
    fb.set(cols);
    fb.i32(0).set(ii);
    fb.block().loop();
    fb.get(ii).get(mc).op(Op.i32GeS).brIf(1);
    fb.get(kc);
    pa();
    fb.get(ii).get(kc).op(Op.i32Mul).i32(sz).op(Op.i32Mul, Op.i32Add);
    if (p.pk !== undefined) {
      // prepacked: column panel (j0 + jp) / NR, its rows from k0 on
      fb.get(p.pk).if(T.i32);
      fb.get(p.pk).get(j0).get(jp).op(Op.i32Add).i32(k.k).op(Op.i32Mul).get(k0).i32(NR).op(Op.i32Mul, Op.i32Add).i32(sz).op(Op.i32Mul, Op.i32Add);
      fb.else();
    }
    pb();
    fb.get(jp).get(kc).op(Op.i32Mul).i32(sz).op(Op.i32Mul, Op.i32Add);
    if (p.pk !== undefined) fb.end();
    cAddr(() => fb.get(r0).get(i0).op(Op.i32Add).get(ii).op(Op.i32Add), () => fb.get(j0).get(jp).op(Op.i32Add));
    min(() => fb.i32(MR), () => fb.get(mc).get(ii).op(Op.i32Sub));
    fb.get(cols).get(first).get(p.scratch);
    if (dynC) N(scm, scmSym, sz), N(scn, scnSym, sz);
    fb.call(mk);
    fb.get(ii).i32(MR).op(Op.i32Add).set(ii).br(0);
    fb.end().end();
    fb.get(jp).i32(NR).op(Op.i32Add).set(jp).br(0);
    fb.end().end();
    if (hasEpi) {
      // the block is final after its last k step: run the epilogue on it
      fb.get(k0).get(kc).op(Op.i32Add);
      N(k.k, k.kSym).op(Op.i32GeS).if();
      epiVec = epilogue(i0, mc, j0, nc);
      fb.end();
    }
    fb.get(i0).i32(MC).op(Op.i32Add).set(i0).br(0);
    fb.end().end();
    fb.get(k0).get(kc).op(Op.i32Add).set(k0).br(0);
    fb.end().end();
    fb.get(j0).get(nc).op(Op.i32Add).set(j0).br(0);
    fb.end().end();
  });
  const one = (x: number, sym?: Sym) => (sym ? symToString(sym) : String(x));
  const [m, n, kk] = [one(k.m, k.mSym), one(k.n, k.nSym), one(k.k, k.kSym)];
  notes.push(`${k.name}: matmul ${k.batch.length ? `[${k.batch.map((b, i) => one(b, k.batchSym?.[i] ?? undefined)).join(', ')}] x ` : ''}${m}x${kk} @ ${kk}x${n} ${k.dtype}, ${MR}x${NR} ${f32 ? 'f32x4' : 'f64x2'} micro-kernel, blocks kc=${KC} mc=${MC} nc=${NC}${k.tiles ? ' (autotuned)' : ''}${hasEpi ? `, epilogue ${epiVec ? 'f32x4' : 'scalar'}` : ''}${raw ? '' : ', scratch accumulator'}${p.pk !== undefined ? ', B prepacked while its content is unchanged' : ''}${splitRt ? ', threads split columns when 0 < m <= 512, m < n' : splitN ? ', threads split columns' : ''}`);
  return info;
}
