// GPU timestamps, shared by profile.ts (a pair per dispatch) and autotune.ts (a pair around a
// timed pass). WebGPU writes timestamps only at the beginning and end of a pass, into a query
// set; the queries are resolved into a buffer inside the encoder before it is finished, copied
// to a mappable one, and read once the submitted work is done. Without the device feature
// 'timestamp-query' (llvmpipe), `timePass` measures the wall clock from the submit to
// `queue.onSubmittedWorkDone()` instead.

const QUERY_RESOLVE = 0x200, COPY_SRC = 4, COPY_DST = 8, MAP_READ = 1;

/** Whether the device writes GPU timestamps (device.ts requests the feature where offered). */
export function hasTimestamps(device: GPUDevice): boolean {
  return device.features.has('timestamp-query');
}

/** Begin/end timestamp pairs in one query set: pass descriptors, a resolve, then the durations. */
export class TimestampPairs {
  private readonly set: GPUQuerySet;
  private used = 0;
  private buffers: { resolve: GPUBuffer; read: GPUBuffer } | null = null;
  private result: Promise<number[]> | null = null;

  constructor(private readonly device: GPUDevice, readonly capacity: number) {
    this.set = device.createQuerySet({ type: 'timestamp', count: 2 * capacity });
  }

  /** pairs handed out */
  get count(): number {
    return this.used;
  }

  get full(): boolean {
    return this.used >= this.capacity;
  }

  /** The descriptor of a compute pass timed by the next pair. */
  pass(): GPUComputePassDescriptor {
    const i = this.used++;
    return { timestampWrites: { querySet: this.set, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } };
  }

  /** Into `encoder` (no pass open), before it is finished: the pairs used so far, copied for reading. */
  resolve(encoder: GPUCommandEncoder): void {
    const bytes = 16 * this.used;
    const resolve = this.device.createBuffer({ size: bytes, usage: QUERY_RESOLVE | COPY_SRC });
    const read = this.device.createBuffer({ size: bytes, usage: MAP_READ | COPY_DST });
    encoder.resolveQuerySet(this.set, 0, 2 * this.used, resolve, 0);
    encoder.copyBufferToBuffer(resolve, 0, read, 0, bytes);
    this.buffers = { resolve, read };
  }

  /**
   * After the encoder holding the resolve was submitted: nanoseconds per pair (end - begin), in
   * order; empty if never resolved. Releases the query set and the buffers.
   */
  durations(): Promise<number[]> {
    return (this.result ??= this.readBack());
  }

  private async readBack(): Promise<number[]> {
    const b = this.buffers;
    try {
      if (!b) return [];
      await b.read.mapAsync(MAP_READ);
      const v = new BigUint64Array(b.read.getMappedRange());
      return Array.from({ length: this.used }, (_, i) => Number(v[2 * i + 1]! - v[2 * i]!));
    } finally {
      this.set.destroy();
      b?.resolve.destroy();
      b?.read.destroy();
    }
  }
}

/**
 * Milliseconds of GPU time of one compute pass that `record` fills (a pair of timestamps around
 * it), or where the device has no timestamps, of the wall clock from its submit to the queue
 * being done (submit anything pending before, so only this pass is waited for).
 */
export async function timePass(device: GPUDevice, record: (pass: GPUComputePassEncoder) => void): Promise<number> {
  const stamps = hasTimestamps(device) ? new TimestampPairs(device, 1) : null;
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass(stamps?.pass());
  record(pass);
  pass.end();
  stamps?.resolve(enc);
  const t = performance.now();
  device.queue.submit([enc.finish()]);
  if (!stamps) {
    await device.queue.onSubmittedWorkDone();
    return performance.now() - t;
  }
  const [ns] = await stamps.durations();
  return ns! / 1e6;
}
