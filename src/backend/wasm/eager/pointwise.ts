// Eager pointwise ops and copies on the wasm kernels. An eager pointwise spec is one op over
// inputs and scalars (src/ops/pointwise.ts); computed in float32, it runs as a [rows, cols]
// kernel whose leaves walk the inner loop contiguously or broadcast (kernels.ts). Leaves that
// do neither (a transposed view, an int or bool tensor) are first copied into a compact float32
// temporary by the copy kernels, which also run casts and contiguous copies. Everything else
// (float64 or int32 arithmetic, nested expressions, fills) returns false: the JS kernels run it.

import type { BackendBuffer } from '../../backend.js';
import type { KernelArgs, KernelSpec, ViewArg } from '../../../ir/kernel-spec.js';
import type { DType } from '../../../core/dtype.js';
import { coalesce } from '../../iteration.js';
import { contiguousStrides, numel } from '../../../core/shape.js';
import { isBoolResult } from '../../../ir/scalar-expr.js';
import { JsBuffer, type JsBackend } from '../../js/index.js';
import { EXACT_SCALAR_OPS, copyKey, pointwiseKey, type Inner } from './kernels.js';
import { PARAM_SLOTS, type EagerLauncher } from './launcher.js';

type PointwiseSpec = Extract<KernelSpec, { kind: 'pointwise' }>;
type PointwiseArgs = Extract<KernelArgs, { kind: 'pointwise' }>;

/** Ops with at least this many elements split a 1-D loop into rows of ROW (so threads can take rows). */
const SPLIT_1D = 1 << 17;
const ROW = 8192;

interface Leaf {
  buf: BackendBuffer;
  offset: number;
  strides: readonly number[];
}

/** Runs an eager pointwise spec on the wasm kernels; false when it has no wasm form (the JS kernels run it). */
export function runPointwise(l: EagerLauncher, js: JsBackend, spec: PointwiseSpec, a: PointwiseArgs): boolean {
  const e = spec.expr;
  if (e.kind === 'cast') return e.arg.kind === 'input' && runCopy(l, e.arg.dtype, spec.outDType, a.out, a.inputs[e.arg.index]!, a.shape);
  if (e.kind !== 'op') return false;
  if (e.op === 'identity' && e.args[0]!.kind === 'input') {
    const from = e.args[0]!.dtype, to = spec.outDType;
    // a cast to bool tests non-zero, a store into bool keeps the low byte: only same-dtype copies here
    if (from !== to && to === 'bool') return false;
    if (from !== 'float32' || to !== 'float32') return runCopy(l, from, to, a.out, a.inputs[e.args[0]!.index]!, a.shape);
  }
  if (e.dtype !== 'float32' || spec.outDType !== (isBoolResult(e.op) ? 'bool' : 'float32')) return false;
  if (a.shape.some((s) => s === 0)) return true;
  // leaves: inputs, and scalars in the params buffer (broadcast everywhere)
  const zeros = a.shape.map(() => 0);
  const leaves: Leaf[] = [];
  const leafDTypes: DType[] = [];
  /** the leaves that are float64 scalars (EXACT_SCALAR_OPS with a number float32 cannot hold) */
  const exact = new Set<number>();
  let slot = 0;
  for (const x of e.args) {
    if (x.kind === 'input') {
      leaves.push(a.inputs[x.index]!);
      leafDTypes.push(x.dtype);
    } else if (x.kind === 'param' || x.kind === 'const') {
      if (slot === PARAM_SLOTS) return false;
      const v = x.kind === 'param' ? a.params[x.index]! : x.value;
      const f64 = EXACT_SCALAR_OPS.has(e.op) && Math.fround(v) !== v && v === v;
      if (f64) exact.add(leaves.length);
      (f64 ? l.params64 : l.params).data[slot] = v;
      leaves.push({ buf: f64 ? l.params64 : l.params, offset: slot++, strides: zeros });
      leafDTypes.push(f64 ? 'float64' : 'float32');
    } else return false;
  }
  // an input read at another position than the one written (an overlapping in-place op) stays on JS
  for (const v of leaves) if (v.buf === a.out.buf && (v.offset !== a.out.offset || v.strides.some((s, d) => s !== a.out.strides[d] && a.shape[d] !== 1))) return false;
  if (!l.adopt([a.out.buf, ...leaves.map((v) => v.buf)])) return false;
  // leaves the kernels cannot read in place: compact float32 copies
  const temps: BackendBuffer[] = [];
  try {
    for (let j = 0; j < leaves.length; j++) {
      if (exact.has(j) || (leafDTypes[j] === 'float32' && readable(leaves[j]!.strides, a.shape))) continue;
      const t = compactCopy(l, js, leaves[j]!, leafDTypes[j]!, a.shape);
      if (!t) return false;
      temps.push(t.buf);
      leaves[j] = t;
    }
    return launchRows(l, a.out, leaves, a.shape, (inner) => l.kernel('pointwise', pointwiseKey(e.op, spec.outDType, inner.map((w, j) => (exact.has(j) ? 'd' : w)))));
  } finally {
    for (const t of temps) js.free(t);
  }
}

/** Whether a leaf walks the innermost dim that moves (the kernel's inner loop after coalescing) contiguously or broadcast. */
function readable(strides: readonly number[], shape: readonly number[]): boolean {
  for (let d = shape.length - 1; d >= 0; d--) if (shape[d] !== 1) return strides[d] === 0 || strides[d] === 1;
  return true;
}

/**
 * A float32 copy of a leaf over the dims where it moves (size 1 where it is broadcast), and
 * its strides over the op's shape. null: no heap memory for it.
 */
