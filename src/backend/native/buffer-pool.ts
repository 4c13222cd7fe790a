// Recycled memory for compiled programs' buffers on the native backend. A program's outputs
// are fresh on every call (the caller owns them); a fresh large typed array costs page faults
// and garbage collection (W4's 16 MiB output: a call took 2x the kernel). Buffers of programs
// (allocated with the 'shared' hint) return here when their last tensor lets go, and the next
// allocation of the same dtype and size reuses one. Programs never rely on fresh memory being
// zero (their scratch is reused across calls, and mode 'reduce-overhead' recycles outputs).

import type { DType, TypedArray } from '../../core/dtype.js';
import { JsBuffer } from '../js/index.js';

/** Smallest buffer worth pooling (bytes): below this V8's allocation is cheap. */
const MIN_BYTES = 64 * 1024;
/** Most buffers kept per dtype and size, and most bytes kept in all. */
const PER_KEY = 4;
const MAX_BYTES = 512 * 1024 * 1024;

const free = new Map<string, TypedArray[]>();
let pooledBytes = 0;

/** Counters (nativeStats): allocations served from the pool, and fresh ones that may return to it. */
export const poolCounters = { poolHits: 0, poolMisses: 0 };

/** A program buffer: recycled memory when some of this dtype and size was released. */
export function allocPooled(dtype: DType, size: number, bytesPerElement: number, fresh: () => JsBuffer): JsBuffer {
  if (size * bytesPerElement < MIN_BYTES) return fresh();
  const hit = free.get(`${dtype}:${size}`)?.pop();
  let buf: JsBuffer;
  if (hit) {
    pooledBytes -= hit.byteLength;
    poolCounters.poolHits++;
    buf = new JsBuffer(dtype, hit);
  } else {
    poolCounters.poolMisses++;
    buf = fresh();
  }
  // JsBackend.free calls it when the buffer's last tensor lets go
  buf.release = () => giveBack(dtype, size, buf.data);
  return buf;
}

function giveBack(dtype: DType, size: number, data: TypedArray): void {
  if (data.length !== size || pooledBytes + data.byteLength > MAX_BYTES) return;
  const key = `${dtype}:${size}`;
  let list = free.get(key);
  if (!list) free.set(key, (list = []));
  if (list.length >= PER_KEY || list.includes(data)) return;
  list.push(data);
  pooledBytes += data.byteLength;
}

/** Drops every pooled buffer (tests; memory pressure). */
export function clearBufferPool(): void {
  free.clear();
  pooledBytes = 0;
}
