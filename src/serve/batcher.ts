// Dynamic batching with a bounded queue. Requests wait at most `maxWaitMs` (from the oldest
// one's arrival) for others to share a batch of up to `maxBatch` rows; a batch runs as soon as
// it is full. One batch runs at a time (kiln's kernels run on this thread; a batch's size, not
// several batches, is what uses the cores). A request that finds `maxQueue` requests waiting
// is refused at once (OverloadError: a 503 with Retry-After) instead of growing the queue:
// everything accepted is answered.

import type { RawTensor } from '../io/safetensors.js';
import type { EngineOutput } from './engine.js';
import { OverloadError } from './errors.js';
import { assemble, bucketFor, sliceRows } from './rows.js';
import type { InputSpec } from './signature.js';

export interface BatchPolicy {
  /** batch requests together (false: each request runs alone, padded to its bucket) */
  readonly batching: boolean;
  /** the longest a request waits for others (ms) */
  readonly maxWaitMs: number;
  /** requests waiting (not counting the batch running) beyond which new ones are refused */
  readonly maxQueue: number;
}

export interface BatchReport {
  readonly requests: number;
  readonly rows: number;
  readonly bucket: number;
  readonly ms: number;
}

interface Waiting {
  readonly tensors: readonly RawTensor[];
  readonly rows: number;
  readonly at: number;
  readonly resolve: (outs: { name: string; tensor: RawTensor }[]) => void;
  readonly reject: (e: unknown) => void;
}

export class Batcher {
  private readonly queue: Waiting[] = [];
  private queuedRows = 0;
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  private idleWaiters: (() => void)[] = [];
  /** moving averages for Retry-After */
  private avgBatchMs = 0;
  private avgRequestsPerBatch = 1;

  constructor(
    private readonly inputs: readonly InputSpec[],
    private readonly buckets: readonly number[],
    private readonly policy: BatchPolicy,
    private readonly execute: (inputs: RawTensor[], bucket: number) => Promise<readonly EngineOutput[]>,
    private readonly onBatch: (r: BatchReport) => void = () => {},
  ) {}

  /** requests waiting (not the batch running) */
  get depth(): number {
    return this.queue.length;
  }

  get maxRows(): number {
    return this.buckets[this.buckets.length - 1]!;
  }

  /** Queues a request (rows checked against the signature already); refuses it when the queue is full. */
  submit(tensors: readonly RawTensor[], rows: number): Promise<{ name: string; tensor: RawTensor }[]> {
    if (this.queue.length >= this.policy.maxQueue) {
      const batches = Math.ceil((this.queue.length + 1) / Math.max(1, this.avgRequestsPerBatch)) + (this.running ? 1 : 0);
      const seconds = Math.min(60, Math.max(1, Math.ceil((batches * this.avgBatchMs) / 1000)));
      throw new OverloadError(`the queue is full (${this.queue.length} requests waiting, limit ${this.policy.maxQueue})`, seconds);
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ tensors, rows, at: performance.now(), resolve, reject });
      this.queuedRows += rows;
      this.schedule();
    });
  }

  /** Resolves when nothing is queued or running (a shutdown drains with it). */
  idle(): Promise<void> {
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private schedule(): void {
    if (this.running || this.queue.length === 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const full = !this.policy.batching || this.queuedRows >= this.maxRows;
    const wait = full ? 0 : Math.max(0, this.queue[0]!.at + this.policy.maxWaitMs - performance.now());
    // setImmediate even when full: requests already read from the sockets join this batch
    if (wait === 0) setImmediate(() => void this.runBatch());
    else this.timer = setTimeout(() => {
      this.timer = null;
      void this.runBatch();
    }, wait);
  }

  private take(): Waiting[] {
    const batch = [this.queue.shift()!];
    let rows = batch[0]!.rows;
    if (this.policy.batching) {
      while (this.queue.length > 0 && rows + this.queue[0]!.rows <= this.maxRows) {
        rows += this.queue[0]!.rows;
        batch.push(this.queue.shift()!);
      }
    }
    this.queuedRows -= rows;
    return batch;
  }

  private async runBatch(): Promise<void> {
    if (this.running || this.queue.length === 0) return;
    this.running = true;
    const batch = this.take();
    const rows = batch.reduce((a, w) => a + w.rows, 0);
    const bucket = bucketFor(rows, this.buckets)!;
    const t0 = performance.now();
    try {
      const outs = await this.execute(assemble(this.inputs, batch, bucket), bucket);
      let start = 0;
      for (const w of batch) {
        w.resolve(outs.map((o) => ({ name: o.name, tensor: sliceRows(o, start, w.rows) })));
        start += w.rows;
      }
    } catch (e) {
      for (const w of batch) w.reject(e);
    } finally {
      const ms = performance.now() - t0;
      this.avgBatchMs = this.avgBatchMs === 0 ? ms : 0.8 * this.avgBatchMs + 0.2 * ms;
      this.avgRequestsPerBatch = 0.8 * this.avgRequestsPerBatch + 0.2 * batch.length;
      this.onBatch({ requests: batch.length, rows, bucket, ms });
      this.running = false;
      if (this.queue.length > 0) this.schedule();
      else for (const w of this.idleWaiters.splice(0)) w();
    }
  }
}
