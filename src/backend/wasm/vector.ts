// The f32x4 expression renderer: float32 values four lanes at a time; comparisons give lane
// masks (all ones / zero) that `where` selects with and casts turn into 1.0 / 0.0. Anything
// else (float64 or int32 values, argmax, strided loads) throws NotVectorizable and the loop is
// rendered scalar. Transcendental ops without an f32x4 form run lane by lane on Math.*; a
// composite (ir/composites.ts) runs as its expansion in f32x4, or lane by lane in double (as the
// scalar code computes it) when one of its primitives has no f32x4 form.

import type { LExpr, Stmt } from '../../ir/loop-ir.js';
import type { ScalarOp } from '../../ir/scalar-expr.js';
import { COMPOSITE_OPS, expandLoop, isComposite, type CompositeOp, type PrimitiveOp } from '../../ir/composites.js';
import { Gen, NotVectorizable, type Kind } from './gen.js';
import { Op, Simd, T } from './opcodes.js';
import type { MathImport } from './module-context.js';
import { vconst, verf, vexp, vlog, vtanh } from './vmath.js';

type VK = 'f' | 'm';

const CMP: Partial<Record<PrimitiveOp, number>> = { eq: Simd.f32x4Eq, ne: Simd.f32x4Ne, lt: Simd.f32x4Lt, le: Simd.f32x4Le, gt: Simd.f32x4Gt, ge: Simd.f32x4Ge };
const UNARY: Partial<Record<PrimitiveOp, number>> = { neg: Simd.f32x4Neg, abs: Simd.f32x4Abs, sqrt: Simd.f32x4Sqrt, floor: Simd.f32x4Floor, ceil: Simd.f32x4Ceil, round: Simd.f32x4Nearest, trunc: Simd.f32x4Trunc };
const BINARY: Partial<Record<PrimitiveOp, number>> = { add: Simd.f32x4Add, sub: Simd.f32x4Sub, mul: Simd.f32x4Mul, div: Simd.f32x4Div, maximum: Simd.f32x4Max, minimum: Simd.f32x4Min };
const LANEWISE = new Set<PrimitiveOp>(['log1p', 'expm1', 'sin', 'cos', 'pow', 'tan', 'atan', 'asin', 'acos', 'sinh', 'cosh', 'log2', 'log10', 'atan2', 'fmod', 'hypot']);
const runsLaneWise = (e: LExpr): boolean => e.k === 'op' && ((LANEWISE as ReadonlySet<ScalarOp>).has(e.op) || e.a.some(runsLaneWise));
/** Composites with a primitive that runs lane by lane: the whole composite does. */
const LANEWISE_COMPOSITES: ReadonlySet<CompositeOp> = new Set(COMPOSITE_OPS.filter((op) => runsLaneWise(expandLoop(op, { k: 'const', v: 0 }, 'float32'))));

export class VecGen {
  constructor(readonly g: Gen) {}

  /** Splat of a scalar local (a tmp or reduction computed outside the vector loop). */
  private splat(local: number, kind: Kind): void {
    const fb = this.g.fb;
    if (kind === 'i32') throw new NotVectorizable('an int32 value in a float32 loop');
    fb.get(local);
    if (kind === 'f64') fb.op(Op.f32DemoteF64);
    if (kind === 'b') fb.op(Op.f32ConvertI32S);
    fb.simd(Simd.f32x4Splat);
  }

