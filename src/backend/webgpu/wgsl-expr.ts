// Loop-IR expressions as typed WGSL. JavaScript computes every value as a Number; WGSL is
// typed, so each rendered value carries its WGSL type (float32 -> f32, int32 -> i32, bool ->
// u32 holding 0/1) and arguments are converted where an op needs them in another type.

import type { DType } from '../../core/dtype.js';
import type { LExpr } from '../../ir/loop-ir.js';
import { isBoolResult } from '../../ir/scalar-expr.js';
import { expandLoop, isComposite, type PrimitiveOp } from '../../ir/composites.js';
import { float64Error } from './errors.js';

export type WType = 'f32' | 'i32' | 'u32';

export interface Typed {
  readonly code: string;
  readonly type: WType;
}

export function wtype(d: DType, op = 'webgpu'): WType {
  if (d === 'float32') return 'f32';
  if (d === 'int32') return 'i32';
  if (d === 'bool') return 'u32';
  throw float64Error(op);
}

/** WGSL helpers the expressions call (emitted once per shader when used). */
export const HELPERS: Record<string, string> = {
  // non-finite constants must not be const-expressions (WGSL rejects inf/NaN at compile time)
  kinf: 'fn kinf() -> f32 { var u = 0x7f800000u; return bitcast<f32>(u); }',
  knan: 'fn knan() -> f32 { var u = 0x7fc00000u; return bitcast<f32>(u); }',
  // NaN tests on the bits: compilers may assume x == x
  kisnan: 'fn kisnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }',
  kisinf: 'fn kisinf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }',
  // log1p(x) = log(u) * x / (u - 1) with u = 1 + x (exact for small x); log(u) once u is infinite
  klog1p: 'fn klog1p(x: f32) -> f32 { let u = 1.0 + x; if (u == 1.0) { return x; } if (kisinf(u)) { return klog(u); } return klog(u) * (x / (u - 1.0)); }',
  // log of a subnormal through its normal multiple (GPUs' log may flush subnormals)
  klog: 'fn klog(x: f32) -> f32 { if (x > 0.0 && x < 1.17549435e-38) { return log(x * 16777216.0) - 16.635532333438686; } return log(x); }',
  // JavaScript's ToInt32 (typed-array stores, | 0): truncate, wrap modulo 2^32, NaN and Inf give 0 (WGSL's i32() saturates)
  ktoi32: 'fn ktoi32(x: f32) -> i32 { if (abs(x) < 2147483648.0) { return i32(x); } if (kisnan(x) || kisinf(x)) { return 0; } let b = bitcast<u32>(x); '
    + 'let e = ((b >> 23u) & 0xffu) - 150u; var r = 0u; if (e < 32u) { r = ((b & 0x7fffffu) | 0x800000u) << e; } if ((b >> 31u) == 1u) { r = 0u - r; } return bitcast<i32>(r); }',
  kexpm1: 'fn kexpm1(x: f32) -> f32 { if (kisnan(x) || x == 0.0) { return x; } let u = exp(x); if (u == 1.0) { return x; } let um = u - 1.0; if (um == -1.0) { return -1.0; } return um * x / log(u); }',
  // Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7: below float32 tolerance)
  kerf: 'fn kerf(x: f32) -> f32 { if (x == 0.0) { return x; } let a = abs(x); let t = 1.0 / (1.0 + 0.3275911 * a); let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a); return select(y, -y, x < 0.0); }',
  // tanh overflows to NaN in some implementations for |x| > ~44; tanh(+-15) is +-1 in f32 (NaN and -0 kept)
  ktanh: 'fn ktanh(x: f32) -> f32 { if (kisnan(x) || x == 0.0) { return x; } return tanh(clamp(x, -15.0, 15.0)); }',
  // JS Math.pow (WGSL's pow is exp2(y * log2(x)), undefined for x <= 0): x^0 = 1 (even NaN^0),
  // NaN, infinite exponents (1^inf is NaN), zero and infinite bases, negative bases with
  // integer exponents (odd: |y| < 2^24, larger floats are even)
  kpow: 'fn kpow(x: f32, y: f32) -> f32 { if (y == 0.0) { return 1.0; } if (kisnan(x) || kisnan(y)) { return knan(); } let ax = abs(x); '
    + 'if (kisinf(y)) { if (ax == 1.0) { return knan(); } return select(0.0, kinf(), (ax > 1.0) == (y > 0.0)); } '
    + 'let whole = fract(y) == 0.0; let odd = whole && abs(y) < 16777216.0 && (i32(y) & 1) != 0; let neg = (bitcast<u32>(x) >> 31u) == 1u; '
    + 'if (ax == 0.0 || kisinf(x)) { let big = (ax == 0.0) == (y < 0.0); let m = select(0.0, kinf(), big); return select(m, -m, odd && neg); } '
    + 'let r = pow(ax, y); if (!neg) { return r; } if (!whole) { return knan(); } return select(r, -r, odd); }',
  // torch: sign(NaN) = 0, sign(-0) = +0
  ksign: 'fn ksign(x: f32) -> f32 { if (kisnan(x) || x == 0.0) { return 0.0; } return sign(x); }',
  // scaled so that squares of large (or tiny) values neither overflow nor underflow
  khypot: 'fn khypot(a: f32, b: f32) -> f32 { if (kisinf(a) || kisinf(b)) { return kinf(); } if (kisnan(a) || kisnan(b)) { return knan(); } let m = max(abs(a), abs(b)); if (m == 0.0) { return m; } let p = a / m; let q = b / m; return m * sqrt(p * p + q * q); }',
  // through atan2 (Mesa's asin/acos builtins are off by ~3e-4; atan2 is float32-accurate there); NaN outside [-1, 1], -0 kept
  kasin: 'fn kasin(x: f32) -> f32 { if (!(abs(x) <= 1.0)) { return knan(); } if (x == 0.0) { return x; } return atan2(x, sqrt((1.0 - x) * (1.0 + x))); }',
  kacos: 'fn kacos(x: f32) -> f32 { if (!(abs(x) <= 1.0)) { return knan(); } return atan2(sqrt((1.0 - x) * (1.0 + x)), x); }',
  // odd functions keep -0 and NaN (GPU builtins may not)
  katan: 'fn katan(x: f32) -> f32 { if (kisnan(x) || x == 0.0) { return x; } return atan(x); }',
  ksinh: 'fn ksinh(x: f32) -> f32 { if (kisnan(x) || x == 0.0) { return x; } return sinh(x); }',
  ktan: 'fn ktan(x: f32) -> f32 { if (kisnan(x) || x == 0.0) { return x; } return tan(x); }',
  // log2 of a subnormal through its normal multiple (as klog)
  klog2: 'fn klog2(x: f32) -> f32 { if (x > 0.0 && x < 1.17549435e-38) { return log2(x * 16777216.0) - 24.0; } return log2(x); }',
  // IEEE atan2 on zeros, infinities and NaN (WGSL leaves them undefined)
  katan2: 'fn katan2(y: f32, x: f32) -> f32 { if (kisnan(y) || kisnan(x)) { return knan(); } let pi = 3.14159265358979; let sy = select(1.0, -1.0, (bitcast<u32>(y) >> 31u) == 1u); '
    + 'let xneg = (bitcast<u32>(x) >> 31u) == 1u; if (y == 0.0) { return select(y, sy * pi, xneg); } if (x == 0.0) { return sy * pi / 2.0; } '
    + 'if (kisinf(y)) { if (kisinf(x)) { return sy * select(pi / 4.0, 3.0 * pi / 4.0, xneg); } return sy * pi / 2.0; } if (kisinf(x)) { return select(bitcast<f32>(bitcast<u32>(y) & 0x80000000u), sy * pi, xneg); } return atan2(y, x); }',
  // C's fmod, exactly (the integer algorithm of musl's fmodf): the remainder of a truncated
  // division with the sign of a; a / b need not fit a float (3e38 mod 1e-40)
  kfmod: 'fn kfmod(a: f32, b: f32) -> f32 { var ux = bitcast<u32>(a); var uy = bitcast<u32>(b); let sx = ux & 0x80000000u; '
    + 'if ((uy << 1u) == 0u || kisnan(b) || kisnan(a) || kisinf(a)) { return knan(); } if ((ux << 1u) <= (uy << 1u)) { if ((ux << 1u) == (uy << 1u)) { return bitcast<f32>(sx); } return a; } '
    + 'var ex = i32((ux >> 23u) & 0xffu); var ey = i32((uy >> 23u) & 0xffu); '
    + 'if (ex == 0) { var i = ux << 9u; loop { if ((i >> 31u) != 0u) { break; } ex = ex - 1; i = i << 1u; } ux = ux << u32(1 - ex); } else { ux = (ux & 0x7fffffu) | 0x800000u; } '
    + 'if (ey == 0) { var i = uy << 9u; loop { if ((i >> 31u) != 0u) { break; } ey = ey - 1; i = i << 1u; } uy = uy << u32(1 - ey); } else { uy = (uy & 0x7fffffu) | 0x800000u; } '
    + 'loop { if (ex <= ey) { break; } let i = ux - uy; if ((i >> 31u) == 0u) { if (i == 0u) { return bitcast<f32>(sx); } ux = i; } ux = ux << 1u; ex = ex - 1; } '
    + 'let j = ux - uy; if ((j >> 31u) == 0u) { if (j == 0u) { return bitcast<f32>(sx); } ux = j; } '
    + 'loop { if ((ux >> 23u) != 0u) { break; } ux = ux << 1u; ex = ex - 1; } '
    + 'if (ex > 0) { ux = (ux - 0x800000u) | (u32(ex) << 23u); } else { ux = ux >> u32(1 - ex); } return bitcast<f32>(ux | sx); }',
  // JS Math.max/min propagate NaN, and of equal values +0 is the larger (bits AND), -0 the smaller (bits OR)
  kmax: 'fn kmax(a: f32, b: f32) -> f32 { if (kisnan(a) || kisnan(b)) { return knan(); } if (a == b) { return bitcast<f32>(bitcast<u32>(a) & bitcast<u32>(b)); } return max(a, b); }',
  kmin: 'fn kmin(a: f32, b: f32) -> f32 { if (kisnan(a) || kisnan(b)) { return knan(); } if (a == b) { return bitcast<f32>(bitcast<u32>(a) | bitcast<u32>(b)); } return min(a, b); }',
  krelu: 'fn krelu(x: f32) -> f32 { if (kisnan(x)) { return x; } return max(x, 0.0); }',
};
const HELPER_DEPS: Record<string, string[]> = { klog1p: ['kisinf', 'klog'], ktoi32: ['kisnan', 'kisinf'], ktanh: ['kisnan'], kpow: ['knan', 'kinf', 'kisnan', 'kisinf'], khypot: ['kisinf', 'kisnan', 'kinf', 'knan'], kexpm1: ['kisnan'], kasin: ['knan'], kacos: ['knan'], katan: ['kisnan'], ksinh: ['kisnan'], ktan: ['kisnan'], katan2: ['kisnan', 'kisinf', 'knan'], kfmod: ['kisnan', 'kisinf', 'knan'], ksign: ['kisnan'], kmax: ['kisnan', 'knan'], kmin: ['kisnan', 'knan'], krelu: ['kisnan'] };

