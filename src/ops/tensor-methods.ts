// Tensor methods (torch names, camelCase): thin wrappers over the op functions, attached to
// Tensor.prototype here (and their types declared onto the class), so tensor/ depends on
// nothing above it.

import { canCast, type DType, type TypedArray } from '../core/dtype.js';
import { ArgumentError, DTypeError, ShapeError, fmtShape } from '../core/errors.js';
import { Tensor } from '../tensor/tensor.js';
import { formatTensor } from '../tensor/format.js';
import * as m from './math.js';
import * as r from './reduce.js';
import * as mv from './movement.js';
import * as ix from './indexing.js';
import * as fn from './functional.js';
import { matmul } from './linalg.js';
import { cast, copy, type Operand } from './pointwise.js';
import { alias, readContiguous } from './dispatch.js';
import { assign, checkInplace } from './inplace.js';
import type { BackwardOptions } from '../autograd/engine.js';
import { backward } from './backward.js';
import { publicOp } from '../core/user-op.js';

type Dims = number | readonly number[] | undefined;

declare module '../tensor/tensor.js' {
  interface Tensor {
    add(other: Operand, alpha?: number): Tensor;
    sub(other: Operand): Tensor;
    mul(other: Operand): Tensor;
    div(other: Operand): Tensor;
    pow(exponent: Operand): Tensor;
    maximum(other: Operand): Tensor;
    minimum(other: Operand): Tensor;
    eq(other: Operand): Tensor;
    ne(other: Operand): Tensor;
    lt(other: Operand): Tensor;
    le(other: Operand): Tensor;
    gt(other: Operand): Tensor;
    ge(other: Operand): Tensor;
    logicalAnd(other: Operand): Tensor;
    logicalOr(other: Operand): Tensor;
    logicalXor(other: Operand): Tensor;
    logicalNot(): Tensor;
    neg(): Tensor;
    abs(): Tensor;
    exp(): Tensor;
    log(): Tensor;
    log1p(): Tensor;
    expm1(): Tensor;
    sqrt(): Tensor;
    rsqrt(): Tensor;
    sin(): Tensor;
    cos(): Tensor;
    tanh(): Tensor;
    sigmoid(): Tensor;
    relu(): Tensor;
    gelu(approximate?: 'none' | 'tanh'): Tensor;
    silu(): Tensor;
    softplus(beta?: number, threshold?: number): Tensor;
    erf(): Tensor;
    sign(): Tensor;
    floor(): Tensor;
    ceil(): Tensor;
    round(): Tensor;
    reciprocal(): Tensor;
    square(): Tensor;
    clamp(min?: Operand | null, max?: Operand | null): Tensor;
    /** x.where(cond, other): x where cond, else other */
    where(cond: Tensor, other: Operand): Tensor;
    maskedFill(mask: Tensor, value: number): Tensor;

    sum(dim?: Dims, keepdim?: boolean): Tensor;
    prod(dim?: Dims, keepdim?: boolean): Tensor;
    mean(dim?: Dims, keepdim?: boolean): Tensor;
    /** of all elements; with a dim, the values and indices (torch); with a tensor, the elementwise maximum */
    max(): Tensor;
    max(dim: number, keepdim?: boolean): r.ValuesIndices;
    max(other: Tensor): Tensor;
    min(): Tensor;
    min(dim: number, keepdim?: boolean): r.ValuesIndices;
    min(other: Tensor): Tensor;
    amax(dim?: Dims, keepdim?: boolean): Tensor;
    amin(dim?: Dims, keepdim?: boolean): Tensor;
    argmax(dim?: number, keepdim?: boolean): Tensor;
    argmin(dim?: number, keepdim?: boolean): Tensor;
    var(dim?: Dims, keepdim?: boolean, correction?: number): Tensor;
    std(dim?: Dims, keepdim?: boolean, correction?: number): Tensor;
    logsumexp(dim?: Dims, keepdim?: boolean): Tensor;
    softmax(dim?: number): Tensor;
    logSoftmax(dim?: number): Tensor;
    cumsum(dim: number): Tensor;

