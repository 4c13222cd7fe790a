// Matmul kernels: the blocked algorithm of the JS and C engines in wasm. B is packed into
// panels of NR columns and A into slivers of MR rows (in the thread's scratch), an MR x NR
// register-blocked micro-kernel (f32x4 or f64x2 accumulators in locals) computes each tile,
// and the fused epilogue runs on each finished block (rows i0.., cols j0..) while it is in
// cache. Tiles honour `kernel.tiles` (max-autotune's candidates).

import type { DType } from '../../core/dtype.js';
import type { Affine, LExpr, MatmulKernel, Stmt, Store } from '../../compiler/loop-ir.js';
import { splitsBatch } from '../../compiler/loop-ir.js';
import { Gen, KIND, SIZE } from './gen.js';
import { accessesOf, loops, vectorSafe, type Dim } from './loops.js';
import { Op, Simd, T } from './opcodes.js';
import type { ModuleContext } from './module-context.js';
import { VecGen } from './vector.js';
import type { Params } from './kernels.js';

/** micro-kernel rows and columns (f32: 4 x 8 = eight f32x4 accumulators; f64: 4 x 4) */
export const MR = 4;
const nrOf = (f32: boolean) => (f32 ? 8 : 4);
const TILE_BYTES = 512;

export interface MatmulInfo {
  scratchBytes: number;
  auxBytes: number;
}

/** Replaces `acc` by a load of the accumulation target. */
function substAcc(e: LExpr, load: LExpr): LExpr {
  if (e.k === 'acc') return load;
  if (e.k === 'op') return { ...e, a: e.a.map((x) => substAcc(x, load)) };
  if (e.k === 'cast') return { ...e, a: substAcc(e.a, load) };
  return e;
}

