// The floors a profile compares each kernel's achieved rates against, per kernel backend:
//  - bandwidth (GB/s): a 64 MiB Float32Array.prototype.set (libc memcpy underneath; read and
//    write counted), the bench's copy floor (bench/lib/floors.ts): what streaming memory costs
//    on this machine, on every CPU backend;
//  - compute (GFLOP/s): this backend's own matmul kernel on a square float32 problem (512³;
//    256³ on the JS renderer, which is ~50x slower), the best rate the backend reaches: a
//    kernel far below it has headroom on this backend. A theoretical peak (cores x FMA width x
//    clock) would need the clock, which a VM hides, and no JavaScript kernel comes near it;
//    the bench's OpenBLAS floor needs python3 and numpy, which a user's process does not have.
// Measured once per process and backend, lazily (after the profiled calls, outside their
// timing), in ~0.1-1 s (a native backend compiles the matmul kernel once; its disk cache keeps
// it). `kiln.profile(fn, { floors: { gbps, gflops } })` sets them instead (a GPU backend is
// never measured: it needs them given).

import type { Backend } from '../../backend/backend.js';
import type { MatmulKernel } from '../../ir/loop-ir.js';

export interface Floors {
  /** GB/s of streaming memory (read + write counted); null: unknown */
  readonly gbps: number | null;
  /** GFLOP/s of the backend's best matmul; null: unknown */
  readonly gflops: number | null;
  /** how they were obtained */
  readonly source: string;
}

const COPY_BYTES = 64 << 20;
const measured = new Map<string, Floors>();
let copyGbps: number | null = null;

function medianMs(fn: () => void, iters: number): number {
  fn();
  const t: number[] = [];
  for (let i = 0; i < iters; i++) {
    const t0 = performance.now();
    fn();
    t.push(performance.now() - t0);
  }
  return t.sort((a, b) => a - b)[iters >> 1]!;
}

function copyBandwidth(): number {
  if (copyGbps === null) {
    const src = new Float32Array(COPY_BYTES / 4).fill(1.5);
    const dst = new Float32Array(COPY_BYTES / 4);
    copyGbps = (2 * COPY_BYTES) / (medianMs(() => dst.set(src), 5) * 1e6);
  }
  return copyGbps;
}

/** The square float32 matmul C = A·B as a loop kernel over buffers 0 (A), 1 (B), 2 (C). */
function squareMatmulKernel(n: number): MatmulKernel {
  const operand = (buf: number) => ({ buf, base: { c: [], o: 0 }, sRow: n, sCol: 1 });
  return {
    kind: 'matmul', name: 'floor_matmul', dtype: 'float32', batch: [], m: n, n, k: n, a: operand(0), b: operand(1), body: [],
    stores: [{ buf: 2, at: { c: [n, 1], o: 0 }, value: { k: 'acc' }, dtype: 'float32', node: 0 }],
  };
}

function matmulRate(kb: Backend): number {
  const n = kb.name === 'js' ? 256 : 512;
  const bufs = [0, 1, 2].map(() => kb.alloc('float32', n * n, 'shared'));
  try {
    const data = Float32Array.from({ length: n * n }, (_, i) => ((i * 7919) % 1000) / 1000 - 0.5);
    kb.write(bufs[0]!, data);
    kb.write(bufs[1]!, data);
    const prepared = kb.prepare({ kind: 'loop', kernel: squareMatmulKernel(n), nBuffers: 3 });
    kb.flush?.();
    const ms = medianMs(() => kb.launch(prepared, { kind: 'loop', buffers: bufs }), 5);
    return (2 * n ** 3) / (ms * 1e6);
  } finally {
    bufs.forEach((b) => kb.free(b));
  }
}

/** The floors of kernel backend `kb`: `given` where set, else measured (once per process). */
export function floorsFor(kb: Backend, given?: { gbps?: number; gflops?: number }): Floors {
  if (given?.gbps !== undefined && given.gflops !== undefined) return { gbps: given.gbps, gflops: given.gflops, source: 'given (kiln.profile options)' };
  let m = measured.get(kb.name);
  if (!m) {
    if (kb.syncReads === false) m = { gbps: null, gflops: null, source: `not measured on ${kb.name} (a device backend): pass floors: { gbps, gflops }` };
    else {
      const n = kb.name === 'js' ? 256 : 512;
      m = { gbps: copyBandwidth(), gflops: matmulRate(kb), source: `measured: 64 MiB Float32Array.set (GB/s), ${kb.name}'s own ${n}³ float32 matmul (GFLOP/s)` };
    }
    measured.set(kb.name, m);
  }
  if (!given) return m;
  return { gbps: given.gbps ?? m.gbps, gflops: given.gflops ?? m.gflops, source: `${m.source}; ${given.gbps !== undefined ? 'gbps' : 'gflops'} given` };
}
