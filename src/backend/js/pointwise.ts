// Generated JavaScript for strided pointwise kernels: nested loops with pointer
// increments (no index division, no per-element calls), one function per
// (expression, dtypes, rank), cached.

import type { ScalarExpr } from '../../ir/scalar-expr.js';
import { JS_HELPER_NAMES, JS_HELPER_VALUES, renderJs } from './render-scalar.js';
import type { TypedArray } from '../../core/dtype.js';

export type PointwiseFn = (
  params: readonly number[],
  out: TypedArray, outOffset: number, outStrides: readonly number[],
  inputs: readonly TypedArray[], inOffsets: readonly number[], inStrides: readonly (readonly number[])[],
  shape: readonly number[],
) => void;

/** Source of a strided pointwise loop nest of rank `ndim` over `nInputs` inputs. */
export function pointwiseSource(expr: ScalarExpr, nInputs: number, ndim: number): string {
  const ops = ['o', ...Array.from({ length: nInputs }, (_, k) => `a${k}`)];
  const lines: string[] = [];
  lines.push(`const o = out;`);
  for (const p of paramIndices(expr)) lines.push(`const param${p} = params[${p}];`);
  for (let k = 0; k < nInputs; k++) lines.push(`const a${k} = inputs[${k}], a${k}s = inStrides[${k}];`);
  for (let d = 0; d < ndim; d++) {
    lines.push(`const n${d} = shape[${d}];`);
    lines.push(`const o_s${d} = outStrides[${d}];`);
    for (let k = 0; k < nInputs; k++) lines.push(`const a${k}_s${d} = a${k}s[${d}];`);
  }
  lines.push(`let o_p0 = outOffset;`);
  for (let k = 0; k < nInputs; k++) lines.push(`let a${k}_p0 = inOffsets[${k}];`);
  const value = renderJs(expr, (i) => `a${i}[a${i}_p${ndim - 1}]`);
  const open: string[] = [];
  const close: string[] = [];
  for (let d = 0; d < ndim; d++) {
    const inner = d + 1;
    const body: string[] = [];
    body.push(`for (let j${d} = 0; j${d} < n${d}; j${d}++) {`);
    if (d === ndim - 1) {
      body.push(`  o[o_p${d}] = ${value};`);
    } else {
      for (const p of ops) body.push(`  let ${p}_p${inner} = ${p}_p${d};`);
    }
    open.push(body.join('\n'));
    close.unshift(ops.map((p) => `  ${p}_p${d} += ${p}_s${d};`).join('\n') + '\n}');
  }
  return [...lines, ...interleave(open, close)].join('\n');
}

function interleave(open: string[], close: string[]): string[] {
  return [...open, ...close]; // open[0] .. open[n-1], then close[n-1] .. close[0]
}

/** Indices of the runtime params an expression reads, so they can be hoisted to locals. */
export function paramIndices(e: ScalarExpr, into = new Set<number>()): Set<number> {
  if (e.kind === 'param') into.add(e.index);
  else if (e.kind === 'op') e.args.forEach((a) => paramIndices(a, into));
  else if (e.kind === 'cast') paramIndices(e.arg, into);
  return into;
}

const cache = new Map<string, PointwiseFn>();

export function pointwiseKernel(key: string, expr: ScalarExpr, nInputs: number, ndim: number): PointwiseFn {
  let fn = cache.get(key);
  if (!fn) {
    const src = pointwiseSource(expr, nInputs, ndim);
    const factory = new Function(
      ...JS_HELPER_NAMES,
      `return function pointwise(params, out, outOffset, outStrides, inputs, inOffsets, inStrides, shape) {\n${src}\n};`,
    );
    fn = factory(...JS_HELPER_VALUES) as PointwiseFn;
    cache.set(key, fn);
  }
  return fn;
}