  value(e: LExpr): VK {
    const g = this.g, fb = g.fb;
    switch (e.k) {
      case 'load': {
        if (e.dtype !== 'float32') throw new NotVectorizable(`a ${e.dtype} load`);
        const c = e.at.c[g.vecVar] ?? 0;
        if (c !== 0 && c !== 1) throw new NotVectorizable('a strided load');
        fb.get(g.pointer(e));
        fb.simdMem(c === 1 ? Simd.load : Simd.load32Splat, c === 1 ? 2 : 2);
        return 'f';
      }
      case 'const':
        // a size used as a value (dynamic kernels): its local, converted and splat
        if (e.vSym && g.sizes) return g.num(e.v, e.vSym), fb.op(Op.f32ConvertI32S).simd(Simd.f32x4Splat), 'f';
        vconst(fb, e.v);
        return 'f';
      case 'tmp': case 'red': {
        const v = e.k === 'tmp' ? g.vtmp.get(e.id) : undefined;
        if (v) return fb.get(v.local), v.vk;
        const s = (e.k === 'tmp' ? g.tmp : g.red).get(e.id);
        if (!s) throw new Error(`kiln internal: wasm renderer: ${e.k} ${e.id} used before it is computed`);
        this.splat(s.local, s.kind);
        return 'f';
      }
      case 'acc': throw new Error('kiln internal: acc outside a matmul epilogue');
      case 'cast':
        if (e.dtype === 'float32') return this.f(e.a), 'f';
        if (e.dtype === 'bool') return this.m(e.a), 'm';
        throw new NotVectorizable(`a cast to ${e.dtype}`);
      case 'op': return this.op(e.op, e.dtype, e.a);
    }
  }

  /** Emits as float lanes (masks become 1.0 / 0.0). */
  f(e: LExpr): void {
    if (this.value(e) === 'm') {
      vconst(this.g.fb, 1);
      this.g.fb.simd(Simd.and);
    }
  }

  /** Emits as a truth mask (non-zero and NaN lanes are true). */
  m(e: LExpr): void {
    if (this.value(e) === 'f') {
      vconst(this.g.fb, 0);
      this.g.fb.simd(Simd.f32x4Ne);
    }
  }

  private op(op: ScalarOp, dtype: string, args: readonly LExpr[]): VK {
    const fb = this.g.fb;
    const [x, y, z] = args as [LExpr, LExpr | undefined, LExpr | undefined];
    if (isComposite(op)) return this.composite(op, dtype, x);
    const cmp = CMP[op];
    if (cmp) return this.f(x), this.f(y!), fb.simd(cmp), 'm';
    switch (op) {
      case 'logicalNot': this.m(x); fb.simd(Simd.not); return 'm';
      case 'logicalAnd': case 'logicalOr': case 'logicalXor':
        this.m(x);
        this.m(y!);
        fb.simd(op === 'logicalAnd' ? Simd.and : op === 'logicalOr' ? Simd.or : Simd.xor);
        return 'm';
      case 'isnan': { const l = fb.local(T.v128); this.f(x); fb.tee(l).get(l).simd(Simd.f32x4Ne); return 'm'; }
      case 'isinf': this.f(x); fb.simd(Simd.f32x4Abs); vconst(fb, Infinity); fb.simd(Simd.f32x4Eq); return 'm';
      case 'where':
        if (dtype === 'bool') return this.m(y!), this.m(z!), this.m(x), fb.simd(Simd.bitselect), 'm';
        if (dtype !== 'float32') throw new NotVectorizable(`a ${dtype} where`);
        this.f(y!);
        this.f(z!);
        this.m(x);
        fb.simd(Simd.bitselect);
        return 'f';
    }
    if (dtype !== 'float32') throw new NotVectorizable(`a ${dtype} ${op}`);
    const un = UNARY[op], bin = BINARY[op];
    if (un) return this.f(x), fb.simd(un), 'f';
    if (bin) return this.f(x), this.f(y!), fb.simd(bin), 'f';
    const mc = this.g.mc;
    const one = () => vconst(fb, 1);
    switch (op) {
      case 'identity': this.f(x); return 'f';
      case 'relu': this.f(x); vconst(fb, 0); fb.simd(Simd.f32x4Max); return 'f';
      case 'reciprocal': one(); this.f(x); fb.simd(Simd.f32x4Div); return 'f';
      case 'exp': this.f(x); fb.call(vexp(mc)); return 'f';
      case 'log': this.f(x); fb.call(vlog(mc)); return 'f';
      case 'tanh': this.f(x); fb.call(vtanh(mc)); return 'f';
      case 'erf': this.f(x); fb.call(verf(mc)); return 'f';
      case 'sign': {
        const l = fb.local(T.v128);
        this.f(x);
        fb.set(l);
        // x > 0 ? 1 : x < 0 ? -1 : 0 (torch: sign(NaN) = 0, sign(-0) = +0)
        one();
        vconst(fb, -1);
        vconst(fb, 0);
        fb.get(l);
        vconst(fb, 0);
        fb.simd(Simd.f32x4Lt).simd(Simd.bitselect).get(l);
        vconst(fb, 0);
        fb.simd(Simd.f32x4Gt).simd(Simd.bitselect);
        return 'f';
      }
    }
    if (LANEWISE.has(op)) return this.laneWise(op, x, y), 'f';
    throw new NotVectorizable(`no f32x4 form of ${op}`);
  }

