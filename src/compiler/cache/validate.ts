// Decoded graphs and lowered programs checked against the schema before anything uses them
// (serialize.ts calls these at the end of every decode): a cache entry or artifact that passed
// its checksum and seal can still be nonsensical (another build's bug, a hand-made file), and
// what it holds is handed to renderers and run on memory (native C and wasm index raw memory).
// The compile cache runs them when it writes an entry (on the stored form, decoded) and seals
// SCHEMA_VERSION with it; a read of an entry marked so under this user's seal runs only
// validateBindings (entry-store.ts: marks from other tiers and bundles do not count).
//
// Graphs: dense ids, inputs before their users, metas (integer shapes and strides, known
// dtypes, no more than 2^32 elements), attrs made only of numbers, booleans, short word-like
// strings, typed arrays, arrays and plain objects, and each node's meta re-derived by its
// primitive's own shape rule (`PrimDef.meta`, as tracing did): a graph that decodes is one
// kiln's tracer could have recorded.
//
// Programs: every kernel follows the loop IR's schema (loop-ir-check.ts); buffers are numbered
// in order with known kinds, dtypes and sizes (constants hold exactly their data); every load,
// store, matmul operand and view stays inside its buffer over the loop ranges and has the
// buffer's dtype; every temporary and reduction a kernel reads is defined in it; every buffer
// read (and every output) is an input, a constant, or written by an earlier step or the step
// itself (a program whose steps were dropped computes nothing: rejected); opaque steps' nodes pass the graph
// checks against their views. Only static programs are stored, so no kernel may carry sizes.

import { DTYPES, TYPED_ARRAY, type DType } from '../../core/dtype.js';
import { contiguousStrides } from '../../core/shape.js';
import { Tensor } from '../../tensor/tensor.js';
import type { Graph, GraphNode, TensorMeta } from '../capture/graph.js';
import { KernelChecker } from '../../ir/loop-ir-check.js';
import { kernelExprs, kernelStores, someLeaf, type Affine, type AttentionKernel, type LExpr, type LoopKernel, type MatmulOperand, type Stmt, type Store } from '../../ir/loop-ir.js';
import type { BufferView } from '../../ir/lowered.js';
import type { Lowered } from '../schedule/lowered.js';
import { InvalidProgramError } from '../../ir/errors.js';

/**
 * The version of these checks. An entry whose decoded form passed them when it was written
 * carries it (under its seal), so a later read of the same bytes need not run them again;
 * bump it when a check is added or tightened.
 */
export const SCHEMA_VERSION = 'kiln-schema-2';

const MAX_ELEMENTS = 2 ** 32;
const MAX_RANK = 32;
const WORD = /^[A-Za-z0-9_]{0,64}$/;
const BAD_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const BUFFER_KINDS = new Set(['input', 'constant', 'scratch']);
const DECISIONS = new Set(['fused', 'materialized', 'opaque', 'inlined', 'autotuned']);

function invalid(where: string, what: string): never {
  throw new InvalidProgramError(`${where}: ${what}`, 'kiln.compile', 'the entry or artifact was not made by this kiln (edited or corrupt): compile it again');
}

// ---------------------------------------------------------------- values and metas

/** Attrs hold data, never text that could be code: numbers, booleans, word-like strings, typed arrays, arrays, plain objects. */
function checkValue(v: unknown, where: string, depth = 0): void {
  if (depth > 16) invalid(where, 'nests too deep');
  if (v === null || v === undefined || typeof v === 'number' || typeof v === 'boolean') return;
  if (typeof v === 'string') {
    if (!WORD.test(v)) invalid(where, `holds the string ${JSON.stringify(v.slice(0, 40))} (only short words are attrs)`);
    return;
  }
  if (ArrayBuffer.isView(v)) return;
  if (Array.isArray(v)) {
    for (const x of v) checkValue(x, where, depth + 1);
    return;
  }
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    for (const [k, x] of Object.entries(v)) {
      if (!WORD.test(k) || BAD_KEYS.has(k)) invalid(where, `has the key ${JSON.stringify(k.slice(0, 40))}`);
      checkValue(x, where, depth + 1);
    }
    return;
  }
  invalid(where, `holds a ${typeof v}`);
}

