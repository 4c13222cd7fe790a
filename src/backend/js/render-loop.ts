// The JavaScript renderer of the loop IR: one specialized function per fused kernel, with
// shapes and strides as constants, a running pointer per distinct index expression (no
// index multiplication in inner loops) and no per-element function calls.

import type { Affine, AttentionKernel, KernelSizes, LExpr, LoopKernel, MatmulKernel, Reduction, RowKernel, Stmt, Store } from '../../ir/loop-ir.js';
import { exprLoads, kernelExtent, kernelWork, splitInvariant, splitsBatch } from '../../ir/loop-ir.js';
import { checkKernel } from '../../ir/loop-ir-check.js';
export { kernelExtent, kernelWork };
import type { ReduceOp } from '../../ir/kernel-spec.js';
import { isComposite, type PrimitiveOp } from '../../ir/composites.js';
import { JS_HELPER_NAMES, JS_HELPER_VALUES, jsNumber, renderCast, renderComposite, renderPrimitive } from './render-scalar.js';
import type { TypedArray } from '../../core/dtype.js';
import { FAST_HELPERS } from './fast-math.js';
import { affKey } from '../../ir/affine.js';
import { Emitter } from '../emitter.js';
import { matmul2d } from './matmul.js';
import { symConst, symIsConst, symEval, symKey, symMul, symToCode, type Sym } from '../../ir/symbolic.js';

/** Runs a kernel over [lo, hi) of its outermost loop (see kernelExtent). */
export type LoopFn = (bufs: readonly TypedArray[], lo: number, hi: number) => void;

const symName = (i: number) => `$s${i}`;

/**
 * One kernel's code as it is emitted. Dynamic kernels (issue 7): a number with a symbol renders
 * as an expression of the sizes the kernel reads from its sizes buffer at entry; products are
 * hoisted into constants there, so loops keep their running pointers and compare against a
 * local, as static kernels do.
 */
class KernelEmitter extends Emitter {
  private readonly hoisted = new Map<string, string>();
  /** reductions read under another name while one expression renders (withRedName) */
  private readonly redNames = new Map<number, string>();
  private readonly hoistedLines: string[] = [];
  constructor(readonly dynamic: boolean) {
    super();
  }

  /** The local holding reduction `id`'s value. */
  red(id: number): string {
    return this.redNames.get(id) ?? `r${id}`;
  }
  /** `render()` with reduction `id` read as `name` (an online pass's running max, before r<id> exists). */
  withRedName(id: number, name: string, render: () => string): string {
    this.redNames.set(id, name);
    try {
      return render();
    } finally {
      this.redNames.delete(id);
    }
  }

  /** A number of the kernel: a literal, or (dynamic kernels) the local holding its value. */
  num(v: number, s?: Sym | null): string {
    if (!s || !this.dynamic) return String(v);
    if (symIsConst(s)) return String(symEval(s, []));
    if (s.terms.length === 1 && s.terms[0]![0] === 1 && s.terms[0]![1].length === 1) return symName(s.terms[0]![1][0]!);
    const key = symKey(s);
    let name = this.hoisted.get(key);
    if (!name) {
      name = `$z${this.hoisted.size}`;
      this.hoisted.set(key, name);
      this.hoistedLines.push(`const ${name} = ${symToCode(s, symName)};`);
    }
    return name;
  }
  coef(a: Affine, v: number): string {
    return this.num(a.c[v]!, a.cSym?.[v]);
  }
  readonly offs = (a: Affine): string => this.num(a.o, a.oSym);
  sizesOf(xs: readonly number[], sym?: readonly (Sym | null)[]): string[] {
    return xs.map((x, i) => this.num(x, sym?.[i]));
  }

  /** Puts the reads of the kernel's sizes (buffer `sizes.buf`), then the hoisted products, first. */
  declareSizes(sizes: KernelSizes): void {
    this.lines.unshift(...Array.from({ length: sizes.count }, (_, i) => `const ${symName(i)} = b${sizes.buf}[${i}];`), ...this.hoistedLines);
  }
}