  /** A composite: its expansion over its argument, held in a local; lane by lane if it must. */
  private composite(op: CompositeOp, dtype: string, x: LExpr): VK {
    if (dtype !== 'float32') throw new NotVectorizable(`a ${dtype} ${op}`);
    if (LANEWISE_COMPOSITES.has(op)) return this.laneWise(op, x, undefined), 'f';
    const g = this.g, l = g.fb.local(T.v128), id = g.bindId();
    this.f(x);
    g.fb.set(l);
    g.vtmp.set(id, { local: l, vk: 'f' });
    return this.value(expandLoop(op, { k: 'tmp', id }, 'float32'));
  }

  /** Each lane through the scalar double-precision code (Math.* imports). */
  private laneWise(op: PrimitiveOp | CompositeOp, x: LExpr, y: LExpr | undefined): void {
    const g = this.g, fb = g.fb;
    const a = fb.local(T.v128), b = fb.local(T.v128), r = fb.local(T.v128), s = fb.local(T.f64);
    this.f(x);
    fb.set(a);
    if (y) this.f(y), fb.set(b);
    vconst(fb, 0).set(r);
    for (let lane = 0; lane < 4; lane++) {
      fb.get(r);
      fb.get(a).lane(Simd.f32x4ExtractLane, lane).op(Op.f64PromoteF32);
      if (isComposite(op)) {
        fb.set(s);
        g.compositeF64(op, s);
      } else if (y) {
        fb.get(b).lane(Simd.f32x4ExtractLane, lane).op(Op.f64PromoteF32).call(g.mc.mathFn(op as MathImport));
      } else fb.call(g.mc.mathFn(op as MathImport));
      fb.op(Op.f32DemoteF64).lane(Simd.f32x4ReplaceLane, lane).set(r);
    }
    fb.get(r);
  }

  /** Vector statements into v128 locals. */
  stmts(body: readonly Stmt[]): void {
    for (const s of body) {
      const vk = this.value(s.e);
      const local = this.g.fb.local(T.v128);
      this.g.fb.set(local);
      this.g.vtmp.set(s.id, { local, vk });
    }
  }

  /** Stores four float32 lanes (`lanes`: a local with how many to store, or all four). */
  store(s: { buf: number; at: import('../../ir/loop-ir.js').Affine; dtype: string; value: LExpr }, lanes: number | null): void {
    const g = this.g, fb = g.fb;
    if (s.dtype !== 'float32') throw new NotVectorizable(`a ${s.dtype} store`);
    if ((s.at.c[g.vecVar] ?? 0) !== 1) throw new NotVectorizable('a store that is not contiguous');
    const p = g.pointer(s);
    if (lanes === null) {
      fb.get(p);
      this.f(s.value);
      fb.simdMem(Simd.store, 2);
      return;
    }
    const v = fb.local(T.v128);
    this.f(s.value);
    fb.set(v);
    // the last partial vector: one lane at a time (never past the buffer's end)
    for (let lane = 0; lane < 3; lane++) {
      fb.get(lanes).i32(lane).op(Op.i32GtS).if();
      fb.get(p).get(v).simdMem(Simd.store32Lane, 2, lane * 4).op(lane);
      fb.end();
    }
  }
}