const isInt = (x: unknown, min = -Number.MAX_SAFE_INTEGER): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= min;

const ints = (xs: readonly unknown[], min?: number): boolean => {
  for (const x of xs) if (!isInt(x, min)) return false;
  return true;
};

function checkShape(shape: unknown, where: string): number[] {
  if (!Array.isArray(shape) || shape.length > MAX_RANK || !ints(shape, 0)) invalid(where, 'has a shape that is not a list of sizes');
  let n = 1;
  for (const d of shape as number[]) n *= d;
  if (n > MAX_ELEMENTS) invalid(where, `has a shape of more than ${MAX_ELEMENTS} elements`);
  return shape as number[];
}

function checkDType(d: unknown, where: string): DType {
  if (typeof d !== 'string' || !(DTYPES as readonly string[]).includes(d)) invalid(where, `has dtype ${JSON.stringify(d)}`);
  return d as DType;
}

function checkMeta(m: unknown, where: string): TensorMeta {
  if (!m || typeof m !== 'object') invalid(where, 'has no meta');
  const meta = m as TensorMeta;
  const shape = checkShape(meta.shape, where);
  if (!Array.isArray(meta.strides) || meta.strides.length !== shape.length || !ints(meta.strides)) invalid(where, 'has strides that do not match its shape');
  if (!isInt(meta.offset, 0)) invalid(where, 'has an offset that is not an integer >= 0');
  checkDType(meta.dtype, where);
  if (meta.shapeSym !== undefined) new KernelChecker(where).syms(meta.shapeSym, 'shapeSym', shape.length);
  return meta;
}

/** A tensor with a meta and no storage: what primitives' shape rules read. */
const metaTensor = (m: TensorMeta): Tensor => new Tensor(null, m.shape, m.strides, m.offset, m.dtype, true);

