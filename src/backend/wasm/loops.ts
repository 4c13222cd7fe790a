// Loop nests over affine accesses: a running byte pointer per distinct (buffer, index)
// expression, advanced by its coefficient (no index multiplication inside loops). The
// innermost loop is rendered with f32x4 when the body allows it (four elements a step, then
// one partial vector whose stores are lane by lane), else one element a step.

import { exprLoads, type Affine, type LExpr, type Stmt, type Store } from '../../ir/loop-ir.js';
import { Op } from './opcodes.js';
import { accessKey, Gen, NotVectorizable, SIZE, type Access } from './gen.js';
import type { Sym } from '../../ir/symbolic.js';

export interface Dim {
  readonly v: number;
  /** push the loop's bounds (i32) */
  readonly lo: () => void;
  readonly hi: () => void;
}

/** Every load and store of some statements, deduplicated by (buffer, index). */
export function accessesOf(body: readonly Stmt[], stores: readonly Store[], extra: readonly LExpr[] = []): Access[] {
  const out = new Map<string, Access>();
  const visit = (e: LExpr) => exprLoads(e).forEach((l) => out.set(accessKey(l), { buf: l.buf, at: l.at, dtype: l.dtype }));
  body.forEach((s) => visit(s.e));
  for (const s of stores) {
    out.set(accessKey(s), { buf: s.buf, at: s.at, dtype: s.dtype });
    visit(s.value);
  }
  extra.forEach(visit);
  return [...out.values()];
}

/** Whether a loop may run four iterations at once: no buffer is stored at one index and read at another. */
export function vectorSafe(accs: readonly Access[], stores: readonly Store[]): boolean {
  const stored = new Map(stores.map((s) => [s.buf, accessKey(s)]));
  return accs.every((a) => !stored.has(a.buf) || stored.get(a.buf) === accessKey(a)) && new Set(stores.map((s) => s.buf)).size === new Set(stores.map(accessKey)).size;
}

/** Sets pointers for accesses at the start of a nest: base + (o + c[first] * start) * size. */
export function startPointers(g: Gen, accs: readonly Access[], first?: { v: number; start: () => void }): void {
  const fb = g.fb;
  for (const a of accs) {
    const key = accessKey(a);
    if (g.ptr.has(key)) continue;
    const p = fb.local(0x7f);
    g.address(a.buf, a.dtype, () => {
      g.num(a.at.o, a.at.oSym);
      const c = first ? a.at.c[first.v] ?? 0 : 0;
      if (first && c !== 0) {
        first.start();
        g.num(c, a.at.cSym?.[first.v]);
        fb.op(Op.i32Mul, Op.i32Add);
      }
    });
    fb.set(p);
    g.ptr.set(key, p);
  }
}

/**
 * Nested loops over `dims` with `scalar` as the body; `vector` (if given) renders the
 * innermost loop four lanes at a time (`lanes`: null, or the local with the partial count).
 * Returns whether the innermost loop was vectorized.
 */
export function loops(g: Gen, dims: readonly Dim[], accs: readonly Access[], scalar: () => void, vector?: (lanes: number | null) => void): boolean {
  const fb = g.fb;
  if (dims.length === 0) return scalar(), false;
  const [d, ...rest] = dims as [Dim, ...Dim[]];
  const parent = g.ptr;
  const level = new Map(parent);
  // step: bytes per iteration (dynamic kernels: `sym` elements, a size's local)
  const moving: { p: number; step: number; sym: Sym | null; size: number }[] = [];
  for (const a of accs) {
    const key = accessKey(a);
    const c = a.at.c[d.v] ?? 0;
    if (c === 0 || level.get(key) !== parent.get(key)) continue;
    const q = fb.local(0x7f);
    fb.get(parent.get(key)!).set(q);
    level.set(key, q);
    moving.push({ p: q, step: c * SIZE[a.dtype], sym: a.at.cSym?.[d.v] ?? null, size: SIZE[a.dtype] });
  }
  g.ptr = level;
  const v = fb.local(0x7f);
  const advance = (n: number) => {
    for (const m of moving) {
      fb.get(m.p);
      if (m.sym) g.num(m.step * n, m.sym, m.size * n);
      else fb.i32(m.step * n);
      fb.op(Op.i32Add).set(m.p);
    }
  };
  let vectorized = false;
  if (rest.length === 0 && vector) {
    const mark = fb.size;
    try {
      g.vecVar = d.v;
      fb.forLoop(v, d.lo, d.hi, 4, () => {
        g.vtmp = new Map();
        vector(null);
        advance(4);
      });
      const r = fb.local(0x7f);
      d.hi();
      fb.get(v).op(Op.i32Sub).tee(r).i32(0).op(Op.i32GtS).if();
      g.vtmp = new Map();
      vector(r);
      fb.end();
      vectorized = true;
    } catch (e) {
      if (!(e instanceof NotVectorizable)) throw e;
      fb.truncate(mark);
    } finally {
      g.vecVar = -1;
      g.vtmp = new Map();
    }
  }
  if (!vectorized) {
    fb.forLoop(v, d.lo, d.hi, 1, () => {
      vectorized = loops(g, rest, accs, scalar, vector);
      advance(1);
    });
  }
  g.ptr = parent;
  return vectorized;
}

/** A loop over [0, size) (dynamic kernels: `sym`, a size's local). */
export const constDim = (g: Gen, v: number, size: number, sym?: Sym | null): Dim => ({ v, lo: () => g.fb.i32(0), hi: () => g.num(size, sym) });

export type { Affine };
