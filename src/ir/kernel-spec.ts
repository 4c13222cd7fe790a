// What a backend is asked to run. A spec says what the kernel computes (and is the
// cache key for prepared code); the args say which buffers and sizes it runs on.

import type { DType } from '../core/dtype.js';
import type { ScalarExpr } from './scalar-expr.js';
import type { LoopKernel } from './loop-ir.js';

/** An opaque buffer owned by a backend (src/backend/backend.ts): the args name buffers by it. */
export interface BackendBuffer {
  readonly dtype: DType;
  readonly size: number;
}

export type RandomDist = 'uniform' | 'normal' | 'integer';

/** A strided window onto a buffer. */
export interface ViewArg {
  readonly buf: BackendBuffer;
  readonly offset: number;
  readonly strides: readonly number[];
}

export type ReduceOp = 'sum' | 'prod' | 'max' | 'min' | 'argmax' | 'argmin';
/** a running product, or the index of the running max / min (ties and NaN: torch's cummax / cummin) */
export type ScanOp = 'prod' | 'argmax' | 'argmin';

export type KernelSpec =
  | { readonly kind: 'pointwise'; readonly expr: ScalarExpr; readonly outDType: DType; readonly nInputs: number; readonly ndim: number }
  | { readonly kind: 'reduce'; readonly op: ReduceOp; readonly inDType: DType; readonly outDType: DType; readonly nKeep: number; readonly nReduce: number }
  | { readonly kind: 'matmul'; readonly dtype: DType; readonly nBatch: number }
  | { readonly kind: 'gather'; readonly dtype: DType; readonly ndim: number }
  | { readonly kind: 'scatterAdd'; readonly dtype: DType; readonly ndim: number }
  | { readonly kind: 'indexSelect'; readonly dtype: DType }
  | { readonly kind: 'indexAdd'; readonly dtype: DType }
  | { readonly kind: 'im2col'; readonly dtype: DType }
  | { readonly kind: 'col2im'; readonly dtype: DType }
  | { readonly kind: 'cumsum'; readonly dtype: DType }
  | { readonly kind: 'scan'; readonly op: ScanOp; readonly dtype: DType }
  /** int32 indices that sort each row (stable; NaN sorts as the largest value, as in torch) */
  | { readonly kind: 'sort'; readonly dtype: DType; readonly descending: boolean }
  /** 'integer': floor(u * (high - low) + low) of the uniform stream, computed in float64 (randint) */
  | { readonly kind: 'random'; readonly dist: RandomDist; readonly dtype: DType }
  /** a fused kernel from the compiler's loop IR, over a program's buffer list */
  | { readonly kind: 'loop'; readonly kernel: LoopKernel; readonly nBuffers: number };

/** Convolution window geometry shared by im2col and col2im. */
export interface WindowGeometry {
  readonly n: number; readonly c: number; readonly h: number; readonly w: number;
  readonly kh: number; readonly kw: number;
  readonly sh: number; readonly sw: number;
  readonly ph: number; readonly pw: number;
  readonly dh: number; readonly dw: number;
  readonly oh: number; readonly ow: number;
  /** value of padded positions (0 for conv, -Infinity for max pooling) */
  readonly padValue: number;
}

/** A kernel along the middle dim of contiguous [outer, len, inner] data (cumsum, scan, sort). */
export interface AlongDimArgs {
  readonly input: ViewArg;
  readonly out: ViewArg;
  readonly outer: number;
  readonly len: number;
  readonly inner: number;
}

export type KernelArgs =
  | { readonly kind: 'pointwise'; readonly out: ViewArg; readonly inputs: readonly ViewArg[]; readonly shape: readonly number[]; readonly params: readonly number[] }
  | { readonly kind: 'reduce'; readonly input: ViewArg; readonly out: ViewArg; readonly keepShape: readonly number[]; readonly reduceShape: readonly number[] }
  | {
      readonly kind: 'matmul'; readonly a: ViewArg; readonly b: ViewArg; readonly out: ViewArg;
      readonly batchShape: readonly number[]; readonly m: number; readonly n: number; readonly k: number;
    }
  | { readonly kind: 'gather'; readonly input: ViewArg; readonly index: ViewArg; readonly out: ViewArg; readonly shape: readonly number[]; readonly dim: number; readonly dimSize: number }
  | { readonly kind: 'scatterAdd'; readonly src: ViewArg; readonly index: ViewArg; readonly out: ViewArg; readonly shape: readonly number[]; readonly dim: number; readonly dimSize: number }
  | { readonly kind: 'indexSelect'; readonly input: ViewArg; readonly index: ViewArg; readonly out: ViewArg; readonly outer: number; readonly inDim: number; readonly inner: number; readonly count: number }
  | { readonly kind: 'indexAdd'; readonly src: ViewArg; readonly index: ViewArg; readonly out: ViewArg; readonly outer: number; readonly outDim: number; readonly inner: number; readonly count: number }
  | { readonly kind: 'im2col' | 'col2im'; readonly image: ViewArg; readonly cols: ViewArg; readonly geom: WindowGeometry }
  | ({ readonly kind: 'cumsum' } & AlongDimArgs)
  | ({ readonly kind: 'scan' } & AlongDimArgs)
  | ({ readonly kind: 'sort' } & AlongDimArgs)
  | { readonly kind: 'random'; readonly out: ViewArg; readonly size: number; readonly seed: number; readonly offset: number; readonly low?: number; readonly high?: number }
  /**
   * `range`: run only [lo, hi) of the kernel's split loop, on this thread (autotuning);
   * `stable`: per buffer, what identifies its content across launches where it can stay the same
   * (a program's inputs it does not write, its constants): the same object with the same version
   * means the same content (a backend may keep data derived from it, e.g. a packed matmul operand)
   */
  | { readonly kind: 'loop'; readonly buffers: readonly BackendBuffer[]; readonly range?: readonly [number, number]; readonly stable?: readonly (ContentVersion | undefined)[] };

/** A buffer's content identity: a Storage (its version moves with every in-place write), or a constant's fixed object. */
export interface ContentVersion {
  readonly version: number;
}