/** Collects the helpers a shader uses, in dependency order. */
export class HelperSet {
  private readonly used = new Set<string>();
  use(name: string): string {
    for (const d of HELPER_DEPS[name] ?? []) this.use(d);
    this.used.add(name);
    return name;
  }
  source(): string {
    return [...this.used].map((n) => HELPERS[n]!).join('\n');
  }
}

export function f32Literal(v: number, h: HelperSet): string {
  if (Number.isNaN(v)) return `${h.use('knan')}()`;
  if (v === Infinity || v > 3.4028234663852886e38) return `${h.use('kinf')}()`;
  if (v === -Infinity || v < -3.4028234663852886e38) return `(-${h.use('kinf')}())`;
  const s = Object.is(v, -0) ? '-0' : String(v);
  return `f32(${/[.e]/.test(s) ? s : `${s}.0`})`;
}

export function literal(v: number, t: WType, h: HelperSet): string {
  if (t === 'f32') return f32Literal(v, h);
  if (t === 'u32') return v !== 0 ? '1u' : '0u';
  const i = Number.isFinite(v) ? Math.trunc(v) | 0 : 0;
  return i < 0 ? `(${i})` : `${i}`;
}

/** Converts a value to another WGSL type with JavaScript's semantics (bool: non-zero). */
export function convert(x: Typed, to: WType, h: HelperSet): string {
  if (x.type === to) return x.code;
  if (to === 'i32' && x.type === 'f32') return `${h.use('ktoi32')}(${x.code})`;
  if (to === 'u32') return `select(0u, 1u, ${x.code} != ${x.type === 'f32' ? '0.0' : x.type === 'i32' ? '0' : '0u'})`;
  return `${to}(${x.code})`;
}