// float32 kernels use float32-accurate fast math (see fast-math.ts for the error bounds)
const FAST32: Partial<Record<PrimitiveOp, (a: string) => string>> = {
  exp: (a) => `fastExp(${a})`,
  tanh: (a) => `fastTanh(${a})`,
};
/** Whether a float32 op on `arg` uses fast math: arguments that are not plain names are evaluated once. */
const fastArg = (arg: string): boolean => /^[\w.]+$/.test(arg) || arg.startsWith('(');

/** Ops whose double result on float32 operands can exceed float32's range. */
const CAN_OVERFLOW = new Set<PrimitiveOp>(['add', 'sub', 'mul', 'div', 'pow', 'exp', 'expm1', 'sinh', 'cosh', 'hypot', 'reciprocal']);

/**
 * A primitive op in JS: fast math (`fast`) for float32, and with `round`, a float32 op that can
 * leave float32's range rounds as eager stores it: an intermediate that overflows is Infinity
 * here too (3e38 * 2 - 3e38 is Infinity, not 3e38); the other ops (bounded, or exact on float32
 * operands) keep their double value.
 */
function primitive(op: PrimitiveOp, dtype: string, args: readonly string[], fast: boolean, round: boolean): string {
  const f = fast && dtype === 'float32' ? FAST32[op] : undefined;
  const code = f ? f(args[0]!) : renderPrimitive(op, dtype, args);
  return round && dtype === 'float32' && CAN_OVERFLOW.has(op) ? `Math.fround(${code})` : code;
}

function expr(e: LExpr, em: KernelEmitter): string {
  switch (e.k) {
    case 'load': return `b${e.buf}[${em.ptr(e.at)}]`;
    case 'const': return e.vSym && em.dynamic ? `(${em.num(e.v, e.vSym)})` : jsNumber(e.v);
    case 'tmp': return `t${e.id}`;
    case 'red': return em.red(e.id);
    case 'acc': return 'acc';
    case 'cast': return renderCast(expr(e.a, em), e.dtype);
    case 'op': {
      const args = e.a.map((x) => expr(x, em));
      const fast = fastArg(args[0]!);
      // a composite is computed in double as one eager op (its value stays in float32's range:
      // ir/composites.ts), with fast math inside where its argument would get it
      if (isComposite(e.op)) return renderComposite(e.op, e.dtype, args[0]!, (op, dtype, a) => primitive(op, dtype, a, fast, false));
      return primitive(e.op, e.dtype, args, fast, true);
    }
  }
}

function affinesOf(stmts: readonly Stmt[], stores: readonly Store[]): Affine[] {
  const out = new Map<string, Affine>();
  for (const s of stmts) if (s.e.k === 'load') out.set(affKey(s.e.at), s.e.at);
  for (const s of stores) out.set(affKey(s.at), s.at);
  return [...out.values()];
}

/**
 * Nested loops over `vars` (sizes given), keeping a running pointer per affine. Pointers start
 * from `start(a)` (an outer pointer or a constant) and advance by the affine's coefficient.
 */
function nest(em: KernelEmitter, vars: readonly number[], sizes: readonly string[], affs: readonly Affine[], start: (a: Affine) => string, body: () => void, ranged = false): void {
  const names = affs.map(() => em.fresh('p'));
  // a ranged nest runs its outermost loop over [lo, hi) only (one thread's share)
  const first = ranged && vars.length > 0 ? vars[0]! : -1;
  affs.forEach((a, i) => em.emit(`let ${names[i]}_0 = ${start(a)}${first >= 0 && a.c[first] !== 0 ? ` + ${em.coef(a, first)} * lo` : ''};`));
  vars.forEach((v, L) => {
    em.emit(L === 0 && first >= 0 ? `for (let v${v} = lo; v${v} < hi; v${v}++) {` : `for (let v${v} = 0; v${v} < ${sizes[L]}; v${v}++) {`);
    affs.forEach((_, i) => em.emit(`let ${names[i]}_${L + 1} = ${names[i]}_${L};`));
  });
  affs.forEach((a, i) => em.setPtr(a, `${names[i]}_${vars.length}`));
  body();
  for (let L = vars.length - 1; L >= 0; L--) {
    affs.forEach((a, i) => {
      const c = a.c[vars[L]!]!;
      if (c !== 0) em.emit(`${names[i]}_${L} += ${em.coef(a, vars[L]!)};`);
    });
    em.emit('}');
  }
}

