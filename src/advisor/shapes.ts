// Production shape lists (`--shapes`, a workload's `shapes`): parsing 'x[64,2] float32, y[64]
// int32', finding which input dims vary, and building a workload's inputs at a declared shape.
//
// Inputs at another shape are the setup's own inputs tiled (index modulo the original size)
// along each dim: values stay valid for every dtype (labels and embedding ids stay in range)
// without asking the workload for a second data path.

import * as kiln from '../api/kiln.js';

/** A production shape list that does not parse, or does not fit the workload's inputs. */
export class ShapeListError extends Error {
  override name = 'ShapeListError';
}

export interface ShapeArg {
  /** the name written before the brackets ('x'), or null */
  name: string | null;
  dims: number[];
  /** the dtype written after the brackets, or null */
  dtype: string | null;
}

/** One signature: 'x[64,2] float32, y[64] int32' -> one ShapeArg per argument, in order. */
export function parseSignature(s: string): ShapeArg[] {
  const out: ShapeArg[] = [];
  for (const part of s.split(/,(?![^[]*\])/)) {
    const t = part.trim();
    if (t === '') continue;
    const m = /^([A-Za-z_$][\w$]*)?\s*\[\s*([\d\s,]*)\]\s*([A-Za-z]\w*)?$/.exec(t);
    if (!m) throw new ShapeListError(`shape '${t}' in '${s}': expected name[d0,d1,...] with an optional dtype, e.g. x[32,784] float32`);
    const dims = m[2]!.split(',').map((d) => d.trim()).filter((d) => d !== '').map(Number);
    out.push({ name: m[1] ?? null, dims, dtype: m[3] ?? null });
  }
  if (out.length === 0) throw new ShapeListError(`shape signature '${s}' names no argument`);
  return out;
}

export interface ShapePlan {
  /** per distinct signature, the full shape of every input (unlisted inputs follow the listed ones) */
  shapes: number[][][];
  /** the (input, dim) pairs whose size differs between signatures, with the sizes in signature order */
  varying: { arg: number; dim: number; sizes: number[] }[];
}

/**
 * Every input's shape for each signature. Signatures list the inputs in order; an input not
 * listed (labels after 'x[32,784]') keeps its shape except where a dim has the same index and
 * original size as a listed dim that changed: it follows it (x's batch 64 -> 32 makes y's
 * batch 64 -> 32, as kiln's duck sizing would assume).
 */
export function planShapes(signatures: readonly string[], base: readonly (readonly number[])[]): ShapePlan {
  const shapes = signatures.map((sig) => {
    const args = parseSignature(sig);
    if (args.length > base.length) throw new ShapeListError(`'${sig}' lists ${args.length} arguments; the workload takes ${base.length}`);
    args.forEach((a, i) => {
      if (a.dims.length !== base[i]!.length) throw new ShapeListError(`'${sig}': argument ${i} has rank ${a.dims.length}, the workload's input ${i} has shape [${base[i]!.join(',')}]`);
      if (a.dims.some((d) => !(Number.isInteger(d) && d >= 1))) throw new ShapeListError(`'${sig}': sizes must be positive integers`);
    });
    const follow = new Map<string, number>(); // `${dim}:${baseSize}` -> new size
    args.forEach((a, i) => a.dims.forEach((d, k) => { if (d !== base[i]![k]) follow.set(`${k}:${base[i]![k]}`, d); }));
    return base.map((b, i) => (i < args.length ? [...args[i]!.dims] : b.map((s, k) => follow.get(`${k}:${s}`) ?? s)));
  });
  const varying: ShapePlan['varying'] = [];
  base.forEach((b, i) => b.forEach((_, k) => {
    const sizes = shapes.map((sh) => sh[i]![k]!);
    if (new Set(sizes).size > 1) varying.push({ arg: i, dim: k, sizes });
  }));
  return { shapes, varying };
}

/** `t` tiled to `shape` (element [i, j, ...] = t[i % n0, j % n1, ...]); a new kept tensor. */
export function tileTo(t: kiln.Tensor, shape: readonly number[]): kiln.Tensor {
  if (t.shape.length === shape.length && t.shape.every((s, k) => s === shape[k])) return kiln.keep(t.clone());
  const data = t.dataSync(); // logical order, whatever the strides
  const n = shape.reduce((a, b) => a * b, 1);
  const out = new (data.constructor as new (n: number) => typeof data)(n);
  const inStrides = t.shape.map((_, k) => t.shape.slice(k + 1).reduce((a, b) => a * b, 1));
  const idx = new Array<number>(shape.length).fill(0);
  for (let o = 0; o < n; o++) {
    let off = 0;
    for (let k = 0; k < shape.length; k++) off += (idx[k]! % t.shape[k]!) * inStrides[k]!;
    out[o] = data[off]!;
    for (let k = shape.length - 1; k >= 0; k--) {
      if (++idx[k]! < shape[k]!) break;
      idx[k] = 0;
    }
  }
  return kiln.keep(kiln.tensor(out, [...shape], { dtype: t.dtype }));
}