function sameList(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The node's meta is what its primitive's shape rule gives for its inputs' metas and its attrs. */
function checkDerivedMeta(n: GraphNode, inputs: readonly TensorMeta[], where: string): void {
  let out;
  try {
    out = n.prim!.meta(inputs.map(metaTensor), n.attrs as never);
  } catch (e) {
    invalid(where, `${n.op} rejects its stored inputs or attrs (${(e as Error).message.split('\n')[0]})`);
  }
  const strides = out.view?.strides ?? contiguousStrides(out.shape);
  const offset = out.view?.offset ?? 0;
  if (out.dtype !== n.meta.dtype || !sameList(out.shape, n.meta.shape) || !sameList(strides, n.meta.strides) || offset !== n.meta.offset) {
    invalid(where, `${n.op} gives ${out.dtype}[${out.shape.join(',')}] here, the entry says ${n.meta.dtype}[${n.meta.shape.join(',')}]`);
  }
}

// ---------------------------------------------------------------- graphs

/** Throws InvalidProgramError unless `g` (just decoded) is a graph kiln's tracer could have recorded. */
export function validateGraph(g: Graph): void {
  if (typeof g.name !== 'string' || g.name.length > 256 || /[\u0000-\u001f/\\]/.test(g.name)) invalid('graph', 'has a name with control characters or path separators');
  for (const n of g.nodes) {
    const w = `graph ${g.name.slice(0, 60)} node %${n.id}`;
    checkMeta(n.meta, w);
    if (typeof n.requiresGrad !== 'boolean') invalid(w, 'requiresGrad is not a boolean');
    checkValue(n.attrs, `${w} attrs`);
    if (n.op === 'input') {
      if (n.inputs.length !== 0 || !n.source) invalid(w, 'is an input without a source');
      if (n.source.kind === 'arg' && (typeof n.source.path !== 'string' || n.source.path.length > 1024)) invalid(w, 'has a bad argument path');
      if (n.source.kind === 'ref') checkBound(n.source.tensor, n.meta, w);
      continue;
    }
    if (n.source) invalid(w, 'is an op with an input source');
    if (!Array.isArray(n.inputs)) invalid(w, 'has no inputs list');
    const inputs: TensorMeta[] = [];
    for (const i of n.inputs) {
      if (!isInt(i, 0) || i >= n.id) invalid(w, 'reads a node that is not before it');
      inputs.push(g.nodes[i]!.meta);
    }
    checkDerivedMeta(n, inputs, w);
  }
  const node = (i: unknown, what: string) => {
    if (!isInt(i, 0) || i >= g.nodes.length) invalid(`graph ${g.name.slice(0, 60)}`, `${what} ${String(i)} is not a node`);
    return g.nodes[i]!;
  };
  if (!Array.isArray(g.outputs) || !Array.isArray(g.mutations) || !Array.isArray(g.gradEffects)) invalid(`graph ${g.name.slice(0, 60)}`, 'has no outputs, mutations or grad effects lists');
  g.outputs.forEach((o) => node(o, 'output'));
  for (const m of g.mutations) {
    if (node(m.target, 'mutation target').op !== 'input') invalid(`graph ${g.name.slice(0, 60)}`, 'writes a node that is not an input');
    node(m.value, 'mutation value');
  }
  for (const e of g.gradEffects) {
    if (node(e.leaf, 'grad leaf').op !== 'input') invalid(`graph ${g.name.slice(0, 60)}`, 'sets the grad of a node that is not an input');
    if (e.value !== null) node(e.value, 'grad value');
  }
}

/** The part of validateGraph that depends on this process: each capture bound by name is the tensor the graph describes. */
export function validateBindings(g: Graph): void {
  for (const n of g.nodes) if (n.op === 'input' && n.source?.kind === 'ref') checkBound(n.source.tensor, n.meta, `graph ${g.name.slice(0, 60)} node %${n.id}`);
}

/** A capture bound by name must be the tensor the entry describes. */
function checkBound(t: Tensor, m: TensorMeta, where: string): void {
  if (t.dtype !== m.dtype || !sameList(t.shape, m.shape) || !sameList(t.strides, m.strides) || t.offset !== m.offset) {
    invalid(where, `binds ${t.name ?? 'a capture'} ${t.dtype}[${t.shape.join(',')}], the entry expects ${m.dtype}[${m.shape.join(',')}]`);
  }
}

// ---------------------------------------------------------------- programs

/** [min, max] of an affine index over loop variables v in [0, ranges[v]); null when the loops run zero times. `where` + `what` name it in an error. */
function affineRange(a: Affine, ranges: readonly number[], where: string, what: string): [number, number] | null {
  for (const r of ranges) if (r === 0) return null;
  let lo = a.o, hi = a.o;
  for (let v = 0; v < a.c.length; v++) {
    const c = a.c[v]!;
    if (c === 0) continue;
    if (v >= ranges.length) invalid(`${where} ${what}`, `indexes with loop variable ${v}, which the kernel does not have`);
    const span = c * (ranges[v]! - 1);
    if (span < 0) lo += span;
    else hi += span;
  }
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi)) invalid(`${where} ${what}`, 'has an index past 2^53');
  return [lo, hi];
}

class ProgramChecker {
  constructor(private readonly l: Lowered, private readonly name: string) {}

  fail(where: string, what: string): never {
    invalid(`${this.name} ${where}`, what);
  }

  buffer(b: number, where: string, dtype?: DType) {
    const info = this.l.buffers[b];
    if (!info) invalid(where, `uses buffer ${b}, the program has ${this.l.buffers.length}`);
    if (dtype !== undefined && info.dtype !== dtype) invalid(where, `reads or writes buffer ${b} (${info.dtype}) as ${dtype}`);
    return info;
  }

