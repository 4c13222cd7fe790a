// Small hand-written WGSL kernels for the data-dependent ops the loop IR cannot express:
// gather, scatterAdd, indexSelect, indexAdd, cumsum. There are no float atomics in WGSL, so
// the scatters run one invocation per output element, each summing the entries that target
// it (deterministic; work is out size x the scattered dim's length). Indices are not
// bounds-checked on the GPU (no synchronous error is possible there): an index out of range
// reads or writes nothing useful, where the CPU backend throws IndexError. im2col/col2im
// (conv2d, pooling) live in render-window.ts and are dispatched from here.

import type { BackendBuffer } from '../backend.js';
import type { KernelArgs, KernelSpec, ViewArg } from '../../ir/kernel-spec.js';
import { grid1d } from './wgsl-common.js';
import { wtype } from './wgsl-expr.js';
import type { WgslKernel } from './wgsl-common.js';
import { renderWindow } from './render-window.js';

const WG = 64;

export const INDEXING_KINDS = new Set(['gather', 'scatterAdd', 'indexSelect', 'indexAdd', 'cumsum', 'im2col', 'col2im']);

/** A one-invocation-per-element kernel; `rem` starts as the flat index; `prelude`: helper functions. */
export function indexKernel(name: string, total: number, decl: string[], body: string[], writable: boolean[], prelude = ''): WgslKernel {
  const grid = grid1d(Math.ceil(total / WG));
  const code = [
    ...(prelude ? [prelude] : []),
    ...decl.map((d, i) => `@group(0) @binding(${i}) var<storage, ${writable[i] ? 'read_write' : 'read'}> ${d};`),
    `@compute @workgroup_size(${WG})`,
    'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
    `  let flat = (wg.y * ${grid[0]}u + wg.x) * ${WG}u + lid;`,
    `  if (flat >= ${total}u) { return; }`,
    '  var rem = i32(flat);',
    ...body.map((l) => `  ${l}`),
    '}',
  ].join('\n');
  return { code, bindings: decl.map((_, i) => i), writable, grid, name };
}

/** Splits `rem` into coordinates c0.. of `shape`. */
function coords(shape: readonly number[]): string[] {
  const L: string[] = [];
  for (let d = shape.length - 1; d >= 0; d--) L.push(`let c${d} = rem % ${Math.max(1, shape[d]!)}; rem = rem / ${Math.max(1, shape[d]!)};`);
  return L;
}

/** offset + sum of c_d * stride_d, skipping `skip`. */
function at(v: ViewArg, skip = -1, extra = ''): string {
  const t = v.strides.map((s, d) => (d === skip || s === 0 ? '' : `${s} * c${d}`)).filter(Boolean);
  return [String(v.offset), ...t, ...(extra ? [extra] : [])].join(' + ');
}

/** The WGSL kernel and its buffers for an indexing spec. */
export function renderIndexing(spec: KernelSpec, args: KernelArgs): { w: WgslKernel; buffers: BackendBuffer[] } {
  const T = wtype((spec as { dtype: 'float32' }).dtype, spec.kind);
  const zero = T === 'f32' ? '0.0' : T === 'i32' ? '0' : '0u';
  if (args.kind === 'gather') {
    const total = args.shape.reduce((a, b) => a * b, 1);
    const sd = args.input.strides[args.dim]!;
    return {
      w: indexKernel('gather', total, [`o: array<${T}>`, `x: array<${T}>`, 'ix: array<i32>'], [
        ...coords(args.shape),
        `let i = ix[${at(args.index)}];`,
        `o[${at(args.out)}] = x[${at(args.input, args.dim, `${sd} * i`)}];`,
      ], [true, false, false]),
      buffers: [args.out.buf, args.input.buf, args.index.buf],
    };
  }
  if (args.kind === 'scatterAdd') {
    // one invocation per touched output element: shape with `dim` replaced by the output's size
    const shape = args.shape.map((s, d) => (d === args.dim ? args.dimSize : s));
    const total = shape.reduce((a, b) => a * b, 1);
    const len = args.shape[args.dim]!;
    const idxAt = at(args.index, args.dim, `${args.index.strides[args.dim]} * j`);
    const srcAt = at(args.src, args.dim, `${args.src.strides[args.dim]} * j`);
    return {
      w: indexKernel('scatterAdd', total, [`o: array<${T}>`, `src: array<${T}>`, 'ix: array<i32>'], [
        ...coords(shape),
        `var acc = ${zero};`,
        `for (var j = 0; j < ${len}; j++) { if (ix[${idxAt}] == c${args.dim}) { acc += src[${srcAt}]; } }`,
        `o[${at(args.out)}] += acc;`,
      ], [true, false, false]),
      buffers: [args.out.buf, args.src.buf, args.index.buf],
    };
  }
  if (args.kind === 'indexSelect') {
    const { outer, inDim, inner, count } = args;
    const is = args.index.strides[0] ?? 1;
    return {
      w: indexKernel('indexSelect', outer * count * inner, [`o: array<${T}>`, `x: array<${T}>`, 'ix: array<i32>'], [
        `let i = rem % ${inner}; rem = rem / ${inner}; let j = rem % ${count}; let q = rem / ${count};`,
        `o[${args.out.offset} + i32(flat)] = x[${args.input.offset} + (q * ${inDim} + ix[${args.index.offset} + j * ${is}]) * ${inner} + i];`,
      ], [true, false, false]),
      buffers: [args.out.buf, args.input.buf, args.index.buf],
    };
  }
  if (args.kind === 'indexAdd') {
    const { outer, outDim, inner, count } = args;
    const is = args.index.strides[0] ?? 1;
    return {
      w: indexKernel('indexAdd', outer * outDim * inner, [`o: array<${T}>`, `src: array<${T}>`, 'ix: array<i32>'], [
        `let i = rem % ${inner}; rem = rem / ${inner}; let t = rem % ${outDim}; let q = rem / ${outDim};`,
        `var acc = ${zero};`,
        `for (var j = 0; j < ${count}; j++) { if (ix[${args.index.offset} + j * ${is}] == t) { acc += src[${args.src.offset} + (q * ${count} + j) * ${inner} + i]; } }`,
        `o[${args.out.offset} + i32(flat)] += acc;`,
      ], [true, false, false]),
      buffers: [args.out.buf, args.src.buf, args.index.buf],
    };
  }
  if (args.kind === 'cumsum') {
    const { outer, len, inner } = args;
    return {
      w: indexKernel('cumsum', outer * inner, [`o: array<${T}>`, `x: array<${T}>`], [
        `let i = rem % ${inner}; let q = rem / ${inner};`,
        `var acc = ${zero};`,
        `for (var l = 0; l < ${len}; l++) { let p = (q * ${len} + l) * ${inner} + i; acc += x[${args.input.offset} + p]; o[${args.out.offset} + p] = acc; }`,
      ], [true, false]),
      buffers: [args.out.buf, args.input.buf],
    };
  }
  if (args.kind === 'im2col' || args.kind === 'col2im') return renderWindow(spec.kind === 'im2col' || spec.kind === 'col2im' ? spec.dtype : 'float32', args);
  throw new Error(`kiln internal: ${spec.kind} is not an indexing kernel`);
}
