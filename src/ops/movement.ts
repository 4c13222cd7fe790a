// Movement ops. reshape/view, permute, expand, slice, squeeze/unsqueeze are views on the
// same storage (no copy) whenever the layout allows; their gradients move the gradient back.

import { ArgumentError, IndexError, ShapeError, fmtShape } from '../core/errors.js';
import { inferReshape, normalizeDim, numel, shapesEqual, viewStrides } from '../core/shape.js';
import { Tensor } from '../tensor/tensor.js';
import { apply, copyInto, type PrimDef, expectTensor } from './dispatch.js';
import { copy } from './pointwise.js';
import { sum } from './reduce.js';
import { publicOp } from '../core/user-op.js';

// ---- reshape (a view when strides allow; the caller copies otherwise) ----

interface ShapeAttrs { readonly shape: readonly number[] }

export const viewPrim: PrimDef<ShapeAttrs> = {
  name: 'reshape',
  meta(inputs, attrs) {
    const x = inputs[0]!;
    const strides = viewStrides(x.shape, x.strides, attrs.shape);
    if (!strides) {
      throw new ShapeError(`cannot view ${fmtShape(x.shape)} with strides ${fmtShape(x.strides)} as ${fmtShape(attrs.shape)} without a copy`, 'view', 'call .reshape() (copies when needed) or .contiguous() first');
    }
    return { shape: attrs.shape, dtype: x.dtype, view: { strides, offset: x.offset } };
  },
  backward: (g, ctx) => [reshape(g, ctx.inputShapes[0]!)],
  saveInputs: false,
  formatAttrs: (a) => fmtShape(a.shape),
};

export const reshape = publicOp('reshape', function reshape(x: Tensor, shape: readonly number[]): Tensor {
  expectTensor('reshape', x, 'x');
  x.assertAlive('reshape');
  checkShapeArg('reshape', shape);
  const target = inferReshape('reshape', x.shape, shape);
  if (!viewStrides(x.shape, x.strides, target)) return apply(viewPrim, [copy(x)], { shape: target });
  return apply(viewPrim, [x], { shape: target });
});

/** A view with a new shape; throws when the layout needs a copy (torch's view). */
export const viewAs = publicOp('viewAs', function viewAs(x: Tensor, shape: readonly number[]): Tensor {
  expectTensor('viewAs', x, 'x');
  checkShapeArg('view', shape);
  return apply(viewPrim, [x], { shape: inferReshape('view', x.shape, shape) });
});

export const flatten = publicOp('flatten', function flatten(x: Tensor, startDim = 0, endDim = -1): Tensor {
  expectTensor('flatten', x, 'x');
  if (x.ndim === 0) return reshape(x, [1]);
  const s = normalizeDim('flatten', startDim, x.ndim, x.shape);
  const e = normalizeDim('flatten', endDim, x.ndim, x.shape);
  const shape = [...x.shape.slice(0, s), numel(x.shape.slice(s, e + 1)), ...x.shape.slice(e + 1)];
  return reshape(x, shape);
});

export const unsqueeze = publicOp('unsqueeze', function unsqueeze(x: Tensor, dim: number): Tensor {
  expectTensor('unsqueeze', x, 'x');
  const d = normalizeDim('unsqueeze', dim, x.ndim + 1);
  const shape = [...x.shape];
  shape.splice(d, 0, 1);
  return reshape(x, shape);
});

export const squeeze = publicOp('squeeze', function squeeze(x: Tensor, dim?: number | readonly number[]): Tensor {
  expectTensor('squeeze', x, 'x');
  const dims = dim === undefined ? x.shape.map((_, i) => i) : (typeof dim === 'number' ? [dim] : dim).map((d) => normalizeDim('squeeze', d, x.ndim, x.shape));
  return reshape(x, x.shape.filter((s, i) => !(s === 1 && dims.includes(i))));
});

// ---- permute ----

interface PermuteAttrs { readonly dims: readonly number[] }

export const permutePrim: PrimDef<PermuteAttrs> = {
  name: 'permute',
  meta(inputs, attrs) {
    const x = inputs[0]!;
    return {
      shape: attrs.dims.map((d) => x.shape[d]!),
      dtype: x.dtype,
      view: { strides: attrs.dims.map((d) => x.strides[d]!), offset: x.offset },
    };
  },
  backward: (g, ctx) => {
    const inv = new Array<number>(ctx.attrs.dims.length);
    ctx.attrs.dims.forEach((d, i) => (inv[d] = i));
    return [permute(g, inv)];
  },
  saveInputs: false,
  formatAttrs: (a) => fmtShape(a.dims),
};