  /** `what` is added to `where` only in an error (no strings are built on the way). */
  access(buf: number, at: Affine, ranges: readonly number[], dtype: DType, where: string, what = ''): void {
    const info = this.l.buffers[buf];
    if (!info || info.dtype !== dtype) this.buffer(buf, `${this.name} ${where} ${what}`, dtype);
    const r = affineRange(at, ranges, `${this.name} ${where}`, what);
    if (r && (r[0] < 0 || r[1] >= info!.size)) invalid(`${this.name} ${where} ${what}`, `indexes buffer ${buf} at [${r[0]}, ${r[1]}], it holds ${info!.size} elements`);
  }

  view(v: BufferView, where: string): void {
    if (!v || typeof v !== 'object') this.fail(where, 'is not a view');
    const shape = checkShape(v.shape, where);
    if (!Array.isArray(v.strides) || v.strides.length !== shape.length || !ints(v.strides) || !isInt(v.offset, 0) || !isInt(v.buf, 0)) this.fail(where, 'is not a strided view');
    this.access(v.buf, { c: v.strides, o: v.offset }, shape, checkDType(v.dtype, where), where);
  }

  /** A kernel (schema, then buffers, bounds and definitions); the buffers it reads are added to `reads`. */
  kernel(k: LoopKernel, where: string, reads: number[]): void {
    new KernelChecker(`${this.name} ${where}`, true).kernel(k);
    this.consistent(k, where, reads);
  }

  private consistent(k: LoopKernel, where: string, reads: number[]): void {
    if (k.kind === 'group') {
      for (const p of k.parts) this.consistent(p, `${where} part ${p.name}`, reads);
      return;
    }
    if (k.kind === 'attention') return this.attention(k, where, reads);
    const stmtLists: Stmt[][] = k.kind === 'row' ? [...k.reductions.map((r) => r.body), k.outerBody, k.rowBody] : [k.body];
    const exprs = kernelExprs(k);
    if (k.kind === 'row') for (const r of k.reductions) if (r.online?.kind === 'softmax') exprs.push(r.online.shift);
    const reds = new Set(k.kind === 'row' ? k.reductions.map((r) => r.id) : []);
    const ranges = k.kind === 'pointwise' ? k.shape : k.kind === 'row' ? [...k.outer, ...k.inner] : [...k.batch, k.m, k.n];
    this.scope(stmtLists, exprs, kernelStores(k), ranges, reds, k.kind === 'matmul', where, reads);
    if (k.kind === 'matmul') {
      reads.push(k.a.buf, k.b.buf);
      // A reads base + i*sRow + kk*sCol (i < m, kk < k), B reads base + kk*sRow + j*sCol (kk < k, j < n)
      this.operand(k.a, k.batch, k.m, k.k, k.a.dtype ?? k.dtype, where);
      this.operand(k.b, k.batch, k.k, k.n, k.b.dtype ?? k.dtype, where);
    }
  }

  /**
   * Expressions over one set of loops: each temporary defined once by `stmtLists` before it is
   * read, reductions among `reds`, the accumulator only where `acc`, loads and stores inside
   * their buffers over `ranges`.
   */
  private scope(stmtLists: readonly Stmt[][], exprs: readonly LExpr[], stores: readonly Store[], ranges: readonly number[], reds: ReadonlySet<number>, acc: boolean, where: string, reads: number[]): void {
    const tmps = new Set<number>();
    for (const list of stmtLists) for (const s of list) {
      if (tmps.has(s.id)) this.fail(where, `defines temporary t${s.id} twice`);
      tmps.add(s.id);
    }
    const leafCheck = (e: LExpr): void => {
      switch (e.k) {
        case 'load':
          reads.push(e.buf);
          return this.access(e.buf, e.at, ranges, e.dtype, where, 'load');
        case 'tmp': if (!tmps.has(e.id)) this.fail(where, `reads t${e.id}, which the kernel does not define`); return;
        case 'red': if (!reds.has(e.id)) this.fail(where, `reads r${e.id}, which is not one of its reductions`); return;
        case 'acc': if (!acc) this.fail(where, 'reads the matmul accumulator outside a matmul'); return;
        case 'op': for (const x of e.a) leafCheck(x); return;
        case 'cast': leafCheck(e.a); return;
        default: return;
      }
    };
    for (const e of exprs) leafCheck(e);
    for (const s of stores) this.access(s.buf, s.at, ranges, s.dtype, where, 'store');
  }

