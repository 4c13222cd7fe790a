// Which reductions of a row kernel run in the same pass over the row: siblings (independent of
// the reductions before them), softmax's normalizer after its max (online softmax), and a
// variance after its mean (Welford).

import type { LExpr, RowKernel } from '../../ir/loop-ir.js';
import { someLeaf } from '../../ir/loop-ir.js';

/** Expands temporaries into whole expression trees (for structural comparison). */
function expand(e: LExpr, defs: ReadonlyMap<number, LExpr>): LExpr {
  if (e.k === 'tmp') {
    const d = defs.get(e.id);
    return d ? expand(d, defs) : e;
  }
  if (e.k === 'op') return { ...e, a: e.a.map((x) => expand(x, defs)) };
  if (e.k === 'cast') return { ...e, a: expand(e.a, defs) };
  return e;
}

const exprText = (e: LExpr): string => JSON.stringify(e);

function usesRed(e: LExpr, id: number): boolean {
  return someLeaf(e, (x) => x.k === 'red' && x.id === id);
}

/**
 * Marks the last reduction of a row kernel as computed in the same pass as the one before
 * it when it is independent of the reductions before it, softmax's normalizer (sum of
 * exp(v - max)) or a variance (sum of squared deviations from sum/n) over the same values.
 * Returns the formulation, or null. n: the elements of a row.
 */
export function detectOnline(k: RowKernel, n: number): string | null {
  const r2 = k.reductions[k.reductions.length - 1]!;
  const r1 = k.reductions[k.reductions.length - 2];
  if (!r1) return null;
  // independent of every reduction before it: the same loop (sibling reductions)
  const before = k.reductions.slice(0, -1);
  if (!before.some((r) => r2.body.some((st) => usesRed(st.e, r.id)) || usesRed(r2.value, r.id)) && r1.online?.kind !== 'softmax' && r1.online?.kind !== 'welford') {
    r2.online = { kind: 'sibling' };
    return 'sibling';
  }
  if (r1.online || r2.op !== 'sum') return null;
  const v = exprText(expand(r1.value, new Map(r1.body.map((x) => [x.id, x.e]))));
  const e = expand(r2.value, new Map(r2.body.map((x) => [x.id, x.e])));
  const shift = r1.op === 'max' ? softmaxShift(e, v, r1.id) : null;
  if (shift) {
    r2.online = { kind: 'softmax', shift };
    return 'online softmax';
  }
  if (r1.op === 'sum' && isWelford(e, v, r1.id, n)) {
    r2.online = { kind: 'welford', n };
    return 'Welford';
  }
  return null;
}

/** g when e = exp(v - g) with g a function of the max r1 (and v not), else null. */
function softmaxShift(e: LExpr, v: string, r1: number): LExpr | null {
  if (e.k !== 'op' || e.op !== 'exp' || e.a[0]!.k !== 'op' || e.a[0]!.op !== 'sub') return null;
  const [a, g] = e.a[0]!.a as [LExpr, LExpr];
  return exprText(a) === v && !usesRed(a, r1) && usesRed(g, r1) ? g : null;
}

/** e = (v - mean)^2 written as a product, with mean = r1 / n (or r1 * (1/n)). */
function isWelford(e: LExpr, v: string, r1: number, n: number): boolean {
  if (e.k !== 'op' || e.op !== 'mul' || exprText(e.a[0]!) !== exprText(e.a[1]!) || e.a[0]!.k !== 'op' || e.a[0]!.op !== 'sub') return false;
  const [a, mean] = e.a[0]!.a as [LExpr, LExpr];
  const isMean = mean.k === 'op' && mean.a[0]!.k === 'red' && mean.a[0]!.id === r1 && mean.a[1]!.k === 'const' &&
    ((mean.op === 'mul' && Math.abs(mean.a[1]!.v * n - 1) < 1e-12) || (mean.op === 'div' && mean.a[1]!.v === n));
  return exprText(a) === v && !usesRed(a, r1) && isMean;
}
