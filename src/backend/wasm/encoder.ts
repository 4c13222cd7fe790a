// A small WebAssembly module builder: function bodies as byte arrays with typed locals,
// and a module with one imported memory, imported functions, defined functions and exports.
// No dependency (binaryen, wabt): the binary format is simple and kiln needs a small subset.

import { f32bytes, f64bytes, name, sleb, uleb } from './leb.js';
import { Op, OpFC, Simd, T, type ValType } from './opcodes.js';

export interface FuncType {
  readonly params: readonly ValType[];
  readonly results: readonly ValType[];
}

/** Code of one function: instructions appended in order, locals allocated on demand. */
export class FuncBuilder {
  readonly code: number[] = [];
  readonly locals: ValType[] = [];
  constructor(
    readonly name: string,
    readonly type: FuncType,
    readonly exported = false,
  ) {}

  /** A fresh local of type `t` (its index). */
  local(t: ValType): number {
    this.locals.push(t);
    return this.type.params.length + this.locals.length - 1;
  }
  op(...b: number[]): this {
    for (const x of b) this.code.push(x);
    return this;
  }
  get(l: number): this { return this.op(Op.localGet, ...uleb(l)); }
  set(l: number): this { return this.op(Op.localSet, ...uleb(l)); }
  tee(l: number): this { return this.op(Op.localTee, ...uleb(l)); }
  i32(n: number): this {
    this.code.push(Op.i32Const);
    sleb(n | 0, this.code);
    return this;
  }
  f32(x: number): this {
    this.code.push(Op.f32Const);
    f32bytes(x, this.code);
    return this;
  }
  f64(x: number): this {
    this.code.push(Op.f64Const);
    f64bytes(x, this.code);
    return this;
  }
  /** A load or store with a memarg (alignment log2, constant byte offset). */
  mem(op: number, align: number, offset = 0): this {
    this.code.push(op, align);
    uleb(offset, this.code);
    return this;
  }
  fc(op: number): this {
    this.code.push(0xfc);
    uleb(op, this.code);
    return this;
  }
  simd(op: number): this {
    this.code.push(0xfd);
    uleb(op, this.code);
    return this;
  }
  simdMem(op: number, align: number, offset = 0): this {
    this.simd(op);
    this.code.push(align);
    uleb(offset, this.code);
    return this;
  }
  lane(op: number, lane: number): this {
    return this.simd(op).op(lane);
  }
  v128(bytes: readonly number[]): this {
    return this.simd(Simd.const).op(...bytes);
  }
  call(fn: number): this { return this.op(Op.call, ...uleb(fn)); }
  block(): this { return this.op(Op.block, 0x40); }
  loop(): this { return this.op(Op.loop, 0x40); }
  if(result?: ValType): this { return this.op(Op.if, result ?? 0x40); }
  else(): this { return this.op(Op.else); }
  end(): this { return this.op(Op.end); }
  br(depth: number): this { return this.op(Op.br, ...uleb(depth)); }
  brIf(depth: number): this { return this.op(Op.brIf, ...uleb(depth)); }
  /** Code size so far (to roll back a failed attempt, see truncate). */
  get size(): number { return this.code.length; }
  truncate(n: number): void { this.code.length = n; }

  /**
   * `for (v = start; v < end; v += step) body()`: `start`/`end` push an i32. Leaves `v` in the
   * local it returns (its value after the loop is the first index not run).
   */
  forLoop(v: number, start: () => void, end: () => void, step: number, body: () => void): void {
    start();
    this.set(v);
    this.block().loop();
    this.get(v).i32(step - 1).op(Op.i32Add);
    end();
    this.op(Op.i32GeS).brIf(1);
    body();
    this.get(v).i32(step).op(Op.i32Add).set(v).br(0);
    this.end().end();
  }
}

export { Op, OpFC, Simd, T };

export interface FuncImport {
  readonly module: string;
  readonly name: string;
  readonly type: FuncType;
}

