// Code generation state of one kernel function and the scalar expression renderer. Values
// have one of four kinds (float32 and float64 ops compute in f32 / f64 as eager kernels round
// each op, int32 and bool in i32). Semantics follow the JS and C renderers: NaN-propagating
// max/min/relu, round half to even, int32 arithmetic wraps, typed-array store conversions
// (ToInt32 for int32, its low byte for bool). Transcendental functions call the imported
// Math.* in double (vectorized loops use vmath.ts instead); composites (ir/composites.ts) are
// their expansions, in double.

import type { DType } from '../../core/dtype.js';
import type { Affine, LExpr, Stmt } from '../../ir/loop-ir.js';
import type { ScalarOp } from '../../ir/scalar-expr.js';
import { expandLoop, isComposite, type CompositeOp, type PrimitiveOp } from '../../ir/composites.js';
import { affKey } from '../../ir/affine.js';
import type { FuncBuilder } from './encoder.js';
import { Op, T, type ValType } from './opcodes.js';
import type { MathImport, ModuleContext } from './module-context.js';
import { toInt32 } from './vmath.js';
import type { SizeLocals } from './sizes.js';
import type { Sym } from '../../ir/symbolic.js';

export type Kind = 'f32' | 'f64' | 'i32' | 'b';
export const KIND: Record<DType, Kind> = { float32: 'f32', float64: 'f64', int32: 'i32', bool: 'b' };
export const VT: Record<Kind, ValType> = { f32: T.f32, f64: T.f64, i32: T.i32, b: T.i32 };
export const SIZE: Record<DType, number> = { float32: 4, float64: 8, int32: 4, bool: 1 };
const LOG2: Record<number, number> = { 1: 0, 4: 2, 8: 3 };

/** Thrown by the vector renderer for code it cannot vectorize (the loop is rendered scalar). */
export class NotVectorizable extends Error {}

export interface Access {
  /** a buffer of the program, or -1: the matmul's scratch accumulator */
  readonly buf: number;
  readonly at: Affine;
  readonly dtype: DType;
}
export const accessKey = (a: { buf: number; at: Affine }): string => `${a.buf}|${affKey(a.at)}`;

export interface Local {
  readonly local: number;
  readonly kind: Kind;
}