export interface ExprEnv {
  readonly h: HelperSet;
  load(buf: number, e: Extract<LExpr, { k: 'load' }>): string;
  tmpType(id: number): WType;
  /** name of a tmp (default t<id>) */
  tmpName?(id: number): string;
  redType(id: number): WType;
  redName?(id: number): string;
  accType?: WType;
}

const join = (a: WType, b: WType): WType => (a === 'f32' || b === 'f32' ? 'f32' : 'i32');

export function render(e: LExpr, env: ExprEnv): Typed {
  switch (e.k) {
    case 'load': return { code: env.load(e.buf, e), type: wtype(e.dtype) };
    // a bare constant is f32 unless it is used where another type is needed (see renderAs)
    case 'const': return { code: f32Literal(e.v, env.h), type: 'f32' };
    case 'tmp': return { code: env.tmpName?.(e.id) ?? `t${e.id}`, type: env.tmpType(e.id) };
    case 'red': return { code: env.redName?.(e.id) ?? `r${e.id}`, type: env.redType(e.id) };
    case 'acc': return { code: 'acc', type: env.accType ?? 'f32' };
    case 'cast': return { code: castTo(render(e.a, env), wtype(e.dtype, 'cast'), env.h), type: wtype(e.dtype, 'cast') };
    case 'op': {
      const rt = wtype(e.dtype, e.op);
      // a composite through its expansion (ir/composites.ts)
      return isComposite(e.op) ? render(expandLoop(e.op, e.a[0]!, e.dtype), env) : renderOp(e.op, rt, e.a, env);
    }
  }
}

