// f32x4 approximations of exp, log, tanh and erf (helpers `(v128) -> v128` defined once per
// module), evaluated in float32 arithmetic. Error bounds, measured against float64 Math.*
// on float32 inputs (test/wasm-math.test.ts checks them; measured maxima in brackets):
//   exp:  relative error < 2e-7 on [-87, 88] [7.7e-8] (Cephes expf polynomial; 2^n built in two
//         steps, so the subnormal range underflows gradually); overflow -> Infinity, NaN -> NaN
//   log:  absolute error < 1e-7 on [0.5, 2] [3.9e-8], relative < 1.5e-7 elsewhere [7.8e-8]
//         (Cephes logf); 0 -> -Infinity, negative/NaN -> NaN, Infinity -> Infinity, subnormals
//   tanh: absolute error < 4e-7 [3.2e-7] (Eigen's rational approximation, clamped at |x| = 7.9)
//   erf:  absolute error < 4e-7 [3.8e-7] (Eigen/XLA rational approximation on [-4, 4])
//   sigmoid < 2e-7 [8.9e-8] and gelu < 2e-6 [1.3e-6] absolute on [-20, 20]
// The composites (ir/composites.ts: sigmoid, silu, gelu, geluTanh) are their expansions over
// these in f32x4 (vector.ts).

import type { FuncBuilder } from './encoder.js';
import { Op, Simd, T } from './opcodes.js';
import type { ModuleContext } from './module-context.js';

const V = { params: [T.v128], results: [T.v128] } as const;

/** pushes a f32x4 constant */
export const vconst = (fb: FuncBuilder, c: number): FuncBuilder => fb.f32(c).simd(Simd.f32x4Splat);
const iconst = (fb: FuncBuilder, c: number): FuncBuilder => fb.i32(c).simd(Simd.i32x4Splat);

/** y = ((c0 * x + c1) * x + c2) ... (Horner, highest degree first), x in local `x`; result on the stack */
function horner(fb: FuncBuilder, x: number, cs: readonly number[]): void {
  vconst(fb, cs[0]!);
  for (const c of cs.slice(1)) {
    fb.get(x).simd(Simd.f32x4Mul);
    vconst(fb, c).simd(Simd.f32x4Add);
  }
}

export function vexp(mc: ModuleContext): number {
  return mc.helper('vexp', V, (fb) => {
    const x = 0, n = fb.local(T.v128), r = fb.local(T.v128), ni = fb.local(T.v128), y = fb.local(T.v128);
    fb.get(x);
    vconst(fb, -104).simd(Simd.f32x4Max);
    vconst(fb, 89).simd(Simd.f32x4Min).set(x);
    fb.get(x);
    vconst(fb, 1.4426950408889634).simd(Simd.f32x4Mul).simd(Simd.f32x4Nearest).set(n);
    // r = x - n * ln2 (in two parts, Cody-Waite)
    fb.get(x).get(n);
    vconst(fb, 0.693359375).simd(Simd.f32x4Mul).simd(Simd.f32x4Sub);
    fb.get(n);
    vconst(fb, -2.12194440e-4).simd(Simd.f32x4Mul).simd(Simd.f32x4Sub).set(r);
    horner(fb, r, [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1]);
    fb.get(r).simd(Simd.f32x4Mul).get(r).simd(Simd.f32x4Mul).get(r).simd(Simd.f32x4Add);
    vconst(fb, 1).simd(Simd.f32x4Add).set(y);
    // 2^n as 2^(n >> 1) * 2^(n - (n >> 1)): both factors stay normal for n in [-150, 128]
    fb.get(n).simd(Simd.i32x4TruncSatF32x4S).set(ni);
    fb.get(y);
    fb.get(ni).i32(1).simd(Simd.i32x4ShrS);
    iconst(fb, 127).simd(Simd.i32x4Add).i32(23).simd(Simd.i32x4Shl).simd(Simd.f32x4Mul);
    fb.get(ni).get(ni).i32(1).simd(Simd.i32x4ShrS).simd(Simd.i32x4Sub);
    iconst(fb, 127).simd(Simd.i32x4Add).i32(23).simd(Simd.i32x4Shl).simd(Simd.f32x4Mul);
  });
}