function stmts(em: KernelEmitter, body: readonly Stmt[]): void {
  for (const s of body) em.emit(`const t${s.id} = ${expr(s.e, em)};`);
}

function stores(em: KernelEmitter, list: readonly Store[]): void {
  for (const s of list) em.emit(`b${s.buf}[${em.ptr(s.at)}] = ${expr(s.value, em)};`);
}

const INIT: Record<ReduceOp, string> = { sum: '0', prod: '1', max: '-Infinity', min: 'Infinity', argmax: '-Infinity', argmin: 'Infinity' };
function accumulate(op: ReduceOp, a: string, v: string): string {
  switch (op) {
    case 'sum': return `${a} += ${v};`;
    case 'prod': return `${a} *= ${v};`;
    case 'max': return `{ const x = ${v}; if (x > ${a} || x !== x) ${a} = x; }`;
    case 'min': return `{ const x = ${v}; if (x < ${a} || x !== x) ${a} = x; }`;
    case 'argmax': return `{ const x = ${v}; if (${a}_n === 0 || (${a} === ${a} && (x > ${a} || x !== x))) { ${a} = x; ${a}_i = ${a}_n; } ${a}_n++; }`;
    case 'argmin': return `{ const x = ${v}; if (${a}_n === 0 || (${a} === ${a} && (x < ${a} || x !== x))) { ${a} = x; ${a}_i = ${a}_n; } ${a}_n++; }`;
  }
}


function renderPointwise(k: Extract<LoopKernel, { kind: 'pointwise' }>, em: KernelEmitter, ranged = true): void {
  const vars = k.shape.map((_, d) => d);
  const { invariant, variant } = splitInvariant(k.body);
  em.emit('{');
  for (const st of invariant) if (st.e.k === 'load') em.setPtr(st.e.at, em.offs(st.e.at));
  stmts(em, invariant);
  nest(em, vars, em.sizesOf(k.shape, k.shapeSym), affinesOf(variant, k.stores), em.offs, () => {
    stmts(em, variant);
    stores(em, k.stores);
  }, ranged);
  em.emit('}');
}

function renderRow(k: RowKernel, em: KernelEmitter): void {
  const no = k.outer.length;
  const outerVars = k.outer.map((_, i) => i);
  const innerVars = k.inner.map((_, i) => no + i);
  const innerAffs = [...k.reductions.flatMap((r) => affinesOf(r.body, [])), ...affinesOf(k.rowBody, k.rowStores)];
  const outerAffs = affinesOf(k.outerBody, k.outerStores);
  // every affine walks the outer loops; inner nests continue from those pointers
  const all = new Map<string, Affine>();
  [...innerAffs, ...outerAffs].forEach((a) => all.set(affKey(a), a));
  const allAffs = [...all.values()];
  const innerSizes = em.sizesOf(k.inner, k.innerSym);
  nest(em, outerVars, em.sizesOf(k.outer, k.outerSym), allAffs, em.offs, () => {
    const outerPtr = new Map(allAffs.map((a) => [affKey(a), em.ptr(a)]));
    const fromOuter = (a: Affine) => outerPtr.get(affKey(a))!;
    k.reductions.forEach((r, ri) => {
      const next = k.reductions[ri + 1];
      if (next?.online && next.online.kind !== 'sibling') {
        renderOnlinePair(em, r, next, innerVars, innerSizes, fromOuter);
        return;
      }
      if (r.online) return; // rendered with the reduction before it
      // this reduction and the independent ones after it share one loop
      const group = [r];
      for (let j = ri + 1; k.reductions[j]?.online?.kind === 'sibling'; j++) group.push(k.reductions[j]!);
      for (const g of group) {
        const acc = `r${g.id}a`;
        em.emit(`let ${acc} = ${INIT[g.op]};${g.op === 'argmax' || g.op === 'argmin' ? ` let ${acc}_i = 0, ${acc}_n = 0;` : ''}`);
      }
      const affs = new Map<string, Affine>();
      group.forEach((g) => affinesOf(g.body, []).forEach((a) => affs.set(affKey(a), a)));
      nest(em, innerVars, innerSizes, [...affs.values()], fromOuter, () => {
        for (const g of group) {
          stmts(em, g.body);
          em.emit(accumulate(g.op, `r${g.id}a`, expr(g.value, em)));
        }
      });
      for (const g of group) em.emit(`const r${g.id} = ${g.op === 'argmax' || g.op === 'argmin' ? `r${g.id}a_i` : `r${g.id}a`};`);
    });
    allAffs.forEach((a) => em.setPtr(a, fromOuter(a)));
    stmts(em, k.outerBody);
    stores(em, k.outerStores);
    if (k.rowBody.length || k.rowStores.length) {
      nest(em, innerVars, innerSizes, affinesOf(k.rowBody, k.rowStores), fromOuter, () => {
        stmts(em, k.rowBody);
        stores(em, k.rowStores);
      });
    }
  }, true);
}

