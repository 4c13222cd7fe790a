// torch-like printing: tensor([[ 0.1234, -1.0000], ...], dtype=float64, requiresGrad=true)

import type { DType, TypedArray } from '../core/dtype.js';

const SUMMARIZE_OVER = 1000;
const EDGE = 3;

function fmtNumber(v: number, dtype: DType, sci: boolean): string {
  if (dtype === 'bool') return v ? 'true' : 'false';
  if (dtype === 'int32') return String(v);
  if (Number.isNaN(v)) return 'nan';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  return sci ? v.toExponential(4) : v.toFixed(4);
}

export function formatTensor(data: TypedArray, shape: readonly number[], dtype: DType, suffix: string[]): string {
  const n = data.length;
  const summarize = n > SUMMARIZE_OVER;
  let maxAbs = 0;
  let minAbs = Infinity;
  for (let i = 0; i < n; i++) {
    const a = Math.abs(data[i]!);
    if (Number.isFinite(a)) {
      maxAbs = Math.max(maxAbs, a);
      if (a > 0) minAbs = Math.min(minAbs, a);
    }
  }
  const sci = (dtype === 'float32' || dtype === 'float64') && (maxAbs >= 1e8 || (minAbs < 1e-4 && minAbs !== Infinity));
  const cells: string[] = Array.from(data, (v) => fmtNumber(v, dtype, sci));
  const width = Math.max(0, ...cells.map((c) => c.length));
  const strides: number[] = [];
  let s = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d]!;
  }
  const indent = 'tensor('.length;
  const render = (dim: number, base: number): string => {
    if (dim === shape.length) return cells[base]!.padStart(width);
    const size = shape[dim]!;
    const idx = summarize && size > 2 * EDGE ? [...range(0, EDGE), -1, ...range(size - EDGE, size)] : range(0, size);
    const parts = idx.map((i) => (i < 0 ? '...' : render(dim + 1, base + i * strides[dim]!)));
    const sep = dim === shape.length - 1 ? ', ' : ',' + '\n'.repeat(shape.length - dim - 1) + ' '.repeat(indent + dim + 1);
    return `[${parts.join(sep)}]`;
  };
  const body = shape.length === 0 ? cells[0]! : render(0, 0);
  return `tensor(${[body, ...suffix].join(', ')})`;
}

function range(a: number, b: number): number[] {
  return Array.from({ length: Math.max(0, b - a) }, (_, i) => a + i);
}
