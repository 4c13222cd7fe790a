// Gradients of the pointwise primitives, written with ops so that they run on any
// backend, are captured by the tracer, and fuse like any other pointwise code.

import type { ScalarOp } from '../ir/scalar-expr.js';
import type { BackwardContext } from '../autograd/node.js';
import type { Tensor } from '../tensor/tensor.js';
import * as m from './math.js';
import { cast, type PointwiseAttrs } from './pointwise.js';
import { sumToShape } from './movement.js';
import { zerosLike } from './creation.js';

type Ctx = BackwardContext<PointwiseAttrs>;
type Value = Tensor | number;
/** d(out)/d(operand k), times g, for each operand (null: no gradient) */
type OperandGrads = (g: Tensor, x: readonly Value[], out: Tensor | null) => readonly (Tensor | null)[];

const SQRT1_2 = Math.SQRT1_2;
const INV_SQRT_2PI = 0.3989422804014327;

const RULES: Partial<Record<ScalarOp, OperandGrads>> = {
  identity: (g) => [g],
  neg: (g) => [m.neg(g)],
  abs: (g, [a]) => [m.mul(g, m.sign(a as Tensor))],
  exp: (g, _x, out) => [m.mul(g, out!)],
  log: (g, [a]) => [m.div(g, a!)],
  log1p: (g, [a]) => [m.div(g, m.add(a!, 1))],
  expm1: (g, [a]) => [m.mul(g, m.exp(a as Tensor))],
  sqrt: (g, _x, out) => [m.div(g, m.mul(out!, 2))],
  rsqrt: (g, _x, out) => [m.mul(g, m.mul(m.pow(out!, 3), -0.5))],
  sin: (g, [a]) => [m.mul(g, m.cos(a as Tensor))],
  cos: (g, [a]) => [m.mul(g, m.neg(m.sin(a as Tensor)))],
  tanh: (g, _x, out) => [m.mul(g, m.sub(1, m.mul(out!, out!)))],
  sigmoid: (g, _x, out) => [m.mul(g, m.mul(out!, m.sub(1, out!)))],
  relu: (g, [a]) => [m.mul(g, m.gt(a!, 0))],
  gelu: (g, [a]) => {
    const x = a as Tensor;
    const cdf = m.mul(m.add(m.erf(m.mul(x, SQRT1_2)), 1), 0.5);
    const pdf = m.mul(m.exp(m.mul(m.mul(x, x), -0.5)), INV_SQRT_2PI);
    return [m.mul(g, m.add(cdf, m.mul(x, pdf)))];
  },
  geluTanh: (g, [a]) => {
    const x = a as Tensor;
    const k = 0.7978845608028654;
    const x2 = m.mul(x, x);
    const inner = m.mul(m.add(x, m.mul(m.mul(x2, x), 0.044715)), k);
    const t = m.tanh(inner);
    const dInner = m.mul(m.add(m.mul(x2, 3 * 0.044715), 1), k);
    const left = m.mul(m.add(t, 1), 0.5);
    const right = m.mul(m.mul(m.mul(x, 0.5), m.sub(1, m.mul(t, t))), dInner);
    return [m.mul(g, m.add(left, right))];
  },
  silu: (g, [a]) => {
    const s = m.sigmoid(a as Tensor);
    return [m.mul(g, m.mul(s, m.add(m.mul(a!, m.sub(1, s)), 1)))];
  },
  softplus: (g, [a]) => [m.mul(g, m.where(m.gt(a!, 20), 1, m.sigmoid(a as Tensor)))],
  erf: (g, [a]) => [m.mul(g, m.mul(m.exp(m.neg(m.mul(a!, a!))), 2 / Math.sqrt(Math.PI)))],
  // piecewise constant: a zero gradient, as torch gives (its .grad is zeros, not absent)
  sign: (g) => [zerosLike(g)],
  floor: (g) => [zerosLike(g)],
  ceil: (g) => [zerosLike(g)],
  round: (g) => [zerosLike(g)],
  reciprocal: (g, [a]) => [m.neg(m.div(g, m.mul(a!, a!)))],
  add: (g) => [g, g],
  sub: (g) => [g, m.neg(g)],
  mul: (g, [a, b]) => [m.mul(g, b!), m.mul(g, a!)],
  // a JS-number operand gets no gradient (and two numbers cannot go through a tensor op)
  div: (g, [a, b]) => [m.div(g, b!), typeof b === 'number' ? null : m.neg(m.div(m.mul(g, a!), m.mul(b, b)))],
  pow: (g, [a, b]) => {
    // d/da a^b = b a^(b-1), and 0 where b == 0 (torch's convention; the formula is 0 * inf at a == 0)
    if (b === 0) return [m.mul(g, 0), null];
    const gaAll = m.mul(g, m.mul(b!, m.pow(a!, typeof b === 'number' ? b - 1 : m.sub(b!, 1))));
    const ga = typeof b === 'number' ? gaAll : m.where(m.eq(b!, 0), 0, gaAll);
    if (typeof b === 'number') return [ga, null];
    // d/db a^b = a^b ln a; defined as 0 where a == 0 (torch's convention)
    if (typeof a === 'number') return [null, m.mul(g, m.mul(m.pow(a, b), a === 0 ? 0 : Math.log(a)))];
    const lnA = m.where(m.eq(a!, 0), 0, m.log(a!));
    return [ga, m.mul(g, m.mul(m.pow(a!, b), lnA))];
  },
  maximum: (g, [a, b]) => tieSplit(g, m.gt(a!, b!), m.eq(a!, b!)),
  minimum: (g, [a, b]) => tieSplit(g, m.lt(a!, b!), m.eq(a!, b!)),
  where: (g, [c]) => [null, m.where(c!, g, 0), m.where(c!, 0, g)],
  tan: (g, _x, out) => [m.mul(g, m.add(m.mul(out!, out!), 1))],
  atan: (g, [a]) => [m.div(g, m.add(m.mul(a!, a!), 1))],
  asin: (g, [a]) => [m.mul(g, m.rsqrt(m.sub(1, m.mul(a!, a!))))],
  acos: (g, [a]) => [m.neg(m.mul(g, m.rsqrt(m.sub(1, m.mul(a!, a!)))))],
  sinh: (g, [a]) => [m.mul(g, m.cosh(a as Tensor))],
  cosh: (g, [a]) => [m.mul(g, m.sinh(a as Tensor))],
  log2: (g, [a]) => [m.div(g, m.mul(a!, Math.LN2))],
  log10: (g, [a]) => [m.div(g, m.mul(a!, Math.LN10))],
  trunc: (g) => [zerosLike(g)],
  atan2: (g, [a, b]) => {
    const r2 = m.add(square(a!), square(b!));
    return [m.mul(g, m.div(b!, r2)), m.neg(m.mul(g, m.div(a!, r2)))];
  },
  // a JS-number operand gets no gradient
  fmod: (g, [a, b]) => [g, typeof b === 'number' ? null : m.neg(m.mul(g, m.trunc(m.div(a!, b))))],
  hypot: (g, [a, b], out) => [m.mul(g, m.div(a!, out!)), m.mul(g, m.div(b!, out!))],
};