export const permute = publicOp('permute', function permute(x: Tensor, dims: readonly number[]): Tensor {
  expectTensor('permute', x, 'x');
  if (!Array.isArray(dims) || dims.length !== x.ndim) {
    throw new ArgumentError(`dims ${JSON.stringify(dims)} must list each of the ${x.ndim} dims of ${fmtShape(x.shape)} once`, 'permute');
  }
  const nd = dims.map((d) => normalizeDim('permute', d, x.ndim, x.shape));
  if (new Set(nd).size !== nd.length) throw new ArgumentError(`dims ${JSON.stringify(dims)} repeat a dim`, 'permute');
  return apply(permutePrim, [x], { dims: nd });
});

export const transpose = publicOp('transpose', function transpose(x: Tensor, dim0 = -2, dim1 = -1): Tensor {
  expectTensor('transpose', x, 'x');
  if (x.ndim < 2 && dim0 === -2 && dim1 === -1) return x.ndim === 0 ? reshape(x, []) : reshape(x, x.shape);
  const a = normalizeDim('transpose', dim0, x.ndim, x.shape);
  const b = normalizeDim('transpose', dim1, x.ndim, x.shape);
  const dims = x.shape.map((_, i) => i);
  dims[a] = b;
  dims[b] = a;
  return apply(permutePrim, [x], { dims });
});

// ---- expand ----

export const expandPrim: PrimDef<ShapeAttrs> = {
  name: 'expand',
  meta(inputs, attrs) {
    const x = inputs[0]!;
    const n = attrs.shape.length;
    if (n < x.ndim) throw new ShapeError(`cannot expand ${fmtShape(x.shape)} to fewer dims ${fmtShape(attrs.shape)}`, 'expand');
    const strides = new Array<number>(n);
    const shape = new Array<number>(n);
    for (let d = 0; d < n; d++) {
      const sd = d - (n - x.ndim);
      const want = attrs.shape[d]!;
      const have = sd >= 0 ? x.shape[sd]! : 1;
      const target = want === -1 ? have : want;
      if (have !== target && have !== 1) {
        throw new ShapeError(`cannot expand ${fmtShape(x.shape)} to ${fmtShape(attrs.shape)}: dim ${d} has size ${have}, not 1`, 'expand', 'only size-1 dims can be expanded');
      }
      shape[d] = target;
      strides[d] = sd >= 0 && have === target ? x.strides[sd]! : 0;
    }
    return { shape, dtype: x.dtype, view: { strides, offset: x.offset } };
  },
  backward: (g, ctx) => [sumToShape(g, ctx.inputShapes[0]!)],
  saveInputs: false,
  formatAttrs: (a) => fmtShape(a.shape),
};

export const expand = publicOp('expand', function expand(x: Tensor, shape: readonly number[]): Tensor {
  expectTensor('expand', x, 'x');
  checkShapeArg('expand', shape, true);
  if (shapesEqual(x.shape, shape)) return apply(viewPrim, [x], { shape });
  return apply(expandPrim, [x], { shape });
});

/** Sums a broadcast gradient back to the shape of the operand it came from. */
export function sumToShape(g: Tensor, shape: readonly number[]): Tensor {
  expectTensor('sumToShape', g, 'g');
  if (shapesEqual(g.shape, shape)) return g;
  const lead = g.ndim - shape.length;
  const dims: number[] = [];
  for (let d = 0; d < g.ndim; d++) if (d < lead || (shape[d - lead] === 1 && g.shape[d] !== 1)) dims.push(d);
  const s = dims.length ? sum(g, dims, true) : g;
  return reshape(s, shape);
}

// ---- slice (with step) ----

interface SliceAttrs { readonly dim: number; readonly start: number; readonly end: number; readonly step: number }

