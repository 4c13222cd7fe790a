// Splitting a fused kernel that binds more storage buffers than the device allows
// (`maxStorageBuffersPerShaderStage`: 10 on Chromium's SwiftShader, 16 on Dawn over llvmpipe,
// 8 guaranteed). The compiler fuses without knowing that limit (e.g. a reduction whose epilogue
// carries the Adam updates of several parameters), so the backend splits such a kernel into
// parts, dispatched in order, each computing a subset of the stores with only the statements
// those stores need (reductions and matmul products are recomputed per part).
//
// Order: within one kernel every load sees the values from before the kernel (the loop IR
// computes values into temporaries and stores last, and the compiler only fuses kernels whose
// invocations do not read each other's outputs). A part that reads a buffer must therefore run
// no later than the part that writes it; stores to one buffer stay in one part; read/write
// cycles are kept in one part. Parts are packed greedily in an order that respects this.

import { forEachLeaf, type LExpr, type LoopKernel, type PointwiseKernel, type Stmt, type Store } from '../../ir/loop-ir.js';

type Single = Exclude<LoopKernel, { kind: 'group' }>;

/** Adds the buffers `e` loads to `out` and the temporaries it reads to `tmps`. */
function visitLoads(e: LExpr, out: Set<number>, tmps: Set<number>): void {
  forEachLeaf(e, (x) => {
    if (x.k === 'load') out.add(x.buf);
    else if (x.k === 'tmp') tmps.add(x.id);
  });
}

/** The statements (ids) and buffers a set of stores needs, through temporaries. */
function closure(stores: readonly Store[], stmts: ReadonlyMap<number, Stmt>): { ids: Set<number>; bufs: Set<number> } {
  const ids = new Set<number>(), bufs = new Set<number>();
  const todo: number[] = [];
  const tmps = new Set<number>();
  const push = () => {
    for (const t of tmps) if (!ids.has(t)) (ids.add(t), todo.push(t));
    tmps.clear();
  };
  for (const s of stores) visitLoads(s.value, bufs, tmps);
  push();
  while (todo.length) {
    const st = stmts.get(todo.pop()!);
    if (st) visitLoads(st.e, bufs, tmps);
    push();
  }
  return { ids, bufs };
}

/** Buffers every part needs (reductions, matmul operands, the sizes buffer). */
function baseBuffers(k: Single): Set<number> {
  const out = new Set<number>(), tmps = new Set<number>();
  if (k.sizes) out.add(k.sizes.buf);
  if (k.kind === 'row') {
    for (const r of k.reductions) {
      r.body.forEach((s) => visitLoads(s.e, out, tmps));
      visitLoads(r.value, out, tmps);
      if (r.online?.kind === 'softmax') visitLoads(r.online.shift, out, tmps);
    }
  } else if (k.kind === 'matmul') (out.add(k.a.buf), out.add(k.b.buf));
  return out;
}

function storesOf(k: Single): Store[] {
  return k.kind === 'row' ? [...k.outerStores, ...k.rowStores] : k.stores;
}

function bodiesOf(k: Single): Stmt[] {
  return k.kind === 'row' ? [...k.outerBody, ...k.rowBody] : k.body;
}

/** The kernel restricted to some stores (statements they do not need are dropped). */
function restrict(k: Single, keep: ReadonlySet<Store>, ids: ReadonlySet<number>, n: number): Single {
  const stmt = (b: readonly Stmt[]) => b.filter((s) => ids.has(s.id));
  const name = `${k.name}_p${n}`;
  if (k.kind === 'row') {
    return { ...k, name, outerBody: stmt(k.outerBody), rowBody: stmt(k.rowBody), outerStores: k.outerStores.filter((s) => keep.has(s)), rowStores: k.rowStores.filter((s) => keep.has(s)) };
  }
  return { ...k, name, body: stmt(k.body), stores: k.stores.filter((s) => keep.has(s)) } as Single;
}

/** Distinct buffers a kernel binds (an upper bound of the WGSL bindings: aliasing only lowers it). */
export function bufferCount(k: Single): number {
  const bufs = baseBuffers(k);
  const all = closure(storesOf(k), new Map(bodiesOf(k).map((s) => [s.id, s])));
  all.bufs.forEach((b) => bufs.add(b));
  storesOf(k).forEach((s) => bufs.add(s.buf));
  return bufs.size;
}

