// Pieces every WGSL kernel shares: buffer bindings, affine indices, index decomposition,
// and the dispatch grid (at most 65535 workgroups per dimension).

import type { Affine, LoopKernel, Stmt, Store } from '../../ir/loop-ir.js';
import { bufferDTypes, kernelLoads, kernelStores } from '../../ir/loop-ir.js';
import type { DType } from '../../core/dtype.js';
import { HelperSet, render, wtype, type ExprEnv, type Typed, type WType } from './wgsl-expr.js';

export const MAX_GROUPS_PER_DIM = 65535;

/** A rendered kernel: WGSL, the logical buffers in binding order, the dispatch grid. */
export interface WgslKernel {
  readonly code: string;
  /** logical buffer index of each binding (binding i is buffers[bindings[i]]) */
  readonly bindings: readonly number[];
  /** whether each binding is written (explicit layouts: a binding the WGSL never touches stays valid) */
  readonly writable: readonly boolean[];
  readonly grid: readonly [number, number, number];
  readonly name: string;
}

/**
 * Logical buffers that share one GPU buffer in this launch (a planned slot reused in place):
 * WebGPU forbids binding one buffer twice when a binding is writable, so they share a binding.
 * Maps a logical index to the one whose binding it uses.
 */
export type AliasMap = ReadonlyMap<number, number>;

export interface BindingPlan {
  readonly decl: string;
  readonly order: number[];
  readonly writable: boolean[];
  name(buf: number): string;
}

/**
 * One binding per canonical buffer, in buffer order. Buffers in `vec4` (canonical indices) are
 * declared `array<vec4<T>>` (element e is `b[e >> 2][e & 3]`), the rest `array<T>`.
 */
export function planBindings(k: LoopKernel, alias: AliasMap, vec4: ReadonlySet<number> = new Set()): BindingPlan {
  const canon = (b: number) => alias.get(b) ?? b;
  const dtypes = bufferDTypes(k);
  const written = new Set(kernelStores(k).map((s) => canon(s.buf)));
  const used = new Set([...kernelLoads(k), ...kernelStores(k).map((s) => s.buf)].map(canon));
  if (k.kind === 'matmul') (used.add(canon(k.a.buf)), used.add(canon(k.b.buf)));
  const order = [...used].sort((a, b) => a - b);
  const elem = (b: number) => {
    const t = wtype(dtypes.get(b) ?? 'float32', k.name);
    return vec4.has(b) ? `vec4<${t}>` : t;
  };
  const decl = order.map((b, i) => `@group(0) @binding(${i}) var<storage, ${written.has(b) ? 'read_write' : 'read'}> b${b}: array<${elem(b)}>;`).join('\n');
  return { decl, order, writable: order.map((b) => written.has(b)), name: (b) => `b${canon(b)}` };
}

/** `o + c0*v0 + ...` as an i32 expression over variables v<d>. */
export function affine(a: Affine, vars: (d: number) => string = (d) => `v${d}`): string {
  const terms: string[] = [];
  a.c.forEach((c, d) => {
    if (c === 0) return;
    terms.push(c === 1 ? vars(d) : `${c} * ${vars(d)}`);
  });
  if (a.o !== 0 || terms.length === 0) terms.push(String(a.o));
  return terms.join(' + ');
}

/** Statements that split a flat i32 index into per-dim variables v<first + d> (row-major). */
export function decompose(flat: string, shape: readonly number[], first: number, tmp: string): string[] {
  if (shape.length === 0) return [];
  if (shape.length === 1) return [`let v${first} = ${flat};`];
  const L = [`var ${tmp} = ${flat};`];
  for (let d = shape.length - 1; d > 0; d--) {
    L.push(`let v${first + d} = ${tmp} % ${shape[d]};`, `${tmp} = ${tmp} / ${shape[d]};`);
  }
  L.push(`let v${first} = ${tmp};`);
  return L;
}

/**
 * Grid for `groups` workgroups: x up to 65535, the rest in y (the kernel recomputes the flat id
 * as `wg.y * grid[0] + wg.x` and returns past the end). Balanced: x = ceil(groups / y), so at
 * most y - 1 workgroups do nothing (65536 groups: 32768 x 2, not 65535 x 2).
 */
export function grid1d(groups: number): [number, number, number] {
  const g = Math.max(1, groups);
  if (g <= MAX_GROUPS_PER_DIM) return [g, 1, 1];
  const y = Math.ceil(g / MAX_GROUPS_PER_DIM);
  if (y > MAX_GROUPS_PER_DIM) throw new Error(`kiln internal: ${g} workgroups exceed the dispatch grid`);
  return [Math.ceil(g / y), y, 1];
}

/** An expression environment over the given bindings and loop variables. */
export class Body {
  readonly lines: string[] = [];
  readonly tmpTypes = new Map<number, WType>();
  readonly redTypes = new Map<number, WType>();
  accType?: WType;
  constructor(readonly h: HelperSet, readonly bind: BindingPlan) {}

  env(): ExprEnv {
    return {
      h: this.h,
      load: (buf, e) => `${this.bind.name(buf)}[${affine(e.at)}]`,
      tmpType: (id) => this.tmpTypes.get(id) ?? 'f32',
      redType: (id) => this.redTypes.get(id) ?? 'f32',
      accType: this.accType,
    };
  }

  stmts(body: readonly Stmt[], indent = '  '): void {
    const env = this.env();
    for (const s of body) {
      const r = render(s.e, env);
      this.tmpTypes.set(s.id, r.type);
      this.lines.push(`${indent}let t${s.id} = ${r.code};`);
    }
  }

  stores(list: readonly Store[], indent = '  '): void {
    const env = this.env();
    for (const s of list) this.lines.push(`${indent}${this.bind.name(s.buf)}[${affine(s.at)}] = ${storeValue(render(s.value, env), s.dtype)};`);
  }
}

/** A rendered value converted to what a store of `dtype` writes (bool: 1u when non-zero). */
export function storeValue(v: Typed, dtype: DType): string {
  const t = wtype(dtype, 'store');
  return v.type === t ? v.code : t === 'u32' ? `select(0u, 1u, ${v.code} != ${v.type === 'f32' ? '0.0' : '0'})` : `${t}(${v.code})`;
}
