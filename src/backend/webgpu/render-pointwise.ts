// Pointwise kernels: one invocation per element of the iteration space, the flat index split
// into the loop variables, every load and store at its affine offset.
//
// vec4 variant (issue 10): when, after merging dims that every access walks contiguously, the
// innermost dim is a multiple of 4 and every store and load either walks it with stride 1 from
// an offset aligned to 4 elements (outer strides and base offset multiples of 4) or does not
// move along it (stride 0: a broadcast), an invocation handles 4 consecutive elements: the
// buffers walked contiguously are bound as array<vec4<T>> and read/written 16 bytes at a time,
// broadcast operands are read once as scalars (element e of a vec4 binding is b[e >> 2][e & 3]),
// and the body is rendered once per lane on the lanes' values: the same scalar math per
// element as the scalar kernel, so results are bit-identical. Anything else (a transposed or
// strided operand, an innermost size not a multiple of 4, an unaligned offset) renders the
// scalar kernel. Loads are read before the first statement or store that uses them and read
// again after a store to the same binding (an in-place alias), as the scalar kernel's order.

import { exprLoads, kernelLoadExprs, type LExpr, type LLoad, type PointwiseKernel, type Store } from '../../ir/loop-ir.js';
import { affKey, coefAt, type Affine } from '../../ir/affine.js';
import { coalesce } from '../iteration.js';
import { affine, Body, decompose, grid1d, planBindings, storeValue, type AliasMap, type WgslKernel } from './wgsl-common.js';
import { HelperSet, render, wtype, type ExprEnv, type WType } from './wgsl-expr.js';

const WG = 256;

/**
 * Renderer switches (tests compare the vec4 kernels with the scalar ones; benchmarks try more
 * vec4 per invocation). Read when a kernel is rendered: compiled programs keep what they got.
 */
export const pointwiseConfig = {
  /** render qualifying kernels with vec4 loads and stores */
  vec4: true,
  /** vec4 groups per invocation (a loop of coalesced steps of WG groups each); 1: none */
  vec4PerInvocation: 1,
};

/** kernels rendered each way (tests check which path a case took) */
export const pointwiseStats = { vec4: 0, scalar: 0 };

export function renderPointwise(k: PointwiseKernel, alias: AliasMap): WgslKernel {
  if (pointwiseConfig.vec4) {
    const v = vec4Plan(k, alias);
    if (v) {
      pointwiseStats.vec4++;
      return renderVec4(v.kernel, alias, v.vecBufs);
    }
  }
  pointwiseStats.scalar++;
  const total = k.shape.reduce((a, b) => a * b, 1);
  const groups = Math.ceil(total / WG);
  const grid = grid1d(groups);
  const h = new HelperSet();
  const bind = planBindings(k, alias);
  const b = new Body(h, bind);
  b.stmts(k.body);
  b.stores(k.stores);
  const code = [
    bind.decl,
    '',
    `@compute @workgroup_size(${WG})`,
    'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
    `  let flat = (wg.y * ${grid[0]}u + wg.x) * ${WG}u + lid;`,
    `  if (flat >= ${total}u) { return; }`,
    ...decompose('i32(flat)', k.shape, 0, 'rem').map((l) => `  ${l}`),
    ...b.lines,
    '}',
  ];
  return { code: `${h.source()}\n${code.join('\n')}`, bindings: bind.order, writable: bind.writable, grid, name: k.name };
}

// ---- the vec4 plan ----

function mapLoads(e: LExpr, f: (a: Affine) => Affine): LExpr {
  if (e.k === 'load') return { ...e, at: f(e.at) };
  if (e.k === 'op') return { ...e, a: e.a.map((x) => mapLoads(x, f)) };
  if (e.k === 'cast') return { ...e, a: mapLoads(e.a, f) };
  return e;
}

/**
 * The kernel with size-1 dims dropped and adjacent dims merged where every access walks them as
 * one (stride of the outer = stride of the inner x its size): the same elements, in the same
 * order, with fewer index divisions and a longer innermost dim.
 */
export function coalescePointwise(k: PointwiseKernel): PointwiseKernel {
  const all: Affine[] = [...k.body.flatMap((s) => exprLoads(s.e).map((l) => l.at)), ...k.stores.flatMap((s) => [s.at, ...exprLoads(s.value).map((l) => l.at)])];
  // iteration.ts's coalesce on every access's coefficients: a merged dim keeps its innermost coefficient
  const { shape, strides } = coalesce(k.shape, all.map((a) => k.shape.map((_, d) => coefAt(a, d))));
  if (shape.length === k.shape.length) return k;
  const coefs = new Map<Affine, number[]>(all.map((a, i) => [a, strides[i]!]));
  const f = (a: Affine): Affine => ({ c: coefs.get(a)!, o: a.o });
  return {
    ...k,
    shape,
    body: k.body.map((s) => ({ ...s, e: mapLoads(s.e, f) })),
    stores: k.stores.map((s): Store => ({ ...s, at: f(s.at), value: mapLoads(s.value, f) })),
  };
}

/**
 * Whether a pointwise kernel can run 4 elements per invocation, and then the (coalesced) kernel
 * and the canonical buffers to bind as array<vec4<T>>; null: the scalar kernel.
 */
