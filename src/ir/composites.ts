// Composite scalar ops, each defined once as a tree of primitive ops. Renderers render only
// primitives: at kernel build time they expand a composite through `expandComposite` with
// their own primitive builder (text, C values, loop-IR nodes), so a new composite is one entry
// here and a new renderer implements the primitives only.
//
// Primitives are the ops every target has natively or implements itself once: arithmetic,
// comparisons, logic, `where`, and the elementary functions (exp, log, log1p, expm1, sqrt,
// tanh, erf, the trigonometric and hyperbolic functions, pow, ...: libm in C, Math.* in JS and
// in wasm's scalar code, WGSL builtins or helpers, wasm's f32x4 approximations in vmath.ts).
// Composites are the ops below (sigmoid, silu, gelu, geluTanh, softplus, rsqrt): each is a
// formula over primitives, and its value stays within float32's range (bounded by max(|x|, 1),
// rsqrt by 2^75), so a renderer that computes one in double (JS, wasm's scalar code) rounds
// only the result, as eager does. `reciprocal` stays a primitive: one division everywhere, whose
// value can overflow float32 (the JS renderer rounds it as an op of its own).

import type { DType } from '../core/dtype.js';
import type { LExpr } from './loop-ir.js';
import { isBoolResult, type ScalarOp } from './scalar-expr.js';

export const COMPOSITE_OPS = ['sigmoid', 'silu', 'gelu', 'geluTanh', 'softplus', 'rsqrt'] as const;
export type CompositeOp = (typeof COMPOSITE_OPS)[number];
export type PrimitiveOp = Exclude<ScalarOp, CompositeOp>;

/** How a renderer builds values of its own representation `V` from primitive ops and constants. */
export interface Primitives<V> {
  op(op: PrimitiveOp, ...args: V[]): V;
  c(value: number): V;
}

type Definition = <V>(x: V, p: Primitives<V>) => V;

/** Each composite's formula; the argument `x` may be used several times (renderers bind it when that costs). */
const DEFINITIONS: { readonly [K in CompositeOp]: Definition } = {
  // 1 / (1 + exp(-x))
  sigmoid: (x, { op, c }) => op('div', c(1), op('add', c(1), op('exp', op('neg', x)))),
  // x / (1 + exp(-x))
  silu: (x, { op, c }) => op('div', x, op('add', c(1), op('exp', op('neg', x)))),
  // 0.5 x (1 + erf(x / sqrt(2)))
  gelu: (x, { op, c }) => op('mul', op('mul', c(0.5), x), op('add', c(1), op('erf', op('mul', x, c(0.7071067811865476))))),
  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
  geluTanh: (x, { op, c }) => op('mul', op('mul', c(0.5), x), op('add', c(1), op('tanh', op('mul', c(0.7978845608028654), op('add', x, op('mul', op('mul', op('mul', c(0.044715), x), x), x)))))),
  // log(1 + exp(x)), and x itself above 20 (where exp(x) would overflow float32 before log1p)
  softplus: (x, { op, c }) => op('where', op('gt', x, c(20)), x, op('log1p', op('exp', x))),
  // 1 / sqrt(x)
  rsqrt: (x, { op, c }) => op('div', c(1), op('sqrt', x)),
};

const COMPOSITES: ReadonlySet<ScalarOp> = new Set(COMPOSITE_OPS);

export function isComposite(op: ScalarOp): op is CompositeOp {
  return COMPOSITES.has(op);
}

/** `op(x)` built from primitives by `p`. */
export function expandComposite<V>(op: CompositeOp, x: V, p: Primitives<V>): V {
  return DEFINITIONS[op](x, p);
}

/** `op(x)` as a loop-IR expression of primitives computing in `dtype` (comparisons give bool). */
export function expandLoop(op: CompositeOp, x: LExpr, dtype: DType): LExpr {
  return expandComposite(op, x, {
    op: (o, ...a) => ({ k: 'op', op: o, a, dtype: isBoolResult(o) ? 'bool' : dtype }),
    c: (v) => ({ k: 'const', v }),
  });
}