/** v * v for a tensor or a JS number (one of two operands may be a number). */
function square(v: Value): Value {
  return typeof v === 'number' ? v * v : m.mul(v, v);
}

/** Gradient of max/min: to the winner, split in half at ties (as torch does). */
function tieSplit(g: Tensor, aWins: Tensor, tie: Tensor): Tensor[] {
  const wa = m.add(aWins, m.mul(tie, 0.5));
  const wb = m.sub(1, wa);
  return [m.mul(g, wa), m.mul(g, wb)];
}

function makeBackward(rule: OperandGrads) {
  return (g: Tensor, ctx: Ctx): (Tensor | null)[] => {
    const values: Value[] = ctx.attrs.operands.map((o) => ('input' in o ? ctx.inputs[o.input]! : o.scalar));
    const opGrads = rule(g, values, ctx.output);
    const grads: (Tensor | null)[] = ctx.inputShapes.map(() => null);
    ctx.attrs.operands.forEach((o, k) => {
      if (!('input' in o) || !ctx.needsGrad[o.input]) return;
      const gk = opGrads[k];
      if (!gk) return;
      let r = sumToShape(gk, ctx.inputShapes[o.input]!);
      if (r.dtype !== ctx.inputDTypes[o.input]) r = cast(r, ctx.inputDTypes[o.input]!);
      grads[o.input] = grads[o.input] ? m.add(grads[o.input]!, r) : r;
    });
    return grads;
  };
}

export const POINTWISE_GRADS: Partial<Record<ScalarOp, (g: Tensor, ctx: Ctx) => (Tensor | null)[]>> = Object.fromEntries(
  Object.entries(RULES).map(([op, rule]) => [op, makeBackward(rule!)]),
);
