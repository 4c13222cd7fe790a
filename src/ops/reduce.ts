// Reductions: sum, prod, max, min, argmax, argmin as primitives over any set of dims;
// mean, var, std, logsumexp, softmax, logSoftmax as decompositions.

import type { DType } from '../core/dtype.js';
import { isFloat } from '../core/dtype.js';
import { ArgumentError, IndexError, fmtShape } from '../core/errors.js';
import { normalizeDim, normalizeDims } from '../core/shape.js';
import type { ReduceOp } from '../ir/kernel-spec.js';
import { Tensor } from '../tensor/tensor.js';
import { noGrad } from '../autograd/grad-mode.js';
import { apply, view, type PrimDef, expectTensor } from './dispatch.js';
import * as m from './math.js';
import { expand, reshape } from './movement.js';
import { cast } from './pointwise.js';
import { gather } from './indexing.js';
import { asPublicOp, publicOp } from '../core/user-op.js';

export interface ReduceAttrs {
  readonly dims: readonly number[];
  readonly keepdim: boolean;
}

function reducedShape(shape: readonly number[], dims: readonly number[], keepdim: boolean): number[] {
  const out: number[] = [];
  shape.forEach((s, d) => {
    if (!dims.includes(d)) out.push(s);
    else if (keepdim) out.push(1);
  });
  return out;
}

function outDType(op: ReduceOp, dtype: DType): DType {
  if (op === 'argmax' || op === 'argmin') return 'int32';
  if ((op === 'sum' || op === 'prod') && !isFloat(dtype)) return 'int32';
  return dtype;
}

function makeReducePrim(op: ReduceOp): PrimDef<ReduceAttrs> {
  return {
    name: op,
    meta(inputs, a) {
      const x = inputs[0]!;
      if ((op === 'max' || op === 'min' || op === 'argmax' || op === 'argmin') && a.dims.some((d) => x.shape[d] === 0)) {
        throw new IndexError(`cannot reduce over an empty dim of ${fmtShape(x.shape)}`, op, 'the reduction has no identity; check the input size');
      }
      return { shape: reducedShape(x.shape, a.dims, a.keepdim), dtype: outDType(op, x.dtype) };
    },
    run(inputs, out, a) {
      const x = inputs[0]!;
      const keep = x.shape.map((_, d) => d).filter((d) => !a.dims.includes(d));
      let reduceShape = a.dims.map((d) => x.shape[d]!);
      let inStrides = [...keep.map((d) => x.strides[d]!), ...a.dims.map((d) => x.strides[d]!)];
      if (reduceShape.length === 0) {
        reduceShape = [1];
        inStrides = [...inStrides, 0];
      }
      // out is contiguous; the stride of each kept dim in it
      const outStrides: number[] = [];
      let s = 1;
      for (let i = keep.length - 1; i >= 0; i--) {
        outStrides[i] = s;
        s *= x.shape[keep[i]!]!;
      }
      const backend = out.storage.backend;
      const kernel = backend.prepare({ kind: 'reduce', op, inDType: x.dtype, outDType: out.dtype, nKeep: keep.length, nReduce: reduceShape.length });
      backend.launch(kernel, {
        kind: 'reduce',
        input: { buf: x.storage.buf, offset: x.offset, strides: inStrides },
        out: { ...view(out), strides: outStrides },
        keepShape: keep.map((d) => x.shape[d]!),
        reduceShape,
      });
    },
    backward: REDUCE_GRADS[op],
    saveInputs: op !== 'sum',
    saveOutput: op === 'max' || op === 'min',
    formatAttrs: (a) => `dims=${fmtShape(a.dims)}${a.keepdim ? ', keepdim' : ''}`,
  };
}

/** Reshapes a reduced gradient (or output) back to broadcast against the input. */
function unreduce(g: Tensor, inShape: readonly number[], a: ReduceAttrs): Tensor {
  const kept = a.keepdim ? g : reshape(g, reducedShape(inShape, a.dims, true));
  return expand(kept, inShape);
}

const REDUCE_GRADS: Record<ReduceOp, PrimDef<ReduceAttrs>['backward']> = {
  sum: (g, ctx) => [unreduce(g, ctx.inputShapes[0]!, ctx.attrs)],
  prod: (g, ctx) => [prodGrad(g, ctx.inputs[0]!, ctx.attrs)],
  max: (g, ctx) => [extremeGrad(g, ctx.inputs[0]!, ctx.output!, ctx.attrs)],
  min: (g, ctx) => [extremeGrad(g, ctx.inputs[0]!, ctx.output!, ctx.attrs)],
  argmax: undefined,
  argmin: undefined,
};