/** Renders `e` directly in type `t` (constants become literals of that type). */
export function renderAs(e: LExpr, t: WType, env: ExprEnv): string {
  if (e.k === 'const') return literal(e.v, t, env.h);
  return convert(render(e, env), t, env.h);
}

/** A cast (float -> int truncates; -> bool tests non-zero). */
function castTo(x: Typed, t: WType, h: HelperSet): string {
  return convert(x, t, h);
}

function renderOp(op: PrimitiveOp, rt: WType, args: readonly LExpr[], env: ExprEnv): Typed {
  const h = env.h;
  if (isBoolResult(op)) {
    if (op === 'logicalNot' || op === 'isnan' || op === 'isinf') {
      const a = render(args[0]!, env);
      if (op === 'logicalNot') return bool(`${a.code} == ${zero(a.type)}`);
      if (a.type !== 'f32') return { code: '0u', type: 'u32' };
      return bool(`${h.use(op === 'isnan' ? 'kisnan' : 'kisinf')}(${a.code})`);
    }
    if (op === 'logicalAnd' || op === 'logicalOr' || op === 'logicalXor') {
      const [a, b] = args.map((x) => render(x, env)) as [Typed, Typed];
      const ta = `(${a.code} != ${zero(a.type)})`, tb = `(${b.code} != ${zero(b.type)})`;
      return bool(op === 'logicalAnd' ? `${ta} && ${tb}` : op === 'logicalOr' ? `${ta} || ${tb}` : `${ta} != ${tb}`);
    }
    // comparisons in the promoted type of the arguments
    const ra = args.map((x) => (x.k === 'const' ? null : render(x, env)));
    const ct = ra.reduce<WType | null>((t, x) => (x ? (t ? join(t, x.type) : x.type === 'u32' ? 'i32' : x.type) : t), null) ?? 'f32';
    const [a, b] = args.map((x, i) => (ra[i] ? convert(ra[i]!, ct, h) : renderAs(x, ct, env)));
    const sym = { eq: '==', ne: '!=', lt: '<', le: '<=', gt: '>', ge: '>=' }[op as 'eq'];
    return bool(`${a} ${sym} ${b}`);
  }
  if (op === 'where') {
    const c = render(args[0]!, env);
    return { code: `select(${renderAs(args[2]!, rt, env)}, ${renderAs(args[1]!, rt, env)}, ${c.code} != ${zero(c.type)})`, type: rt };
  }
  // arithmetic in the result type
  const a = args.map((x) => renderAs(x, rt, env));
  const code = rt === 'f32' ? floatOp(op, a, h) : intOp(op, rt, a, h);
  return { code, type: rt };
}

