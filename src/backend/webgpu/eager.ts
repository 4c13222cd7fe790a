// Eager kernels on WebGPU: pointwise, reduction and matmul specs are written as loop-IR
// kernels over [out, ...inputs] and rendered by the same WGSL renderer as compiled programs.
// Shapes, strides and parameters become constants of the shader (one pipeline per distinct
// kernel, cached by its WGSL source). Ops with no WGSL kernel raise a typed error.

import type { Affine, LExpr, LoopKernel } from '../../ir/loop-ir.js';
import type { BackendBuffer } from '../backend.js';
import { coalesce } from '../iteration.js';
import type { KernelArgs, KernelSpec } from '../../ir/kernel-spec.js';
import type { ScalarExpr } from '../../ir/scalar-expr.js';
import { WebGpuUnsupportedError } from './errors.js';

export interface EagerLaunch {
  readonly kernel: LoopKernel;
  readonly buffers: readonly BackendBuffer[];
}

const aff = (strides: readonly number[], offset: number, pad = 0): Affine => ({ c: [...strides, ...new Array<number>(pad).fill(0)], o: offset });

function toLExpr(e: ScalarExpr, at: readonly Affine[], params: readonly number[]): LExpr {
  switch (e.kind) {
    case 'input': return { k: 'load', buf: e.index + 1, at: at[e.index]!, dtype: e.dtype };
    case 'param': return { k: 'const', v: params[e.index]! };
    case 'const': return { k: 'const', v: e.value };
    case 'cast': return { k: 'cast', a: toLExpr(e.arg, at, params), dtype: e.dtype };
    case 'op': return { k: 'op', op: e.op, a: e.args.map((x) => toLExpr(x, at, params)), dtype: e.dtype };
  }
}

/** The loop kernel (and its buffer list) an eager spec computes. */
export function eagerKernel(spec: KernelSpec, args: KernelArgs): EagerLaunch {
  if (spec.kind === 'pointwise' && args.kind === 'pointwise') {
    const c = coalesce(args.shape, [args.out.strides, ...args.inputs.map((v) => v.strides)]);
    const at = args.inputs.map((v, i) => aff(c.strides[i + 1]!, v.offset));
    const kernel: LoopKernel = {
      kind: 'pointwise', name: 'eager_pointwise', shape: c.shape, body: [],
      stores: [{ buf: 0, at: aff(c.strides[0]!, args.out.offset), value: toLExpr(spec.expr, at, args.params), dtype: spec.outDType, node: -1 }],
    };
    return { kernel, buffers: [args.out.buf, ...args.inputs.map((v) => v.buf)] };
  }
  if (spec.kind === 'reduce' && args.kind === 'reduce') {
    const nk = args.keepShape.length;
    const kernel: LoopKernel = {
      kind: 'row', name: `eager_${spec.op}`, outer: args.keepShape, inner: args.reduceShape,
      reductions: [{ id: 0, op: spec.op, body: [], value: { k: 'load', buf: 1, at: aff(args.input.strides, args.input.offset), dtype: spec.inDType }, node: -1 }],
      outerBody: [], rowBody: [], rowStores: [],
      outerStores: [{ buf: 0, at: aff(args.out.strides.slice(0, nk), args.out.offset, args.reduceShape.length), value: { k: 'red', id: 0 }, dtype: spec.outDType, node: -1 }],
    };
    return { kernel, buffers: [args.out.buf, args.input.buf] };
  }
  if (spec.kind === 'matmul' && args.kind === 'matmul') {
    const nb = args.batchShape.length;
    const kernel: LoopKernel = {
      kind: 'matmul', name: 'eager_matmul', dtype: spec.dtype, batch: args.batchShape, m: args.m, n: args.n, k: args.k,
      a: { buf: 1, base: aff(args.a.strides.slice(0, nb), args.a.offset), sRow: args.a.strides[nb]!, sCol: args.a.strides[nb + 1]! },
      b: { buf: 2, base: aff(args.b.strides.slice(0, nb), args.b.offset), sRow: args.b.strides[nb]!, sCol: args.b.strides[nb + 1]! },
      body: [],
      stores: [{ buf: 0, at: aff(args.out.strides, args.out.offset), value: { k: 'acc' }, dtype: spec.dtype, node: -1 }],
    };
    return { kernel, buffers: [args.out.buf, args.a.buf, args.b.buf] };
  }
  throw unsupported(spec.kind);
}

function unsupported(kind: string): WebGpuUnsupportedError {
  const what = kind === 'im2col' || kind === 'col2im' ? `${kind} (conv2d and pooling)`
    : kind === 'random' ? 'random (rand, randn, dropout, parameter initialization)'
    : kind === 'sort' ? 'sort (sort, argsort, topk, kthvalue, randperm, multinomial without replacement)'
    : kind === 'scan' ? 'scan (cumprod, cummax, cummin)'
    : kind;
  return new WebGpuUnsupportedError(`${what} is not supported on webgpu yet`, kind, kind === 'random'
    ? 'create the tensor on the CPU backend and move it with kiln.toBackend(t, gpu)'
    : 'run this op on the CPU backend (kiln.toBackendAsync to move data back) or avoid it on the GPU for now');
}