/**
 * Gradient of prod: the product of the other elements. With P the product of the slice's
 * non-zero elements: P / x where the slice has no zero; where it has exactly one, P at the
 * zero and 0 elsewhere; with two or more, 0 everywhere (torch's rule; out / x is 0 / 0 there).
 */
function prodGrad(g: Tensor, x: Tensor, a: ReduceAttrs): Tensor {
  const isZero = m.eq(x, 0);
  const kept = { ...a, keepdim: true };
  const zeros = unreduce(sum(isZero, a.dims, true), x.shape, kept);
  const p = unreduce(prod(m.where(isZero, 1, x), a.dims, true), x.shape, kept);
  const others = m.where(m.eq(zeros, 0), m.div(p, x), m.where(m.logicalAnd(m.eq(zeros, 1), isZero), p, 0));
  return m.mul(others, unreduce(g, x.shape, a));
}

/** Gradient of max/min: shared evenly among the elements equal to the extreme. */
function extremeGrad(g: Tensor, x: Tensor, out: Tensor, a: ReduceAttrs): Tensor {
  const mask = cast(m.eq(x, unreduce(out, x.shape, a)), x.dtype);
  const count = sum(mask, a.dims, true);
  return m.mul(m.div(mask, count), unreduce(g, x.shape, a));
}

const PRIMS = {
  sum: makeReducePrim('sum'),
  prod: makeReducePrim('prod'),
  max: makeReducePrim('max'),
  min: makeReducePrim('min'),
  argmax: makeReducePrim('argmax'),
  argmin: makeReducePrim('argmin'),
};
export const REDUCE_PRIMS: Readonly<Record<ReduceOp, PrimDef<ReduceAttrs>>> = PRIMS;

type Dims = number | readonly number[] | undefined;

function reduce(op: ReduceOp, x: Tensor, dim: Dims, keepdim: boolean): Tensor {
  expectTensor(op, x);
  x.assertAlive(op);
  const dims = normalizeDims(op, dim, x.ndim, x.shape);
  return apply(PRIMS[op], [x], { dims, keepdim });
}

export const sum = publicOp('sum', (x: Tensor, dim?: Dims, keepdim = false): Tensor => reduce('sum', x, dim, keepdim));
export const prod = publicOp('prod', (x: Tensor, dim?: Dims, keepdim = false): Tensor => reduce('prod', x, dim, keepdim));
/** Max over dims (torch.amax); with no dim, the max of all elements. The gradient is shared among ties. */
export const amax = publicOp('amax', (x: Tensor, dim?: Dims, keepdim = false): Tensor => reduce('max', x, dim, keepdim));
export const amin = publicOp('amin', (x: Tensor, dim?: Dims, keepdim = false): Tensor => reduce('min', x, dim, keepdim));

/** torch's (values, indices) result of max/min with a dim, sort, topk, kthvalue, cummax, cummin. */
export interface ValuesIndices {
  readonly values: Tensor;
  /** int32 positions along the dim */
  readonly indices: Tensor;
}

/**
 * torch.max: of all elements (no dim); along `dim`, the values and int32 indices of the first
 * maximum (the gradient goes to that element, as in torch); with a tensor, the elementwise maximum.
 */
export function max(x: Tensor): Tensor;
export function max(x: Tensor, dim: number, keepdim?: boolean): ValuesIndices;
export function max(x: Tensor, other: Tensor): Tensor;
export function max(x: Tensor, dimOrOther?: number | Tensor, keepdim = false): Tensor | ValuesIndices {
  return asPublicOp('max', () => extreme('max', x, dimOrOther, keepdim));
}

/** torch.min: as max, for the minimum. */
export function min(x: Tensor): Tensor;
export function min(x: Tensor, dim: number, keepdim?: boolean): ValuesIndices;
export function min(x: Tensor, other: Tensor): Tensor;
export function min(x: Tensor, dimOrOther?: number | Tensor, keepdim = false): Tensor | ValuesIndices {
  return asPublicOp('min', () => extreme('min', x, dimOrOther, keepdim));
}