/**
 * Kernels to dispatch in order instead of `k`, each binding at most `limit` buffers; null when
 * that is impossible (one store's inputs alone exceed the limit).
 */
export function splitForBindings(k: LoopKernel, limit: number, alias: ReadonlyMap<number, number> = new Map()): LoopKernel[] | null {
  if (k.kind === 'group') {
    const out: LoopKernel[] = [];
    for (const p of k.parts) {
      const s = splitForBindings(p, limit, alias);
      if (!s) return null;
      out.push(...s);
    }
    return out;
  }
  if (bufferCount(k) <= limit) return [k];
  const stores = storesOf(k);
  const stmts = new Map(bodiesOf(k).map((s) => [s.id, s]));
  const base = baseBuffers(k);
  const need = stores.map((s) => closure([s], stmts));
  // groups: union-find over stores (same written buffer; read/write cycles merged below)
  const parent = stores.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  const union = (a: number, b: number) => void (parent[find(a)] = find(b));
  // hazards are between GPU buffers: logical buffers the memory planner put in one buffer
  // (an in-place update) are one
  const canon = (b: number) => alias.get(b) ?? b;
  const writers = new Map<number, number[]>();
  stores.forEach((s, i) => writers.set(canon(s.buf), [...(writers.get(canon(s.buf)) ?? []), i]));
  for (const ws of writers.values()) ws.forEach((w) => union(w, ws[0]!));
  // edges reader -> writer (the reader's part must not come after the writer's)
  const edges = (): Map<number, Set<number>> => {
    const e = new Map<number, Set<number>>();
    stores.forEach((_, r) => {
      // what every part reads (reductions, matmul operands) counts as read by each store
      for (const b of [...need[r]!.bufs, ...base]) for (const w of writers.get(canon(b)) ?? []) {
        const a = find(r), c = find(w);
        if (a !== c) (e.get(a) ?? e.set(a, new Set()).get(a)!).add(c);
      }
    });
    return e;
  };
  // merge cycles until the group graph is acyclic, then order it topologically
  let order: number[] = [];
  for (;;) {
    const e = edges();
    const groups = [...new Set(stores.map((_, i) => find(i)))];
    const state = new Map<number, 0 | 1 | 2>();
    const stack: number[] = [];
    order = [];
    let cycle: number[] | null = null;
    const dfs = (g: number): void => {
      if (cycle) return;
      state.set(g, 1);
      stack.push(g);
      for (const h of e.get(g) ?? []) {
        const st = state.get(h);
        if (st === 1) cycle = stack.slice(stack.indexOf(h));
        else if (st === undefined) dfs(h);
        if (cycle) return;
      }
      stack.pop();
      state.set(g, 2);
      order.push(g); // post-order: writers first; reversed below
    };
    for (const g of groups) if (!state.has(g)) dfs(g);
    if (!cycle) break;
    for (const g of cycle as number[]) union(g, (cycle as number[])[0]!);
  }
  order.reverse(); // readers before the writers they read from
  // pack groups greedily in that order
  const members = new Map<number, number[]>();
  stores.forEach((_, i) => members.set(find(i), [...(members.get(find(i)) ?? []), i]));
  const parts: number[][] = [];
  let cur: number[] = [], bufs = new Set(base);
  const bufsOf = (ix: readonly number[]) => {
    const b = new Set<number>();
    for (const i of ix) (need[i]!.bufs.forEach((x) => b.add(x)), b.add(stores[i]!.buf));
    return b;
  };
  for (const g of order) {
    const mine = bufsOf(members.get(g)!);
    const merged = new Set([...bufs, ...mine]);
    if (merged.size > limit && cur.length > 0) {
      parts.push(cur);
      cur = [];
      bufs = new Set([...base, ...mine]);
      if (bufs.size > limit) return null;
    } else {
      if (merged.size > limit) return null;
      bufs = merged;
    }
    cur.push(...members.get(g)!);
  }
  if (cur.length) parts.push(cur);
  return parts.map((ix, n) => {
    const keep = new Set(ix.map((i) => stores[i]!));
    const ids = new Set<number>();
    for (const i of ix) need[i]!.ids.forEach((x) => ids.add(x));
    return restrict(k, keep, ids, n);
  });
}

export type { PointwiseKernel };
