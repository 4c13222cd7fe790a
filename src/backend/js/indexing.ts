// Gather/scatter style kernels for the JS backend. Index tensors are int32.

import type { TypedArray } from '../../core/dtype.js';
import { IndexError } from '../../core/errors.js';
import type { KernelArgs, ViewArg } from '../../ir/kernel-spec.js';

type Data = (v: ViewArg) => TypedArray;

/** Visits every multi-index of `shape`, giving the running offsets of several strided operands. */
function forEachIndex(shape: readonly number[], views: readonly ViewArg[], dim: number, body: (offsets: number[], dimIndex: number) => void): void {
  const nd = shape.length;
  const idx = new Array<number>(nd).fill(0);
  const offs = views.map((v) => v.offset);
  const total = shape.reduce((a, b) => a * b, 1);
  for (let count = 0; count < total; count++) {
    body(offs, idx[dim]!);
    for (let d = nd - 1; d >= 0; d--) {
      idx[d]!++;
      for (let k = 0; k < views.length; k++) offs[k]! += views[k]!.strides[d]!;
      if (idx[d]! < shape[d]!) break;
      for (let k = 0; k < views.length; k++) offs[k]! -= views[k]!.strides[d]! * shape[d]!;
      idx[d] = 0;
    }
  }
}

function checkIndex(op: string, i: number, size: number): void {
  if (i < 0 || i >= size || !Number.isInteger(i)) {
    throw new IndexError(`index ${i} is out of bounds for a dim of size ${size}`, op, `indices must lie in [0, ${size - 1}]`);
  }
}

export function gather(args: Extract<KernelArgs, { kind: 'gather' }>, data: Data, inSize: number): void {
  const src = data(args.input), idx = data(args.index), out = data(args.out);
  const sd = args.input.strides[args.dim]!;
  // the input walks like the index except along `dim`, where the index value picks the row
  const inWalk: ViewArg = { ...args.input, strides: args.input.strides.map((s, d) => (d === args.dim ? 0 : s)) };
  forEachIndex(args.shape, [inWalk, args.index, args.out], args.dim, (o) => {
    const i = idx[o[1]!]!;
    checkIndex('gather', i, inSize);
    out[o[2]!] = src[o[0]! + i * sd]!;
  });
}

export function scatterAdd(args: Extract<KernelArgs, { kind: 'scatterAdd' }>, data: Data, outSize: number): void {
  const src = data(args.src), idx = data(args.index), out = data(args.out);
  const sd = args.out.strides[args.dim]!;
  const outWalk: ViewArg = { ...args.out, strides: args.out.strides.map((s, d) => (d === args.dim ? 0 : s)) };
  forEachIndex(args.shape, [outWalk, args.index, args.src], args.dim, (o) => {
    const i = idx[o[1]!]!;
    checkIndex('scatterAdd', i, outSize);
    out[o[0]! + i * sd] += src[o[2]!]!;
  });
}

/** out[o, j, i] = input[o, index[j], i] over contiguous [outer, inDim, inner] input. */
export function indexSelect(args: Extract<KernelArgs, { kind: 'indexSelect' }>, data: Data): void {
  const src = data(args.input), idx = data(args.index), out = data(args.out);
  const { outer, inDim, inner, count } = args;
  const is = args.index.strides[0] ?? 1;
  for (let j = 0; j < count; j++) checkIndex('indexSelect', idx[args.index.offset + j * is]!, inDim);
  let q = args.out.offset;
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < count; j++) {
      let p = args.input.offset + (o * inDim + idx[args.index.offset + j * is]!) * inner;
      for (let i = 0; i < inner; i++) out[q++] = src[p++]!;
    }
  }
}

/** out[o, index[j], i] += src[o, j, i]; out is contiguous [outer, outDim, inner]. */
export function indexAdd(args: Extract<KernelArgs, { kind: 'indexAdd' }>, data: Data): void {
  const src = data(args.src), idx = data(args.index), out = data(args.out);
  const { outer, outDim, inner, count } = args;
  const is = args.index.strides[0] ?? 1;
  for (let j = 0; j < count; j++) checkIndex('indexAdd', idx[args.index.offset + j * is]!, outDim);
  let p = args.src.offset;
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < count; j++) {
      let q = args.out.offset + (o * outDim + idx[args.index.offset + j * is]!) * inner;
      for (let i = 0; i < inner; i++) out[q++] += src[p++]!;
    }
  }
}

/** Inclusive prefix sum along the middle dim of contiguous [outer, len, inner]. */
export function cumsum(args: Extract<KernelArgs, { kind: 'cumsum' }>, data: Data): void {
  const src = data(args.input), out = data(args.out);
  const { outer, len, inner } = args;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      let acc = 0;
      let p = o * len * inner + i;
      for (let l = 0; l < len; l++, p += inner) {
        acc += src[args.input.offset + p]!;
        out[args.out.offset + p] = acc;
      }
    }
  }
}