    matmul(other: Tensor): Tensor;
    mm(other: Tensor): Tensor;

    reshape(...shape: number[] | [readonly number[]]): Tensor;
    view(...shape: number[] | [readonly number[]]): Tensor;
    flatten(startDim?: number, endDim?: number): Tensor;
    squeeze(dim?: number | readonly number[]): Tensor;
    unsqueeze(dim: number): Tensor;
    transpose(dim0?: number, dim1?: number): Tensor;
    permute(...dims: number[] | [readonly number[]]): Tensor;
    expand(...shape: number[] | [readonly number[]]): Tensor;
    expandAs(other: Tensor): Tensor;
    narrow(dim: number, start: number, length: number): Tensor;
    slice(dim: number, start?: number, end?: number, step?: number): Tensor;
    select(dim: number, index: number): Tensor;
    contiguous(): Tensor;
    split(sizeOrSections: number | readonly number[], dim?: number): Tensor[];
    chunk(chunks: number, dim?: number): Tensor[];
    gather(dim: number, index: Tensor): Tensor;
    indexSelect(dim: number, index: Tensor): Tensor;
    scatterAdd(dim: number, index: Tensor, src: Tensor): Tensor;
    triu(diagonal?: number): Tensor;
    tril(diagonal?: number): Tensor;
    /** dims 0 and 1 swapped, for a tensor of at most 2 dims (torch's t()); a view */
    t(): Tensor;
    /** transpose of the last two dims */
    readonly mT: Tensor;
    /** transpose of a 2-D tensor */
    readonly T: Tensor;

    to(dtype: DType): Tensor;
    float(): Tensor;
    double(): Tensor;
    int(): Tensor;
    bool(): Tensor;
    clone(): Tensor;
    detach(): Tensor;
    requiresGrad_(v?: boolean): Tensor;

    add_(other: Operand, alpha?: number): Tensor;
    sub_(other: Operand): Tensor;
    mul_(other: Operand): Tensor;
    div_(other: Operand): Tensor;
    copy_(src: Tensor | number): Tensor;
    fill_(value: number): Tensor;
    zero_(): Tensor;

    backward(gradient?: Tensor, opts?: BackwardOptions): void;
    item(): number;
    toArray(): unknown;
    data(): Promise<TypedArray>;
    toString(): string;
  }
}

const P = Tensor.prototype as unknown as Record<string, unknown>;

function shapeArgs(op: string, args: readonly unknown[]): number[] {
  const list = args.length === 1 && Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  if (!list.every((d) => typeof d === 'number')) throw new ArgumentError(`expects sizes as numbers or one array, got ${JSON.stringify(args)}`, op);
  return list as number[];
}

const binary = { add: m.add, sub: m.sub, mul: m.mul, div: m.div, pow: m.pow, maximum: m.maximum, minimum: m.minimum, eq: m.eq, ne: m.ne, lt: m.lt, le: m.le, gt: m.gt, ge: m.ge, logicalAnd: m.logicalAnd, logicalOr: m.logicalOr, logicalXor: m.logicalXor };
for (const [name, f] of Object.entries(binary)) P[name] = publicOp(name, function (this: Tensor, o: Operand, alpha?: number) { return (f as (a: Operand, b: Operand, c?: number) => Tensor)(this, o, alpha); });
const unary = { logicalNot: m.logicalNot, neg: m.neg, abs: m.abs, exp: m.exp, log: m.log, log1p: m.log1p, expm1: m.expm1, sqrt: m.sqrt, rsqrt: m.rsqrt, sin: m.sin, cos: m.cos, tanh: m.tanh, sigmoid: m.sigmoid, relu: m.relu, silu: m.silu, erf: m.erf, sign: m.sign, floor: m.floor, ceil: m.ceil, round: m.round, reciprocal: m.reciprocal, square: m.square, contiguous: mv.contiguous, clone: copy };
for (const [name, f] of Object.entries(unary)) P[name] = publicOp(name, function (this: Tensor) { return f(this); });