  /**
   * The scores over (batch..., i, j), the output over (batch..., i, c), each with its own
   * temporaries (they come from two kernels); the softmax shift a function of the max alone;
   * q over (batch..., rows, depth), kᵀ over (batch..., depth, keys), v over (batch..., keys, width).
   */
  private attention(k: AttentionKernel, where: string, reads: number[]): void {
    const none = new Set<number>();
    this.scope([k.score.body], [...k.score.body.map((s) => s.e), k.score.value], [], [...k.batch, k.rows, k.keys], none, true, where, reads);
    this.scope([k.body], [...k.body.map((s) => s.e), ...k.stores.map((s) => s.value)], k.stores, [...k.batch, k.rows, k.width], none, true, where, reads);
    if (someLeaf(k.shift, (x) => x.k === 'load' || x.k === 'tmp' || x.k === 'acc' || (x.k === 'red' && x.id !== k.maxId))) this.fail(where, 'has a softmax shift that is not a function of the max alone');
    reads.push(k.query.buf, k.key.buf, k.value.buf);
    // the renderers read q, k and v as the kernel's dtype (bufferDTypes)
    this.operand(k.query, k.batch, k.rows, k.depth, k.dtype, where);
    this.operand(k.key, k.batch, k.depth, k.keys, k.dtype, where);
    this.operand(k.value, k.batch, k.keys, k.width, k.dtype, where);
  }

  /** An operand reads base + r*sRow + c*sCol (r < rows, c < cols), its base moving with the batch vars only. */
  private operand(op: MatmulOperand, batch: readonly number[], rows: number, cols: number, dtype: DType, where: string): void {
    const nb = batch.length;
    if (op.base.c.slice(nb).some((x) => x !== 0)) this.fail(where, 'has a matmul operand whose base moves with i or j');
    this.access(op.buf, { c: [...op.base.c.slice(0, nb), op.sRow, op.sCol], o: op.base.o }, [...batch, rows, cols], dtype, where, 'matmul operand');
  }

