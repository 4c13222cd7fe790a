// Prepacked matmul operands on the wasm backend, as on native (../native/prepack.ts): a matmul
// whose B is one matrix with static sizes (render.ts: the `pk` parameter) takes it already in
// panels of NR columns over all of k, in a heap region, once the program said B's content is
// stable (KernelArgs.stable) and it was seen unchanged on two consecutive launches; a moved
// storage version packs again (the stale region is released), so a training step keeps packing
// per call as before. Packing runs once per content, in JavaScript.

import type { ContentVersion } from '../../ir/kernel-spec.js';
import type { TypedArray } from '../../core/dtype.js';
import type { Heap } from './heap.js';
import type { RenderedKernel } from './render.js';

interface Packed {
  version: number;
  addr: number;
}

/** One kernel's packed B per storage it was launched with. */
export type PackedOperands = WeakMap<ContentVersion, Packed>;

/** Counters (tests): packs made, launches that used a packed B. */
export const wasmPrepackStats = { packs: 0, hits: 0 };

const released = new FinalizationRegistry<{ heap: Heap; addr: number }>(({ heap, addr }) => heap.release(addr));

/** B (k x n, strides sbk, sbn from `offset` of `b`) as panels of `nr` columns over all of k, zero padded. */
export function packPanels(dst: TypedArray, b: TypedArray, offset: number, sbk: number, sbn: number, k: number, n: number, nr: number): void {
  for (let j0 = 0; j0 < n; j0 += nr) {
    const w = Math.min(nr, n - j0);
    let q = j0 * k;
    for (let kk = 0; kk < k; kk++, q += nr) {
      const row = offset + kk * sbk + j0 * sbn;
      for (let jj = 0; jj < w; jj++) dst[q + jj] = b[row + jj * sbn]!;
      for (let jj = w; jj < nr; jj++) dst[q + jj] = 0;
    }
  }
}

/** The `pk` argument of a launch: the packed panels' address when B is stable and was seen before, else 0. */
export function packedB(heap: Heap, r: Required<Pick<RenderedKernel, 'prepack'>>['prepack'], nr: number, packs: PackedOperands, tag: ContentVersion | undefined, b: () => TypedArray): number {
  if (!tag) return 0;
  const e = packs.get(tag);
  if (!e || e.version !== tag.version) {
    if (e && e.addr) {
      released.unregister(e);
      heap.release(e.addr);
    }
    packs.set(tag, { version: tag.version, addr: 0 });
    return 0;
  }
  if (!e.addr) {
    const elems = Math.ceil(r.n / nr) * nr * r.k;
    const Arr = r.dtype === 'float32' ? Float32Array : Float64Array;
    const addr = heap.alloc(elems * Arr.BYTES_PER_ELEMENT);
    // B's view is read after the allocation: growing an unshared memory re-points every view
    packPanels(new Arr(heap.memory.buffer, addr, elems), b(), r.offset, r.sbk, r.sbn, r.k, r.n, nr);
    e.addr = addr;
    released.register(e, { heap, addr }, e);
    wasmPrepackStats.packs++;
  }
  wasmPrepackStats.hits++;
  return e.addr;
}
