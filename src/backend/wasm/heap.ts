// One WebAssembly.Memory for every wasm kernel (shared between threads where the platform
// allows it) and a first-fit allocator with coalescing over it. Buffers stay JsBuffers: eager
// tensors are allocated here (../eager), and a buffer made elsewhere is adopted the first time
// a wasm kernel touches it (its data copied once into the heap and `buf.data` replaced by a
// view there), so JS kernels keep working on the same memory.
//
// Regions are 16-byte aligned and followed by 16 bytes of padding: a vectorized loop's last,
// partial vector may read (never write) up to 12 bytes past a buffer's end.

import { TYPED_ARRAY, itemSize, type DType, type TypedArray } from '../../core/dtype.js';
import { OutOfMemoryError, fmtBytes } from '../../core/errors.js';
import type { JsBuffer } from '../js/index.js';

const PAGE = 65536;
const MAX_PAGES = 65536;
const ALIGN = 16;
const PAD = 16;
/** the first bytes stay unused, so address 0 is never a buffer */
const BASE = 64;

interface Region {
  readonly addr: number;
  readonly bytes: number;
  /** the buffer living here (re-pointed when an unshared memory grows), the view we gave it and its length (a detached view reads 0) */
  buf?: WeakRef<JsBuffer>;
  view?: TypedArray;
  length?: number;
}

export interface HeapStats {
  /** bytes of live regions (buffers adopted or allocated, scratch) */
  bytesInUse: number;
  peakBytes: number;
  regions: number;
  /** the memory's size in bytes */
  memoryBytes: number;
  shared: boolean;
  /** buffers copied into the heap on first use by a wasm kernel */
  adopted: number;
}

const roundUp = (n: number) => Math.ceil(n / ALIGN) * ALIGN;

export class Heap {
  readonly memory: WebAssembly.Memory;
  readonly shared: boolean;
  /** why the memory is not shared (null when it is) */
  readonly unsharedReason: string | null;
  private top = BASE;
  /** the highest address ever handed out: memory above it is as the memory grew, zeros */
  private high = BASE;
  /** free blocks sorted by address: [addr, bytes] */
  private readonly free: [number, number][] = [];
  private readonly live = new Map<number, Region>();
  private readonly owner = new WeakMap<JsBuffer, Region>();
  private readonly finalizer = new FinalizationRegistry<number>((addr) => this.release(addr));
  private inUse = 0;
  private peak = 0;
  private adoptedCount = 0;

  constructor(forceUnshared = false) {
    let mem: WebAssembly.Memory | null = null;
    let why: string | null = forceUnshared ? 'shared memory disabled (KILN_WASM_SHARED=0)' : null;
    if (!forceUnshared) {
      if (typeof SharedArrayBuffer === 'undefined') why = 'SharedArrayBuffer is unavailable (a page without cross-origin isolation)';
      else {
        try {
          mem = new WebAssembly.Memory({ initial: 16, maximum: MAX_PAGES, shared: true });
        } catch (e) {
          why = `shared WebAssembly.Memory is unavailable: ${(e as Error).message}`;
        }
      }
    }
    this.shared = mem !== null;
    this.unsharedReason = why;
    this.memory = mem ?? new WebAssembly.Memory({ initial: 16, maximum: MAX_PAGES });
  }

  /** A region of at least `bytes` bytes (16-byte aligned), growing the memory when needed. */
  alloc(bytes: number): number {
    const need = roundUp(Math.max(bytes, 1) + PAD);
    for (let i = 0; i < this.free.length; i++) {
      const [addr, size] = this.free[i]!;
      if (size < need) continue;
      if (size === need) this.free.splice(i, 1);
      else this.free[i] = [addr + need, size - need];
      return this.take(addr, need);
    }
    // from the top (absorbing a free block that ends there)
    let addr = this.top;
    const last = this.free[this.free.length - 1];
    if (last && last[0] + last[1] === this.top) {
      addr = last[0];
      this.free.pop();
    }
    this.ensure(addr + need);
    this.top = addr + need;
    return this.take(addr, need);
  }

  private take(addr: number, bytes: number): number {
    if (addr + bytes > this.high) this.high = addr + bytes;
    this.live.set(addr, { addr, bytes });
    this.inUse += bytes;
    if (this.inUse > this.peak) this.peak = this.inUse;
    return addr;
  }