export const slicePrim: PrimDef<SliceAttrs> = {
  name: 'slice',
  meta(inputs, a) {
    const x = inputs[0]!;
    const len = Math.max(0, Math.ceil((a.end - a.start) / a.step));
    const shape = [...x.shape];
    shape[a.dim] = len;
    const strides = [...x.strides];
    strides[a.dim] = x.strides[a.dim]! * a.step;
    return { shape, dtype: x.dtype, view: { strides, offset: x.offset + a.start * x.strides[a.dim]! } };
  },
  backward: (g, ctx) => [sliceBackward(g, ctx.inputShapes[0]!, ctx.attrs)],
  saveInputs: false,
  formatAttrs: (a) => `dim=${a.dim}, ${a.start}:${a.end}${a.step !== 1 ? `:${a.step}` : ''}`,
};

function sliceBackward(g: Tensor, shape: readonly number[], a: SliceAttrs): Tensor {
  // a whole dim reversed (flip): reversing the gradient puts it back
  if (a.step === -1 && a.start === shape[a.dim]! - 1 && a.end === -1) return apply(slicePrim, [g], a);
  const rank = shape.length;
  if (a.step === 1) return pad(g, padsAt(rank, a.dim, a.start, shape[a.dim]! - a.end), 0);
  // stepped: interleave g with step-1 zeros along dim (a padded new axis folded in), then place
  // it at start; written with traceable ops so a compiled backward can record it
  const len = g.shape[a.dim]!;
  const spread = pad(unsqueeze(g, a.dim + 1), padsAt(rank + 1, a.dim + 1, 0, a.step - 1), 0);
  const interleaved = reshape(spread, g.shape.map((s, d) => (d === a.dim ? len * a.step : s)));
  const total = a.start + len * a.step;
  const placed = pad(interleaved, padsAt(rank, a.dim, a.start, Math.max(0, shape[a.dim]! - total)), 0);
  return total > shape[a.dim]! ? slice(placed, a.dim, 0, shape[a.dim]!) : placed;
}

/** pad()'s (left, right) pairs, last dim first, with `left`/`right` at `dim` of a rank-`rank` tensor. */
function padsAt(rank: number, dim: number, left: number, right: number): number[] {
  const pads = new Array<number>(2 * rank).fill(0);
  const k = rank - 1 - dim;
  pads[2 * k] = left;
  pads[2 * k + 1] = right;
  return pads;
}

export const slice = publicOp('slice', function slice(x: Tensor, dim: number, start = 0, end?: number, step = 1): Tensor {
  expectTensor('slice', x, 'x');
  const d = normalizeDim('slice', dim, x.ndim, x.shape);
  const size = x.shape[d]!;
  if (!Number.isInteger(step) || step <= 0) throw new ArgumentError(`step must be a positive integer, got ${step}`, 'slice');
  const clampIdx = (i: number) => Math.min(Math.max(i < 0 ? i + size : i, 0), size);
  const s = clampIdx(start);
  const e = Math.max(s, clampIdx(end ?? size));
  return apply(slicePrim, [x], { dim: d, start: s, end: e, step });
});

/** torch.narrow: length elements from start along dim (a view). */
export const narrow = publicOp('narrow', function narrow(x: Tensor, dim: number, start: number, length: number): Tensor {
  expectTensor('narrow', x, 'x');
  const d = normalizeDim('narrow', dim, x.ndim, x.shape);
  const s = start < 0 ? start + x.shape[d]! : start;
  if (s < 0 || length < 0 || s + length > x.shape[d]!) {
    throw new IndexError(`start ${start} + length ${length} exceeds dim ${d} of size ${x.shape[d]} in ${fmtShape(x.shape)}`, 'narrow');
  }
  return slice(x, d, s, s + length);
});

/** x[..., index, ...] along dim, removing that dim (a view). */
export const select = publicOp('select', function select(x: Tensor, dim: number, index: number): Tensor {
  expectTensor('select', x, 'x');
  const d = normalizeDim('select', dim, x.ndim, x.shape);
  const size = x.shape[d]!;
  const i = index < 0 ? index + size : index;
  if (i < 0 || i >= size || !Number.isInteger(i)) {
    throw new IndexError(`index ${index} is out of range for dim ${d} of size ${size} (shape ${fmtShape(x.shape)})`, 'select');
  }
  return squeeze(slice(x, d, i, i + 1), d);
});

// ---- pad (constant) ----

interface PadAttrs { readonly pads: readonly number[]; readonly value: number }

