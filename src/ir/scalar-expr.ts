// The scalar expression language of pointwise kernels. Every pointwise primitive is one
// ScalarOp; a fused kernel is a tree of them. Each backend renders the tree in its own
// language (JS, C, WGSL), so an op is defined once and every backend computes it.

import type { DType } from '../core/dtype.js';

export const UNARY_OPS = [
  'neg', 'abs', 'exp', 'log', 'log1p', 'expm1', 'sqrt', 'rsqrt', 'sin', 'cos', 'tanh', 'sigmoid',
  'relu', 'gelu', 'geluTanh', 'silu', 'softplus', 'erf', 'sign', 'floor', 'ceil', 'round',
  'reciprocal', 'logicalNot', 'isnan', 'isinf', 'identity',
  'tan', 'atan', 'asin', 'acos', 'sinh', 'cosh', 'log2', 'log10', 'trunc',
] as const;
export const BINARY_OPS = [
  'add', 'sub', 'mul', 'div', 'pow', 'maximum', 'minimum', 'eq', 'ne', 'lt', 'le', 'gt', 'ge',
  'logicalAnd', 'logicalOr', 'logicalXor',
  'atan2', 'fmod', 'hypot',
] as const;
export const TERNARY_OPS = ['where'] as const;

export type UnaryOp = (typeof UNARY_OPS)[number];
export type BinaryOp = (typeof BINARY_OPS)[number];
export type TernaryOp = (typeof TERNARY_OPS)[number];
export type ScalarOp = UnaryOp | BinaryOp | TernaryOp;

export type ScalarExpr =
  | { readonly kind: 'input'; readonly index: number; readonly dtype: DType }
  | { readonly kind: 'param'; readonly index: number } // a runtime number, so constants do not recompile kernels
  | { readonly kind: 'const'; readonly value: number }
  | { readonly kind: 'op'; readonly op: ScalarOp; readonly args: readonly ScalarExpr[]; readonly dtype: DType }
  | { readonly kind: 'cast'; readonly arg: ScalarExpr; readonly dtype: DType };

const BOOL_RESULT = new Set<ScalarOp>(['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'logicalAnd', 'logicalOr', 'logicalXor', 'logicalNot', 'isnan', 'isinf']);
const FLOAT_RESULT = new Set<ScalarOp>([
  'exp', 'log', 'log1p', 'expm1', 'sqrt', 'rsqrt', 'sin', 'cos', 'tanh', 'sigmoid', 'gelu', 'geluTanh',
  'silu', 'softplus', 'erf', 'reciprocal', 'div',
  'tan', 'atan', 'asin', 'acos', 'sinh', 'cosh', 'log2', 'log10', 'atan2', 'hypot',
]);

// ops that evaluate a libm-class function: recomputing one in every consumer costs more than
// reading it from a buffer (the scheduler's cost rule)
const TRANSCENDENTAL = new Set<ScalarOp>([
  'exp', 'log', 'log1p', 'expm1', 'tanh', 'sigmoid', 'gelu', 'geluTanh', 'silu', 'softplus', 'erf', 'pow', 'sin', 'cos', 'sqrt', 'rsqrt',
  'tan', 'atan', 'asin', 'acos', 'sinh', 'cosh', 'log2', 'log10', 'atan2', 'hypot',
]);

export function isTranscendental(op: string): boolean {
  return TRANSCENDENTAL.has(op as ScalarOp);
}
export function isBoolResult(op: ScalarOp): boolean {
  return BOOL_RESULT.has(op);
}
export function isFloatResult(op: ScalarOp): boolean {
  return FLOAT_RESULT.has(op);
}

export function arity(op: ScalarOp): number {
  if ((UNARY_OPS as readonly string[]).includes(op)) return 1;
  if ((BINARY_OPS as readonly string[]).includes(op)) return 2;
  return 3;
}

/** A stable text key for caching kernels built from an expression. */
export function exprKey(e: ScalarExpr): string {
  switch (e.kind) {
    case 'input': return `i${e.index}:${e.dtype}`;
    case 'param': return `p${e.index}`;
    case 'const': return `c${e.value}`;
    case 'cast': return `cast<${e.dtype}>(${exprKey(e.arg)})`;
    case 'op': return `${e.op}<${e.dtype}>(${e.args.map(exprKey).join(',')})`;
  }
}
