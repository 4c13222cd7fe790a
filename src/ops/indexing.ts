// Indexing primitives: gather / scatterAdd along a dim, indexSelect / indexAdd with a
// 1-D index (embeddings and their gradients), plus the decompositions built on them.

import { ArgumentError, DTypeError, IndexError, ShapeError, fmtShape } from '../core/errors.js';
import { normalizeDim, numel } from '../core/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { apply, copyInto, view, type PrimDef, expectTensor, readContiguous } from './dispatch.js';
import { contiguous, pad, reshape } from './movement.js';
import * as m from './math.js';
import { ones, tensor, zeros } from './creation.js';
import { sum as reduceSum } from './reduce.js';
import { publicOp } from '../core/user-op.js';

interface DimAttrs { readonly dim: number }

/** Launches a kernel; an out-of-bounds index error from it gets the op's shapes added. */
function withShapes(op: string, shapes: () => string, launch: () => void): void {
  try {
    launch();
  } catch (e) {
    if (e instanceof IndexError) throw new IndexError(`${e.detail} (${shapes()})`, op, e.hint);
    throw e;
  }
}

function checkIndexTensor(op: string, index: Tensor): void {
  if (index.dtype !== 'int32') {
    throw new DTypeError(`index must be int32, got ${index.dtype}`, op, 'cast indices with .int()');
  }
}

export const gatherPrim: PrimDef<DimAttrs> = {
  name: 'gather',
  meta(inputs, a) {
    const [x, index] = inputs as [Tensor, Tensor];
    checkIndexTensor('gather', index);
    if (index.ndim !== x.ndim || index.shape.some((s, d) => d !== a.dim && s > x.shape[d]!)) {
      throw new ShapeError(`index ${fmtShape(index.shape)} does not fit input ${fmtShape(x.shape)} outside dim ${a.dim}`, 'gather', 'index must have the same rank, and no larger sizes except along dim');
    }
    return { shape: index.shape, dtype: x.dtype };
  },
  run(inputs, out, a) {
    const [x, index] = inputs as [Tensor, Tensor];
    const backend = out.storage.backend;
    withShapes('gather', () => `input ${fmtShape(x.shape)}, index ${fmtShape(index.shape)}, dim ${a.dim}`, () =>
      backend.launch(backend.prepare({ kind: 'gather', dtype: x.dtype, ndim: x.ndim }), {
        kind: 'gather', input: view(x), index: view(index), out: view(out), shape: index.shape, dim: a.dim, dimSize: x.shape[a.dim]!,
      }));
  },
  backward: (g, ctx) => [scatterAdd(zeros(ctx.inputShapes[0]!, { dtype: ctx.inputDTypes[0]! }), ctx.attrs.dim, ctx.inputs[1]!, g), null],
  saveInputs: [1],
  formatAttrs: (a) => `dim=${a.dim}`,
};

export const gather = publicOp('gather', function gather(x: Tensor, dim: number, index: Tensor): Tensor {
  expectTensor('gather', x, 'x');
  expectTensor('gather', index, 'index');
  const d = normalizeDim('gather', dim, x.ndim, x.shape);
  return apply(gatherPrim, [x, index], { dim: d });
});

/** out = self with src added at index along dim (not in place). */
export const scatterAddPrim: PrimDef<DimAttrs> = {
  name: 'scatterAdd',
  meta(inputs, a) {
    const [self, index, src] = inputs as [Tensor, Tensor, Tensor];
    checkIndexTensor('scatterAdd', index);
    if (index.ndim !== self.ndim || src.ndim !== self.ndim || index.shape.some((s, d) => s > src.shape[d]! || (d !== a.dim && s > self.shape[d]!))) {
      throw new ShapeError(`index ${fmtShape(index.shape)}, src ${fmtShape(src.shape)} and self ${fmtShape(self.shape)} do not fit`, 'scatterAdd');
    }
    if (src.dtype !== self.dtype) throw new DTypeError(`src dtype ${src.dtype} differs from self ${self.dtype}`, 'scatterAdd');
    return { shape: self.shape, dtype: self.dtype };
  },
  run(inputs, out, a) {
    const [self, index, src] = inputs as [Tensor, Tensor, Tensor];
    const backend = out.storage.backend;
    copyInto(out, self);
    withShapes('scatterAdd', () => `self ${fmtShape(self.shape)}, index ${fmtShape(index.shape)}, src ${fmtShape(src.shape)}, dim ${a.dim}`, () =>
      backend.launch(backend.prepare({ kind: 'scatterAdd', dtype: out.dtype, ndim: out.ndim }), {
        kind: 'scatterAdd', src: view(src), index: view(index), out: view(out), shape: index.shape, dim: a.dim, dimSize: out.shape[a.dim]!,
      }));
  },
  // src may be larger than index (only its leading part is read): the rest gets a zero gradient
  backward: (g, ctx) => [g, null, ctx.needsGrad[2] ? zeroPadTo(gather(g, ctx.attrs.dim, ctx.inputs[1]!), ctx.inputShapes[2]!) : null],
  saveInputs: [1],
  formatAttrs: (a) => `dim=${a.dim}`,
};

