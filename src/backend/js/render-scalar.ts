// Renders a ScalarExpr as a JavaScript expression: the primitive ops here, composites through
// their expansion (ir/composites.ts). Helper functions (erf, round half to even) are passed
// into the generated code's scope and inlined by the JIT.

import type { ScalarExpr, ScalarOp } from '../../ir/scalar-expr.js';
import { expandComposite, isComposite, type CompositeOp, type PrimitiveOp } from '../../ir/composites.js';

export function erf(x: number): number {
  // W. J. Cody's rational approximations; |error| < 1.2e-16 relative to float64 erf.
  const ax = Math.abs(x);
  let r: number;
  if (ax < 0.5) {
    const t = x * x;
    const p = (((0.1857777061846031526730 * t + 3.161123743870565596947) * t + 113.8641541510501556495) * t + 377.4852376853020208137) * t + 3209.377589138469472562;
    const q = (((t + 23.60129095234412093499) * t + 244.0246379344441733056) * t + 1282.616526077372275645) * t + 2844.236833439170622273;
    return (x * p) / q;
  } else if (ax < 4) {
    const p = (((((((0.0000000215311535474403846 * ax + 0.564188496988670089180) * ax + 8.88314979438837594118) * ax + 66.1191906371416294775) * ax + 298.635138197400131132) * ax + 881.952221241769090411) * ax + 1712.04761263407058314) * ax + 2051.07837782607146532) * ax + 1230.33935479799725272;
    const q = (((((((ax + 15.7449261107098347253) * ax + 117.693950891312499305) * ax + 537.181101862009857509) * ax + 1621.38957456669018874) * ax + 3290.79923573345962678) * ax + 4362.61909014324715820) * ax + 3439.36767414372163696) * ax + 1230.33935480374942043;
    r = 1 - Math.exp(-ax * ax) * (p / q);
  } else if (ax < 27) {
    const z = 1 / (ax * ax);
    const p = ((((0.0163153871373020978498 * z + 0.305326634961232344035) * z + 0.360344899949804439429) * z + 0.125781726111229246204) * z + 0.0160837851487422766278) * z + 0.000658749161529837803157;
    const q = ((((z + 2.56852019228982242072) * z + 1.87295284992346725209) * z + 0.527905102951428412248) * z + 0.0605183413124413191178) * z + 0.00233520497626869185443;
    r = 1 - (Math.exp(-ax * ax) / ax) * (0.5641895835477562869 - (z * p) / q);
  } else {
    r = ax !== ax ? ax : 1;
  }
  return x < 0 ? -r : r;
}

export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * relu without a data-dependent branch (Math.max and ?: mispredict on random signs: ~8x
 * slower here). Exact for float32 values; -Infinity and NaN take the rare, predicted path.
 */
export function relu32(v: number): number {
  const r = (v + Math.abs(v)) * 0.5;
  return r === r || v !== v ? r : 0;
}

export const JS_HELPERS = { erf, roundHalfEven, relu32 } as const;
export const JS_HELPER_NAMES = Object.keys(JS_HELPERS);
export const JS_HELPER_VALUES = Object.values(JS_HELPERS);

type Render = (a: string, b: string, c: string) => string;

const FLOAT_RENDER: Record<PrimitiveOp, Render> = {
  neg: (a) => `(-${a})`,
  abs: (a) => `Math.abs(${a})`,
  exp: (a) => `Math.exp(${a})`,
  log: (a) => `Math.log(${a})`,
  log1p: (a) => `Math.log1p(${a})`,
  expm1: (a) => `Math.expm1(${a})`,
  sqrt: (a) => `Math.sqrt(${a})`,
  sin: (a) => `Math.sin(${a})`,
  cos: (a) => `Math.cos(${a})`,
  tanh: (a) => `Math.tanh(${a})`,
  relu: (a) => `Math.max(${a}, 0)`,
  erf: (a) => `erf(${a})`,
  // torch: sign(NaN) = 0 and sign(-0) = +0
  sign: (a) => `(+(${a} > 0) - +(${a} < 0))`,
  floor: (a) => `Math.floor(${a})`,
  ceil: (a) => `Math.ceil(${a})`,
  round: (a) => `roundHalfEven(${a})`,
  reciprocal: (a) => `(1 / ${a})`,
  logicalNot: (a) => `(${a} === 0 ? 1 : 0)`,
  isnan: (a) => `(${a} !== ${a} ? 1 : 0)`,
  isinf: (a) => `((${a} === Infinity || ${a} === -Infinity) ? 1 : 0)`,
  identity: (a) => a,
  tan: (a) => `Math.tan(${a})`,
  atan: (a) => `Math.atan(${a})`,
  asin: (a) => `Math.asin(${a})`,
  acos: (a) => `Math.acos(${a})`,
  sinh: (a) => `Math.sinh(${a})`,
  cosh: (a) => `Math.cosh(${a})`,
  log2: (a) => `Math.log2(${a})`,
  log10: (a) => `Math.log10(${a})`,
  trunc: (a) => `Math.trunc(${a})`,
  add: (a, b) => `(${a} + ${b})`,
  sub: (a, b) => `(${a} - ${b})`,
  mul: (a, b) => `(${a} * ${b})`,
  div: (a, b) => `(${a} / ${b})`,
  pow: (a, b) => `Math.pow(${a}, ${b})`,
  maximum: (a, b) => `Math.max(${a}, ${b})`,
  minimum: (a, b) => `Math.min(${a}, ${b})`,
  eq: (a, b) => `(+(${a} === ${b}))`,
  ne: (a, b) => `(+(${a} !== ${b}))`,
  lt: (a, b) => `(+(${a} < ${b}))`,
  le: (a, b) => `(+(${a} <= ${b}))`,
  gt: (a, b) => `(+(${a} > ${b}))`,
  ge: (a, b) => `(+(${a} >= ${b}))`,
  logicalAnd: (a, b) => `((${a} !== 0 && ${b} !== 0) ? 1 : 0)`,
  logicalOr: (a, b) => `((${a} !== 0 || ${b} !== 0) ? 1 : 0)`,
  logicalXor: (a, b) => `(((${a} !== 0) !== (${b} !== 0)) ? 1 : 0)`,
  where: (a, b, c) => `(${a} !== 0 ? ${b} : ${c})`,
  atan2: (a, b) => `Math.atan2(${a}, ${b})`,
  // JS % is C's fmod: exact, with the sign of the dividend
  fmod: (a, b) => `(${a} % ${b})`,
  hypot: (a, b) => `Math.hypot(${a}, ${b})`,
};