/** The micro-kernel `(kc, pa, pb, c, rows, cols, first, tile)` for C strides scm, scn (elements). */
function micro(mc: ModuleContext, f32: boolean, scm: number, scn: number): number {
  const NR = nrOf(f32), NV = 2, sz = f32 ? 4 : 8;
  const add = f32 ? Simd.f32x4Add : Simd.f64x2Add, mul = f32 ? Simd.f32x4Mul : Simd.f64x2Mul;
  return mc.helper(`micro_${f32 ? 'f32' : 'f64'}_${scm}_${scn}`, { params: [T.i32, T.i32, T.i32, T.i32, T.i32, T.i32, T.i32, T.i32], results: [] }, (fb) => {
    const [kc, pa, pb, c, rows, cols, first, tile] = [0, 1, 2, 3, 4, 5, 6, 7];
    const acc = Array.from({ length: MR * NV }, () => fb.local(T.v128));
    const b = Array.from({ length: NV }, () => fb.local(T.v128));
    const a = fb.local(T.v128);
    const p = fb.local(T.i32);
    for (const x of acc) fb.v128(new Array(16).fill(0)).set(x);
    fb.forLoop(p, () => fb.i32(0), () => fb.get(kc), 1, () => {
      for (let v = 0; v < NV; v++) fb.get(pb).simdMem(Simd.load, 4, v * 16).set(b[v]!);
      for (let r = 0; r < MR; r++) {
        fb.get(pa).simdMem(f32 ? Simd.load32Splat : Simd.load64Splat, f32 ? 2 : 3, r * sz).set(a);
        for (let v = 0; v < NV; v++) fb.get(acc[r * NV + v]!).get(a).get(b[v]!).simd(mul).simd(add).set(acc[r * NV + v]!);
      }
      fb.get(pa).i32(MR * sz).op(Op.i32Add).set(pa);
      fb.get(pb).i32(NR * sz).op(Op.i32Add).set(pb);
    });
    const store = (r: number, v: number, onto: boolean) => {
      const off = r * scm * sz + v * 16;
      fb.get(c);
      if (onto) fb.get(c).simdMem(Simd.load, 2, off).get(acc[r * NV + v]!).simd(add);
      else fb.get(acc[r * NV + v]!);
      fb.simdMem(Simd.store, 2, off);
    };
    if (scn === 1 && scm >= 0) {
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
        fb.get(c).get(i).i32(scm * sz).op(Op.i32Mul, Op.i32Add).get(j).i32(scn * sz).op(Op.i32Mul, Op.i32Add).set(q);
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

const LOAD: Record<DType, number> = { float32: Op.f32Load, float64: Op.f64Load, int32: Op.i32Load, bool: Op.i32Load8U };

export function renderMatmul(g: Gen, k: MatmulKernel, p: Params & { scratch: number; aux: number }, dtypes: ReadonlyMap<number, DType>, notes: string[]): MatmulInfo {
  const fb = g.fb;
  const f32 = k.dtype === 'float32';
  const t = f32 ? 'f32' : 'f64';
  const sz = f32 ? 4 : 8;
  const NR = nrOf(f32);
  const nb = k.batch.length, iVar = nb, jVar = nb + 1;
  const identity = (st: Store) => st.value.k === 'acc';
  const raw = k.stores.find((st) => identity(st) && st.dtype === k.dtype) ?? k.stores.find((st) => st.dtype === k.dtype && st.at.c[iVar] !== 0 && st.at.c[jVar] !== 0);
  const total = k.batch.reduce((x, y) => x * y, 1);
  const rawAt: Affine = raw ? raw.at : { c: [...k.batch.map((_, b) => k.batch.slice(b + 1).reduce((x, y) => x * y, 1) * k.m * k.n), k.n, 1], o: 0 };
  const rawBuf = raw ? raw.buf : -1;
  const accLoad: LExpr = { k: 'load', buf: rawBuf, at: rawAt, dtype: k.dtype };
  const epiStores: Store[] = k.stores.filter((st) => !(raw && st === raw && identity(st))).map((st) => ({ ...st, value: substAcc(st.value, accLoad) }));
  const epiBody: Stmt[] = k.body.map((s) => ({ id: s.id, e: substAcc(s.e, accLoad) }));
  const hasEpi = epiBody.length > 0 || epiStores.length > 0;
  const tiles = k.tiles ?? { kc: 256, mc: 64, nc: 1024 };
  const KC = Math.max(1, Math.min(tiles.kc, k.k));
  const MC = Math.min(Math.max(MR, Math.floor(tiles.mc / MR) * MR), Math.ceil(k.m / MR) * MR);
  const NC = Math.min(Math.max(NR, Math.floor(tiles.nc / NR) * NR), Math.ceil(k.n / NR) * NR);
  const scm = rawAt.c[iVar]!, scn = rawAt.c[jVar]!;
  const dA = dtypes.get(k.a.buf) ?? k.dtype, dB = dtypes.get(k.b.buf) ?? k.dtype;
  const PA = TILE_BYTES, PB = PA + KC * MC * sz;
  const info: MatmulInfo = { scratchBytes: PB + KC * NC * sz, auxBytes: raw ? 0 : total * k.m * k.n * sz };
  const L = () => fb.local(T.i32);

  // the batch loops (the first over [lo, hi) when the batch is split)
  const splitBatch = splitsBatch(k);
  const bv = k.batch.map(() => L());
  const r0 = L(), rows = L();
  const elem = (a: Affine, at: Map<number, () => void>) => {
    fb.i32(a.o);
    a.c.forEach((c, v) => {
      if (c === 0) return;
      const val = at.get(v);
      if (val) val();
      else if (v < nb) fb.get(bv[v]!);
      else return;
      fb.i32(c).op(Op.i32Mul, Op.i32Add);
    });
  };
  const batchLoop = (d: number, inner: () => void): void => {
    if (d === nb) return inner();
    fb.forLoop(bv[d]!, () => (d === 0 && splitBatch ? fb.get(p.lo) : fb.i32(0)), () => (d === 0 && splitBatch ? fb.get(p.hi) : fb.i32(k.batch[d]!)), 1, () => batchLoop(d + 1, inner));
  };

  const epilogue = (i0: number, mc: number, j0: number, nc: number) => {
    const accs = accessesOf(epiBody, epiStores);
    g.ptr = new Map();
    const rowStart = () => fb.get(r0).get(i0).op(Op.i32Add);
    for (const a of accs) {
      const pl = L();
      g.address(a.buf, a.dtype, () => elem(a.at, new Map([[iVar, rowStart], [jVar, () => fb.get(j0)]])));
      fb.set(pl);
      g.ptr.set(`${a.buf}|${a.at.c.join(',')}+${a.at.o}`, pl);
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

  let epiVec = false;
  batchLoop(0, () => {
    if (splitBatch) fb.i32(0).set(r0).i32(k.m).set(rows);
    else fb.get(p.lo).set(r0).get(p.hi).get(p.lo).op(Op.i32Sub).set(rows);
    const cAddr = (i: () => void, j: () => void) => g.address(rawBuf, k.dtype, () => elem(rawAt, new Map([[iVar, i], [jVar, j]])));
    if (k.k === 0) {
      const i = L(), j = L();
      fb.forLoop(i, () => fb.i32(0), () => fb.get(rows), 1, () => fb.forLoop(j, () => fb.i32(0), () => fb.i32(k.n), 1, () => {
        cAddr(() => fb.get(r0).get(i).op(Op.i32Add), () => fb.get(j));
        if (f32) fb.f32(0).mem(Op.f32Store, 0);
        else fb.f64(0).mem(Op.f64Store, 0);
      }));
      if (hasEpi) {
        const z = L(), mcL = L(), ncL = L();
        fb.i32(0).set(z).get(rows).set(mcL).i32(k.n).set(ncL);
        epiVec = epilogue(z, mcL, z, ncL);
      }
      return;
    }
    const j0 = L(), k0 = L(), i0 = L(), jp = L(), ii = L(), kk = L(), x = L();
    const nc = L(), kc = L(), mc = L(), w = L(), h = L(), src = L(), dst = L(), first = L(), cols = L();
    const min = (a: () => void, b: () => void) => { a(); b(); a(); b(); fb.op(Op.i32LtS, Op.select); };
    const pa = () => fb.get(p.scratch).i32(PA).op(Op.i32Add);
    const pb = () => fb.get(p.scratch).i32(PB).op(Op.i32Add);
    const loadAs = (d: DType) => {
      fb.mem(LOAD[d], 0);
      g.convert(KIND[d], t);
    };
    const storeT = () => fb.mem(f32 ? Op.f32Store : Op.f64Store, 0);
    const zeroT = () => (f32 ? fb.f32(0) : fb.f64(0));
    const szA = SIZE[dA], szB = SIZE[dB];
    // j0 blocks
    fb.i32(0).set(j0);
    fb.block().loop();
    fb.get(j0).i32(k.n).op(Op.i32GeS).brIf(1);
    min(() => fb.i32(NC), () => fb.i32(k.n).get(j0).op(Op.i32Sub));
    fb.set(nc);
    fb.i32(0).set(k0);
    fb.block().loop();
    fb.get(k0).i32(k.k).op(Op.i32GeS).brIf(1);
    min(() => fb.i32(KC), () => fb.i32(k.k).get(k0).op(Op.i32Sub));
    fb.set(kc);
    fb.get(k0).op(Op.i32Eqz).set(first);
    // pack B: panels of NR columns, zero-padded
    fb.i32(0).set(jp);
    fb.block().loop();
    fb.get(jp).get(nc).op(Op.i32GeS).brIf(1);
    min(() => fb.i32(NR), () => fb.get(nc).get(jp).op(Op.i32Sub));
    fb.set(w);
    pb();
    fb.get(jp).get(kc).op(Op.i32Mul).i32(sz).op(Op.i32Mul, Op.i32Add).set(dst);
    g.address(k.b.buf, dB, () => {
      elem(k.b.base, new Map());
      fb.get(k0).i32(k.b.sRow).op(Op.i32Mul, Op.i32Add).get(j0).get(jp).op(Op.i32Add).i32(k.b.sCol).op(Op.i32Mul, Op.i32Add);
    });
    fb.set(src);
    fb.forLoop(kk, () => fb.i32(0), () => fb.get(kc), 1, () => {
      fb.forLoop(x, () => fb.i32(0), () => fb.get(w), 1, () => {
        fb.get(dst).get(x).i32(sz).op(Op.i32Mul, Op.i32Add);
        fb.get(src).get(x).i32(k.b.sCol * szB).op(Op.i32Mul, Op.i32Add);
        loadAs(dB);
        storeT();
      });
      fb.forLoop(x, () => fb.get(w), () => fb.i32(NR), 1, () => {
        fb.get(dst).get(x).i32(sz).op(Op.i32Mul, Op.i32Add);
        zeroT();
        storeT();
      });
      fb.get(dst).i32(NR * sz).op(Op.i32Add).set(dst);
      fb.get(src).i32(k.b.sRow * szB).op(Op.i32Add).set(src);
    });
    fb.get(jp).i32(NR).op(Op.i32Add).set(jp).br(0);
    fb.end().end();
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
      fb.get(r0).get(i0).op(Op.i32Add).get(ii).op(Op.i32Add).i32(k.a.sRow).op(Op.i32Mul, Op.i32Add).get(k0).i32(k.a.sCol).op(Op.i32Mul, Op.i32Add);
    });
    fb.set(src);
    fb.forLoop(kk, () => fb.i32(0), () => fb.get(kc), 1, () => {
      fb.forLoop(x, () => fb.i32(0), () => fb.get(h), 1, () => {
        fb.get(dst).get(x).i32(sz).op(Op.i32Mul, Op.i32Add);
        fb.get(src).get(x).i32(k.a.sRow * szA).op(Op.i32Mul, Op.i32Add);
        loadAs(dA);
        storeT();
      });
      fb.forLoop(x, () => fb.get(h), () => fb.i32(MR), 1, () => {
        fb.get(dst).get(x).i32(sz).op(Op.i32Mul, Op.i32Add);
        zeroT();
        storeT();
      });
      fb.get(dst).i32(MR * sz).op(Op.i32Add).set(dst);
      fb.get(src).i32(k.a.sCol * szA).op(Op.i32Add).set(src);
    });
    fb.get(ii).i32(MR).op(Op.i32Add).set(ii).br(0);
    fb.end().end();
    // tiles
    const mk = micro(g.mc, f32, scm, scn);
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
    pb();
    fb.get(jp).get(kc).op(Op.i32Mul).i32(sz).op(Op.i32Mul, Op.i32Add);
    cAddr(() => fb.get(r0).get(i0).op(Op.i32Add).get(ii).op(Op.i32Add), () => fb.get(j0).get(jp).op(Op.i32Add));
    min(() => fb.i32(MR), () => fb.get(mc).get(ii).op(Op.i32Sub));
    fb.get(cols).get(first).get(p.scratch).call(mk);
    fb.get(ii).i32(MR).op(Op.i32Add).set(ii).br(0);
    fb.end().end();
    fb.get(jp).i32(NR).op(Op.i32Add).set(jp).br(0);
    fb.end().end();
    if (hasEpi) {
      // the block is final after its last k step: run the epilogue on it
      fb.get(k0).get(kc).op(Op.i32Add).i32(k.k).op(Op.i32GeS).if();
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
  notes.push(`${k.name}: matmul ${k.batch.length ? `[${k.batch.join(', ')}] x ` : ''}${k.m}x${k.k} @ ${k.k}x${k.n} ${k.dtype}, ${MR}x${NR} ${f32 ? 'f32x4' : 'f64x2'} micro-kernel, blocks kc=${KC} mc=${MC} nc=${NC}${k.tiles ? ' (autotuned)' : ''}${hasEpi ? `, epilogue ${epiVec ? 'f32x4' : 'scalar'}` : ''}${raw ? '' : ', scratch accumulator'}`);
  return info;
}