  /** Returns a region to the allocator (coalescing with its free neighbours). */
  release(addr: number): void {
    const r = this.live.get(addr);
    if (!r) return;
    this.live.delete(addr);
    this.inUse -= r.bytes;
    let lo = 0, hi = this.free.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.free[mid]![0] < addr) lo = mid + 1;
      else hi = mid;
    }
    let start = addr, size = r.bytes;
    const prev = this.free[lo - 1];
    const next = this.free[lo];
    if (next && start + size === next[0]) {
      size += next[1];
      this.free.splice(lo, 1);
    }
    if (prev && prev[0] + prev[1] === start) {
      prev[1] += size;
      start = prev[0];
      size = prev[1];
    } else this.free.splice(lo, 0, [start, size]);
    // a free block at the top lowers the top
    const lastFree = this.free[this.free.length - 1]!;
    if (lastFree[0] + lastFree[1] === this.top) {
      this.top = lastFree[0];
      this.free.pop();
    }
  }

  private ensure(end: number): void {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return;
    const pages = Math.ceil((end - have) / PAGE);
    const grow = Math.min(MAX_PAGES - have / PAGE, Math.max(pages, Math.ceil(have / PAGE / 4)));
    if (grow < pages) throw new OutOfMemoryError(`the wasm heap would need ${fmtBytes(end)}; WebAssembly memory holds at most ${fmtBytes(MAX_PAGES * PAGE)}`, 'wasm heap', "free tensors, use smaller shapes, or compile with backend 'js' or 'native' (no 4 GiB limit)");
    try {
      this.memory.grow(grow);
    } catch (e) {
      if (e instanceof RangeError) throw new OutOfMemoryError(`the wasm heap could not grow to ${fmtBytes(have + grow * PAGE)}: ${e.message}`, 'wasm heap');
      throw e;
    }
    // an unshared memory detaches its old buffer on growth: re-point every live view
    if (!this.shared) {
      for (const r of this.live.values()) {
        const b = r.buf?.deref();
        if (b && r.view && r.length !== undefined && b.data === r.view) b.data = r.view = new TYPED_ARRAY[b.dtype](this.memory.buffer, r.addr, r.length);
      }
    }
  }

  /** Whether `buf`'s data is a live region of this heap (a wasm kernel can use it without a copy). */
  owns(buf: JsBuffer): boolean {
    const r = this.owner.get(buf);
    return !!r && this.live.get(r.addr) === r && buf.data === r.view;
  }

  /**
   * The byte address of a buffer's data in the heap, adopting it first if needed (one copy;
   * `buf.data` becomes a view of the heap and `buf.release` gives the region back).
   */
  adopt(buf: JsBuffer): number {
    const r = this.owner.get(buf);
    if (r && this.live.get(r.addr) === r && buf.data === r.view) return r.addr;
    if (r) this.drop(buf, r);
    const old = buf.data;
    const n = old.length;
    const addr = this.alloc(n * itemSize(buf.dtype));
    const view = new TYPED_ARRAY[buf.dtype](this.memory.buffer, addr, n);
    view.set(old);
    this.bind(buf, addr, view);
    this.adoptedCount++;
    return addr;
  }

  /**
   * A new heap buffer (zeroed). Only the part below the high-water mark is written: memory the
   * heap never handed out is still the zeros it grew with. (Writing it anyway was a second pass
   * over fresh pages; their first-touch faults, ~3.5 ms per MB on the benchmark VM and serial
   * there even from two threads, are paid once either way, by whichever writes first.)
   */
  allocBuffer(buf: (data: TypedArray) => JsBuffer, dtype: DType, size: number): JsBuffer {
    const high = this.high;
    const addr = this.alloc(size * itemSize(dtype));
    const view = new TYPED_ARRAY[dtype](this.memory.buffer, addr, size);
    const dirty = Math.min(size, Math.max(0, Math.ceil((high - addr) / itemSize(dtype))));
    if (dirty > 0) view.fill(0, 0, dirty);
    const b = buf(view);
    this.bind(b, addr, view);
    return b;
  }

  private bind(buf: JsBuffer, addr: number, view: TypedArray): void {
    buf.data = view;
    const region = this.live.get(addr)!;
    region.buf = new WeakRef(buf);
    region.view = view;
    region.length = view.length;
    this.owner.set(buf, region);
    this.finalizer.register(buf, addr, buf);
    buf.release = () => this.drop(buf, region);
  }

  private drop(buf: JsBuffer, r: Region): void {
    this.finalizer.unregister(buf);
    this.owner.delete(buf);
    buf.release = undefined;
    if (this.live.get(r.addr) === r) {
      this.release(r.addr);
      // a stale holder of this buffer can never read memory the allocator hands out again
      if (buf.data === r.view) buf.data = new TYPED_ARRAY[buf.dtype](0);
    }
  }

  stats(): HeapStats {
    return { bytesInUse: this.inUse, peakBytes: this.peak, regions: this.live.size, memoryBytes: this.memory.buffer.byteLength, shared: this.shared, adopted: this.adoptedCount };
  }
}


let processHeap_: Heap | null = null;

/**
 * The process's heap: eager tensors (../eager) and compiled wasm programs share it, so neither
 * copies the other's buffers.
 */
export function processHeap(): Heap {
  return (processHeap_ ??= new Heap());
}
