// The Tensor handle: metadata (shape, strides, offset, dtype) over a shared Storage,
// plus autograd state. Ops and methods are attached in ops/ (ops/tensor-methods.ts), so
// this file depends on nothing above it.

import type { DType, TypedArray } from '../core/dtype.js';
import { isFloat } from '../core/dtype.js';
import { AutogradError, DisposedError, fmtShape } from '../core/errors.js';
import { contiguousStrides, isContiguous, numel } from '../core/shape.js';
import { track, untrack } from '../core/scope.js';
import { memoryStats, type Storage } from './storage.js';

/** What autograd attaches to a tensor produced by a differentiable op. */
export interface GradFnRef {
  readonly name: string;
  retain(): void;
  release(): void;
}

/** Set by the compiler while it traces: tensors made then are proxies without storage. */
export interface TraceInfo {
  readonly tracer: unknown;
  readonly id: number;
}

let nextId = 1;

// Safety net: a handle collected without dispose() still releases its storage.
const finalizer = new FinalizationRegistry<{ storage: Storage | null; gradFn: GradFnRef | null; counted: boolean }>((held) => {
  held.storage?.release();
  held.gradFn?.release();
  if (held.counted) memoryStats.liveTensors--;
});

export class Tensor {
  readonly id = nextId++;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
  readonly dtype: DType;
  /** null for a traced proxy */
  private _storage: Storage | null;
  private _gradFn: GradFnRef | null = null;
  private _gradSlot = 0;
  private _requiresGrad = false;
  private _disposed = false;
  private readonly token: { storage: Storage | null; gradFn: GradFnRef | null; counted: boolean };
  private _grad: Tensor | null = null;
  /** the leaf whose .grad this tensor is (so a tracer can capture grads by owner, not identity) */
  gradOwner: Tensor | null = null;
  /** set by kiln.keep(): the tensor outlives scopes (parameters, optimizer state) */
  kept = false;
  /** for an internal alias (autograd's saved tensors): the tensor whose memory it shares */
  aliasOf?: Tensor;
  /** a user-facing name (parameters get theirs from the module tree) */
  name?: string;
  trace?: TraceInfo;

  constructor(storage: Storage | null, shape: readonly number[], strides: readonly number[] | undefined, offset: number, dtype: DType, internal = false) {
    this.shape = shape;
    this.strides = strides ?? contiguousStrides(shape);
    this.offset = offset;
    this.dtype = dtype;
    this._storage = storage;
    storage?.retain();
    this.token = { storage, gradFn: null, counted: !internal };
    if (!internal) {
      memoryStats.liveTensors++;
      track(this);
    }
    finalizer.register(this, this.token, this);
  }

  get grad(): Tensor | null {
    return this._grad;
  }
  set grad(g: Tensor | null) {
    tensorHooks.onGradWrite?.(this, this._grad, g);
    if (g) g.gradOwner = this;
    this._grad = g;
  }

  get ndim(): number {
    return this.shape.length;
  }
  get size(): number {
    return numel(this.shape);
  }
  /** torch's numel() */
  numel(): number {
    return numel(this.shape);
  }
  get isDisposed(): boolean {
    return this._disposed;
  }
  get isContiguous(): boolean {
    return isContiguous(this.shape, this.strides);
  }
  get isLeaf(): boolean {
    return this._gradFn === null;
  }
  get gradFn(): GradFnRef | null {
    return this._gradFn;
  }
  /** which output of gradFn this tensor is (0 except for compiled functions' results) */
  get gradSlot(): number {
    return this._gradSlot;
  }
  get requiresGrad(): boolean {
    return this._requiresGrad;
  }
  set requiresGrad(v: boolean) {
    if (v && !isFloat(this.dtype)) {
      throw new AutogradError(`only floating point tensors can require gradients, got ${this.dtype}`, 'requiresGrad', 'cast with .float() first');
    }
    if (!v && this._gradFn) {
      throw new AutogradError('cannot turn off requiresGrad on a non-leaf tensor', 'requiresGrad', 'use .detach() to get a tensor outside the graph');
    }
    this._requiresGrad = v;
  }

  /** The storage, checked: throws on a disposed tensor or a traced proxy. */
  get storage(): Storage {
    this.assertAlive('access');
    if (!this._storage) throw new AutogradError('a traced tensor has no data while tracing', 'storage');
    return this._storage;
  }
  get hasStorage(): boolean {
    return this._storage !== null;
  }
  get backendName(): string {
    return this._storage?.backend.name ?? 'trace';
  }

  /** Used by the compiler at a graph break: a traced proxy receives its computed storage. */
  materialize(storage: Storage, strides: readonly number[], offset: number): void {
    if (this._storage) throw new Error('kiln internal: materialize() on a tensor that has storage');
    if (this._disposed) return;
    // the compiled program decides the layout of what it computes
    (this as { strides: readonly number[] }).strides = strides;
    (this as { offset: number }).offset = offset;
    storage.retain();
    this._storage = storage;
    this.token.storage = storage;
    this.trace = undefined;
  }

  /** Used by autograd: attach the node that produced this tensor (output `slot` of it), replacing any earlier one. */
  setGradFn(node: GradFnRef, slot = 0): void {
    node.retain();
    this._gradFn?.release();
    this._gradFn = node;
    this._gradSlot = slot;
    this.token.gradFn = node;
    this._requiresGrad = true;
  }

  assertAlive(op: string): void {
    if (this._disposed) {
      throw new DisposedError(
        `tensor ${fmtShape(this.shape)} ${this.dtype}${this.name ? ` '${this.name}'` : ''} was used after dispose()`,
        op,
        'keep it alive with kiln.keep(t), return it from the kiln.scope that made it, or clone it before disposing',
      );
    }
  }

  /** Releases the storage reference now. Idempotent. */
  dispose(): void {
    if (this._disposed) return;
    if (tensorHooks.deferDispose?.(this)) return;
    this._disposed = true;
    finalizer.unregister(this);
    untrack(this);
    this._storage?.release();
    this._storage = null;
    this._gradFn?.release();
    this._gradFn = null;
    if (this.token.counted) memoryStats.liveTensors--;
    this._grad?.dispose();
    this._grad = null;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** Typed array of this tensor's elements in row-major order (a copy unless contiguous from offset 0). */
  dataSync(): TypedArray {
    return readContiguous(this);
  }
}

/** Set by the compiler's tracer to observe side effects that happen on tensors while it traces. */
export const tensorHooks: {
  onGradWrite?: (leaf: Tensor, old: Tensor | null, next: Tensor | null) => void;
  /** return true to postpone a dispose until the traced segment has run */
  deferDispose?: (t: Tensor) => boolean;
} = {};

/** Hook for read-outs (set by ops/dispatch to make a contiguous copy and notify a tracer). */
export const readHooks: { readContiguous: (t: Tensor) => TypedArray } = {
  readContiguous: () => {
    throw new Error('kiln: ops not loaded');
  },
};

function readContiguous(t: Tensor): TypedArray {
  return readHooks.readContiguous(t);
}

export function isTensor(x: unknown): x is Tensor {
  return x instanceof Tensor;
}