// every method is a public op: errors raised inside name it (src/core/user-op.ts)
const methods: Record<string, (...a: never[]) => unknown> = {
  gelu(this: Tensor, approximate?: 'none' | 'tanh') { return m.gelu(this, approximate); },
  softplus(this: Tensor, beta?: number, threshold?: number) { return m.softplus(this, beta, threshold); },
  clamp(this: Tensor, min?: Operand | null, max?: Operand | null) { return m.clamp(this, min, max); },
  where(this: Tensor, cond: Tensor, other: Operand) { return m.where(cond, this, other); },
  maskedFill(this: Tensor, mask: Tensor, value: number) { return m.where(mask, value, this); },
  sum(this: Tensor, dim?: Dims, keepdim?: boolean) { return r.sum(this, dim, keepdim); },
  prod(this: Tensor, dim?: Dims, keepdim?: boolean) { return r.prod(this, dim, keepdim); },
  mean(this: Tensor, dim?: Dims, keepdim?: boolean) { return r.mean(this, dim, keepdim); },
  max(this: Tensor, dimOrOther?: number | Tensor, keepdim?: boolean) { return (r.max as (x: Tensor, d?: number | Tensor, k?: boolean) => unknown)(this, dimOrOther, keepdim); },
  min(this: Tensor, dimOrOther?: number | Tensor, keepdim?: boolean) { return (r.min as (x: Tensor, d?: number | Tensor, k?: boolean) => unknown)(this, dimOrOther, keepdim); },
  amax(this: Tensor, dim?: Dims, keepdim?: boolean) { return r.amax(this, dim, keepdim); },
  amin(this: Tensor, dim?: Dims, keepdim?: boolean) { return r.amin(this, dim, keepdim); },
  argmax(this: Tensor, dim?: number, keepdim?: boolean) { return r.argmax(this, dim, keepdim); },
  argmin(this: Tensor, dim?: number, keepdim?: boolean) { return r.argmin(this, dim, keepdim); },
  var(this: Tensor, dim?: Dims, keepdim?: boolean, correction?: number) { return r.variance(this, dim, keepdim, correction); },
  std(this: Tensor, dim?: Dims, keepdim?: boolean, correction?: number) { return r.std(this, dim, keepdim, correction); },
  logsumexp(this: Tensor, dim?: Dims, keepdim?: boolean) { return r.logsumexp(this, dim, keepdim); },
  softmax(this: Tensor, dim?: number) { return r.softmax(this, dim); },
  logSoftmax(this: Tensor, dim?: number) { return r.logSoftmax(this, dim); },
  cumsum(this: Tensor, dim: number) { return ix.cumsum(this, dim); },
  matmul(this: Tensor, o: Tensor) { return matmul(this, o); },
  mm(this: Tensor, o: Tensor) {
    if (this.ndim !== 2 || o.ndim !== 2) throw new ArgumentError(`expects 2-D operands, got ${fmtShape(this.shape)} and ${fmtShape(o.shape)}`, 'mm');
    return matmul(this, o);
  },
  reshape(this: Tensor, ...s: unknown[]) { return mv.reshape(this, shapeArgs('reshape', s)); },
  view(this: Tensor, ...s: unknown[]) { return mv.viewAs(this, shapeArgs('view', s)); },
  flatten(this: Tensor, a?: number, b?: number) { return mv.flatten(this, a, b); },
  squeeze(this: Tensor, dim?: number | readonly number[]) { return mv.squeeze(this, dim); },
  unsqueeze(this: Tensor, dim: number) { return mv.unsqueeze(this, dim); },
  transpose(this: Tensor, a?: number, b?: number) { return mv.transpose(this, a, b); },
  permute(this: Tensor, ...d: unknown[]) { return mv.permute(this, shapeArgs('permute', d)); },
  expand(this: Tensor, ...s: unknown[]) { return mv.expand(this, shapeArgs('expand', s)); },
  expandAs(this: Tensor, o: Tensor) { return mv.expand(this, o.shape); },
  narrow(this: Tensor, d: number, s: number, l: number) { return mv.narrow(this, d, s, l); },
  slice(this: Tensor, d: number, s?: number, e?: number, st?: number) { return mv.slice(this, d, s, e, st); },
  select(this: Tensor, d: number, i: number) { return mv.select(this, d, i); },
  split(this: Tensor, s: number | readonly number[], d?: number) { return mv.split(this, s, d); },
  chunk(this: Tensor, c: number, d?: number) { return mv.chunk(this, c, d); },
  gather(this: Tensor, d: number, i: Tensor) { return ix.gather(this, d, i); },
  indexSelect(this: Tensor, d: number, i: Tensor) { return ix.indexSelect(this, d, i); },
  scatterAdd(this: Tensor, d: number, i: Tensor, s: Tensor) { return ix.scatterAdd(this, d, i, s); },
  triu(this: Tensor, k?: number) { return fn.triu(this, k); },
  tril(this: Tensor, k?: number) { return fn.tril(this, k); },
  t(this: Tensor) {
    if (this.ndim > 2) throw new ShapeError(`t() expects a tensor of at most 2 dims, got ${fmtShape(this.shape)}`, 't', 'use transpose(dim0, dim1), or .mT for the last two dims');
    return this.ndim < 2 ? mv.reshape(this, this.shape) : mv.transpose(this, 0, 1);
  },
  to(this: Tensor, dtype: DType) { return dtype === this.dtype ? mv.reshape(this, this.shape) : cast(this, dtype); },
  float(this: Tensor) { return (this as Tensor).to('float32'); },
  double(this: Tensor) { return (this as Tensor).to('float64'); },
  int(this: Tensor) { return (this as Tensor).to('int32'); },
  bool(this: Tensor) { return (this as Tensor).to('bool'); },
  detach(this: Tensor) { this.assertAlive('detach'); return alias(this, false); },
  requiresGrad_(this: Tensor, v = true) { this.requiresGrad = v; return this; },
  add_(this: Tensor, o: Operand, alpha?: number) { return inplace(this, 'add_', () => m.add(this, o, alpha)); },
  sub_(this: Tensor, o: Operand) { return inplace(this, 'sub_', () => m.sub(this, o)); },
  mul_(this: Tensor, o: Operand) { return inplace(this, 'mul_', () => m.mul(this, o)); },
  div_(this: Tensor, o: Operand) { return inplace(this, 'div_', () => m.div(this, o)); },
  copy_(this: Tensor, src: Tensor | number) { return assign(this, src, 'copy_'); },
  fill_(this: Tensor, v: number) { return assign(this, v, 'fill_'); },
  zero_(this: Tensor) { return assign(this, 0, 'zero_'); },
  backward(this: Tensor, gradient?: Tensor, opts?: BackwardOptions) { backward(this, gradient, opts); },
  item(this: Tensor) {
    if (this.size !== 1) throw new ArgumentError(`item() needs a tensor with one element, got shape ${fmtShape(this.shape)}`, 'item', 'index or reduce it first');
    return Number(readContiguous(this, 'item()')[0]);
  },
  toArray(this: Tensor) { return nest(readContiguous(this, 'toArray()'), this.shape, this.dtype); },
  async data(this: Tensor) {
    if (!this.hasStorage) return readContiguous(this, 'await data()');
    const b = this.storage.backend;
    // one asynchronous read of the whole buffer (a GPU backend cannot read synchronously)
    const all = await b.read(this.storage.buf);
    if (this.isContiguous) return all.slice(this.offset, this.offset + this.size);
    return gatherStrided(all, this.shape, this.strides, this.offset);
  },
  toString(this: Tensor) {
    if (this.isDisposed) return `tensor(<disposed>, shape=${fmtShape(this.shape)}, dtype=${this.dtype})`;
    if (!this.hasStorage) return `tensor(<traced>, shape=${fmtShape(this.shape)}, dtype=${this.dtype})`;
    const suffix: string[] = [];
    if (this.dtype !== 'float32') suffix.push(`dtype=${this.dtype}`);
    if (this.gradFn) suffix.push(`gradFn=<${this.gradFn.name}>`);
    else if (this.requiresGrad) suffix.push('requiresGrad=true');
    return formatTensor(readContiguous(this), this.shape, this.dtype, suffix);
  },
};
for (const [name, f] of Object.entries(methods)) P[name] = publicOp(name, f);

