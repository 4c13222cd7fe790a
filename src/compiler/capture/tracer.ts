// The tracer: while a compiled function runs for the first time, every op records a
// node instead of computing, and tensors are proxies (shape and dtype, no data).
// Concrete tensors the function touches (parameters, optimizer state, grads) become
// graph inputs captured by reference; in-place writes and .grad assignments become
// recorded effects (functionalization).

import type { TypedArray } from '../../core/dtype.js';
import { contiguousStrides, shapesEqual } from '../../core/shape.js';
import type { OutMeta, PrimDef, TraceHook } from '../../ops/dispatch.js';
import { apply } from '../../ops/dispatch.js';
import { castPrim } from '../../ops/pointwise.js';
import { expandPrim } from '../../ops/movement.js';
import { Tensor } from '../../tensor/tensor.js';
import { Graph, type GraphNode, type InputSource } from './graph.js';
import { GraphBreakError } from '../errors.js';

export interface BreakRequest {
  readonly reason: string;
  readonly tensor?: Tensor;
}

export class Tracer implements TraceHook {
  graph: Graph;
  /** current value node of each concrete tensor captured (updated by in-place writes) */
  private readonly valueOf = new Map<Tensor, number>();
  /** the input node first created for each concrete tensor (the write-back target) */
  private readonly inputOf = new Map<Tensor, number>();
  /** every proxy handle per node, so a graph break can hand them their data */
  readonly proxies = new Map<number, Tensor[]>();
  /** leaves whose .grad the function assigned, in order of first write, with that first write */
  readonly gradWrites = new Map<Tensor, { initial: Tensor | null; first: Tensor | null }>();
  /** proxies of arguments that require grad, by path */
  private readonly argPaths = new Map<Tensor, string>();
  /** handles autograd saved for backward (not the user's): a compiled backward replaces what they serve */
  private readonly internalAliases = new Set<Tensor>();
  /** concrete tensors disposed while tracing, released after the segment ran */
  readonly deferred: Tensor[] = [];
  segment = 0;
  /** random values drawn in this segment (the placeholder offset of the next draw) */
  private randomDrawn = 0;

  constructor(
    readonly name: string,
    /** runs the graph so far and returns the real data of `tensor` (the driver's job) */
    private readonly onBreak: (tracer: Tracer, req: BreakRequest) => TypedArray | undefined,
  ) {
    this.graph = new Graph(`${name}#0`);
  }

  /** An input node for a user argument; returns the proxy the function receives. */
  argInput(t: Tensor, path: string): Tensor {
    const node = this.graph.add({
      op: 'input', inputs: [], meta: metaOf(t), source: { kind: 'arg', path }, requiresGrad: t.requiresGrad,
    });
    this.valueOf.set(t, node.id);
    this.inputOf.set(t, node.id);
    const proxy = this.makeProxy(node, t);
    if (t.requiresGrad) {
      proxy.requiresGrad = true;
      this.argPaths.set(proxy, path);
      if (t.grad) {
        // a backward inside the function accumulates into the argument's current .grad: it is an input
        const g = this.graph.add({ op: 'input', inputs: [], meta: metaOf(t.grad), source: { kind: 'arg', path, grad: true }, requiresGrad: false });
        proxy.grad = this.makeProxy(g, t.grad);
        this.gradWrites.delete(proxy);
      }
    }
    return proxy;
  }

  /** The argument path of a proxy the function received (a leaf whose .grad lands on the caller's tensor). */
  argPathOf(proxy: Tensor): string | undefined {
    return this.argPaths.get(proxy);
  }

  /** An input node the compiler adds (a backward's tangents, path '@tangent[i]'): contiguous, no tensor behind it. */
  extraInput(path: string, shape: readonly number[], dtype: Tensor['dtype']): Tensor {
    const node = this.graph.add({
      op: 'input', inputs: [], meta: { shape, dtype, strides: contiguousStrides(shape), offset: 0 }, source: { kind: 'arg', path }, requiresGrad: false,
    });
    return this.makeProxy(node);
  }

  /** The input node of a tensor the function received or captured (undefined for values it made). */
  inputNodeOf(t: Tensor): number | undefined {
    if (t.trace) return t.trace.tracer === this && this.graph.nodes[t.trace.id]?.op === 'input' ? t.trace.id : undefined;
    return this.inputOf.get(t.aliasOf && !t.aliasOf.isDisposed ? t.aliasOf : t);
  }

  /** Captured concrete tensors that carry autograd history of their own (made by eager code, or an earlier segment). */
  capturedWithHistory(): { tensor: Tensor; input: number }[] {
    return [...this.inputOf].filter(([t]) => t.gradFn !== null).map(([tensor, input]) => ({ tensor, input }));
  }

