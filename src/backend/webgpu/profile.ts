// GPU time per dispatch (`await gpu.profile(fn)`), from timestamp queries: opt-in, and only
// where the device has the 'timestamp-query' feature (requested by device.ts when the adapter
// offers it). WebGPU writes timestamps at the beginning and end of a compute pass, so while
// profiling every dispatch gets its own pass (the backend's encode() asks `nextPass`); the
// queries (timestamps.ts, 1024 pairs per query set) are resolved into a buffer before each
// submit (`beforeSubmit`) and read back once the work is done. Numbers are the device's: a
// driver may quantize them (Chrome rounds to 100 µs unless its flag allows otherwise), and one
// pass per dispatch adds a little time, so a profile explains where the time goes rather than
// replacing `sync()`-timed totals.
// Without the feature, profile() throws WebGpuUnsupportedError (see index.ts).

import { TimestampPairs } from './timestamps.js';

/** dispatches per query set (2 timestamps each; WebGPU allows 4096 queries per set) */
const PER_SET = 1024;

export interface ProfiledDispatch {
  /** the kernel's name (e.g. a compiled program's mm0, an eager op's kernel) */
  readonly kernel: string;
  readonly grid: readonly [number, number, number];
  /** GPU time between the pass's begin and end timestamps */
  readonly ns: number;
  /** what kiln.profile marked when the dispatch was made (the step or eager op it belongs to; `profileMark`) */
  readonly mark?: unknown;
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
  readonly stamps: TimestampPairs;
  readonly names: string[];
  readonly grids: (readonly [number, number, number])[];
  readonly marks: unknown[];
}

/** @internal state of one profile() call */
export class Profiler {
  private readonly chunks: Chunk[] = [];
  /** the chunk taking pairs, not resolved yet */
  private open: Chunk | null = null;
  /** set by kiln.profile (WebGpuBackend.profileMark): recorded with each dispatch */
  mark: unknown = null;
  constructor(private readonly device: GPUDevice) {}

  /** The pass descriptor for the next dispatch (its own pass, timestamps at its begin and end). */
  nextPass(kernel: string, grid: readonly [number, number, number], encoder: GPUCommandEncoder): GPUComputePassDescriptor {
    if (this.open?.stamps.full) this.beforeSubmit(encoder);
    let c = this.open;
    if (!c) {
      c = this.open = { stamps: new TimestampPairs(this.device, PER_SET), names: [], grids: [], marks: [] };
      this.chunks.push(c);
    }
    c.names.push(kernel);
    c.grids.push(grid);
    c.marks.push(this.mark);
    return c.stamps.pass();
  }

  /** Before the backend finishes its encoder: resolve the open chunk into it (read after the submit). */
  beforeSubmit(encoder: GPUCommandEncoder): void {
    if (this.open && this.open.names.length) this.open.stamps.resolve(encoder);
    this.open = null;
  }

  async result(adapter: string, wallMs: number): Promise<GpuProfile> {
    const dispatches: ProfiledDispatch[] = [];
    for (const c of this.chunks) {
      const ns = await c.stamps.durations();
      c.names.forEach((kernel, i) => dispatches.push({ kernel, grid: c.grids[i]!, ns: ns[i] ?? NaN, ...(c.marks[i] !== null ? { mark: c.marks[i] } : {}) }));
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