/** Two reductions in one pass: online softmax (max and rescaled sum) or Welford (sum and M2). */
function renderOnlinePair(em: KernelEmitter, r1: Reduction, r2: Reduction, innerVars: number[], inner: readonly string[], fromOuter: (a: Affine) => string): void {
  const on = r2.online as Exclude<Reduction['online'], { kind: 'sibling' } | undefined>;
  if (on.kind === 'softmax') {
    const g = (name: string) => em.withRedName(r1.id, name, () => expr(on.shift, em));
    const expOf = (x: string) => (r2.value.k === 'op' && r2.value.dtype === 'float32' ? `fastExp(${x})` : `Math.exp(${x})`);
    em.emit(`let om${r1.id} = -Infinity, os${r2.id} = 0;`);
    nest(em, innerVars, inner, affinesOf(r1.body, []), fromOuter, () => {
      stmts(em, r1.body);
      em.emit(`const v = ${expr(r1.value, em)};`);
      em.emit(`if (v > om${r1.id} || (v !== v && om${r1.id} === om${r1.id})) { if (os${r2.id} !== 0) os${r2.id} *= ${expOf(`${g(`om${r1.id}`)} - ${g('v')}`)}; om${r1.id} = v; }`);
      em.emit(`os${r2.id} += ${expOf(`v - ${g(`om${r1.id}`)}`)};`);
    });
    em.emit(`const r${r1.id} = om${r1.id}, r${r2.id} = os${r2.id};`);
  } else {
    em.emit(`let wc${r1.id} = 0, wm${r1.id} = 0, w2${r2.id} = 0;`);
    nest(em, innerVars, inner, affinesOf(r1.body, []), fromOuter, () => {
      stmts(em, r1.body);
      em.emit(`const v = ${expr(r1.value, em)};`);
      em.emit(`wc${r1.id}++; const d = v - wm${r1.id}; wm${r1.id} += d / wc${r1.id}; w2${r2.id} += d * (v - wm${r1.id});`);
    });
    em.emit(`const r${r1.id} = wm${r1.id} * ${em.num(on.n, on.nSym)}, r${r2.id} = w2${r2.id};`);
  }
}

/**
 * An attention kernel (fuse-attention.ts), one query row at a time over [lo, hi) of the
 * flattened (batch entry, row) pairs: its scores (the score statements with acc = q_i·k_j) in a
 * row buffer, their NaN-propagating max m, then e = exp(s - g(m)), l = sum e, and the epilogue
 * with acc = (sum_j e_j v_j) / l: softmax(s)·v as the eager kernels compute it, in double.
 */
