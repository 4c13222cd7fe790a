// Pass (after lowering): stores to scratch buffers nobody reads are dropped (a reduction or
// matmul value used only in registers), and so are the kernels left storing nothing.

import { kernelLoads, kernelStores, type Store } from '../../ir/loop-ir.js';
import type { Lowered } from './lowered.js';

export interface DeadStores {
  /** the nodes whose stores were dropped, by kernel name */
  readonly stores: ReadonlyMap<string, readonly number[]>;
  /** the kernels dropped */
  readonly kernels: readonly string[];
}

/** `keep`: buffers read after the program (its outputs). */
export function dropDeadStores(l: Lowered, keep: Set<number>): DeadStores {
  const read = new Set<number>(keep);
  for (const s of l.steps) {
    if (s.kind === 'kernel') kernelLoads(s.kernel).forEach((b) => read.add(b));
    else s.inputs.forEach((v) => read.add(v.buf));
  }
  const dead = (st: Store) => l.buffers[st.buf]!.kind === 'scratch' && !read.has(st.buf);
  const stores = new Map<string, number[]>();
  const keepLive = (list: Store[], name: string) => {
    const gone = list.filter(dead);
    if (gone.length === 0) return;
    stores.set(name, [...(stores.get(name) ?? []), ...gone.map((x) => x.node)]);
    const live = list.filter((x) => !dead(x));
    list.length = 0;
    list.push(...live);
  };
  for (const s of l.steps) {
    if (s.kind !== 'kernel') continue;
    const k = s.kernel;
    if (k.kind === 'group') continue; // formed after this pass
    if (k.kind === 'row') {
      keepLive(k.outerStores, k.name);
      keepLive(k.rowStores, k.name);
    } else keepLive(k.stores, k.name);
  }
  // kernels left with nothing to store are dead
  const live = l.steps.filter((s) => s.kind !== 'kernel' || kernelStores(s.kernel).length > 0);
  const kernels = l.steps.flatMap((s) => (s.kind === 'kernel' && kernelStores(s.kernel).length === 0 ? [s.kernel.name] : []));
  l.steps.length = 0;
  l.steps.push(...live);
  return { stores, kernels };
}

export function printDeadStores(r: DeadStores): string {
  const lines = [...r.stores].map(([k, ns]) => `${k}: dropped the stores of %${ns.join(', %')}`);
  return [...lines, ...r.kernels.map((k) => `${k}: dropped (stores nothing)`)].join('\n');
}
