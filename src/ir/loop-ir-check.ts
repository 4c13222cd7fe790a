// The loop IR's schema, checked (loop-ir.ts has the types). Every renderer (JS, wasm, native C,
// WebGPU) checks a kernel before it emits anything, and the compile cache checks every kernel
// it decodes (cache/validate.ts adds buffers and bounds), so nothing from a file reaches
// generated source unless it is what kiln's own lowering could have made: identifiers are
// kiln's (a kernel name is `k<count>_<op>`-like: letters, digits, underscores; temporaries,
// buffers and reductions are integers the renderers prefix), numbers are numbers, and ops,
// dtypes and kinds are members of their tables.
//
// The walk builds no strings on the way (a warm-cache first call runs it in V8's interpreter):
// an error names the kernel and the field.

import { DTYPES } from '../core/dtype.js';
import { arity, BINARY_OPS, TERNARY_OPS, UNARY_OPS } from './scalar-expr.js';
import { InvalidProgramError } from './errors.js';
import { ATTENTION_MAX_DEPTH, ATTENTION_MAX_WIDTH, type LoopKernel } from './loop-ir.js';

const SCALAR_OPS = new Set<string>([...UNARY_OPS, ...BINARY_OPS, ...TERNARY_OPS]);
const REDUCE_OPS = new Set(['sum', 'prod', 'max', 'min', 'argmax', 'argmin']);
const DTYPE_SET = new Set<string>(DTYPES);
const FLOAT_DTYPES = new Set(['float32', 'float64']);
/** what a kernel name may be: it becomes a function name in generated JavaScript */
const KERNEL_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** more loop variables than any kernel has (rank + 2): bounds the walk over crafted input */
const MAX_VARS = 64;
const MAX_DEPTH = 512;
const MAX_LENGTH = 1 << 24;

type Obj = Record<string, unknown>;

const show = (v: unknown): string => (typeof v === 'string' ? JSON.stringify(v.slice(0, 40)) : typeof v === 'object' ? (v === null ? 'null' : Array.isArray(v) ? 'an array' : 'an object') : String(v));
const isInt = (v: unknown, min: number): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= min;

/** Checks kernel objects; `where` names where they came from in errors. */
export class KernelChecker {
  /** `staticOnly`: no size symbols or sizes buffer (what the compile cache stores) */
  constructor(private readonly where: string, private readonly staticOnly = false) {}
  private current = '';

  fail(field: string, what: string): never {
    throw new InvalidProgramError(`${this.where}${this.current ? ` ${this.current}` : ''}: ${field} ${what}`, 'kiln.compile', 'the program was not made by this kiln (an edited or corrupt cache entry or artifact): compile it again');
  }