export const padPrim: PrimDef<PadAttrs> = {
  name: 'pad',
  meta(inputs, a) {
    const x = inputs[0]!;
    const shape = [...x.shape];
    for (let k = 0; 2 * k < a.pads.length; k++) {
      const d = x.ndim - 1 - k;
      shape[d] = shape[d]! + a.pads[2 * k]! + a.pads[2 * k + 1]!;
      if (shape[d]! < 0) throw new ShapeError(`padding ${JSON.stringify(a.pads)} makes dim ${d} of ${fmtShape(x.shape)} negative`, 'pad');
    }
    return { shape, dtype: x.dtype };
  },
  run(inputs, out, a) {
    const x = inputs[0]!;
    const backend = out.storage.backend;
    const fill = { kind: 'pointwise' as const, expr: { kind: 'param' as const, index: 0 }, outDType: out.dtype, nInputs: 0, ndim: 1 };
    backend.launch(backend.prepare(fill), { kind: 'pointwise', out: { buf: out.storage.buf, offset: 0, strides: [1] }, inputs: [], shape: [out.size], params: [a.value] });
    // the interior window of out (may crop when pads are negative)
    let offset = 0;
    const shape = [...out.shape];
    let srcOffset = x.offset;
    for (let k = 0; 2 * k < a.pads.length; k++) {
      const d = x.ndim - 1 - k;
      const left = a.pads[2 * k]!;
      const right = a.pads[2 * k + 1]!;
      offset += Math.max(left, 0) * out.strides[d]!;
      srcOffset += Math.max(-left, 0) * x.strides[d]!;
      shape[d] = x.shape[d]! + Math.min(left, 0) + Math.min(right, 0);
    }
    if (numel(shape) === 0) return;
    backend.launch(backend.prepare({ kind: 'pointwise', expr: { kind: 'op', op: 'identity', dtype: out.dtype, args: [{ kind: 'input', index: 0, dtype: x.dtype }] }, outDType: out.dtype, nInputs: 1, ndim: shape.length }), {
      kind: 'pointwise', out: { buf: out.storage.buf, offset, strides: out.strides }, inputs: [{ buf: x.storage.buf, offset: srcOffset, strides: x.strides }], shape, params: [],
    });
  },
  backward: (g, ctx) => [pad(g, ctx.attrs.pads.map((p) => -p), 0)],
  saveInputs: false,
  formatAttrs: (a) => `${JSON.stringify(a.pads)}, value=${a.value}`,
};

/** torch.nn.functional.pad, constant mode: pads lists (left, right) pairs from the last dim. */
export const pad = publicOp('pad', function pad(x: Tensor, pads: readonly number[], value = 0): Tensor {
  expectTensor('pad', x, 'x');
  if (!Array.isArray(pads) || pads.length % 2 !== 0 || pads.length / 2 > x.ndim || !pads.every(Number.isInteger)) {
    throw new ArgumentError(`pads ${JSON.stringify(pads)} must be (left, right) integer pairs for at most ${x.ndim} dims`, 'pad');
  }
  return apply(padPrim, [x], { pads, value });
});

// ---- cat ----

interface CatAttrs { readonly dim: number }

export const catPrim: PrimDef<CatAttrs> = {
  name: 'cat',
  meta(inputs, a) {
    const first = inputs[0]!;
    let total = 0;
    for (const t of inputs) {
      if (t.ndim !== first.ndim || t.shape.some((s, d) => d !== a.dim && s !== first.shape[d])) {
        throw new ShapeError(`shapes ${inputs.map((u) => fmtShape(u.shape)).join(', ')} differ outside dim ${a.dim}`, 'cat', 'all inputs must match except along the concatenation dim');
      }
      if (t.dtype !== first.dtype) throw new ShapeError(`dtypes ${inputs.map((u) => u.dtype).join(', ')} differ`, 'cat', 'cast the inputs to one dtype');
      total += t.shape[a.dim]!;
    }
    const shape = [...first.shape];
    shape[a.dim] = total;
    return { shape, dtype: first.dtype };
  },
  run(inputs, out, a) {
    let at = 0;
    for (const t of inputs) {
      const len = t.shape[a.dim]!;
      if (len > 0) {
        const win = new Tensor(out.storage, t.shape, out.strides, out.offset + at * out.strides[a.dim]!, out.dtype, true);
        copyInto(win, t);
        win.dispose();
      }
      at += len;
    }
  },
  backward: (g, ctx) => {
    let at = 0;
    return ctx.inputShapes.map((s, i) => {
      const len = s[ctx.attrs.dim]!;
      const r = ctx.needsGrad[i] ? slice(g, ctx.attrs.dim, at, at + len) : null;
      at += len;
      return r;
    });
  },
  saveInputs: false,
  formatAttrs: (a) => `dim=${a.dim}`,
};

