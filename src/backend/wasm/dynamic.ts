// Launch-time facts of a dynamic kernel (issue 7): the extent of its split loop, its work (do
// threads pay off?) and its aux accumulator's size depend on the sizes, which the launch reads
// from the kernel's own sizes buffer (the one the kernel reads at entry), so the caller passes
// nothing new. Evaluated once per distinct size (the last one is cached).

import type { BackendBuffer } from '../backend.js';
import type { JsBuffer } from '../js/index.js';
import { splitsBatch, type KernelSizes, type LoopKernel } from '../../compiler/loop-ir.js';
import { symAdd, symConst, symEval, symMul, type Sym } from '../../compiler/symbolic.js';
import type { Heap } from './heap.js';
import { chunkGrain } from '../js/threads.js';

const S = (x: number, s?: Sym | null): Sym => s ?? symConst(x);
const prod = (xs: readonly Sym[]): Sym => xs.reduce((a, b) => symMul(a, b), symConst(1));

/** kernelExtent / kernelWork (loop-ir.ts) as polynomials in the sizes. */
function extentWork(k: LoopKernel): [Sym, Sym] {
  if (k.kind === 'group') return [symConst(1), k.parts.map((p) => extentWork(p)[1]).reduce(symAdd, symConst(0))];
  if (k.kind === 'pointwise') {
    const sh = k.shape.map((x, i) => S(x, k.shapeSym?.[i]));
    return [sh[0] ?? symConst(1), prod(sh)];
  }
  if (k.kind === 'row') {
    const o = k.outer.map((x, i) => S(x, k.outerSym?.[i]));
    const inner = k.inner.map((x, i) => S(x, k.innerSym?.[i]));
    return [o[0] ?? symConst(1), symMul(prod([...o, ...inner]), symConst(Math.max(1, k.reductions.length)))];
  }
  const b = k.batch.map((x, i) => S(x, k.batchSym?.[i]));
  const m = S(k.m, k.mSym);
  // the renderer chose batch or rows at code generation (from the hint sizes): split the same
  return [splitsBatch(k) ? b[0]! : m, prod([...b, m, S(k.n, k.nSym), S(k.k, k.kSym)])];
}

export class DynamicLaunch {
  private readonly extent: Sym;
  private readonly work: Sym;
  private key = '';
  private last = { extent: 0, work: 0, grain: 1, values: [] as number[] };
  /** a matmul's m and n (the chunk grain follows the column split, decided in the kernel from them) */
  private readonly mn: [Sym, Sym] | null;
  /** the aux accumulator (grown to the largest size seen) */
  private aux = { addr: 0, bytes: 0 };

  constructor(private readonly kernel: LoopKernel, readonly sizes: KernelSizes) {
    [this.extent, this.work] = extentWork(kernel);
    this.mn = kernel.kind === 'matmul' ? [S(kernel.m, kernel.mSym), S(kernel.n, kernel.nSym)] : null;
  }

  /** Extent, work and chunk grain (chunkGrain, as the static launch) at the sizes in the launch's sizes buffer. */
  at(buffers: readonly BackendBuffer[]): { extent: number; work: number; grain: number; values: number[] } {
    const data = (buffers[this.sizes.buf] as JsBuffer).data;
    let key = '';
    for (let i = 0; i < this.sizes.count; i++) key += `${data[i]},`;
    if (key !== this.key) {
      const values = Array.from({ length: this.sizes.count }, (_, i) => data[i]!);
      const extent = symEval(this.extent, values), work = symEval(this.work, values);
      // chunkGrain reads a matmul's m and n: give it their values at these sizes
      const k = this.mn && this.kernel.kind === 'matmul' ? { ...this.kernel, m: symEval(this.mn[0], values), n: symEval(this.mn[1], values) } : this.kernel;
      this.last = { extent, work, grain: chunkGrain(k, extent, work, true), values };
      this.key = key;
    }
    return this.last;
  }

  /** The aux region for `bytes` at these sizes (reallocated when a larger size comes). */
  auxAt(heap: Heap, bytes: Sym, values: readonly number[]): number {
    const need = symEval(bytes, values);
    if (need > this.aux.bytes) {
      if (this.aux.addr) heap.release(this.aux.addr);
      this.aux = { addr: heap.alloc(need), bytes: need };
    }
    return this.aux.addr;
  }
}