  run(): void {
    const l = this.l;
    if (!Array.isArray(l.steps) || !Array.isArray(l.buffers) || !Array.isArray(l.inputBuffers) || !Array.isArray(l.outputs) || !Array.isArray(l.decisions)) invalid(this.name, 'is missing steps, buffers, inputs, outputs or decisions');
    for (let i = 0; i < l.buffers.length; i++) {
      const b = l.buffers[i]!;
      if (!b || b.id !== i) this.fail(`buffer ${i}`, 'is out of order');
      if (!BUFFER_KINDS.has(b.kind)) this.fail(`buffer ${i}`, `has kind ${JSON.stringify(b.kind)}`);
      const dtype = checkDType(b.dtype, `${this.name} buffer ${i}`);
      if (!isInt(b.size, 0) || b.size > MAX_ELEMENTS) this.fail(`buffer ${i}`, `has size ${String(b.size)}`);
      if (!isInt(b.node)) this.fail(`buffer ${i}`, 'names no node');
      if (b.kind === 'constant' ? !(b.data instanceof TYPED_ARRAY[dtype]) || b.data.length !== b.size : b.data !== undefined) this.fail(`buffer ${i}`, 'does not hold exactly its data');
    }
    for (const b of l.inputBuffers) if (!isInt(b, 0) || this.l.buffers[b]?.kind !== 'input') this.fail('inputs', `name buffer ${String(b)}, which is not an input buffer`);
    // the op of each graph node, text for kiln.profile's report (a custom op's name too)
    if (l.nodeOps !== undefined && (!Array.isArray(l.nodeOps) || l.nodeOps.some((op) => typeof op !== 'string' || op.length > 128 || /[\u0000-\u001f]/.test(op)))) invalid(this.name, 'has node ops that are not op names');
    for (const d of l.decisions) {
      if (!d || !DECISIONS.has(d.decision) || !Array.isArray(d.nodes) || !ints(d.nodes) || typeof d.reason !== 'string') invalid(this.name, 'has a malformed fusion decision');
    }
    // dataflow: nothing is read before something wrote it
    const ready = new Set<number>();
    for (const b of l.buffers) if (b.kind !== 'scratch' || b.size === 0) ready.add(b.id);
    for (let i = 0; i < l.steps.length; i++) {
      const s = l.steps[i]!;
      const where = `step ${i}`;
      const reads: number[] = [];
      const writes: number[] = [];
      if (s?.kind === 'kernel') {
        this.kernel(s.kernel, where, reads);
        for (const x of kernelStores(s.kernel)) writes.push(x.buf);
      } else if (s?.kind === 'opaque') {
        if (!Array.isArray(s.inputs)) this.fail(where, 'has no input views');
        for (const v of s.inputs) this.view(v, `${where} input`);
        this.view(s.out, `${where} output`);
        checkMeta(s.node.meta, `${this.name} ${where} node`);
        checkValue(s.node.attrs, `${this.name} ${where} attrs`);
        if (!sameList(s.node.meta.shape, s.out.shape) || s.node.meta.dtype !== s.out.dtype) this.fail(where, 'writes a view that is not its node\'s shape');
        checkDerivedMeta({ ...s.node, meta: { ...s.node.meta, strides: contiguousStrides(s.node.meta.shape), offset: 0 } }, s.inputs, `${this.name} ${where} (${s.node.op})`);
        for (const v of s.inputs) reads.push(v.buf);
        writes.push(s.out.buf);
      } else invalid(`${this.name} ${where}`, 'is neither a kernel nor an opaque step');
      // a step may read what it writes itself (a group's later parts read what earlier parts stored)
      for (const b of writes) ready.add(b);
      for (const b of reads) if (!ready.has(b)) this.fail(where, `reads buffer ${b}, which no step before it writes`);
    }
    for (let i = 0; i < l.outputs.length; i++) {
      const v = l.outputs[i]!;
      this.view(v, 'output');
      if (!ready.has(v.buf)) this.fail(`output ${i}`, `is buffer ${v.buf}, which no step writes`);
    }
  }
}

/** Throws InvalidProgramError unless `l` (just decoded) is a consistent static program (see the file comment). */
export function validateLowered(l: Lowered, name = 'program'): void {
  new ProgramChecker(l, name).run();
}

/** The program's inputs are the graph's: one buffer per input node, of its dtype, holding its whole span. */
export function validateProgramInputs(l: Lowered, inputs: readonly TensorMeta[], name = 'program'): void {
  if (l.inputBuffers.length !== inputs.length) invalid(name, `has ${l.inputBuffers.length} inputs, the graph ${inputs.length}`);
  l.inputBuffers.forEach((b, i) => {
    const m = inputs[i]!;
    const info = l.buffers[b]!;
    const span = m.shape.some((s) => s === 0) ? 0 : m.shape.reduce((a, s, d) => a + (s - 1) * Math.abs(m.strides[d]!), m.offset) + 1;
    if (info.dtype !== m.dtype || info.size !== span) invalid(name, `input ${i} is ${info.dtype}[${info.size}], the graph gives ${m.dtype} over ${span} elements`);
  });
}