export const cat = publicOp('cat', function cat(tensors: readonly Tensor[], dim = 0): Tensor {
  if (Array.isArray(tensors)) tensors.forEach((t, i) => expectTensor('cat', t, `tensors[${i}]`));
  if (!Array.isArray(tensors) || tensors.length === 0 || !tensors.every((t) => t instanceof Tensor)) {
    throw new ArgumentError('expects a non-empty array of tensors', 'cat');
  }
  const d = normalizeDim('cat', dim, tensors[0]!.ndim, tensors[0]!.shape);
  return apply(catPrim, tensors, { dim: d });
});

export const stack = publicOp('stack', function stack(tensors: readonly Tensor[], dim = 0): Tensor {
  if (Array.isArray(tensors)) tensors.forEach((t, i) => expectTensor('stack', t, `tensors[${i}]`));
  if (!Array.isArray(tensors) || tensors.length === 0) throw new ArgumentError('expects a non-empty array of tensors', 'stack');
  const d = normalizeDim('stack', dim, tensors[0]!.ndim + 1);
  for (const t of tensors) {
    if (!shapesEqual(t.shape, tensors[0]!.shape)) {
      throw new ShapeError(`all tensors must have the same shape, got ${tensors.map((u) => fmtShape(u.shape)).join(', ')}`, 'stack');
    }
  }
  return cat(tensors.map((t) => unsqueeze(t, d)), d);
});

/** Splits into pieces of `size` (a number) or of the listed sizes, along dim (views). */
export const split = publicOp('split', function split(x: Tensor, sizeOrSections: number | readonly number[], dim = 0): Tensor[] {
  expectTensor('split', x, 'x');
  const d = normalizeDim('split', dim, x.ndim, x.shape);
  const total = x.shape[d]!;
  let sizes: number[];
  if (typeof sizeOrSections === 'number') {
    if (!Number.isInteger(sizeOrSections) || sizeOrSections <= 0) throw new ArgumentError(`split size must be a positive integer, got ${sizeOrSections}`, 'split');
    sizes = [];
    for (let at = 0; at < total; at += sizeOrSections) sizes.push(Math.min(sizeOrSections, total - at));
  } else {
    sizes = [...sizeOrSections];
    if (sizes.reduce((a, b) => a + b, 0) !== total) {
      throw new ShapeError(`sizes ${JSON.stringify(sizes)} do not sum to dim ${d} of size ${total}`, 'split');
    }
  }
  let at = 0;
  return sizes.map((s) => {
    const r = slice(x, d, at, at + s);
    at += s;
    return r;
  });
});

export const chunk = publicOp('chunk', function chunk(x: Tensor, chunks: number, dim = 0): Tensor[] {
  expectTensor('chunk', x, 'x');
  const d = normalizeDim('chunk', dim, x.ndim, x.shape);
  if (!Number.isInteger(chunks) || chunks <= 0) throw new ArgumentError(`chunks must be a positive integer, got ${chunks}`, 'chunk');
  return split(x, Math.max(1, Math.ceil(x.shape[d]! / chunks)), d);
});

/** A contiguous tensor with the same values (the input itself when already contiguous). */
export const contiguous = publicOp('contiguous', function contiguous(x: Tensor): Tensor {
  expectTensor('contiguous', x, 'x');
  return x.isContiguous ? apply(viewPrim, [x], { shape: x.shape }) : copy(x);
});

function checkShapeArg(op: string, shape: unknown, allowNegOne = true): asserts shape is readonly number[] {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && (d >= 0 || (allowNegOne && d === -1)))) {
    throw new ArgumentError(`shape must be an array of non-negative integers${allowNegOne ? ' (or -1)' : ''}, got ${JSON.stringify(shape)}`, op);
  }
}
