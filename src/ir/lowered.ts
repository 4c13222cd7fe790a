// The lowered program: what scheduling makes of a graph and what a program runs. Loop kernels
// and opaque steps over planned buffers, the graph's outputs as views of them, and the fusion
// decisions with their reasons. An opaque step runs an eager kernel of the graph IR's node,
// which lives in the compiler (its nodes hold op definitions and constants): the node type is
// a parameter here, and backends, which never look inside it, leave it `unknown`.

import type { DType, TypedArray } from '../core/dtype.js';
import type { LoopKernel } from './loop-ir.js';

export interface BufferInfo {
  readonly id: number;
  readonly dtype: DType;
  readonly size: number;
  readonly kind: 'input' | 'constant' | 'scratch';
  /** the graph node it holds */
  readonly node: number;
  readonly data?: TypedArray;
}

/** A tensor as a strided window of a buffer. */
export interface BufferView {
  readonly buf: number;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
  readonly dtype: DType;
}

export type Step<Opaque = unknown> =
  | { readonly kind: 'kernel'; readonly kernel: LoopKernel }
  | { readonly kind: 'opaque'; readonly node: Opaque; readonly inputs: readonly BufferView[]; readonly out: BufferView };

export interface FusionDecision {
  readonly decision: 'fused' | 'materialized' | 'opaque' | 'inlined' | 'autotuned';
  readonly nodes: readonly number[];
  readonly reason: string;
}

export interface Lowered<Opaque = unknown> {
  readonly steps: Step<Opaque>[];
  readonly buffers: BufferInfo[];
  /** buffer of each graph input node, in input order */
  readonly inputBuffers: number[];
  readonly outputs: BufferView[];
  /** every fusion decision, with its reason (KILN_LOGS=fusion) */
  readonly decisions: FusionDecision[];
  /** the op of each graph node, by node id (the profiler names what a kernel fused) */
  readonly nodeOps?: readonly string[];
}
