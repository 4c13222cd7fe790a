// The JavaScript renderer of the loop IR: one specialized function per fused kernel, with
// shapes and strides as constants, a running pointer per distinct index expression (no
// index multiplication in inner loops) and no per-element function calls.

import type { Affine, LExpr, LoopKernel, MatmulKernel, RowKernel, Stmt, Store } from '../../compiler/loop-ir.js';
import type { ReduceOp } from '../kernel-spec.js';
import { JS_HELPER_NAMES, JS_HELPER_VALUES, renderCast, renderOp } from './render-scalar.js';
import type { TypedArray } from '../../core/dtype.js';
import { FAST_HELPERS } from './fast-math.js';

export type LoopFn = (bufs: readonly TypedArray[]) => void;

const affKey = (a: Affine) => `${a.c.join(',')}+${a.o}`;

class Emitter {
  readonly lines: string[] = [];
  private ptrs = new Map<string, string>();
  private n = 0;
  emit(s: string): void {
    this.lines.push(s);
  }
  /** Pointer names for the affines of a nest; returns the name holding each affine's value. */
  fresh(prefix: string): string {
    return `${prefix}${this.n++}`;
  }
  setPtr(a: Affine, name: string): void {
    this.ptrs.set(affKey(a), name);
  }
  ptr(a: Affine): string {
    const p = this.ptrs.get(affKey(a));
    if (!p) throw new Error(`kiln internal: no pointer for ${affKey(a)}`);
    return p;
  }
}

// float32 kernels use float32-accurate fast math (see fast-math.ts for the error bounds)
const FAST32: Partial<Record<string, (a: string) => string>> = {
  exp: (a) => `fastExp(${a})`,
  tanh: (a) => `fastTanh(${a})`,
  sigmoid: (a) => `(1 / (1 + fastExp(-${a})))`,
  silu: (a) => `(${a} / (1 + fastExp(-${a})))`,
  geluTanh: (a) => `(0.5 * ${a} * (1 + fastTanh(0.7978845608028654 * (${a} + 0.044715 * ${a} * ${a} * ${a}))))`,
};

