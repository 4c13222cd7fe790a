// Size-bucketed pool of GPU buffers: a freed tensor's buffer goes back to the pool of its
// size class (powers of two, at least 256 bytes) and the next allocation of that class takes
// it, so a training loop stops creating buffers after its first step. The pool holds at most
// `capBytes`; beyond that freed buffers are destroyed.

export const STORAGE_USAGE = 128 | 8 | 4; // STORAGE | COPY_DST | COPY_SRC (numeric: no globals needed)

export function bucketBytes(bytes: number): number {
  let b = 256;
  while (b < bytes) b *= 2;
  return b;
}

export class BufferPool {
  private readonly free = new Map<number, GPUBuffer[]>();
  private pooledBytes = 0;
  /** counters for tests and stats */
  readonly stats = { created: 0, reused: 0, destroyed: 0 };

  constructor(private readonly device: GPUDevice, readonly capBytes = 512 * 2 ** 20) {}

  take(bytes: number): GPUBuffer {
    const size = bucketBytes(bytes);
    const list = this.free.get(size);
    const hit = list?.pop();
    if (hit) {
      this.pooledBytes -= size;
      this.stats.reused++;
      return hit;
    }
    this.stats.created++;
    return this.device.createBuffer({ size, usage: STORAGE_USAGE });
  }

  /** Returns a buffer; false when the pool is full (the caller destroys it after pending work is submitted). */
  give(buf: GPUBuffer): boolean {
    if (this.pooledBytes + buf.size > this.capBytes) return false;
    let list = this.free.get(buf.size);
    if (!list) this.free.set(buf.size, (list = []));
    list.push(buf);
    this.pooledBytes += buf.size;
    return true;
  }

  clear(): void {
    for (const list of this.free.values()) for (const b of list) (b.destroy(), this.stats.destroyed++);
    this.free.clear();
    this.pooledBytes = 0;
  }
}