  obj(v: unknown, field: string): Obj {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) this.fail(field, `is ${show(v)}, not an object`);
    return v as Obj;
  }

  arr(v: unknown, field: string, max = MAX_LENGTH): unknown[] {
    if (!Array.isArray(v)) this.fail(field, `is ${show(v)}, not an array`);
    if (v.length > max) this.fail(field, `has ${v.length} entries, more than ${max}`);
    return v;
  }

  int(v: unknown, field: string, min = -Number.MAX_SAFE_INTEGER): number {
    if (!isInt(v, min)) this.fail(field, `is ${show(v)}, not an integer${min > -Number.MAX_SAFE_INTEGER ? ` >= ${min}` : ''}`);
    return v as number;
  }

  ints(v: unknown, field: string, min = -Number.MAX_SAFE_INTEGER, max = MAX_LENGTH): number[] {
    const a = this.arr(v, field, max);
    for (let i = 0; i < a.length; i++) if (!isInt(a[i], min)) this.fail(`${field}[${i}]`, `is ${show(a[i])}, not an integer`);
    return a as number[];
  }

  oneOf(v: unknown, set: ReadonlySet<string>, field: string): string {
    if (typeof v !== 'string' || !set.has(v)) this.fail(field, `is ${show(v)}, not one of ${[...set].join(', ')}`);
    return v;
  }

  dtype(v: unknown): void {
    if (typeof v !== 'string' || !DTYPE_SET.has(v)) this.fail('dtype', `is ${show(v)}, not one of ${DTYPES.join(', ')}`);
  }

  private noSizes(v: unknown, field: string): boolean {
    if (v === undefined) return true;
    if (this.staticOnly) this.fail(field, 'is a symbolic size (stored programs are static)');
    return false;
  }

  /** A size polynomial (symbolic.ts): integer coefficients, symbol indices in ascending order. */
  sym(v: unknown, field: string): void {
    const terms = this.arr(this.obj(v, field).terms, `${field}.terms`, 4096);
    for (const t of terms) {
      const pair = this.arr(t, `${field}.terms`, 2);
      this.int(pair[0], `${field} coefficient`);
      const mono = this.ints(pair[1], `${field} monomial`, 0, MAX_VARS);
      for (let j = 0; j < mono.length; j++) if (mono[j]! >= MAX_VARS || (j > 0 && mono[j]! < mono[j - 1]!)) this.fail(field, 'has a monomial that is not a sorted list of symbol indices');
    }
  }

  optSym(o: Obj, key: string): void {
    if (!this.noSizes(o[key], key)) this.sym(o[key], key);
  }

  syms(v: unknown, field: string, n: number): void {
    if (this.noSizes(v, field)) return;
    const a = this.arr(v, field, n);
    if (a.length !== n) this.fail(field, `has ${a.length} entries, expected ${n}`);
    for (const x of a) if (x !== null) this.sym(x, field);
  }

  affine(v: unknown): void {
    const a = this.obj(v, 'index');
    const c = this.ints(a.c, 'index coefficients', undefined, MAX_VARS);
    this.int(a.o, 'index offset');
    this.syms(a.cSym, 'cSym', c.length);
    this.optSym(a, 'oSym');
  }

  expr(v: unknown, depth = 0): void {
    if (depth > MAX_DEPTH) this.fail('expression', `nests deeper than ${MAX_DEPTH}`);
    const e = this.obj(v, 'expression');
    switch (e.k) {
      case 'load':
        this.int(e.buf, 'buf', 0);
        this.affine(e.at);
        this.dtype(e.dtype);
        return;
      case 'const':
        if (typeof e.v !== 'number') this.fail('constant', `is ${show(e.v)}, not a number`);
        this.optSym(e, 'vSym');
        return;
      case 'op': {
        const op = this.oneOf(e.op, SCALAR_OPS, 'op');
        const args = this.arr(e.a, 'operands', 3);
        if (args.length !== arity(op as never)) this.fail('operands', `are ${args.length}; ${op} takes ${arity(op as never)}`);
        for (const x of args) this.expr(x, depth + 1);
        this.dtype(e.dtype);
        return;
      }
      case 'cast':
        this.expr(e.a, depth + 1);
        this.dtype(e.dtype);
        return;
      case 'tmp':
      case 'red':
        this.int(e.id, `${e.k} id`, 0);
        return;
      case 'acc':
        return;
      default:
        this.fail('expression kind', `is ${show(e.k)}, not load, const, op, cast, tmp, red or acc`);
    }
  }

  stmts(v: unknown): void {
    for (const s of this.arr(v, 'statements')) {
      const st = this.obj(s, 'statement');
      this.int(st.id, 'statement id', 0);
      this.expr(st.e);
    }
  }

  stores(v: unknown): void {
    for (const s of this.arr(v, 'stores')) {
      const st = this.obj(s, 'store');
      this.int(st.buf, 'buf', 0);
      this.affine(st.at);
      this.expr(st.value);
      this.dtype(st.dtype);
      this.int(st.node, 'store node');
    }
  }

  sizes(v: unknown): void {
    if (this.noSizes(v, 'sizes')) return;
    const s = this.obj(v, 'sizes');
    this.int(s.buf, 'sizes buf', 0);
    this.int(s.count, 'sizes count', 1);
    if ((s.count as number) > MAX_VARS) this.fail('sizes count', `is more than ${MAX_VARS}`);
  }

  operand(v: unknown): void {
    const o = this.obj(v, 'matmul operand');
    this.int(o.buf, 'buf', 0);
    this.affine(o.base);
    this.int(o.sRow, 'operand row stride');
    this.int(o.sCol, 'operand column stride');
    this.optSym(o, 'sRowSym');
    this.optSym(o, 'sColSym');
    if (o.dtype !== undefined) this.dtype(o.dtype);
  }

  kernel(v: unknown): LoopKernel {
    const k = this.obj(v, 'kernel');
    if (typeof k.name !== 'string' || !KERNEL_NAME.test(k.name)) this.fail('name', `is ${show(k.name)}, not a kernel name (letters, digits, _)`);
    const outer = this.current;
    this.current = `kernel ${k.name}`;
    this.sizes(k.sizes);
    switch (k.kind) {
      case 'pointwise': {
        const shape = this.ints(k.shape, 'shape', 0, MAX_VARS);
        this.syms(k.shapeSym, 'shapeSym', shape.length);
        this.stmts(k.body);
        this.stores(k.stores);
        break;
      }
      case 'row': {
        const o = this.ints(k.outer, 'outer', 0, MAX_VARS);
        const inner = this.ints(k.inner, 'inner', 0, MAX_VARS);
        this.syms(k.outerSym, 'outerSym', o.length);
        this.syms(k.innerSym, 'innerSym', inner.length);
        for (const x of this.arr(k.reductions, 'reductions')) {
          const r = this.obj(x, 'reduction');
          this.int(r.id, 'reduction id', 0);
          this.oneOf(r.op, REDUCE_OPS, 'reduction op');
          this.stmts(r.body);
          this.expr(r.value);
          this.int(r.node, 'reduction node');
          if (r.online !== undefined) {
            const on = this.obj(r.online, 'online');
            if (on.kind === 'softmax') this.expr(on.shift);
            else if (on.kind === 'welford') {
              this.int(on.n, 'welford n', 0);
              this.optSym(on, 'nSym');
            } else if (on.kind !== 'sibling') this.fail('online kind', `is ${show(on.kind)}, not softmax, welford or sibling`);
          }
        }
        this.stmts(k.outerBody);
        this.stores(k.outerStores);
        this.stmts(k.rowBody);
        this.stores(k.rowStores);
        break;
      }
      case 'matmul': {
        this.dtype(k.dtype);
        const batch = this.ints(k.batch, 'batch', 0, MAX_VARS - 2);
        for (const f of ['m', 'n', 'k']) {
          this.int(k[f], f, 0);
          this.optSym(k, `${f}Sym`);
        }
        this.syms(k.batchSym, 'batchSym', batch.length);
        this.operand(k.a);
        this.operand(k.b);
        this.stmts(k.body);
        this.stores(k.stores);
        if (k.tiles !== undefined) {
          const t = this.obj(k.tiles, 'tiles');
          for (const f of ['kc', 'mc', 'nc']) this.int(t[f], `tiles.${f}`, 1);
          if (Object.keys(t).length !== 3) this.fail('tiles', 'has fields other than kc, mc, nc');
        }
        break;
      }
      case 'attention': {
        if (k.sizes !== undefined) this.fail('sizes', 'are given (attention kernels are static)');
        this.oneOf(k.dtype, FLOAT_DTYPES, 'dtype');
        this.ints(k.batch, 'batch', 0, MAX_VARS - 2);
        this.int(k.rows, 'rows', 0);
        this.int(k.keys, 'keys', 0);
        if (this.int(k.depth, 'depth', 0) > ATTENTION_MAX_DEPTH) this.fail('depth', `is more than ${ATTENTION_MAX_DEPTH}`);
        if (this.int(k.width, 'width', 0) > ATTENTION_MAX_WIDTH) this.fail('width', `is more than ${ATTENTION_MAX_WIDTH}`);
        this.operand(k.query);
        this.operand(k.key);
        this.operand(k.value);
        const score = this.obj(k.score, 'score');
        this.stmts(score.body);
        this.expr(score.value);
        this.int(k.maxId, 'max id', 0);
        this.expr(k.shift);
        this.stmts(k.body);
        this.stores(k.stores);
        break;
      }
      case 'group':
        for (const p of this.arr(k.parts, 'parts')) if (this.kernel(p).kind !== 'pointwise') this.fail('part', 'is not a pointwise kernel');
        break;
      default:
        this.fail('kind', `is ${show(k.kind)}, not pointwise, row, matmul, attention or group`);
    }
    this.current = outer;
    return k as unknown as LoopKernel;
  }
}

/** Throws InvalidProgramError unless `k` follows the loop IR's schema (renderers call this first). */
export function checkKernel(k: unknown, where = 'loop kernel'): LoopKernel {
  return new KernelChecker(where).kernel(k);
}
