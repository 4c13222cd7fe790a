// Generated strided reductions: loops over the kept dims outside, over the reduced dims
// inside, accumulating in a float64 local.

import type { TypedArray } from '../../core/dtype.js';
import type { ReduceOp } from '../../ir/kernel-spec.js';

export type ReduceFn = (
  input: TypedArray, inOffset: number, inStrides: readonly number[],
  out: TypedArray, outOffset: number, outStrides: readonly number[],
  keepShape: readonly number[], reduceShape: readonly number[],
) => void;

const INIT: Record<ReduceOp, string> = {
  sum: '0', prod: '1', max: '-Infinity', min: 'Infinity', argmax: '-Infinity', argmin: 'Infinity',
};

function accumulate(op: ReduceOp): string {
  switch (op) {
    case 'sum': return 'acc += v;';
    case 'prod': return 'acc *= v;';
    case 'max': return 'if (v > acc || v !== v) acc = v;';
    case 'min': return 'if (v < acc || v !== v) acc = v;';
    // first occurrence wins; NaN counts as the extreme, as in torch
    case 'argmax': return 'if (idx === 0 || (acc === acc && (v > acc || v !== v))) { acc = v; best = idx; } idx++;';
    case 'argmin': return 'if (idx === 0 || (acc === acc && (v < acc || v !== v))) { acc = v; best = idx; } idx++;';
  }
}

export function reduceSource(op: ReduceOp, nKeep: number, nReduce: number): string {
  const L: string[] = [];
  for (let d = 0; d < nKeep; d++) L.push(`const k${d} = keepShape[${d}], is${d} = inStrides[${d}], os${d} = outStrides[${d}];`);
  for (let d = 0; d < nReduce; d++) L.push(`const r${d} = reduceShape[${d}], rs${d} = inStrides[${nKeep + d}];`);
  L.push('let ip0 = inOffset, op0 = outOffset;');
  for (let d = 0; d < nKeep; d++) {
    L.push(`for (let j${d} = 0; j${d} < k${d}; j${d}++) {`);
    L.push(`let ip${d + 1} = ip${d}, op${d + 1} = op${d};`);
  }
  const arg = op === 'argmax' || op === 'argmin';
  L.push(`let acc = ${INIT[op]};${arg ? ' let best = 0, idx = 0;' : ''}`);
  L.push(`let rp0 = ip${nKeep};`);
  for (let d = 0; d < nReduce; d++) {
    L.push(`for (let q${d} = 0; q${d} < r${d}; q${d}++) {`);
    if (d < nReduce - 1) L.push(`let rp${d + 1} = rp${d};`);
  }
  L.push(`const v = input[rp${nReduce - 1}];`);
  L.push(accumulate(op));
  for (let d = nReduce - 1; d >= 0; d--) {
    L.push(`rp${d} += rs${d};`);
    L.push('}');
  }
  L.push(`out[op${nKeep}] = ${arg ? 'best' : 'acc'};`);
  for (let d = nKeep - 1; d >= 0; d--) {
    L.push(`ip${d} += is${d}; op${d} += os${d};`);
    L.push('}');
  }
  return L.join('\n');
}

const cache = new Map<string, ReduceFn>();

export function reduceKernel(op: ReduceOp, nKeep: number, nReduce: number): ReduceFn {
  const key = `${op}/${nKeep}/${nReduce}`;
  let fn = cache.get(key);
  if (!fn) {
    fn = new Function(
      'input', 'inOffset', 'inStrides', 'out', 'outOffset', 'outStrides', 'keepShape', 'reduceShape',
      reduceSource(op, nKeep, nReduce),
    ) as ReduceFn;
    cache.set(key, fn);
  }
  return fn;
}