function renderAttention(k: AttentionKernel, em: KernelEmitter, prelude: string[]): void {
  const nb = k.batch.length, iVar = nb, jVar = nb + 1;
  const exp = k.dtype === 'float32' ? 'fastExp' : 'Math.exp';
  const q = k.query, kk = k.key, v = k.value;
  prelude.push(`const sRow = new Float64Array(${Math.max(1, k.keys)}), oRow = new Float64Array(${Math.max(1, k.width)});`);
  const scoreAffs = [...new Map([...k.score.body.flatMap((st) => exprLoadsOf(st.e)), ...exprLoadsOf(k.score.value)].map((a) => [affKey(a), a])).values()];
  const epiAffs = affinesOf(k.body, k.stores);
  const baseOf = (a: Affine) => [em.offs(a), ...k.batch.map((_, d) => (a.c[d] ? `${em.coef(a, d)} * v${d}` : '')).filter(Boolean)].join(' + ');
  em.emit('for (let fr = lo; fr < hi; fr++) {');
  em.emit(`const i = fr % ${k.rows};`);
  em.emit(`let te = (fr - i) / ${k.rows};`);
  for (let d = nb - 1; d >= 0; d--) em.emit(`const v${d} = te % ${k.batch[d]}; te = (te - v${d}) / ${k.batch[d]};`);
  em.emit(`const qO = ${baseOf(q.base)} + i * ${q.sRow}, kO = ${baseOf(kk.base)}, vO = ${baseOf(v.base)};`);
  em.emit('let mx = -Infinity;');
  em.emit(`for (let j = 0; j < ${k.keys}; j++) {`);
  em.emit('let acc = 0;');
  em.emit(`for (let d = 0; d < ${k.depth}; d++) acc += b${q.buf}[qO + d * ${q.sCol}] * b${kk.buf}[kO + d * ${kk.sRow} + j * ${kk.sCol}];`);
  if (k.dtype === 'float32') em.emit('acc = Math.fround(acc);');
  scoreAffs.forEach((a, idx) => {
    em.emit(`const pS${idx} = ${baseOf(a)} + ${a.c[iVar] ?? 0} * i + ${a.c[jVar] ?? 0} * j;`);
    em.setPtr(a, `pS${idx}`);
  });
  stmts(em, k.score.body);
  em.emit(`const sc = ${expr(k.score.value, em)};`);
  em.emit('sRow[j] = sc;');
  em.emit('if (sc > mx || sc !== sc) mx = sc !== sc || mx !== mx ? NaN : sc;');
  em.emit('}');
  em.emit(`const g = ${em.withRedName(k.maxId, 'mx', () => expr(k.shift, em))};`);
  em.emit('let l = 0;');
  em.emit('oRow.fill(0);');
  em.emit(`for (let j = 0; j < ${k.keys}; j++) {`);
  em.emit(`const e = ${exp}(sRow[j] - g);`);
  em.emit('l += e;');
  em.emit(`const vr = vO + j * ${v.sRow};`);
  em.emit(`for (let c = 0; c < ${k.width}; c++) oRow[c] += e * b${v.buf}[vr + c * ${v.sCol}];`);
  em.emit('}');
  if (k.dtype === 'float32') em.emit('l = Math.fround(l);');
  em.emit(`for (let c = 0; c < ${k.width}; c++) {`);
  epiAffs.forEach((a, idx) => {
    em.emit(`const pE${idx} = ${baseOf(a)} + ${a.c[iVar] ?? 0} * i + ${a.c[jVar] ?? 0} * c;`);
    em.setPtr(a, `pE${idx}`);
  });
  em.emit('const acc = oRow[c] / l;');
  stmts(em, k.body);
  stores(em, k.stores);
  em.emit('}');
  em.emit('}');
}

const exprLoadsOf = (e: LExpr): Affine[] => exprLoads(e).map((l) => l.at);

/**
 * A matmul kernel: the shared blocked matmul (matmul.ts) accumulates into one buffer, and the
 * fused epilogue runs on each finished block of C while it is still in cache (called per
 * block, not per element). The accumulation target is the raw matmul output when the graph
 * keeps it, else an epilogue output (overwritten in place element by element), else a scratch.
 */
