// Pointwise ops: one primitive per ScalarOp, with NumPy broadcasting, torch dtype
// promotion and JS numbers as runtime scalars (no kernel per constant).

import type { DType } from '../core/dtype.js';
import { DTypeError, ArgumentError } from '../core/errors.js';
import { assertDType, isFloat, promoteTypes, promoteWithScalar, toFloat } from '../core/dtype.js';
import { broadcastShapes } from '../core/shape.js';
import type { ScalarExpr, ScalarOp } from '../ir/scalar-expr.js';
import { arity, isBoolResult, isFloatResult } from '../ir/scalar-expr.js';
import type { BackwardContext } from '../autograd/node.js';
import { Tensor } from '../tensor/tensor.js';
import { apply, view, type PrimDef } from './dispatch.js';
import { broadcastStrides } from './broadcast.js';
import { POINTWISE_GRADS } from './pointwise-grads.js';
import { publicOp } from '../core/user-op.js';

export type Scalar = number | boolean;
export type Operand = Tensor | Scalar;

/** Where each operand comes from: a tensor input, or a scalar (held in attrs). */
export interface PointwiseAttrs {
  readonly op: ScalarOp;
  readonly operands: readonly ({ readonly input: number } | { readonly scalar: number })[];
  /** dtype the op computes in (after promotion) */
  readonly dtype: DType;
  /** dtype of the result */
  readonly outDType: DType;
}

const prims = new Map<ScalarOp, PrimDef<PointwiseAttrs>>();
/** ops whose gradient reads their output (pointwise-grads.ts) */
const SAVES_OUTPUT = new Set<ScalarOp>(['exp', 'tanh', 'sigmoid', 'sqrt', 'rsqrt', 'tan', 'hypot']);

export function pointwisePrim(op: ScalarOp): PrimDef<PointwiseAttrs> {
  let p = prims.get(op);
  if (!p) {
    p = {
      name: op,
      meta(inputs, attrs) {
        let shape: readonly number[] = [];
        for (const t of inputs) shape = broadcastShapes(op, shape, t.shape);
        return { shape, dtype: attrs.outDType };
      },
      run(inputs, out, attrs) {
        const spec = { kind: 'pointwise' as const, expr: pointwiseExpr(attrs, inputs.map((t) => t.dtype)), outDType: attrs.outDType, nInputs: inputs.length, ndim: out.ndim };
        const backend = out.storage.backend;
        const kernel = backend.prepare(spec);
        backend.launch(kernel, {
          kind: 'pointwise',
          out: view(out),
          inputs: inputs.map((t) => ({ buf: t.storage.buf, offset: t.offset, strides: broadcastStrides(t, out.shape) })),
          shape: out.shape,
          params: scalarParams(attrs),
        });
      },
      backward: POINTWISE_GRADS[op] as PrimDef<PointwiseAttrs>['backward'],
      saveInputs: true,
      saveOutput: SAVES_OUTPUT.has(op),
      formatAttrs: (a) => a.operands.map((o) => ('scalar' in o ? String(o.scalar) : `$${o.input}`)).join(', '),
    };
    prims.set(op, p);
  }
  return p;
}

/** The expression a pointwise node computes: op over inputs and params. */
export function pointwiseExpr(attrs: PointwiseAttrs, inputDTypes: readonly DType[]): ScalarExpr {
  let param = 0;
  const args: ScalarExpr[] = attrs.operands.map((o) =>
    'input' in o ? { kind: 'input', index: o.input, dtype: inputDTypes[o.input]! } : { kind: 'param', index: param++ },
  );
  return { kind: 'op', op: attrs.op, args, dtype: attrs.dtype };
}

export function scalarParams(attrs: PointwiseAttrs): number[] {
  const out: number[] = [];
  for (const o of attrs.operands) if ('scalar' in o) out.push(o.scalar);
  return out;
}

function checkOperand(op: string, x: unknown, i: number): asserts x is Operand {
  if (x instanceof Tensor || typeof x === 'number' || typeof x === 'boolean') return;
  throw new ArgumentError(
    `operand ${i} must be a Tensor, number or boolean, got ${x === null ? 'null' : typeof x}${Array.isArray(x) ? ' (array)' : ''}`,
    op,
    'wrap arrays with kiln.tensor(...)',
  );
}

/** Applies a pointwise op to tensors and JS scalars. */
export function pointwise(op: ScalarOp, operands: readonly Operand[]): Tensor {
  if (operands.length !== arity(op)) throw new ArgumentError(`expects ${arity(op)} operands, got ${operands.length}`, op);
  operands.forEach((x, i) => checkOperand(op, x, i));
  const inputs: Tensor[] = [];
  const slots: PointwiseAttrs['operands'][number][] = [];
  const valueOperands = op === 'where' ? operands.slice(1) : operands;
  let dtype: DType | undefined;
  for (const x of valueOperands) if (x instanceof Tensor) dtype = dtype ? promoteTypes(dtype, x.dtype) : x.dtype;
  if (!dtype) dtype = valueOperands.every((x) => typeof x === 'boolean') ? 'bool' : valueOperands.every((x) => Number.isInteger(x)) ? 'int32' : 'float32';
  for (const x of valueOperands) if (!(x instanceof Tensor)) dtype = promoteWithScalar(dtype, x);
  for (const x of operands) {
    if (x instanceof Tensor) {
      slots.push({ input: inputs.length });
      inputs.push(x);
    } else slots.push({ scalar: typeof x === 'boolean' ? Number(x) : x });
  }
  if (inputs.length === 0) throw new ArgumentError('needs at least one tensor operand', op);
  let computeDType = dtype;
  if (isFloatResult(op)) computeDType = toFloat(dtype);
  if (op === 'abs' || op === 'neg') {
    if (dtype === 'bool') throw new DTypeError(`not defined for bool tensors`, op, 'cast with .int() or .float() first');
  }
  const outDType = isBoolResult(op) ? 'bool' : computeDType;
  return apply(pointwisePrim(op), inputs, { op, operands: slots, dtype: computeDType, outDType });
}

// ---- cast ----

export interface CastAttrs {
  readonly dtype: DType;
}

export const castPrim: PrimDef<CastAttrs> = {
  name: 'cast',
  meta: (inputs, attrs) => ({ shape: inputs[0]!.shape, dtype: attrs.dtype }),
  run(inputs, out, attrs) {
    const x = inputs[0]!;
    const backend = out.storage.backend;
    const expr: ScalarExpr = { kind: 'cast', dtype: attrs.dtype, arg: { kind: 'input', index: 0, dtype: x.dtype } };
    backend.launch(backend.prepare({ kind: 'pointwise', expr, outDType: attrs.dtype, nInputs: 1, ndim: out.ndim }), {
      kind: 'pointwise', out: view(out), inputs: [view(x)], shape: out.shape, params: [],
    });
  },
  backward: (g: Tensor, ctx: BackwardContext<CastAttrs>) => [isFloat(ctx.inputDTypes[0]!) ? cast(g, ctx.inputDTypes[0]!) : null],
  saveInputs: false,
  formatAttrs: (a) => a.dtype,
};

export const cast = publicOp('cast', function cast(x: Tensor, dtype: DType): Tensor {
  assertDType(dtype, 'cast');
  return apply(castPrim, [x], { dtype });
});

/** A contiguous copy (torch's clone / contiguous), same dtype. */
export const copy = publicOp('clone', function copy(x: Tensor): Tensor {
  return pointwise('identity', [x]);
});