export function vec4Plan(k0: PointwiseKernel, alias: AliasMap): { kernel: PointwiseKernel; vecBufs: Set<number> } | null {
  if (k0.shape.length === 0 || k0.shapeSym || k0.sizes) return null;
  const k = coalescePointwise(k0);
  const r = k.shape.length;
  if (r === 0) return null;
  const last = r - 1;
  const n = k.shape[last]!;
  if (n === 0 || n % 4 !== 0) return null;
  const total = k.shape.reduce((a, b) => a * b, 1);
  if (total >= 2 ** 31) return null;
  const canon = (b: number) => alias.get(b) ?? b;
  const aligned = (a: Affine) => a.o % 4 === 0 && k.shape.every((_, d) => d === last || coefAt(a, d) % 4 === 0);
  const sym = (a: Affine) => a.cSym !== undefined || a.oSym !== undefined;
  const vecBufs = new Set<number>();
  for (const s of k.stores) {
    if (sym(s.at) || coefAt(s.at, last) !== 1 || !aligned(s.at)) return null;
    vecBufs.add(canon(s.buf));
  }
  const loads = kernelLoadExprs(k);
  for (const l of loads) {
    if (sym(l.at)) return null;
    const c = coefAt(l.at, last);
    if (c === 0) continue; // a broadcast along the vector: one scalar read, splatted
    if (c !== 1 || !aligned(l.at)) return null;
    vecBufs.add(canon(l.buf));
  }
  return { kernel: k, vecBufs };
}

// ---- the vec4 kernel ----

const LANE = ['x', 'y', 'z', 'w'] as const;

function renderVec4(k: PointwiseKernel, alias: AliasMap, vecBufs: Set<number>): WgslKernel {
  const canon = (b: number) => alias.get(b) ?? b;
  const last = k.shape.length - 1;
  const shape4 = k.shape.map((n, d) => (d === last ? n / 4 : n));
  const total4 = shape4.reduce((a, b) => a * b, 1);
  const per = Math.max(1, Math.floor(pointwiseConfig.vec4PerInvocation));
  const grid = grid1d(Math.ceil(total4 / (WG * per)));
  const h = new HelperSet();
  const bind = planBindings(k, alias, vecBufs);
  const L: string[] = [];
  /** index of the vec4 holding an access's 4 elements (its stride along the last dim is 1) */
  const vecIndex = (a: Affine): string => affine({ c: shape4.map((_, d) => (d === last ? 1 : coefAt(a, d) / 4)), o: a.o / 4 });
  /** loads read so far (key: binding, affine, dtype) -> the variable holding them */
  const cache = new Map<string, { name: string; vec: boolean; buf: number }>();
  const keyOf = (l: LLoad) => `${canon(l.buf)}|${l.dtype}|${affKey(l.at)}`;
  let nextLoad = 0;
  const readLoads = (e: LExpr) => {
    for (const l of exprLoads(e)) {
      const key = keyOf(l);
      if (cache.has(key)) continue;
      const name = `l${nextLoad++}`;
      const b = bind.name(l.buf);
      const vec = coefAt(l.at, last) === 1;
      if (vec) L.push(`let ${name} = ${b}[${vecIndex(l.at)}];`);
      else if (vecBufs.has(canon(l.buf))) L.push(`let ${name} = ${b}[(${affine(l.at)}) >> 2u][(${affine(l.at)}) & 3];`);
      else L.push(`let ${name} = ${b}[${affine(l.at)}];`);
      cache.set(key, { name, vec, buf: canon(l.buf) });
    }
  };
  const tmpTypes = new Map<number, WType>();
  const env = (lane: number): ExprEnv => ({
    h,
    load: (_buf, e) => {
      const c = cache.get(keyOf(e))!;
      return c.vec ? `${c.name}.${LANE[lane]}` : c.name;
    },
    tmpType: (id) => tmpTypes.get(id) ?? 'f32',
    tmpName: (id) => `t${id}_${lane}`,
    redType: () => 'f32',
  });
  for (const s of k.body) {
    readLoads(s.e);
    for (let j = 0; j < 4; j++) {
      const r = render(s.e, env(j));
      tmpTypes.set(s.id, r.type);
      L.push(`let t${s.id}_${j} = ${r.code};`);
    }
  }
  k.stores.forEach((s, i) => {
    readLoads(s.value);
    const lanes = [0, 1, 2, 3].map((j) => storeValue(render(s.value, env(j)), s.dtype));
    lanes.forEach((code, j) => L.push(`let s${i}_${j} = ${code};`));
    L.push(`${bind.name(s.buf)}[${vecIndex(s.at)}] = vec4<${wtype(s.dtype, 'store')}>(${lanes.map((_, j) => `s${i}_${j}`).join(', ')});`);
    // a later read of this binding sees what was just written (in-place aliases), as in the scalar kernel
    const c = canon(s.buf);
    for (const [key, v] of cache) if (v.buf === c) cache.delete(key);
  });
  const head = per === 1
    ? [`  let flat = (wg.y * ${grid[0]}u + wg.x) * ${WG}u + lid;`, `  if (flat >= ${total4}u) { return; }`]
    : [`  let first = (wg.y * ${grid[0]}u + wg.x) * ${WG * per}u + lid;`, `  for (var u = 0u; u < ${per}u; u = u + 1u) {`, `  let flat = first + u * ${WG}u;`, `  if (flat >= ${total4}u) { break; }`];
  const code = [
    bind.decl,
    '',
    `@compute @workgroup_size(${WG})`,
    'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
    ...head,
    ...decompose('i32(flat)', shape4, 0, 'rem').map((l) => `  ${l}`),
    ...L.map((l) => `  ${l}`),
    ...(per === 1 ? [] : ['  }']),
    '}',
  ];
  return { code: `${h.source()}\n${code.join('\n')}`, bindings: bind.order, writable: bind.writable, grid, name: k.name };
}