function zeroPadTo(t: Tensor, shape: readonly number[]): Tensor {
  if (t.shape.every((s, d) => s === shape[d])) return t;
  const pads: number[] = [];
  for (let d = t.ndim - 1; d >= 0; d--) pads.push(0, shape[d]! - t.shape[d]!);
  return pad(t, pads, 0);
}

export const scatterAdd = publicOp('scatterAdd', function scatterAdd(self: Tensor, dim: number, index: Tensor, src: Tensor): Tensor {
  expectTensor('scatterAdd', self, 'self');
  expectTensor('scatterAdd', index, 'index');
  expectTensor('scatterAdd', src, 'src');
  const d = normalizeDim('scatterAdd', dim, self.ndim, self.shape);
  return apply(scatterAddPrim, [self, index, src], { dim: d });
});

// ---- indexSelect / indexAdd over contiguous data ----

export const indexSelectPrim: PrimDef<DimAttrs> = {
  name: 'indexSelect',
  meta(inputs, a) {
    const [x, index] = inputs as [Tensor, Tensor];
    checkIndexTensor('indexSelect', index);
    if (index.ndim !== 1) throw new ShapeError(`index must be 1-D, got ${fmtShape(index.shape)}`, 'indexSelect', 'flatten the index and reshape the result');
    const shape = [...x.shape];
    shape[a.dim] = index.shape[0]!;
    return { shape, dtype: x.dtype };
  },
  run(inputs, out, a) {
    const [x0, index] = inputs as [Tensor, Tensor];
    const x = x0.isContiguous ? x0 : contiguous(x0);
    const backend = out.storage.backend;
    try {
      withShapes('indexSelect', () => `input ${fmtShape(x0.shape)}, index ${fmtShape(index.shape)}, dim ${a.dim}`, () =>
        backend.launch(backend.prepare({ kind: 'indexSelect', dtype: x.dtype }), {
          kind: 'indexSelect', input: view(x), index: view(index), out: view(out),
          outer: numel(x.shape.slice(0, a.dim)), inDim: x.shape[a.dim]!, inner: numel(x.shape.slice(a.dim + 1)), count: index.shape[0]!,
        }));
    } finally {
      if (x !== x0) x.dispose();
    }
  },
  backward: (g, ctx) => [indexAdd(zeros(ctx.inputShapes[0]!, { dtype: ctx.inputDTypes[0]! }), ctx.attrs.dim, ctx.inputs[1]!, g), null],
  saveInputs: [1],
  formatAttrs: (a) => `dim=${a.dim}`,
};

export const indexSelect = publicOp('indexSelect', function indexSelect(x: Tensor, dim: number, index: Tensor): Tensor {
  expectTensor('indexSelect', x, 'x');
  expectTensor('indexSelect', index, 'index');
  const d = normalizeDim('indexSelect', dim, x.ndim, x.shape);
  return apply(indexSelectPrim, [x, index], { dim: d });
});

/** out = self with src[.., j, ..] added at index[j] along dim (not in place). */
export const indexAddPrim: PrimDef<DimAttrs> = {
  name: 'indexAdd',
  meta(inputs, a) {
    const [self, index, src] = inputs as [Tensor, Tensor, Tensor];
    checkIndexTensor('indexAdd', index);
    if (index.ndim !== 1 || src.ndim !== self.ndim || src.shape[a.dim] !== index.shape[0] || src.shape.some((s, d) => d !== a.dim && s !== self.shape[d])) {
      throw new ShapeError(`self ${fmtShape(self.shape)}, 1-D index ${fmtShape(index.shape)} and src ${fmtShape(src.shape)} do not fit along dim ${a.dim}`, 'indexAdd');
    }
    return { shape: self.shape, dtype: self.dtype };
  },
  run(inputs, out, a) {
    const [self, index, src0] = inputs as [Tensor, Tensor, Tensor];
    const src = src0.isContiguous ? src0 : contiguous(src0);
    copyInto(out, self);
    const backend = out.storage.backend;
    try {
      withShapes('indexAdd', () => `self ${fmtShape(self.shape)}, index ${fmtShape(index.shape)}, src ${fmtShape(src0.shape)}, dim ${a.dim}`, () =>
        backend.launch(backend.prepare({ kind: 'indexAdd', dtype: out.dtype }), {
          kind: 'indexAdd', src: view(src), index: view(index), out: view(out),
          outer: numel(out.shape.slice(0, a.dim)), outDim: out.shape[a.dim]!, inner: numel(out.shape.slice(a.dim + 1)), count: index.shape[0]!,
        }));
    } finally {
      if (src !== src0) src.dispose();
    }
  },
  backward: (g, ctx) => [g, null, ctx.needsGrad[2] ? indexSelect(g, ctx.attrs.dim, ctx.inputs[1]!) : null],
  saveInputs: [1],
  formatAttrs: (a) => `dim=${a.dim}`,
};