function renderMatmul(k: MatmulKernel, em: KernelEmitter, prelude: string[]): void {
  const nb = k.batch.length;
  const iVar = nb, jVar = nb + 1;
  const identity = (st: Store) => st.value.k === 'acc';
  const raw = k.stores.find(identity) ?? k.stores.find((st) => st.dtype === k.dtype && st.at.c[iVar] !== 0 && st.at.c[jVar] !== 0);
  // sizes as symbols (constants for a static kernel)
  const S = (x: number, s?: Sym | null): Sym => s ?? symConst(x);
  const bs = k.batch.map((b, i) => S(b, k.batchSym?.[i]));
  const mS = S(k.m, k.mSym), nS = S(k.n, k.nSym);
  const prodSym = (xs: readonly Sym[]) => xs.reduce((x, y) => symMul(x, y), symConst(1));
  const rawAt: Affine = raw ? raw.at : (() => {
    const cs = [...bs.map((_, b) => symMul(prodSym(bs.slice(b + 1)), symMul(mS, nS))), nS, symConst(1)];
    return { c: cs.map((c) => symEval(c, [])), o: 0, cSym: em.dynamic ? cs.map((c) => (symIsConst(c) ? null : c)) : undefined } as Affine;
  })();
  const rawName = raw ? `b${raw.buf}` : 'S';
  if (!raw) {
    const total = prodSym([...bs, mS, nS]);
    if (em.dynamic && !symIsConst(total)) {
      // grows to the largest size seen (each thread has its own)
      prelude.push('let S = new Float64Array(0);');
      em.emit(`if (S.length < ${em.num(0, total)}) S = new Float64Array(${em.num(0, total)});`);
    } else prelude.push(`const S = new Float64Array(${k.batch.reduce((x, y) => x * y, 1) * k.m * k.n});`);
  }
  const epiStores = k.stores.filter((st) => !(raw && st === raw && identity(st)));
  const epiAffs = affinesOf(k.body, epiStores);
  const bases = [
    { a: k.a.base, name: 'aB' },
    { a: k.b.base, name: 'bB' },
    { a: rawAt, name: 'rB' },
    ...epiAffs.map((a, i) => ({ a, name: `eB${i}` })),
  ];
  // one thread's share: a range of the first batch dim, or of the rows when there is no batch
  const splitBatch = splitsBatch(k);
  bases.forEach((b) => em.emit(`let ${b.name}_0 = ${em.offs(b.a)}${splitBatch && b.a.c[0] !== 0 ? ` + ${em.coef(b.a, 0)} * lo` : ''};`));
  k.batch.forEach((size, L) => {
    em.emit(L === 0 && splitBatch ? `for (let v${L} = lo; v${L} < hi; v${L}++) {` : `for (let v${L} = 0; v${L} < ${em.num(size, k.batchSym?.[L])}; v${L}++) {`);
    bases.forEach((b) => em.emit(`let ${b.name}_${L + 1} = ${b.name}_${L};`));
  });
  const at = (name: string) => `${name}_${nb}`;
  em.emit(`const rOff = ${at('rB')};`);
  epiAffs.forEach((_, i) => em.emit(`const eOff${i} = ${at(`eB${i}`)};`));
  const r0 = splitBatch ? '0' : 'lo';
  const rows = splitBatch ? em.num(k.m, k.mSym) : '(hi - lo)';
  if (k.tiles) prelude.push(`const mmTiles = ${JSON.stringify(k.tiles)};`);
  const sam = em.num(k.a.sRow, k.a.sRowSym), sak = em.num(k.a.sCol, k.a.sColSym), sbk = em.num(k.b.sRow, k.b.sRowSym), sbn = em.num(k.b.sCol, k.b.sColSym);
  const rI = em.coef(rawAt, iVar), rJ = em.coef(rawAt, jVar);
  em.emit(`matmul2d({ a: b${k.a.buf}, aOff: ${at('aB')} + ${r0} * ${sam}, sam: ${sam}, sak: ${sak}, b: b${k.b.buf}, bOff: ${at('bB')}, sbk: ${sbk}, sbn: ${sbn}, c: ${rawName}, cOff: rOff + ${r0} * ${rI}, scm: ${rI}, scn: ${rJ}, m: ${rows}, n: ${em.num(k.n, k.nSym)}, k: ${em.num(k.k, k.kSym)} }${k.body.length || epiStores.length ? ', (i0, mc, j0, nc) => {' : `${k.tiles ? ', undefined, mmTiles' : ''});`}`);
  if (k.body.length || epiStores.length) {
    em.emit(`for (let i = ${r0} + i0; i < ${r0} + i0 + mc; i++) {`);
    em.emit(`let pr = rOff + ${rI} * i + ${rJ} * j0;`);
    epiAffs.forEach((a, idx) => {
      em.emit(`let pe${idx} = eOff${idx} + ${em.coef(a, iVar)} * i + ${em.coef(a, jVar)} * j0;`);
      em.setPtr(a, `pe${idx}`);
    });
    em.emit('for (let j = j0; j < j0 + nc; j++) {');
    em.emit(`const acc = ${rawName}[pr];`);
    stmts(em, k.body);
    stores(em, epiStores);
    em.emit(`pr += ${rJ};`);
    epiAffs.forEach((a, idx) => {
      if (a.c[jVar] !== 0) em.emit(`pe${idx} += ${em.coef(a, jVar)};`);
    });
    em.emit('}');
    em.emit('}');
    em.emit(`}${k.tiles ? ', mmTiles' : ''});`);
  }
  for (let L = nb - 1; L >= 0; L--) {
    bases.forEach((b) => {
      const c = b.a.c[L]!;
      if (c !== 0) em.emit(`${b.name}_${L} += ${em.coef(b.a, L)};`);
    });
    em.emit('}');
  }
}

