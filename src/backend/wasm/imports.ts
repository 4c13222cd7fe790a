// What a kiln wasm module imports: the heap memory and Math functions (the scalar fallback).
// Self-contained source (`mathImportsSource`) so worker threads build the same functions.

import { erf } from '../js/render-scalar.js';

// Math.NAME for every import but erf (ours) and fmod (JS's %, which is C's fmod)
const FROM_MATH = ['exp', 'log', 'log1p', 'expm1', 'sin', 'cos', 'tanh', 'tan', 'atan', 'asin', 'acos', 'sinh', 'cosh', 'log2', 'log10', 'pow', 'atan2', 'hypot'] as const;

export function mathImports(): Record<string, (...a: number[]) => number> {
  return { ...Object.fromEntries(FROM_MATH.map((n) => [n, Math[n]])), erf, fmod: (a: number, b: number) => a % b };
}

/** JavaScript source of an expression evaluating to the same imports (for workers). */
export function mathImportsSource(): string {
  return `(() => { const erf = ${erf.toString()}; return { ${FROM_MATH.map((n) => `${n}: Math.${n}`).join(', ')}, erf, fmod: (a, b) => a % b }; })()`;
}