const CMP: Partial<Record<PrimitiveOp, Record<'f32' | 'f64' | 'i32', number>>> = {
  eq: { f32: Op.f32Eq, f64: Op.f64Eq, i32: Op.i32Eq },
  ne: { f32: Op.f32Ne, f64: Op.f64Ne, i32: Op.i32Ne },
  lt: { f32: Op.f32Lt, f64: Op.f64Lt, i32: Op.i32LtS },
  le: { f32: Op.f32Le, f64: Op.f64Le, i32: Op.i32LeS },
  gt: { f32: Op.f32Gt, f64: Op.f64Gt, i32: Op.i32GtS },
  ge: { f32: Op.f32Ge, f64: Op.f64Ge, i32: Op.i32GeS },
};
const F_UNARY: Partial<Record<PrimitiveOp, [number, number]>> = {
  neg: [Op.f32Neg, Op.f64Neg], abs: [Op.f32Abs, Op.f64Abs], sqrt: [Op.f32Sqrt, Op.f64Sqrt],
  floor: [Op.f32Floor, Op.f64Floor], ceil: [Op.f32Ceil, Op.f64Ceil], round: [Op.f32Nearest, Op.f64Nearest],
  trunc: [Op.f32Trunc, Op.f64Trunc],
};
const F_BINARY: Partial<Record<PrimitiveOp, [number, number]>> = {
  add: [Op.f32Add, Op.f64Add], sub: [Op.f32Sub, Op.f64Sub], mul: [Op.f32Mul, Op.f64Mul], div: [Op.f32Div, Op.f64Div],
  maximum: [Op.f32Max, Op.f64Max], minimum: [Op.f32Min, Op.f64Min],
};
const IMPORTED = new Set<PrimitiveOp>(['exp', 'log', 'log1p', 'expm1', 'sin', 'cos', 'tanh', 'erf', 'tan', 'atan', 'asin', 'acos', 'sinh', 'cosh', 'log2', 'log10']);
const IMPORTED_BINARY = new Set<PrimitiveOp>(['pow', 'atan2', 'fmod', 'hypot']);
const INT_OPS = new Set<ScalarOp>(['neg', 'abs', 'add', 'sub', 'mul', 'pow', 'relu', 'sign', 'maximum', 'minimum', 'floor', 'ceil', 'round', 'trunc', 'fmod', 'identity']);
const BOOL_OPS = new Set<ScalarOp>(['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'logicalNot', 'logicalAnd', 'logicalOr', 'logicalXor', 'isnan', 'isinf']);

export class Gen {
  /** byte address of each access at the current loop position */
  ptr = new Map<string, number>();
  readonly tmp = new Map<number, Local>();
  readonly red = new Map<number, Local>();
  /** vector temporaries of the loop being vectorized */
  vtmp = new Map<number, { local: number; vk: 'f' | 'm' }>();
  /** kinds of statements not rendered yet (inferred ahead, see inferKinds) */
  private readonly kinds = new Map<number, Kind>();
  /** the loop variable being vectorized (-1: scalar code) */
  vecVar = -1;
  /** dynamic kernels: the sizes read at entry (null: a static kernel, every number a constant) */
  sizes: SizeLocals | null = null;
  /** the last id of a temporary holding a composite's argument (below any statement's and attention's) */
  private bound = -1000;

  constructor(
    readonly mc: ModuleContext,
    readonly fb: FuncBuilder,
    /** local holding each buffer's base address (-1: the aux scratch) */
    readonly base: ReadonlyMap<number, number>,
  ) {}

  /** Pushes a number of the kernel (times `scale`) as an i32: a constant, or a size's local. */
  num(v: number, s?: Sym | null, scale = 1): void {
    if (s && this.sizes) this.sizes.push(v, s, scale);
    else this.fb.i32(v * scale);
  }

  /** Pushes the byte address of `base[buf] + elem * size` (elem an i32 on the stack already pushed by `elem`). */
  address(buf: number, dtype: DType, elem: () => void): void {
    this.fb.get(this.base.get(buf)!);
    elem();
    const s = LOG2[SIZE[dtype]]!;
    if (s) this.fb.i32(s).op(Op.i32Shl);
    this.fb.op(Op.i32Add);
  }

  pointer(a: { buf: number; at: Affine }): number {
    const p = this.ptr.get(accessKey(a));
    if (p === undefined) throw new Error(`kiln internal: wasm renderer has no pointer for buf${a.buf}[${affKey(a.at)}]`);
    return p;
  }

  kindOf(e: LExpr): Kind | null {
    switch (e.k) {
      case 'load': return KIND[e.dtype];
      case 'const': return null;
      case 'tmp': return this.tmp.get(e.id)?.kind ?? this.kinds.get(e.id) ?? 'f64';
      case 'red': return this.red.get(e.id)?.kind ?? 'f64';
      case 'acc': throw new Error('kiln internal: acc outside a matmul epilogue');
      case 'cast': return KIND[e.dtype];
      case 'op':
        if (BOOL_OPS.has(e.op)) return 'b';
        if (e.op === 'where') return KIND[e.dtype];
        if (e.dtype === 'float32' || e.dtype === 'float64') return KIND[e.dtype];
        return INT_OPS.has(e.op) ? KIND[e.dtype] : 'f64';
    }
  }

  /** Emits `e` converted to kind `want`. */
  emit(e: LExpr, want: Kind): void {
    if (e.k === 'const' && !(e.vSym && this.sizes)) return this.constIn(e.v, want);
    this.convert(this.value(e), want);
  }

  constIn(v: number, k: Kind): void {
    if (k === 'f32') this.fb.f32(v);
    else if (k === 'f64') this.fb.f64(v);
    else this.fb.i32(v | 0);
  }

  convert(from: Kind, to: Kind): void {
    const fb = this.fb;
    if (from === to || (from !== 'f32' && from !== 'f64' && to !== 'f32' && to !== 'f64')) return;
    if (to === 'f64') fb.op(from === 'f32' ? Op.f64PromoteF32 : Op.f64ConvertI32S);
    else if (to === 'f32') fb.op(from === 'f64' ? Op.f32DemoteF64 : Op.f32ConvertI32S);
    else {
      if (from === 'f32') fb.op(Op.f64PromoteF32);
      fb.call(toInt32(this.mc));
    }
  }

  /** Emits `e` in its own kind (constants as f64). */
  value(e: LExpr): Kind {
    const fb = this.fb;
    switch (e.k) {
      case 'load': {
        fb.get(this.pointer(e));
        const d = e.dtype;
        fb.mem(d === 'float32' ? Op.f32Load : d === 'float64' ? Op.f64Load : d === 'int32' ? Op.i32Load : Op.i32Load8U, 0);
        return KIND[d];
      }
      case 'const':
        // a size used as a value (dynamic kernels): its i32 local, in double as constants are
        if (e.vSym && this.sizes) return this.num(e.v, e.vSym), fb.op(Op.f64ConvertI32S), 'f64';
        fb.f64(e.v);
        return 'f64';
      case 'tmp': case 'red': {
        const l = (e.k === 'tmp' ? this.tmp : this.red).get(e.id);
        if (!l) throw new Error(`kiln internal: wasm renderer: ${e.k} ${e.id} used before it is computed`);
        fb.get(l.local);
        return l.kind;
      }
      case 'acc': throw new Error('kiln internal: acc outside a matmul epilogue');
      case 'cast':
        if (e.dtype === 'bool') return this.truth(e.a), 'b';
        this.emit(e.a, KIND[e.dtype]);
        return KIND[e.dtype];
      case 'op': return this.op(e.op, e.dtype, e.a);
    }
  }

  /** Pushes 1 where the value is non-zero (NaN counts as true, as in JS). */
  truth(x: LExpr): void {
    const fb = this.fb;
    if (x.k === 'const' && !(x.vSym && this.sizes)) return void fb.i32(x.v !== 0 ? 1 : 0);
    const k = this.value(x);
    if (k === 'f32') fb.f32(0).op(Op.f32Ne);
    else if (k === 'f64') fb.f64(0).op(Op.f64Ne);
    else fb.i32(0).op(Op.i32Ne);
  }

  private common(a: LExpr, b: LExpr): 'f32' | 'f64' | 'i32' {
    const ks = [this.kindOf(a), this.kindOf(b)];
    if (ks.includes('f64') || ks.every((k) => k === null)) return 'f64';
    // float32 against an int compares exactly in double, as JS does
    if (ks.includes('f32')) return ks.includes('i32') ? 'f64' : 'f32';
    return 'i32';
  }

  private op(op: ScalarOp, dtype: DType, args: readonly LExpr[]): Kind {
    const fb = this.fb;
    const [x, y, z] = args as [LExpr, LExpr | undefined, LExpr | undefined];
    if (isComposite(op)) {
      const l = fb.local(T.f64);
      this.emit(x, 'f64');
      fb.set(l);
      this.compositeF64(op, l);
      const t = dtype === 'float32' ? 'f32' : 'f64';
      this.convert('f64', t);
      return t;
    }
    const cmp = CMP[op];
    if (cmp) {
      const k = this.common(x, y!);
      this.emit(x, k);
      this.emit(y!, k);
      fb.op(cmp[k]);
      return 'b';
    }
    switch (op) {
      case 'logicalNot': this.truth(x); fb.op(Op.i32Eqz); return 'b';
      case 'logicalAnd': case 'logicalOr': case 'logicalXor':
        this.truth(x);
        this.truth(y!);
        fb.op(op === 'logicalAnd' ? Op.i32And : op === 'logicalOr' ? Op.i32Or : Op.i32Xor);
        return 'b';
      case 'isnan': case 'isinf': {
        const k = this.kindOf(x);
        if (k === null) return fb.i32(((op === 'isnan' ? Number.isNaN : (v: number) => Math.abs(v) === Infinity)((x as { v: number }).v)) ? 1 : 0), 'b';
        if (k !== 'f32' && k !== 'f64') return this.value(x), fb.op(Op.drop).i32(0), 'b';
        const l = fb.local(VT[k]);
        this.value(x);
        if (op === 'isnan') fb.tee(l).get(l).op(k === 'f32' ? Op.f32Ne : Op.f64Ne);
        else {
          fb.op(k === 'f32' ? Op.f32Abs : Op.f64Abs);
          this.constIn(Infinity, k);
          fb.op(k === 'f32' ? Op.f32Eq : Op.f64Eq);
        }
        return 'b';
      }
      case 'where': {
        const t = KIND[dtype];
        this.emit(y!, t);
        this.emit(z!, t);
        this.truth(x);
        fb.op(Op.select);
        return t;
      }
    }
    if (dtype === 'float32' || dtype === 'float64') return this.floatOp(op, KIND[dtype] as 'f32' | 'f64', args);
    if (INT_OPS.has(op)) return this.intOp(op, args), KIND[dtype];
    return this.floatOp(op, 'f64', args);
  }

  private floatOp(op: PrimitiveOp, t: 'f32' | 'f64', args: readonly LExpr[]): Kind {
    const fb = this.fb;
    const [x, y] = args as [LExpr, LExpr | undefined];
    const i = t === 'f32' ? 0 : 1;
    const un = F_UNARY[op], bin = F_BINARY[op];
    if (un) return this.emit(x, t), fb.op(un[i]), t;
    if (bin) return this.emit(x, t), this.emit(y!, t), fb.op(bin[i]), t;
    switch (op) {
      case 'identity': this.emit(x, t); return t;
      case 'relu': this.emit(x, t); this.constIn(0, t); fb.op(t === 'f32' ? Op.f32Max : Op.f64Max); return t;
      case 'reciprocal':
        this.constIn(1, t);
        this.emit(x, t);
        fb.op(t === 'f32' ? Op.f32Div : Op.f64Div);
        return t;
      case 'sign': {
        const l = fb.local(VT[t]);
        this.emit(x, t);
        fb.set(l);
        const [gt, lt] = t === 'f32' ? [Op.f32Gt, Op.f32Lt] : [Op.f64Gt, Op.f64Lt];
        // x > 0 ? 1 : x < 0 ? -1 : 0 (torch: sign(NaN) = 0, sign(-0) = +0)
        this.constIn(1, t);
        this.constIn(-1, t);
        this.constIn(0, t);
        fb.get(l);
        this.constIn(0, t);
        fb.op(lt, Op.select).get(l);
        this.constIn(0, t);
        fb.op(gt, Op.select);
        return t;
      }
    }
    if (IMPORTED_BINARY.has(op)) {
      this.emit(x, 'f64');
      this.emit(y!, 'f64');
      fb.call(this.mc.mathFn(op as MathImport));
      this.convert('f64', t);
      return t;
    }
    if (IMPORTED.has(op)) {
      this.emit(x, 'f64');
      fb.call(this.mc.mathFn(op as MathImport));
      this.convert('f64', t);
      return t;
    }
    throw new Error(`kiln internal: no wasm rendering of ${op}`);
  }

  /** A fresh id for a temporary that holds a composite's argument (tmp / vtmp). */
  bindId(): number {
    return --this.bound;
  }

  /**
   * A composite of the f64 in local `l`, in double as eager computes it (and so with the imported
   * Math functions): its expansion (ir/composites.ts) over that local.
   */
  compositeF64(op: CompositeOp, l: number): void {
    const id = this.bindId();
    this.tmp.set(id, { local: l, kind: 'f64' });
    this.emit(expandLoop(op, { k: 'tmp', id }, 'float64'), 'f64');
    this.tmp.delete(id);
  }

  private intOp(op: ScalarOp, args: readonly LExpr[]): void {
    const fb = this.fb;
    const [x, y] = args as [LExpr, LExpr | undefined];
    const l = () => fb.local(T.i32);
    switch (op) {
      case 'neg': fb.i32(0); this.emit(x, 'i32'); fb.op(Op.i32Sub); return;
      case 'abs': { const a = l(); fb.i32(0); this.emit(x, 'i32'); fb.tee(a).op(Op.i32Sub).get(a).get(a).i32(0).op(Op.i32LtS, Op.select); return; }
      case 'add': case 'sub': case 'mul':
        this.emit(x, 'i32');
        this.emit(y!, 'i32');
        fb.op(op === 'add' ? Op.i32Add : op === 'sub' ? Op.i32Sub : Op.i32Mul);
        return;
      case 'pow': this.emit(x, 'f64'); this.emit(y!, 'f64'); fb.call(this.mc.mathFn('pow')).call(toInt32(this.mc)); return;
      case 'fmod': {
        // i32.rem_s traps on a zero divisor: 0 there, as JS's (a % 0) | 0
        const a = l(), b = l();
        this.emit(x, 'i32');
        fb.set(a);
        this.emit(y!, 'i32');
        fb.tee(b).op(Op.i32Eqz).if(T.i32).i32(0).else().get(a).get(b).op(Op.i32RemS).end();
        return;
      }
      case 'relu': { const a = l(); this.emit(x, 'i32'); fb.tee(a).i32(0).get(a).i32(0).op(Op.i32GtS, Op.select); return; }
      case 'sign': { const a = l(); this.emit(x, 'i32'); fb.tee(a).i32(0).op(Op.i32GtS).get(a).i32(0).op(Op.i32LtS, Op.i32Sub); return; }
      case 'maximum': case 'minimum': {
        const a = l(), b = l();
        this.emit(x, 'i32');
        fb.tee(a);
        this.emit(y!, 'i32');
        fb.tee(b).get(a).get(b).op(op === 'maximum' ? Op.i32GtS : Op.i32LtS, Op.select);
        return;
      }
      default: this.emit(x, 'i32'); // floor, ceil, round, identity
    }
  }

  /** Records the kinds statements will have (before a loop whose accumulators depend on them). */
  inferKinds(body: readonly Stmt[]): void {
    for (const s of body) this.kinds.set(s.id, this.kindOf(s.e) ?? 'f64');
  }

  /** Computes statements into locals (scalar code). */
  stmts(body: readonly Stmt[]): void {
    for (const s of body) {
      const k = this.kindOf(s.e) ?? 'f64';
      this.emit(s.e, k);
      const local = this.fb.local(VT[k]);
      this.fb.set(local);
      this.tmp.set(s.id, { local, kind: k });
    }
  }

  /** Stores a value with typed-array conversion semantics. */
  store(s: { buf: number; at: Affine; dtype: DType; value: LExpr }): void {
    const fb = this.fb;
    fb.get(this.pointer(s));
    const d = s.dtype;
    if (d === 'float32') this.emit(s.value, 'f32'), fb.mem(Op.f32Store, 0);
    else if (d === 'float64') this.emit(s.value, 'f64'), fb.mem(Op.f64Store, 0);
    else if (d === 'int32') this.emit(s.value, 'i32'), fb.mem(Op.i32Store, 0);
    else this.emit(s.value, 'i32'), fb.mem(Op.i32Store8, 0);
  }
}
