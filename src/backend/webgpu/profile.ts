// GPU time per dispatch (`await gpu.profile(fn)`), from timestamp queries: opt-in, and only
// where the device has the 'timestamp-query' feature (requested by device.ts when the adapter
// offers it). WebGPU writes timestamps at the beginning and end of a compute pass, so while
// profiling every dispatch gets its own pass (the backend's encode() asks `nextPass`); the
// queries are resolved into a buffer before each submit (`beforeSubmit`) and read back once
// the work is done. Numbers are the device's: a driver may quantize them (Chrome rounds to
// 100 µs unless its flag allows otherwise), and one pass per dispatch adds a little time, so a
// profile explains where the time goes rather than replacing `sync()`-timed totals.
// Without the feature, profile() throws WebGpuUnsupportedError (see index.ts).

/// <reference types="@webgpu/types" />

const QUERY_RESOLVE = 0x200, COPY_SRC = 4, COPY_DST = 8, MAP_READ = 1;
/** dispatches per query set (2 timestamps each; WebGPU allows 4096 queries per set) */
const PER_SET = 1024;

export interface ProfiledDispatch {
  /** the kernel's name (e.g. a compiled program's mm0, an eager op's kernel) */
  readonly kernel: string;
  readonly grid: readonly [number, number, number];
  /** GPU time between the pass's begin and end timestamps */
  readonly ns: number;
}

export interface GpuProfile {
  readonly adapter: string;
  /** in submission order */
  readonly dispatches: readonly ProfiledDispatch[];
  readonly totalNs: number;
  /** per kernel name, most time first */
  readonly byKernel: readonly { readonly kernel: string; readonly count: number; readonly ns: number }[];
  /** wall time of fn and the wait for its work */
  readonly wallMs: number;
  readonly text: string;
}

interface Chunk {
  readonly set: GPUQuerySet;
  readonly names: string[];
  readonly grids: (readonly [number, number, number])[];
  resolved: Promise<BigUint64Array> | null;
}

/** @internal state of one profile() call */
export class Profiler {
  private readonly chunks: Chunk[] = [];
  private open: Chunk | null = null;
  /** chunks resolved into the current command encoder, to read after its submit */
  private staged: { chunk: Chunk; read: GPUBuffer }[] = [];
  constructor(private readonly device: GPUDevice) {}

  /** The pass descriptor for the next dispatch (its own pass, timestamps at its begin and end). */
  nextPass(kernel: string, grid: readonly [number, number, number], encoder: GPUCommandEncoder): GPUComputePassDescriptor {
    let c = this.open;
    if (c && c.names.length >= PER_SET) {
      this.resolve(encoder, c);
      c = null;
    }
    if (!c) {
      c = this.open = { set: this.device.createQuerySet({ type: 'timestamp', count: 2 * PER_SET }), names: [], grids: [], resolved: null };
      this.chunks.push(c);
    }
    const i = c.names.length;
    c.names.push(kernel);
    c.grids.push(grid);
    return { timestampWrites: { querySet: c.set, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } };
  }

  /** Before the backend finishes its encoder: resolve the open chunk into it. */
  beforeSubmit(encoder: GPUCommandEncoder): void {
    if (this.open && this.open.names.length) this.resolve(encoder, this.open);
    this.open = null;
  }

  /** After the submit: start reading what was resolved. */
  afterSubmit(): void {
    for (const { chunk, read } of this.staged) {
      chunk.resolved = read.mapAsync(MAP_READ).then(() => {
        const v = new BigUint64Array(read.getMappedRange().slice(0));
        read.destroy();
        return v;
      });
    }
    this.staged = [];
  }

  private resolve(encoder: GPUCommandEncoder, c: Chunk): void {
    const n = 2 * c.names.length;
    const bytes = n * 8;
    const buf = this.device.createBuffer({ size: bytes, usage: QUERY_RESOLVE | COPY_SRC });
    const read = this.device.createBuffer({ size: bytes, usage: MAP_READ | COPY_DST });
    encoder.resolveQuerySet(c.set, 0, n, buf, 0);
    encoder.copyBufferToBuffer(buf, 0, read, 0, bytes);
    this.staged.push({ chunk: c, read });
    if (this.open === c) this.open = null;
  }

  async result(adapter: string, wallMs: number): Promise<GpuProfile> {
    const dispatches: ProfiledDispatch[] = [];
    for (const c of this.chunks) {
      const v = c.resolved ? await c.resolved : null;
      c.set.destroy();
      c.names.forEach((kernel, i) => {
        const ns = v ? Number(v[2 * i + 1]! - v[2 * i]!) : NaN;
        dispatches.push({ kernel, grid: c.grids[i]!, ns });
      });
    }
    const totalNs = dispatches.reduce((a, d) => a + (Number.isFinite(d.ns) ? d.ns : 0), 0);
    const per = new Map<string, { kernel: string; count: number; ns: number }>();
    for (const d of dispatches) {
      const e = per.get(d.kernel) ?? { kernel: d.kernel, count: 0, ns: 0 };
      e.count++;
      e.ns += Number.isFinite(d.ns) ? d.ns : 0;
      per.set(d.kernel, e);
    }
    const byKernel = [...per.values()].sort((a, b) => b.ns - a.ns);
    const us = (ns: number) => `${(ns / 1e3).toFixed(1)} µs`;
    const text = [
      `GPU profile (${adapter || 'webgpu'}): ${dispatches.length} dispatches, ${us(totalNs)} GPU, ${wallMs.toFixed(2)} ms wall`,
      ...byKernel.map((k) => `  ${k.kernel.padEnd(24)} ${String(k.count).padStart(5)}x ${us(k.ns).padStart(14)} ${totalNs ? ((100 * k.ns) / totalNs).toFixed(1) : '0.0'}%`),
    ].join('\n');
    return { adapter, dispatches, totalNs, byKernel, wallMs, text };
  }
}