function expr(e: LExpr, em: Emitter): string {
  switch (e.k) {
    case 'load': return `b${e.buf}[${em.ptr(e.at)}]`;
    case 'const': return Number.isFinite(e.v) ? `(${e.v})` : e.v > 0 ? 'Infinity' : e.v < 0 ? '-Infinity' : 'NaN';
    case 'tmp': return `t${e.id}`;
    case 'red': return `r${e.id}`;
    case 'acc': return 'acc';
    case 'cast': return renderCast(expr(e.a, em), e.dtype);
    case 'op': {
      const args = e.a.map((x) => expr(x, em));
      const fast = e.dtype === 'float32' ? FAST32[e.op] : undefined;
      if (fast) {
        // arguments that are not plain names are evaluated once
        if (/^[\w.]+$/.test(args[0]!) || args[0]!.startsWith('(')) return fast(args[0]!.startsWith('(') && !/^\(-?[\d.e+-]+\)$/.test(args[0]!) ? args[0]! : args[0]!);
      }
      return renderOp(e.op, e.dtype, args);
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
function nest(em: Emitter, vars: readonly number[], sizes: readonly number[], affs: readonly Affine[], start: (a: Affine) => string, body: () => void): void {
  const names = affs.map(() => em.fresh('p'));
  affs.forEach((a, i) => em.emit(`let ${names[i]}_0 = ${start(a)};`));
  vars.forEach((v, L) => {
    em.emit(`for (let v${v} = 0; v${v} < ${sizes[L]}; v${v}++) {`);
    affs.forEach((_, i) => em.emit(`let ${names[i]}_${L + 1} = ${names[i]}_${L};`));
  });
  affs.forEach((a, i) => em.setPtr(a, `${names[i]}_${vars.length}`));
  body();
  for (let L = vars.length - 1; L >= 0; L--) {
    affs.forEach((a, i) => {
      const c = a.c[vars[L]!]!;
      if (c !== 0) em.emit(`${names[i]}_${L} += ${c};`);
    });
    em.emit('}');
  }
}

function stmts(em: Emitter, body: readonly Stmt[]): void {
  for (const s of body) em.emit(`const t${s.id} = ${expr(s.e, em)};`);
}

function stores(em: Emitter, list: readonly Store[]): void {
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

function renderPointwise(k: Extract<LoopKernel, { kind: 'pointwise' }>, em: Emitter): void {
  const vars = k.shape.map((_, d) => d);
  nest(em, vars, k.shape, affinesOf(k.body, k.stores), (a) => String(a.o), () => {
    stmts(em, k.body);
    stores(em, k.stores);
  });
}

function renderRow(k: RowKernel, em: Emitter): void {
  const no = k.outer.length;
  const outerVars = k.outer.map((_, i) => i);
  const innerVars = k.inner.map((_, i) => no + i);
  const innerAffs = [...k.reductions.flatMap((r) => affinesOf(r.body, [])), ...affinesOf(k.rowBody, k.rowStores)];
  const outerAffs = affinesOf(k.outerBody, k.outerStores);
  // every affine walks the outer loops; inner nests continue from those pointers
  const all = new Map<string, Affine>();
  [...innerAffs, ...outerAffs].forEach((a) => all.set(affKey(a), a));
  const allAffs = [...all.values()];
  nest(em, outerVars, k.outer, allAffs, (a) => String(a.o), () => {
    const outerPtr = new Map(allAffs.map((a) => [affKey(a), em.ptr(a)]));
    const fromOuter = (a: Affine) => outerPtr.get(affKey(a))!;
    for (const r of k.reductions) {
      const acc = `r${r.id}a`;
      em.emit(`let ${acc} = ${INIT[r.op]};${r.op === 'argmax' || r.op === 'argmin' ? ` let ${acc}_i = 0, ${acc}_n = 0;` : ''}`);
      const affs = affinesOf(r.body, []);
      nest(em, innerVars, k.inner, affs, fromOuter, () => {
        stmts(em, r.body);
        em.emit(accumulate(r.op, acc, expr(r.value, em)));
      });
      em.emit(`const r${r.id} = ${r.op === 'argmax' || r.op === 'argmin' ? `${acc}_i` : acc};`);
    }
    allAffs.forEach((a) => em.setPtr(a, fromOuter(a)));
    stmts(em, k.outerBody);
    stores(em, k.outerStores);
    if (k.rowBody.length || k.rowStores.length) {
      nest(em, innerVars, k.inner, affinesOf(k.rowBody, k.rowStores), fromOuter, () => {
        stmts(em, k.rowBody);
        stores(em, k.rowStores);
      });
    }
  });
}

// register blocking of the matmul template (see matmul.ts for the eager twin)
const MR = 4, NR = 8, KC = 256, MC = 64;

function renderMatmul(k: MatmulKernel, em: Emitter): void {
  const nb = k.batch.length;
  const batchVars = k.batch.map((_, i) => i);
  const iVar = nb, jVar = nb + 1;
  const epiAffs = affinesOf(k.body, k.stores);
  em.emit(`const A = b${k.a.buf}, B = b${k.b.buf};`);
  em.emit(`const M = ${k.m}, N = ${k.n}, K = ${k.k};`);
  em.emit(`const Bp = new Float64Array(${KC * Math.ceil(k.n / NR) * NR}), Ap = new Float64Array(${KC * MC}), part = new Float64Array(${k.k > KC ? k.m * k.n : 1}), tile = new Float64Array(${MR * NR});`);
  // batch loops: operand bases and the batch part of every epilogue affine
  const bases = [
    { c: k.a.base.c, o: k.a.base.o, name: 'aBase' },
    { c: k.b.base.c, o: k.b.base.o, name: 'bBase' },
    ...epiAffs.map((a, i) => ({ c: a.c.slice(0, nb), o: a.o, name: `e${i}` })),
  ];
  bases.forEach((b) => em.emit(`let ${b.name}_0 = ${b.o};`));
  batchVars.forEach((v, L) => {
    em.emit(`for (let v${v} = 0; v${v} < ${k.batch[L]}; v${v}++) {`);
    bases.forEach((b) => em.emit(`let ${b.name}_${L + 1} = ${b.name}_${L};`));
  });
  const at = (name: string) => `${name}_${nb}`;
  const ki = (i: number) => epiAffs[i]!;
  em.emit(`for (let k0 = 0; k0 < K; k0 += ${KC}) {`);
  em.emit(`const kc = Math.min(${KC}, K - k0); const last = k0 + kc >= K;`);
  // pack B[k0:k0+kc, :] into NR-wide panels
  em.emit(`let p = 0;`);
  em.emit(`for (let j0 = 0; j0 < N; j0 += ${NR}) for (let kk = 0; kk < kc; kk++) { const row = ${at('bBase')} + (k0 + kk) * ${k.b.sRow}; for (let jj = 0; jj < ${NR}; jj++) { const j = j0 + jj; Bp[p++] = j < N ? B[row + j * ${k.b.sCol}] : 0; } }`);
  em.emit(`for (let i0 = 0; i0 < M; i0 += ${MC}) {`);
  em.emit(`const mc = Math.min(${MC}, M - i0); p = 0;`);
  em.emit(`for (let ii = 0; ii < mc; ii += ${MR}) for (let kk = 0; kk < kc; kk++) { const col = ${at('aBase')} + (k0 + kk) * ${k.a.sCol}; for (let r = 0; r < ${MR}; r++) { const i = i0 + ii + r; Ap[p++] = i < M ? A[col + i * ${k.a.sRow}] : 0; } }`);
  em.emit(`for (let j0 = 0; j0 < N; j0 += ${NR}) { const cols = Math.min(${NR}, N - j0); const pb0 = (j0 / ${NR}) * kc * ${NR};`);
  em.emit(`for (let ii = 0; ii < mc; ii += ${MR}) { const rows = Math.min(${MR}, mc - ii);`);
  const accs: string[] = [];
  for (let r = 0; r < MR; r++) for (let j = 0; j < NR; j++) accs.push(`c${r}${j} = 0`);
  em.emit(`let ${accs.join(', ')};`);
  em.emit(`for (let kk = 0, pa = (ii / ${MR}) * kc * ${MR}, pb = pb0; kk < kc; kk++, pa += ${MR}, pb += ${NR}) {`);
  em.emit(`const ${Array.from({ length: MR }, (_, r) => `a${r} = Ap[pa + ${r}]`).join(', ')};`);
  em.emit(`const ${Array.from({ length: NR }, (_, j) => `q${j} = Bp[pb + ${j}]`).join(', ')};`);
  for (let r = 0; r < MR; r++) em.emit(Array.from({ length: NR }, (_, j) => `c${r}${j} += a${r} * q${j};`).join(' '));
  em.emit('}');
  for (let r = 0; r < MR; r++) em.emit(Array.from({ length: NR }, (_, j) => `tile[${r * NR + j}] = c${r}${j};`).join(' '));
  em.emit(`for (let r = 0; r < rows; r++) { const i = i0 + ii + r; for (let jj = 0; jj < cols; jj++) { const j = j0 + jj; const q = i * N + j;`);
  em.emit(`const acc = tile[r * ${NR} + jj] + (k0 > 0 ? part[q] : 0);`);
  em.emit(`if (!last) { part[q] = acc; continue; }`);
  // epilogue offsets: batch part + i, j parts
  epiAffs.forEach((a, idx) => {
    const name = `ep${idx}`;
    em.emit(`const ${name} = ${at(`e${idx}`)} + ${a.c[iVar]} * i + ${a.c[jVar]} * j;`);
    em.setPtr(ki(idx), name);
  });
  stmts(em, k.body);
  stores(em, k.stores);
  em.emit('} }'); // tile element loops
  em.emit('}'); // ii
  em.emit('}'); // j0
  em.emit('}'); // i0
  em.emit('}'); // k0
  for (let L = nb - 1; L >= 0; L--) {
    bases.forEach((b) => {
      const c = b.c[batchVars[L]!]!;
      if (c !== 0) em.emit(`${b.name}_${L} += ${c};`);
    });
    em.emit('}');
  }
}

/** JavaScript source of a kernel's body; its parameters are b0, b1, ... (one per buffer). */
export function renderKernelSource(k: LoopKernel, nBuffers: number): string {
  const em = new Emitter();
  if (k.kind === 'pointwise') renderPointwise(k, em);
  else if (k.kind === 'row') renderRow(k, em);
  else renderMatmul(k, em);
  const params = Array.from({ length: nBuffers }, (_, i) => `b${i}`);
  return `function ${k.name}(${params.join(', ')}) {\n  ${em.lines.join('\n  ')}\n}`;
}

const cache = new Map<string, LoopFn>();

/** Compiles a kernel to a function over the program's buffer list (cached by source). */
export function compileKernel(k: LoopKernel, nBuffers: number): { fn: LoopFn; source: string } {
  const source = renderKernelSource(k, nBuffers);
  let fn = cache.get(source);
  if (!fn) {
    const inner = new Function(...JS_HELPER_NAMES, ...Object.keys(FAST_HELPERS), `return ${source};`)(...JS_HELPER_VALUES, ...Object.values(FAST_HELPERS)) as (...b: TypedArray[]) => void;
    fn = (bufs) => inner(...bufs);
    cache.set(source, fn);
  }
  return { fn, source };
}
