// Recycled output buffers of one compiled program (FusedProgram, DynamicProgram). Outputs belong
// to the caller, so every call needs buffers of its own; where a fresh one is costly (the
// kernel backend says so: Backend.outputRecycling) or under mode 'reduce-overhead', the buffer
// of an output whose tensors were all disposed (Storage.recycle) comes back to its program and
// serves a later call. Kept by logical buffer, so a call gets the buffers an earlier call of
// the program had for the same outputs (a backend that prerecords bindings sees the same ones).

import type { Backend, BackendBuffer } from '../../backend/backend.js';
import { itemSize, type DType } from '../../core/dtype.js';
import { Storage } from '../../tensor/storage.js';

/** Counters (tests, benchmarks): outputs served from a pool, recyclable outputs allocated fresh, buffers given back. */
export const outputPoolStats = { reuses: 0, misses: 0, recycled: 0 };

/** Spares kept per output: by default, and under 'reduce-overhead' (where every output is recycled). */
const SPARES = 2;
const SPARES_REDUCE_OVERHEAD = 4;

export class OutputPool {
  private readonly spare = new Map<number, BackendBuffer[]>();
  /** outputs smaller than this stay fresh (Infinity: none is recycled) */
  private readonly minBytes: number;
  private readonly perOutput: number;

  /**
   * `mem`: the backend that allocates the program's outputs (and frees what the pool cannot
   * keep: a wasm heap region must be released, not dropped); `owner`: the backend of the
   * outputs' storages.
   */
  constructor(
    private readonly mem: Backend,
    private readonly owner: Backend,
    reduceOverhead: boolean,
  ) {
    this.minBytes = reduceOverhead ? 0 : (mem.outputRecycling?.minBytes ?? Infinity);
    this.perOutput = reduceOverhead ? SPARES_REDUCE_OVERHEAD : SPARES;
  }

  /**
   * The storage of output `id` (`size` elements) for this call: a spare buffer of that size
   * when there is one, else a fresh one; a recyclable one comes back when its last tensor
   * lets go (a kept output never does).
   */
  output(id: number, dtype: DType, size: number): Storage {
    if (size * itemSize(dtype) < this.minBytes) return new Storage(this.owner, this.mem.alloc(dtype, size, 'shared'));
    let buf = this.take(id, size);
    if (buf) outputPoolStats.reuses++;
    else {
      outputPoolStats.misses++;
      buf = this.mem.alloc(dtype, size, 'shared');
    }
    const st = new Storage(this.owner, buf);
    st.recycle = (b) => this.give(id, b);
    return st;
  }

  /** A spare of output `id` with `size` elements (a static program's outputs never change size; a dynamic one's do). */
  private take(id: number, size: number): BackendBuffer | undefined {
    const list = this.spare.get(id);
    if (!list) return undefined;
    for (let i = list.length - 1; i >= 0; i--) {
      if (list[i]!.size === size) return i === list.length - 1 ? list.pop() : list.splice(i, 1)[0];
    }
    return undefined;
  }

  private give(id: number, buf: BackendBuffer): void {
    let list = this.spare.get(id);
    if (!list) this.spare.set(id, (list = []));
    if (list.includes(buf)) return;
    if (list.length >= this.perOutput) {
      // full: a spare of another size (a dynamic program's earlier size) makes room, else this one goes
      const other = list.findIndex((b) => b.size !== buf.size);
      if (other < 0) return this.mem.free(buf);
      this.mem.free(list.splice(other, 1)[0]!);
    }
    list.push(buf);
    outputPoolStats.recycled++;
  }
}
