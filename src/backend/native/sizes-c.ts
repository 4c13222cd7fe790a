// Dynamic kernels (issue 7) in C: a number of the loop IR that carries a `Sym` renders as a
// `const int64_t` local. The kernel reads s0, s1, ... from its sizes buffer (a `const double *`
// parameter) at entry and computes every product it uses there (extents, affine coefficients
// and offsets, matmul m/n/k and strides, work for the threading test), so loops compare
// against a local and running indices advance by a local, as static kernels do with literals.
// Static kernels never create one of these (their C text, the disk cache's key, is unchanged).

import type { KernelSizes } from '../../ir/loop-ir.js';
import { symEval, symIsConst, symKey, symToCode, type Sym } from '../../ir/symbolic.js';

const symName = (i: number) => `s${i}`;

export class CSizes {
  /** hoisted products by polynomial key: local name and its definition */
  private readonly hoisted = new Map<string, string>();
  private readonly defs: string[] = [];

  constructor(
    /** the C expression of the sizes pointer (`b12`, or `x->sz` inside a matmul epilogue) */
    private readonly src: string,
    readonly sizes: KernelSizes,
  ) {}

  /** A number of the kernel: its literal, or (with a symbol) the local holding its value. */
  num(v: number, s?: Sym | null): string {
    if (!s) return String(v);
    if (symIsConst(s)) return String(symEval(s, []));
    if (s.terms.length === 1 && s.terms[0]![0] === 1 && s.terms[0]![1].length === 1) return symName(s.terms[0]![1][0]!);
    const key = symKey(s);
    let name = this.hoisted.get(key);
    if (!name) {
      name = `z${this.hoisted.size}`;
      this.hoisted.set(key, name);
      // the symbols are int64_t, so every product is computed in 64 bits
      this.defs.push(`const int64_t ${name} = ${symToCode(s, symName)};`);
    }
    return name;
  }

  /** The lines that start the function (call once its body is rendered). */
  prelude(indent: string): string[] {
    const reads = Array.from({ length: this.sizes.count }, (_, i) => `const int64_t ${symName(i)} = (int64_t)${this.src}[${i}];`);
    // a kernel that uses none of the sizes still compiles cleanly (-Wunused)
    const unused = Array.from({ length: this.sizes.count }, (_, i) => `(void)${symName(i)};`);
    return [...reads, ...unused, ...this.defs].map((l) => indent + l);
  }
}