export const indexAdd = publicOp('indexAdd', function indexAdd(self: Tensor, dim: number, index: Tensor, src: Tensor): Tensor {
  expectTensor('indexAdd', self, 'self');
  expectTensor('indexAdd', index, 'index');
  expectTensor('indexAdd', src, 'src');
  const d = normalizeDim('indexAdd', dim, self.ndim, self.shape);
  return apply(indexAddPrim, [self, index, src], { dim: d });
});

// ---- cumsum ----

export const cumsumPrim: PrimDef<DimAttrs> = {
  name: 'cumsum',
  meta: (inputs) => ({ shape: inputs[0]!.shape, dtype: inputs[0]!.dtype === 'bool' ? 'int32' : inputs[0]!.dtype }),
  run(inputs, out, a) {
    const x0 = inputs[0]!;
    const x = x0.isContiguous ? x0 : contiguous(x0);
    const backend = out.storage.backend;
    backend.launch(backend.prepare({ kind: 'cumsum', dtype: out.dtype }), {
      kind: 'cumsum', input: view(x), out: view(out), outer: numel(x.shape.slice(0, a.dim)), len: x.shape[a.dim]!, inner: numel(x.shape.slice(a.dim + 1)),
    });
    if (x !== x0) x.dispose();
  },
  // d/dx_j sum_{i>=j}: a reversed cumsum of the gradient
  backward: (g, ctx) => [flipCumsumFlip(g, ctx.attrs.dim)],
  saveInputs: false,
  formatAttrs: (a) => `dim=${a.dim}`,
};

function flipCumsumFlip(g: Tensor, dim: number): Tensor {
  const total = m.sub(sumKeep(g, dim), cumsum(g, dim));
  return m.add(total, g);
}

function sumKeep(g: Tensor, dim: number): Tensor {
  return reduceSum(g, dim, true);
}

export const cumsum = publicOp('cumsum', function cumsum(x: Tensor, dim: number): Tensor {
  expectTensor('cumsum', x, 'x');
  const d = normalizeDim('cumsum', dim, x.ndim, x.shape);
  return apply(cumsumPrim, [x], { dim: d });
});

// ---- decompositions ----

/**
 * One-hot int32 encoding of class indices (last dim gets numClasses). A ones scatter, so an
 * index outside [0, numClasses) is an IndexError (torch raises too), not a zero row.
 */
export const oneHot = publicOp('oneHot', function oneHot(index: Tensor, numClasses = -1): Tensor {
  expectTensor('oneHot', index, 'index');
  checkIndexTensor('oneHot', index);
  let n = numClasses;
  if (n < 0) n = index.size === 0 ? 0 : Math.max(...Array.from(index.dataSync())) + 1;
  if (!Number.isInteger(n)) throw new ArgumentError(`numClasses must be an integer, got ${numClasses}`, 'oneHot');
  const shape = [...index.shape, 1];
  return scatterAdd(zeros([...index.shape, n], { dtype: 'int32' }), -1, reshape(index, shape), ones(shape, { dtype: 'int32' }));
});

/**
 * Indices of the non-zero elements of x, as int32 [count, x.ndim] (torch.nonzero). The output
 * size depends on the data: inside kiln.compile this is a graph break (reported with its
 * location), never a crash.
 */
export const nonzero = publicOp('nonzero', function nonzero(x: Tensor): Tensor {
  expectTensor('nonzero', x, 'x');
  const data = readContiguous(x, 'nonzero (its output size depends on the data)');
  const nd = x.ndim;
  const strides = x.shape.map((_, d) => x.shape.slice(d + 1).reduce((a, b) => a * b, 1));
  const out: number[] = [];
  for (let i = 0; i < data.length; i++) {
    if (!data[i]) continue;
    for (let d = 0; d < nd; d++) out.push(Math.floor(i / strides[d]!) % x.shape[d]!);
  }
  return tensor(Int32Array.from(out), [out.length / Math.max(nd, 1), nd], { dtype: 'int32' });
});

/** The elements of x where mask (same shape, bool) is true, as a 1-D tensor (torch.masked_select); data-dependent like nonzero. */
export const maskedSelect = publicOp('maskedSelect', function maskedSelect(x: Tensor, mask: Tensor): Tensor {
  expectTensor('maskedSelect', x, 'x');
  expectTensor('maskedSelect', mask, 'mask');
  if (mask.shape.length !== x.shape.length || mask.shape.some((s, d) => s !== x.shape[d])) throw new ShapeError(`mask ${fmtShape(mask.shape)} must have the shape of x ${fmtShape(x.shape)}`, 'maskedSelect', 'expand the mask first');
  const data = readContiguous(mask, 'maskedSelect (its output size depends on the mask)');
  const idx: number[] = [];
  for (let i = 0; i < data.length; i++) if (data[i]) idx.push(i);
  return indexSelect(reshape(x, [numel(x.shape)]), 0, tensor(Int32Array.from(idx), [idx.length], { dtype: 'int32' }));
});