// `if (t > 0)`, `+t`, `${t}`: a one-element tensor converts like torch's bool()/float()
(P as Record<symbol, unknown>)[Symbol.toPrimitive] = function (this: Tensor, hint: string) {
  if (hint === 'string') return this.toString();
  if (this.size !== 1) {
    throw new ArgumentError(`a tensor of shape ${fmtShape(this.shape)} was used as a number`, 'toPrimitive', 'only one-element tensors convert to numbers; reduce it, or call .item()');
  }
  return Number(readContiguous(this, 'implicit number conversion')[0]);
};

Object.defineProperty(P, 'mT', { get(this: Tensor) { return mv.transpose(this, -2, -1); } });
Object.defineProperty(P, 'T', { get(this: Tensor) { return this.ndim < 2 ? this : mv.permute(this, this.shape.map((_, i) => this.ndim - 1 - i)); } });
(P as Record<symbol, unknown>)[Symbol.for('nodejs.util.inspect.custom')] = function (this: Tensor) { return this.toString(); };

/** An in-place op: computes out of place, then writes into this tensor's memory. */
function inplace(t: Tensor, op: string, compute: () => Tensor): Tensor {
  checkInplace(t, op); // before computing: no graph node for a write that is refused
  const v = compute();
  try {
    if (!canCast(v.dtype, t.dtype)) {
      throw new DTypeError(`result type ${v.dtype} can't be cast to the desired output type ${t.dtype}`, op, `the result of ${op.slice(0, -1)} is ${v.dtype}: use the out-of-place ${op.slice(0, -1)} (or cast this tensor first, e.g. t.float())`);
    }
    assign(t, v, op);
  } finally {
    v.dispose();
  }
  return t;
}

function nest(data: TypedArray, shape: readonly number[], dtype: DType): unknown {
  const conv = (v: number) => (dtype === 'bool' ? v !== 0 : v);
  if (shape.length === 0) return conv(data[0]!);
  let pos = 0;
  const build = (d: number): unknown[] => {
    const out: unknown[] = [];
    for (let i = 0; i < shape[d]!; i++) out.push(d === shape.length - 1 ? conv(data[pos++]!) : build(d + 1));
    return out;
  };
  return build(0);
}

/** Row-major copy of a strided view of `src` (for async reads of non-contiguous tensors). */
function gatherStrided(src: TypedArray, shape: readonly number[], strides: readonly number[], offset: number): TypedArray {
  const n = shape.reduce((a, b) => a * b, 1);
  const out = new (src.constructor as new (n: number) => TypedArray)(n);
  const idx = new Array<number>(shape.length).fill(0);
  let p = offset;
  for (let i = 0; i < n; i++) {
    out[i] = src[p]!;
    for (let d = shape.length - 1; d >= 0; d--) {
      idx[d]!++;
      p += strides[d]!;
      if (idx[d]! < shape[d]!) break;
      p -= strides[d]! * shape[d]!;
      idx[d] = 0;
    }
  }
  return out;
}