const zero = (t: WType) => (t === 'f32' ? '0.0' : t === 'i32' ? '0' : '0u');
const bool = (cond: string): Typed => ({ code: `select(0u, 1u, ${cond})`, type: 'u32' });

function floatOp(op: PrimitiveOp, [a, b]: string[], h: HelperSet): string {
  switch (op) {
    case 'neg': return `(-${a})`;
    case 'abs': return `abs(${a})`;
    case 'exp': return `exp(${a})`;
    case 'log': return `${h.use('klog')}(${a})`;
    case 'log1p': return `${h.use('klog1p')}(${a})`;
    case 'expm1': return `${h.use('kexpm1')}(${a})`;
    case 'sqrt': return `sqrt(${a})`;
    case 'sin': return `sin(${a})`;
    case 'cos': return `cos(${a})`;
    case 'tanh': return `${h.use('ktanh')}(${a})`;
    case 'relu': return `${h.use('krelu')}(${a})`;
    case 'erf': return `${h.use('kerf')}(${a})`;
    case 'sign': return `${h.use('ksign')}(${a})`;
    case 'floor': return `floor(${a})`;
    case 'ceil': return `ceil(${a})`;
    case 'round': return `round(${a})`; // WGSL rounds half to even, as kiln does
    case 'reciprocal': return `(1.0 / ${a})`;
    case 'identity': return a!;
    case 'tan': return `${h.use('ktan')}(${a})`;
    case 'atan': return `${h.use('katan')}(${a})`;
    case 'asin': return `${h.use('kasin')}(${a})`;
    case 'acos': return `${h.use('kacos')}(${a})`;
    case 'sinh': return `${h.use('ksinh')}(${a})`;
    case 'cosh': return `cosh(${a})`;
    case 'log2': return `${h.use('klog2')}(${a})`;
    case 'log10': return `(${h.use('klog2')}(${a}) * 0.3010299956639812)`;
    case 'trunc': return `trunc(${a})`;
    case 'atan2': return `${h.use('katan2')}(${a}, ${b})`;
    case 'fmod': return `${h.use('kfmod')}(${a}, ${b})`;
    case 'hypot': return `${h.use('khypot')}(${a}, ${b})`;
    case 'add': return `(${a} + ${b})`;
    case 'sub': return `(${a} - ${b})`;
    case 'mul': return `(${a} * ${b})`;
    case 'div': return `(${a} / ${b})`;
    case 'pow': return `${h.use('kpow')}(${a}, ${b})`;
    case 'maximum': return `${h.use('kmax')}(${a}, ${b})`;
    case 'minimum': return `${h.use('kmin')}(${a}, ${b})`;
    default: throw new Error(`kiln internal: ${op} has no float rendering`);
  }
}

/** int32 arithmetic wraps in WGSL, as it does in kiln's JS kernels (| 0, Math.imul). */
function intOp(op: PrimitiveOp, t: WType, [a, b]: string[], h: HelperSet): string {
  const f = (x: string) => `f32(${x})`;
  switch (op) {
    case 'neg': return `(-${a})`;
    case 'abs': return t === 'u32' ? a! : `abs(${a})`;
    case 'sign': return `sign(${a})`;
    case 'floor': case 'ceil': case 'round': case 'trunc': case 'identity': return a!;
    // 0 for a zero divisor, as JS's (a % 0) | 0
    case 'fmod': return `select(${a} % ${b}, 0, ${b} == 0)`;
    case 'add': return `(${a} + ${b})`;
    case 'sub': return `(${a} - ${b})`;
    case 'mul': return `(${a} * ${b})`;
    case 'maximum': return `max(${a}, ${b})`;
    case 'minimum': return `min(${a}, ${b})`;
    case 'pow': return `${t}(${h.use('kpow')}(${f(a!)}, ${f(b!)}))`;
    case 'relu': return t === 'u32' ? a! : `max(${a}, 0)`;
    // anything else computes in f32 and converts (kiln promotes these to float anyway)
    default: return `${t}(${floatOp(op, [f(a!), b === undefined ? '' : f(b)], h)})`;
  }
}