// int32 results wrap like C: keep intermediates in int range.
const INT_RENDER: Partial<Record<PrimitiveOp, Render>> = {
  neg: (a) => `(-${a} | 0)`,
  add: (a, b) => `((${a} + ${b}) | 0)`,
  sub: (a, b) => `((${a} - ${b}) | 0)`,
  mul: (a, b) => `Math.imul(${a}, ${b})`,
  pow: (a, b) => `(Math.pow(${a}, ${b}) | 0)`,
  floor: (a) => a,
  ceil: (a) => a,
  round: (a) => a,
  trunc: (a) => a,
  // x % 0 is NaN in JS: 0 after | 0 (torch raises for integer division by zero)
  fmod: (a, b) => `((${a} % ${b}) | 0)`,
};

/** A number as JS source: -0 stays -0 (String(-0) is '0'), non-finite values by name. */
export function jsNumber(v: number): string {
  if (Object.is(v, -0)) return '(-0)';
  return Number.isFinite(v) ? `(${v})` : v > 0 ? 'Infinity' : v < 0 ? '-Infinity' : 'NaN';
}

/** One primitive op in JS, with int32 wrap-around where the result dtype is int32. */
export function renderPrimitive(op: PrimitiveOp, dtype: string, args: readonly string[]): string {
  if (op === 'relu' && dtype === 'float32') return `relu32(${args[0]})`;
  const render = (dtype === 'int32' && INT_RENDER[op]) || FLOAT_RENDER[op];
  return render(args[0]!, args[1] ?? '', args[2] ?? '');
}

/** A composite op of `x` in JS: its expansion (ir/composites.ts), each primitive in `dtype` by `primitive`. */
export function renderComposite(op: CompositeOp, dtype: string, x: string, primitive = renderPrimitive): string {
  return expandComposite(op, x, { op: (o, ...a) => primitive(o, dtype, a), c: jsNumber });
}

/** One scalar op in JS (a composite through its expansion). */
function renderOp(op: ScalarOp, dtype: string, args: readonly string[]): string {
  return isComposite(op) ? renderComposite(op, dtype, args[0]!) : renderPrimitive(op, dtype, args);
}

/** A cast in JS (float32 rounds, int32 truncates, bool tests non-zero). */
export function renderCast(inner: string, dtype: string): string {
  if (dtype === 'int32') return `(Math.trunc(${inner}) | 0)`;
  if (dtype === 'bool') return `(${inner} !== 0 ? 1 : 0)`;
  if (dtype === 'float32') return `Math.fround(${inner})`;
  return inner;
}

export function renderJs(e: ScalarExpr, load: (index: number) => string): string {
  switch (e.kind) {
    case 'input': return load(e.index);
    case 'param': return `param${e.index}`;
    case 'const': return jsNumber(e.value);
    case 'cast': {
      const inner = renderJs(e.arg, load);
      if (e.dtype === 'int32') return `(Math.trunc(${inner}) | 0)`;
      if (e.dtype === 'bool') return `(${inner} !== 0 ? 1 : 0)`;
      if (e.dtype === 'float32') return `Math.fround(${inner})`;
      return inner;
    }
    case 'op':
      return renderOp(e.op, e.dtype, e.args.map((a) => renderJs(a, load)));
  }
}