/**
 * JavaScript source of a kernel's body; its parameters are b0, b1, ... (one per buffer). The
 * kernel is checked against the loop IR's schema first: every identifier below is a fixed
 * prefix and an integer, or the kernel's name, which the schema allows only as a plain word.
 */
export function renderKernelSource(k: LoopKernel, nBuffers: number): string {
  checkKernel(k, 'js kernel');
  if (!Number.isSafeInteger(nBuffers) || nBuffers < 0) throw new Error(`renderKernelSource: ${nBuffers} buffers`);
  const em = new KernelEmitter(Boolean(k.sizes));
  const prelude: string[] = [];
  if (k.kind === 'group') k.parts.forEach((p) => renderPointwise({ ...p, shape: p.shape }, em, false));
  else if (k.kind === 'pointwise') renderPointwise(k, em);
  else if (k.kind === 'row') renderRow(k, em);
  else if (k.kind === 'attention') renderAttention(k, em, prelude);
  else renderMatmul(k, em, prelude);
  // a dynamic kernel reads its sizes first, then the hoisted products
  if (k.sizes) em.declareSizes(k.sizes);
  const params = [...Array.from({ length: nBuffers }, (_, i) => `b${i}`), 'lo', 'hi'];
  const fn = `function ${k.name}(${params.join(', ')}) {\n  ${em.lines.join('\n  ')}\n}`;
  return prelude.length ? `(() => {\n  ${prelude.join('\n  ')}\n  return ${fn};\n})()` : fn;
}

const cache = new Map<string, LoopFn>();

/** Compiles a kernel to a function over the program's buffer list (cached by source). */
export function compileKernel(k: LoopKernel, nBuffers: number, source = renderKernelSource(k, nBuffers)): { fn: LoopFn; source: string } {
  let fn = cache.get(source);
  if (!fn) {
    const inner = new Function(...JS_HELPER_NAMES, ...Object.keys(FAST_HELPERS), 'matmul2d', `return ${source};`)(...JS_HELPER_VALUES, ...Object.values(FAST_HELPERS), matmul2d) as (...b: (TypedArray | number)[]) => void;
    fn = (bufs, lo, hi) => inner(...bufs, lo, hi);
    cache.set(source, fn);
  }
  return { fn, source };
}