export function vlog(mc: ModuleContext): number {
  return mc.helper('vlog', V, (fb) => {
    const x = 0, sub = fb.local(T.v128), xs = fb.local(T.v128), e = fb.local(T.v128), m = fb.local(T.v128), lt = fb.local(T.v128);
    const f = fb.local(T.v128), z = fb.local(T.v128), ef = fb.local(T.v128), y = fb.local(T.v128);
    // subnormal inputs: scale by 2^23 first
    fb.get(x);
    vconst(fb, 1.1754943508222875e-38).simd(Simd.f32x4Lt).get(x);
    vconst(fb, 0).simd(Simd.f32x4Gt).simd(Simd.and).set(sub);
    fb.get(x);
    vconst(fb, 8388608).simd(Simd.f32x4Mul).get(x).get(sub).simd(Simd.bitselect).set(xs);
    // exponent and mantissa in [0.5, 1)
    fb.get(xs).i32(23).simd(Simd.i32x4ShrU);
    iconst(fb, 126).simd(Simd.i32x4Sub);
    iconst(fb, -23).get(sub).simd(Simd.and).simd(Simd.i32x4Add).set(e);
    fb.get(xs);
    iconst(fb, 0x007fffff).simd(Simd.and);
    iconst(fb, 0x3f000000).simd(Simd.or).set(m);
    fb.get(m);
    vconst(fb, 0.707106781186547524).simd(Simd.f32x4Lt).set(lt);
    fb.get(e).get(lt).simd(Simd.i32x4Add).simd(Simd.f32x4ConvertI32x4S).set(ef);
    // f = m - 1 (+ m when m < sqrt(1/2))
    fb.get(m).get(m).get(lt).simd(Simd.and).simd(Simd.f32x4Add);
    vconst(fb, 1).simd(Simd.f32x4Sub).set(f);
    fb.get(f).get(f).simd(Simd.f32x4Mul).set(z);
    horner(fb, f, [7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1]);
    fb.get(f).simd(Simd.f32x4Mul).get(z).simd(Simd.f32x4Mul);
    fb.get(ef);
    vconst(fb, -2.12194440e-4).simd(Simd.f32x4Mul).simd(Simd.f32x4Add);
    fb.get(z);
    vconst(fb, -0.5).simd(Simd.f32x4Mul).simd(Simd.f32x4Add);
    fb.get(f).simd(Simd.f32x4Add);
    fb.get(ef);
    vconst(fb, 0.693359375).simd(Simd.f32x4Mul).simd(Simd.f32x4Add).set(y);
    // special values: 0 -> -inf, < 0 or NaN -> NaN, inf -> inf
    vconst(fb, -Infinity).get(y).get(x);
    vconst(fb, 0).simd(Simd.f32x4Eq).simd(Simd.bitselect).set(y);
    vconst(fb, NaN).get(y).get(x);
    vconst(fb, 0).simd(Simd.f32x4Lt).get(x).get(x).simd(Simd.f32x4Ne).simd(Simd.or).simd(Simd.bitselect).set(y);
    vconst(fb, Infinity).get(y).get(x);
    vconst(fb, Infinity).simd(Simd.f32x4Eq).simd(Simd.bitselect);
  });
}

export function vtanh(mc: ModuleContext): number {
  return mc.helper('vtanh', V, (fb) => {
    const x = 0, c = fb.local(T.v128), x2 = fb.local(T.v128), p = fb.local(T.v128);
    fb.get(x);
    vconst(fb, -7.90531110763549805).simd(Simd.f32x4Max);
    vconst(fb, 7.90531110763549805).simd(Simd.f32x4Min).set(c);
    fb.get(c).get(c).simd(Simd.f32x4Mul).set(x2);
    horner(fb, x2, [-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-8, 1.48572235717979e-5, 6.37261928875436e-4, 4.89352455891786e-3]);
    fb.get(c).simd(Simd.f32x4Mul).set(p);
    fb.get(p);
    horner(fb, x2, [1.19825839466702e-6, 1.18534705686654e-4, 2.26843463243900e-3, 4.89352518554385e-3]);
    fb.simd(Simd.f32x4Div);
    // tiny |x|: tanh x = x (the rational form's rounding is larger than x's there)
    fb.set(p);
    fb.get(x).get(p).get(x).simd(Simd.f32x4Abs);
    vconst(fb, 0.0004).simd(Simd.f32x4Lt).simd(Simd.bitselect);
  });
}

export function verf(mc: ModuleContext): number {
  return mc.helper('verf', V, (fb) => {
    const x = 0, c = fb.local(T.v128), x2 = fb.local(T.v128);
    fb.get(x);
    vconst(fb, -4).simd(Simd.f32x4Max);
    vconst(fb, 4).simd(Simd.f32x4Min).set(c);
    fb.get(c).get(c).simd(Simd.f32x4Mul).set(x2);
    horner(fb, x2, [-2.72614225801306e-10, 2.77068142495902e-8, -2.10102402082508e-6, -5.69250639462346e-5, -7.34990630326855e-4, -2.95459980854025e-3, -1.60960333262415e-2]);
    fb.get(c).simd(Simd.f32x4Mul);
    horner(fb, x2, [-1.45660718464996e-5, -2.13374055278905e-4, -1.68282697438203e-3, -7.37332916720468e-3, -1.42647390514189e-2]);
    fb.simd(Simd.f32x4Div);
  });
}

/** ToInt32 of a double (typed-array store semantics): truncate, wrap modulo 2^32, NaN/Inf -> 0. */
export function toInt32(mc: ModuleContext): number {
  return mc.helper('toInt32', { params: [T.f64], results: [T.i32] }, (fb) => {
    // x - trunc(x / 2^32) * 2^32 is exact and within (-2^32, 2^32); Inf gives NaN, which saturates to 0
    fb.get(0).get(0).f64(2 ** -32).op(Op.f64Mul).op(Op.f64Trunc).f64(2 ** 32).op(Op.f64Mul).op(Op.f64Sub);
    fb.fc(6).op(Op.i32WrapI64);
  });
}
