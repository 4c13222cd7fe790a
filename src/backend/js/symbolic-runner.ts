// A loop kernel whose sizes are runtime values (issue 7; `kernel.sizes`): rendered to JS once,
// it reads the sizes s0, s1, ... from the sizes buffer itself. Its loop extents, and so how it
// splits across worker threads, are evaluated per distinct sizes at launch (cached).

import { PARALLEL_WORK } from './chunk-protocol.js';
import type { TypedArray } from '../../core/dtype.js';
import type { KernelArgs } from '../../ir/kernel-spec.js';
import { kernelExtent, kernelLoads, kernelStores, kernelWork, specializeKernel, type KernelSizes, type LoopKernel } from '../../ir/loop-ir.js';
import type { JsBuffer } from './index.js';
import { compileKernel, type LoopFn } from './render-loop.js';
import { getThreadPool, isShared } from './threads.js';

interface Launch {
  readonly fn: LoopFn;
  readonly source: string;
  readonly used: number[];
  readonly writes: number[];
}

/** per launch: [extent, work] of the kernel, or of each part of a group */
type Extents = [number, number][];

export function symbolicRunner(k: LoopKernel & { sizes: KernelSizes }, nBuffers: number, source: string): (a: KernelArgs) => void {
  const launch = (kk: LoopKernel, src?: string): Launch => {
    const { fn, source } = src === undefined ? compileKernel(kk, nBuffers) : compileKernel(kk, nBuffers, src);
    const writes = [...new Set(kernelStores(kk).map((x) => x.buf))];
    return { fn, source, writes, used: [...new Set([...writes, ...kernelLoads(kk), k.sizes.buf])] };
  };
  const whole = launch(k, source);
  const parts = k.kind === 'group' ? k.parts.map((p) => launch(p)) : undefined;
  const bySizes = new Map<string, Extents>();
  let last: { readonly values: number[]; readonly extents: Extents } | null = null;
  const extentsAt = (sizes: TypedArray): Extents => {
    if (last && last.values.every((v, i) => v === sizes[i])) return last.extents;
    const values = Array.from(sizes.subarray(0, k.sizes.count));
    const key = values.join(',');
    let extents = bySizes.get(key);
    if (!extents) {
      const s = specializeKernel(k, values);
      extents = s.kind === 'group' ? s.parts.map((p) => [kernelExtent(p), kernelWork(p)]) : [[kernelExtent(s), kernelWork(s)]];
      if (bySizes.size >= 256) bySizes.delete(bySizes.keys().next().value!);
      bySizes.set(key, extents);
    }
    last = { values, extents };
    return extents;
  };
  return (a) => {
    const all = (a as Extract<KernelArgs, { kind: 'loop' }>).buffers;
    const ext = extentsAt((all[k.sizes.buf] as JsBuffer).data);
    const large = ext.some(([e, w]) => e > 1 && w >= PARALLEL_WORK);
    const pool = large ? getThreadPool() : null;
    if (pool) for (const i of whole.used) (all[i] as JsBuffer).share();
    if (parts && pool) for (const p of parts) for (const i of p.used) (all[i] as JsBuffer).share();
    const bufs = all.map((b) => (b as JsBuffer | undefined)?.data as TypedArray);
    if (!parts) {
      const [e] = ext[0]!;
      if (pool) pool.run(whole.source, whole.fn, bufs, e);
      else whole.fn(bufs, 0, e);
      return;
    }
    if (!pool) return whole.fn(bufs, 0, 1);
    parts.forEach((p, i) => {
      const [e, w] = ext[i]!;
      if (w >= PARALLEL_WORK && e > 1 && p.writes.every((b) => isShared(bufs[b]!))) pool.run(p.source, p.fn, bufs, e);
      else p.fn(bufs, 0, e);
    });
  };
}