function extreme(op: 'max' | 'min', x: Tensor, dimOrOther: unknown, keepdim: boolean): Tensor | ValuesIndices {
  expectTensor(op, x, 'x');
  if (dimOrOther === undefined) return reduce(op, x, undefined, false);
  if (dimOrOther instanceof Tensor) return op === 'max' ? m.maximum(x, dimOrOther) : m.minimum(x, dimOrOther);
  if (typeof dimOrOther !== 'number') {
    throw new ArgumentError(`dim must be one number (or a tensor for the elementwise ${op}imum), got ${JSON.stringify(dimOrOther)}`, op, `kiln.a${op}(x, dims) reduces over several dims`);
  }
  const nd = Math.max(x.ndim, 1);
  const d = normalizeDim(op, dimOrOther, nd, x.shape);
  const xs = x.ndim === 0 ? reshape(x, [1]) : x;
  const indices = reduce(op === 'max' ? 'argmax' : 'argmin', xs, d, true);
  // the value at the index: its gradient flows to that one element (torch), not to every tie
  const values = gather(xs, d, indices);
  const shape = x.ndim === 0 ? [] : keepdim ? values.shape : values.shape.filter((_, i) => i !== d);
  return { values: reshape(values, shape), indices: reshape(indices, shape) };
}

export const argmax = publicOp('argmax', function argmax(x: Tensor, dim?: number, keepdim = false): Tensor {
  expectTensor('argmax', x, 'x');
  if (dim === undefined) return reduce('argmax', reshape(x, [-1]), 0, false);
  return reduce('argmax', x, normalizeDim('argmax', dim, x.ndim, x.shape), keepdim);
});
export const argmin = publicOp('argmin', function argmin(x: Tensor, dim?: number, keepdim = false): Tensor {
  expectTensor('argmin', x, 'x');
  if (dim === undefined) return reduce('argmin', reshape(x, [-1]), 0, false);
  return reduce('argmin', x, normalizeDim('argmin', dim, x.ndim, x.shape), keepdim);
});

/** Validates dims (errors name `op`, the op the caller called) and counts the reduced elements. */
function countOf(op: string, x: Tensor, dim: Dims): number {
  x.assertAlive(op);
  return normalizeDims(op, dim, x.ndim, x.shape).reduce((n, d) => n * x.shape[d]!, 1);
}

export const mean = publicOp('mean', function mean(x: Tensor, dim?: Dims, keepdim = false): Tensor {
  expectTensor('mean', x, 'x');
  const n = countOf('mean', x, dim);
  const xf = isFloat(x.dtype) ? x : cast(x, 'float32');
  return m.mul(sum(xf, dim, keepdim), 1 / n);
});

/** Variance with Bessel's correction by default (torch's correction=1). */
export const variance = publicOp('var', function variance(x: Tensor, dim?: Dims, keepdim = false, correction = 1): Tensor {
  expectTensor('variance', x, 'x');
  return varianceOf('var', x, dim, keepdim, correction);
});

function varianceOf(op: string, x: Tensor, dim: Dims, keepdim: boolean, correction: number): Tensor {
  const n = countOf(op, x, dim);
  const mu = mean(x, dim, true);
  const d = m.sub(x, mu);
  return m.mul(sum(m.mul(d, d), dim, keepdim), 1 / Math.max(n - correction, 0));
}

export const std = publicOp('std', function std(x: Tensor, dim?: Dims, keepdim = false, correction = 1): Tensor {
  expectTensor('std', x, 'x');
  return m.sqrt(varianceOf('std', x, dim, keepdim, correction));
});

/** The max along dims, detached and with infinities replaced by 0, for stable exp. */
function stabilizer(x: Tensor, dim: Dims): Tensor {
  return noGrad(() => {
    const mx = amax(x, dim, true);
    return m.where(m.isinf(mx), 0, mx);
  });
}

export const logsumexp = publicOp('logsumexp', function logsumexp(x: Tensor, dim?: Dims, keepdim = false): Tensor {
  expectTensor('logsumexp', x, 'x');
  x.assertAlive('logsumexp');
  const dims = normalizeDims('logsumexp', dim, x.ndim, x.shape);
  const s = stabilizer(x, dim);
  const r = m.add(m.log(sum(m.exp(m.sub(x, s)), dim, true)), s);
  return keepdim ? r : reshape(r, reducedShape(x.shape, dims, false));
});

export const softmax = publicOp('softmax', function softmax(x: Tensor, dim = -1): Tensor {
  expectTensor('softmax', x, 'x');
  x.assertAlive('softmax');
  normalizeDim('softmax', dim, x.ndim, x.shape);
  const e = m.exp(m.sub(x, stabilizer(x, dim)));
  return m.div(e, sum(e, dim, true));
});

export const logSoftmax = publicOp('logSoftmax', function logSoftmax(x: Tensor, dim = -1): Tensor {
  expectTensor('logSoftmax', x, 'x');
  x.assertAlive('logSoftmax');
  normalizeDim('logSoftmax', dim, x.ndim, x.shape);
  return m.sub(x, logsumexp(x, dim, true));
});
