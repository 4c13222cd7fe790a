// A Storage is one backend buffer shared by a tensor and its views, released when the
// last tensor handle that refers to it is disposed.

import type { Backend, BackendBuffer } from '../backend/backend.js';
import { itemSize, type DType } from '../core/dtype.js';

export const memoryStats = { liveTensors: 0, liveStorages: 0, liveBytes: 0, peakBytes: 0 };

export class Storage {
  private refs = 0;
  readonly bytes: number;
  /** bumped by every in-place write, so autograd can tell a saved tensor was overwritten */
  version = 0;
  /** where the buffer goes when the last tensor lets go (a compiled program's output pool) */
  recycle?: (buf: BackendBuffer) => void;
  constructor(
    readonly backend: Backend,
    readonly buf: BackendBuffer,
    /** false for a borrowed view of a buffer someone else owns and frees */
    private readonly owned = true,
  ) {
    this.bytes = owned ? buf.size * itemSize(buf.dtype) : 0;
    memoryStats.liveStorages++;
    memoryStats.liveBytes += this.bytes;
    if (memoryStats.liveBytes > memoryStats.peakBytes) memoryStats.peakBytes = memoryStats.liveBytes;
  }

  static alloc(backend: Backend, dtype: DType, size: number): Storage {
    return new Storage(backend, backend.alloc(dtype, size));
  }

  get dtype(): DType {
    return this.buf.dtype;
  }

  /** how many tensor handles (views, aliases) share this storage */
  get refCount(): number {
    return this.refs;
  }

  retain(): void {
    this.refs++;
  }

  release(): void {
    if (--this.refs === 0) {
      if (this.recycle) this.recycle(this.buf);
      else if (this.owned) this.backend.free(this.buf);
      memoryStats.liveStorages--;
      memoryStats.liveBytes -= this.bytes;
    }
  }
}
