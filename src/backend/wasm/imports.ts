// What a kiln wasm module imports: the heap memory and Math functions (the scalar fallback).
// Self-contained source (`mathImportsSource`) so worker threads build the same functions.

import { erf } from '../js/render-scalar.js';

export function mathImports(): Record<string, (...a: number[]) => number> {
  return { exp: Math.exp, log: Math.log, log1p: Math.log1p, expm1: Math.expm1, sin: Math.sin, cos: Math.cos, tanh: Math.tanh, erf, pow: Math.pow };
}

/** JavaScript source of an expression evaluating to the same imports (for workers). */
export function mathImportsSource(): string {
  return `(() => { const erf = ${erf.toString()}; return { exp: Math.exp, log: Math.log, log1p: Math.log1p, expm1: Math.expm1, sin: Math.sin, cos: Math.cos, tanh: Math.tanh, erf, pow: Math.pow }; })()`;
}
