// What every kiln wasm module holds besides its kernels: the imported Math functions (the
// scalar fallback for transcendental ops), and helper functions defined on first use
// (ToInt32, the f32x4 math of vmath.ts, matmul micro-kernels).

import { FuncBuilder, ModuleBuilder, T, type FuncType } from './encoder.js';
import type { ValType } from './opcodes.js';

/** Math functions imported as `math.NAME` (f64 -> f64; the binary ones f64 x f64 -> f64). */
export const MATH_IMPORTS = [
  'exp', 'log', 'log1p', 'expm1', 'sin', 'cos', 'tanh', 'erf', 'tan', 'atan', 'asin', 'acos', 'sinh', 'cosh', 'log2', 'log10',
  'pow', 'atan2', 'fmod', 'hypot',
] as const;
export type MathImport = (typeof MATH_IMPORTS)[number];
export const BINARY_MATH_IMPORTS: ReadonlySet<MathImport> = new Set(['pow', 'atan2', 'fmod', 'hypot']);

export class ModuleContext {
  readonly mod: ModuleBuilder;
  private readonly math = new Map<MathImport, number>();
  private readonly helpers = new Map<string, number>();

  constructor(shared: boolean) {
    this.mod = new ModuleBuilder(shared);
    for (const m of MATH_IMPORTS) {
      const params: ValType[] = BINARY_MATH_IMPORTS.has(m) ? [T.f64, T.f64] : [T.f64];
      this.math.set(m, this.mod.importFunc('math', m, { params, results: [T.f64] }));
    }
  }

  mathFn(name: MathImport): number {
    return this.math.get(name)!;
  }

  /** A helper function, built by `build` the first time `name` is asked for. */
  helper(name: string, type: FuncType, build: (fb: FuncBuilder) => void): number {
    let idx = this.helpers.get(name);
    if (idx === undefined) {
      const fb = new FuncBuilder(name, type);
      // registered before its body is built, so a helper may call itself or later helpers
      idx = this.mod.func(fb);
      this.helpers.set(name, idx);
      build(fb);
    }
    return idx;
  }
}
