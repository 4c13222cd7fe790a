// Dynamic kernels (issue 7) in wasm: a number of the loop IR that carries a `Sym` becomes an
// i32 local. The kernel reads s0, s1, ... from its float64 sizes buffer at entry and computes
// every product it uses (extents, affine coefficients scaled to bytes, steps times four) once
// there, so loops compare against a local and pointers advance by a local, as static kernels
// do with constants. Static kernels never create one of these (their code is unchanged).

import type { KernelSizes } from '../../ir/loop-ir.js';
import { symEval, symIsConst, symKey, symScale, type Sym } from '../../ir/symbolic.js';
import type { FuncBuilder } from './encoder.js';
import { Op, OpFC, T } from './opcodes.js';

export class SizeLocals {
  /** local per symbol (read at entry) */
  private readonly syms: number[];
  /** hoisted products: local and polynomial, in first-use order */
  private readonly hoisted = new Map<string, { local: number; sym: Sym }>();

  constructor(
    private readonly fb: FuncBuilder,
    /** the local holding the sizes buffer's base address */
    private readonly base: number,
    readonly sizes: KernelSizes,
  ) {
    this.syms = Array.from({ length: sizes.count }, () => fb.local(T.i32));
  }

  /** The local holding a (non-constant) polynomial's value. */
  local(s: Sym): number {
    if (s.terms.length === 1 && s.terms[0]![0] === 1 && s.terms[0]![1].length === 1) return this.syms[s.terms[0]![1][0]!]!;
    const key = symKey(s);
    let h = this.hoisted.get(key);
    if (!h) this.hoisted.set(key, (h = { local: this.fb.local(T.i32), sym: s }));
    return h.local;
  }

  /** Pushes `v`, or (a size) the value of `s` times `scale`. */
  push(v: number, s: Sym | null | undefined, scale = 1): void {
    if (!s) return void this.fb.i32(v * scale);
    const t = scale === 1 ? s : symScale(s, scale);
    if (symIsConst(t)) return void this.fb.i32(symEval(t, []));
    this.fb.get(this.local(t));
  }

  /**
   * The code that must run first: call once the body is rendered (every local it needs is
   * known then); it is moved to the start of the function.
   */
  prependPrelude(): void {
    const fb = this.fb;
    const at = fb.code.length;
    this.syms.forEach((l, i) => {
      // sizes are integers well inside i32 (the heap is at most 4 GiB)
      fb.get(this.base).mem(Op.f64Load, 3, i * 8).fc(OpFC.i32TruncSatF64S).set(l);
    });
    for (const { local, sym } of this.hoisted.values()) {
      sym.terms.forEach(([c, mono], ti) => {
        fb.i32(c);
        for (const i of mono) fb.get(this.syms[i]!).op(Op.i32Mul);
        if (ti > 0) fb.op(Op.i32Add);
      });
      fb.set(local);
    }
    // the prelude is short: move it in front of the body in place
    const prelude = fb.code.splice(at);
    fb.code.splice(0, 0, ...prelude);
  }
}
