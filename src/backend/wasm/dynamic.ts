// Launch-time facts of a dynamic kernel (issue 7): the extent of its split loop, its work (do
// threads pay off?) and its aux accumulator's size depend on the sizes, which the launch reads
// from the kernel's own sizes buffer (the one the kernel reads at entry), so the caller passes
// nothing new. Evaluated once per distinct size (the last one is cached).

import type { BackendBuffer } from '../backend.js';
import type { JsBuffer } from '../js/index.js';
import { kernelExtentWorkSym, type KernelSizes, type LoopKernel } from '../../ir/loop-ir.js';
import { symConst, symEval, type Sym } from '../../ir/symbolic.js';
import type { Heap } from './heap.js';
import { chunkGrain } from '../js/threads.js';

const S = (x: number, s?: Sym | null): Sym => s ?? symConst(x);

export class DynamicLaunch {
  private readonly extent: Sym;
  private readonly work: Sym;
  /** the sizes `last` was evaluated at (null: none yet) */
  private lastValues: number[] | null = null;
  private last = { extent: 0, work: 0, grain: 1, values: [] as number[] };
  /** a matmul's m and n (the chunk grain follows the column split, decided in the kernel from them) */
  private readonly mn: [Sym, Sym] | null;
  /** the aux accumulator (grown to the largest size seen) */
  private aux = { addr: 0, bytes: 0 };

  constructor(private readonly kernel: LoopKernel, readonly sizes: KernelSizes) {
    [this.extent, this.work] = kernelExtentWorkSym(kernel);
    this.mn = kernel.kind === 'matmul' ? [S(kernel.m, kernel.mSym), S(kernel.n, kernel.nSym)] : null;
  }

  /** Extent, work and chunk grain (chunkGrain, as the static launch) at the sizes in the launch's sizes buffer. */
  at(buffers: readonly BackendBuffer[]): { extent: number; work: number; grain: number; values: number[] } {
    const data = (buffers[this.sizes.buf] as JsBuffer).data;
    const prev = this.lastValues;
    let same = prev !== null;
    for (let i = 0; same && i < this.sizes.count; i++) same = data[i] === prev![i];
    if (!same) {
      const values = Array.from({ length: this.sizes.count }, (_, i) => data[i]!);
      const extent = symEval(this.extent, values), work = symEval(this.work, values);
      // chunkGrain reads a matmul's m and n: give it their values at these sizes
      const k = this.mn && this.kernel.kind === 'matmul' ? { ...this.kernel, m: symEval(this.mn[0], values), n: symEval(this.mn[1], values) } : this.kernel;
      this.last = { extent, work, grain: chunkGrain(k, extent, work, true), values };
      this.lastValues = values;
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