  /** The node that holds a tensor's current value, capturing concrete tensors by reference. */
  nodeOf(t: Tensor): number {
    if (t.trace) {
      if (t.trace.tracer !== this) throw new GraphBreakError('a tensor traced by another compiled function leaked into this one', 'use the tensor only inside the function that made it');
      return t.trace.id;
    }
    // autograd saves aliases of the tensors it needs: they are the tensor they alias
    if (t.aliasOf && !t.aliasOf.isDisposed) return this.nodeOf(t.aliasOf);
    const v = this.valueOf.get(t);
    if (v !== undefined) return v;
    t.assertAlive('compile');
    const owner = t.gradOwner && t.gradOwner.grad === t ? t.gradOwner : null;
    const source: InputSource = owner
      ? { kind: 'grad', leaf: owner, label: `${owner.name ?? `tensor#${owner.id}`}.grad`, seen: t }
      : { kind: 'ref', tensor: t, label: t.name ?? `tensor#${t.id}` };
    const node = this.graph.add({ op: 'input', inputs: [], meta: metaOf(t), source, requiresGrad: false });
    this.valueOf.set(t, node.id);
    this.inputOf.set(t, node.id);
    return node.id;
  }

  record<A>(prim: PrimDef<A>, inputs: readonly Tensor[], attrs: A, meta: OutMeta): Tensor {
    const ids = inputs.map((t) => this.nodeOf(t));
    const node = this.graph.add({
      op: prim.name, prim: prim as PrimDef<unknown>, inputs: ids, attrs,
      meta: { shape: meta.shape, dtype: meta.dtype, strides: meta.view?.strides ?? contiguousStrides(meta.shape), offset: meta.view?.offset ?? 0 },
      requiresGrad: false,
    });
    return this.makeProxy(node);
  }

  private makeProxy(node: GraphNode, like?: Tensor): Tensor {
    const m = node.meta;
    const p = new Tensor(null, m.shape, like ? like.strides : m.strides, like ? like.offset : m.offset, m.dtype);
    p.trace = { tracer: this, id: node.id };
    this.track(p);
    return p;
  }

  adopt(alias: Tensor, internal: boolean): void {
    if (internal) this.internalAliases.add(alias);
    this.track(alias);
  }

  private track(alias: Tensor): void {
    const id = alias.trace!.id;
    let list = this.proxies.get(id);
    if (!list) this.proxies.set(id, (list = []));
    list.push(alias);
  }

  drawRandom(n: number): { seed: number; offset: number } {
    const offset = this.randomDrawn;
    this.randomDrawn += n;
    return { seed: 0, offset };
  }

  /** A graph break without a value (explicit, or around a disabled function). */
  breakNow(reason: string): void {
    this.onBreak(this, { reason });
  }

  concretize(t: Tensor, reason: string): TypedArray {
    return this.onBreak(this, { reason, tensor: t })!;
  }

  /**
   * A captured tensor's values read while tracing (a data-dependent op on a parameter or
   * buffer, an item() on a closure variable): baked into the graph they would be stale once
   * the tensor changes, so this is a graph break and the function's code runs on every call.
   * Values this trace computed itself (materialized at an earlier break) are its own.
   */
  readsConcrete(t: Tensor, reason: string): void {
    if (!this.materialized.has(t.aliasOf ?? t)) this.onBreak(this, { reason });
  }

  /** proxies given their data at a graph break (reading them again is no new break) */
  readonly materialized = new WeakSet<Tensor>();

  mutate(dst: Tensor, src: Tensor): void {
    let value = src;
    if (!shapesEqual(value.shape, dst.shape)) value = apply(expandPrim, [value], { shape: dst.shape });
    if (value.dtype !== dst.dtype) value = apply(castPrim, [value], { dtype: dst.dtype });
    const valueId = this.nodeOf(value);
    if (dst.trace) {
      // a write into a traced intermediate: later reads of this handle see the new value
      dst.trace = { tracer: this, id: valueId };
      this.track(dst);
      return;
    }
    this.nodeOf(dst); // captures dst so the write has a target
    const target = this.inputOf.get(dst)!;
    this.valueOf.set(dst, valueId);
    this.graph.mutations = this.graph.mutations.filter((m) => m.target !== target);
    this.graph.mutations.push({ target, value: valueId });
  }

  onGradWrite(leaf: Tensor, old: Tensor | null, next: Tensor | null): void {
    if (!this.gradWrites.has(leaf)) this.gradWrites.set(leaf, { initial: old, first: next });
  }

  /** Starts a new segment after a graph break: concrete tensors are captured afresh. */
  startSegment(): void {
    this.segment++;
    this.randomDrawn = 0;
    this.graph = new Graph(`${this.name}#${this.segment}`);
    this.valueOf.clear();
    this.inputOf.clear();
    this.proxies.clear();
    this.internalAliases.clear();
  }

  /** Nodes with a live proxy handle in the current segment (`userOnly`: not counting autograd's saved handles). */
  liveNodes(userOnly = false): number[] {
    const ids: number[] = [];
    for (const [id, list] of this.proxies) if (list.some((p) => !p.isDisposed && p.trace?.id === id && !(userOnly && this.internalAliases.has(p)))) ids.push(id);
    return ids.sort((a, b) => a - b);
  }
}

function metaOf(t: Tensor): { shape: readonly number[]; strides: readonly number[]; offset: number; dtype: Tensor['dtype'] } {
  return { shape: t.shape, strides: t.strides, offset: t.offset, dtype: t.dtype };
}