const section = (id: number, body: number[], out: number[]) => {
  out.push(id);
  uleb(body.length, out);
  for (const b of body) out.push(b);
};

/** A module: imported memory (`env.memory`), imported functions, then the defined ones. */
export class ModuleBuilder {
  private readonly imports: FuncImport[] = [];
  readonly funcs: FuncBuilder[] = [];
  constructor(readonly shared: boolean) {}

  /** Imports a function (index in the function space); imports must precede definitions. */
  importFunc(module: string, field: string, type: FuncType): number {
    if (this.funcs.length) throw new Error('kiln internal: wasm imports after functions');
    this.imports.push({ module, name: field, type });
    return this.imports.length - 1;
  }
  /** Defines a function (its index in the function space). */
  func(fb: FuncBuilder): number {
    this.funcs.push(fb);
    return this.imports.length + this.funcs.length - 1;
  }
  indexOf(fb: FuncBuilder): number {
    return this.imports.length + this.funcs.indexOf(fb);
  }

  encode(): Uint8Array {
    const types: string[] = [];
    const typeBytes: number[][] = [];
    const typeIndex = (t: FuncType) => {
      const key = `${t.params.join(',')}>${t.results.join(',')}`;
      let i = types.indexOf(key);
      if (i < 0) {
        i = types.push(key) - 1;
        typeBytes.push([0x60, ...uleb(t.params.length), ...t.params, ...uleb(t.results.length), ...t.results]);
      }
      return i;
    };
    const importIdx = this.imports.map((im) => typeIndex(im.type));
    const funcIdx = this.funcs.map((f) => typeIndex(f.type));
    const head: number[] = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
    section(1, [...uleb(typeBytes.length), ...typeBytes.flat()], head);
    const imp: number[] = [];
    uleb(this.imports.length + 1, imp);
    name('env', imp);
    name('memory', imp);
    // shared memories must declare a maximum (65536 pages: 4 GiB)
    imp.push(0x02, this.shared ? 0x03 : 0x01, ...uleb(1), ...uleb(65536));
    this.imports.forEach((im, i) => {
      name(im.module, imp);
      name(im.name, imp);
      imp.push(0x00, ...uleb(importIdx[i]!));
    });
    section(2, imp, head);
    section(3, [...uleb(funcIdx.length), ...funcIdx.flatMap((i) => uleb(i))], head);
    const exp: number[] = [];
    const exported = this.funcs.filter((f) => f.exported);
    uleb(exported.length, exp);
    for (const f of exported) {
      name(f.name, exp);
      exp.push(0x00, ...uleb(this.indexOf(f)));
    }
    section(7, exp, head);
    // the code section, written straight into the module's bytes (function bodies are most of them)
    const prefixes = this.funcs.map((f) => {
      // locals as runs of the same type
      const runs: [number, ValType][] = [];
      for (const t of f.locals) {
        const last = runs[runs.length - 1];
        if (last && last[1] === t) last[0]++;
        else runs.push([1, t]);
      }
      const locals: number[] = [];
      uleb(runs.length, locals);
      for (const [n, t] of runs) locals.push(...uleb(n), t);
      const size = locals.length + f.code.length + 1;
      return { size: uleb(size), locals };
    });
    const count = uleb(this.funcs.length);
    const codeLen = prefixes.reduce((a, p, i) => a + p.size.length + p.locals.length + this.funcs[i]!.code.length + 1, count.length);
    const secLen = uleb(codeLen);
    const out = new Uint8Array(head.length + 1 + secLen.length + codeLen);
    out.set(head, 0);
    let o = head.length;
    out[o++] = 10;
    out.set(secLen, o);
    o += secLen.length;
    out.set(count, o);
    o += count.length;
    this.funcs.forEach((f, i) => {
      const p = prefixes[i]!;
      out.set(p.size, o);
      o += p.size.length;
      out.set(p.locals, o);
      o += p.locals.length;
      out.set(f.code, o);
      o += f.code.length;
      out[o++] = Op.end;
    });
    return out;
  }
}