function compactCopy(l: EagerLauncher, js: JsBackend, v: Leaf, dtype: DType, shape: readonly number[]): Leaf | null {
  const compact = shape.map((s, d) => (v.strides[d] === 0 ? 1 : s));
  const n = numel(compact);
  let buf: BackendBuffer;
  try {
    buf = l.wasm.heap.allocBuffer((data) => new JsBuffer('float32', data), 'float32', n);
  } catch (e) {
    if (e instanceof RangeError) return null;
    throw e;
  }
  const strides = contiguousStrides(compact);
  if (!runCopy(l, dtype, 'float32', { buf, offset: 0, strides }, { buf: v.buf, offset: v.offset, strides: v.strides.map((s, d) => (compact[d] === 1 ? 0 : s)) }, compact)) {
    js.free(buf);
    return null;
  }
  return { buf, offset: 0, strides: strides.map((s, d) => (compact[d] === 1 ? 0 : s)) };
}

/** A copy (or cast) of `src` into `out` over `shape`, any strides, any dtypes. */
export function runCopy(l: EagerLauncher, from: DType, to: DType, out: ViewArg, src: ViewArg, shape: readonly number[]): boolean {
  if (shape.some((s) => s === 0)) return true;
  const k = l.kernel('copy', copyKey(from, to));
  if (!k || !l.adopt([out.buf, src.buf])) return false;
  const c = coalesce(shape, [out.strides, src.strides]);
  const [os, ss] = c.strides as [number[], number[]];
  const r = c.shape.length;
  const rows = r >= 2 ? c.shape[r - 2]! : 1, cols = c.shape[r - 1]!;
  const ors = r >= 2 ? os[r - 2]! : 0, srs = r >= 2 ? ss[r - 2]! : 0;
  forOuter(c.shape.slice(0, Math.max(0, r - 2)), [os, ss], [out.offset, src.offset], ([oo, so]) => {
    l.run(k, [out.buf, src.buf], [rows, cols, ors, oo!, srs, so!, ss[r - 1]!, os[r - 1]!]);
  });
  return true;
}

/**
 * Launches a [rows, cols] kernel per index of the dims before the last two (coalesced), with
 * each leaf's inner walk picking the kernel; false when there is none (or the output's inner
 * dim is strided).
 */
function launchRows(l: EagerLauncher, out: ViewArg, leaves: readonly Leaf[], shape: readonly number[], pick: (inner: Inner[]) => ReturnType<EagerLauncher['kernel']>): boolean {
  let c = coalesce(shape, [out.strides, ...leaves.map((v) => v.strides)]);
  let r = c.shape.length;
  const n = c.shape[r - 1]!;
  const innerOf = (s: number): Inner | null => (n === 1 ? 'v' : s === 1 ? 'v' : s === 0 ? 's' : null);
  if (innerOf(c.strides[0]![r - 1]!) !== 'v') return false;
  const inner: Inner[] = [];
  for (let j = 0; j < leaves.length; j++) {
    const w = innerOf(c.strides[j + 1]![r - 1]!);
    if (!w) return false;
    inner.push(w);
  }
  // a row that is one value everywhere: no kernel (a fill)
  if (!inner.includes('v')) return false;
  const k = pick(inner);
  if (!k) return false;
  const bufs = [out.buf, ...leaves.map((v) => v.buf)];
  const offsets = [out.offset, ...leaves.map((v) => v.offset)];
  if (r === 1 && n >= SPLIT_1D) {
    // rows of ROW elements (threads split rows), then the rest
    const rows = Math.floor(n / ROW), rest = n - rows * ROW;
    const rowStride = (w: Inner | 'v') => (w === 'v' ? ROW : 0);
    l.run(k, bufs, [rows, ROW, ROW, offsets[0]!, ...inner.flatMap((w, j) => [rowStride(w), offsets[j + 1]!])]);
    if (rest > 0) l.run(k, bufs, [1, rest, 0, offsets[0]! + rows * ROW, ...inner.flatMap((w, j) => [0, offsets[j + 1]! + (w === 'v' ? rows * ROW : 0)])]);
    return true;
  }
  if (r === 1) c = { shape: [1, n], strides: c.strides.map((s) => [0, s[0]!]) };
  r = c.shape.length;
  const rows = c.shape[r - 2]!;
  const rs = c.strides.map((s) => s[r - 2]!);
  forOuter(c.shape.slice(0, r - 2), c.strides, offsets, (o) => {
    const sizes = [rows, n, rs[0]!, o[0]!];
    for (let j = 0; j < leaves.length; j++) sizes.push(rs[j + 1]!, o[j + 1]!);
    l.run(k, bufs, sizes);
  });
  return true;
}

/** Calls `f` with every operand's offset at each index of the `outer` dims (row-major). */
export function forOuter(outer: readonly number[], strides: readonly (readonly number[])[], base: readonly number[], f: (offsets: readonly number[]) => void): void {
  const nd = outer.length;
  const total = outer.reduce((x, y) => x * y, 1);
  const idx = new Array<number>(nd).fill(0);
  const off = [...base];
  for (let t = 0; t < total; t++) {
    f(off);
    for (let d = nd - 1; d >= 0; d--) {
      idx[d]!++;
      for (let j = 0; j < off.length; j++) off[j]! += strides[j]![d]!;
      if (idx[d]! < outer[d]!) break;
      for (let j = 0; j < off.length; j++) off[j]! -= strides[j]![d]! * outer[d]!;
      idx[d] = 0;
    }
  }
}
