// A compiled function's result (tensors nested in arrays and plain objects) as a template of
// output indices, filled with each replay's outputs.

import { Tensor } from '../../tensor/tensor.js';

export type Template = { t: number } | { a: Template[] } | { o: [string, Template][] } | { v: unknown };

/** The result's shape with tensors replaced by output indices. */
export function templateOf(v: unknown): Template {
  let k = 0;
  const walk = (x: unknown, depth: number): Template => {
    if (x instanceof Tensor) return { t: k++ };
    if (depth < 6 && Array.isArray(x)) return { a: x.map((y) => walk(y, depth + 1)) };
    if (depth < 6 && x !== null && typeof x === 'object' && Object.getPrototypeOf(x) === Object.prototype) return { o: Object.entries(x).map(([key, y]) => [key, walk(y, depth + 1)]) };
    return { v: x };
  };
  return walk(v, 0);
}

export function fillTemplate(t: unknown, outs: Tensor[]): unknown {
  const tp = t as Template;
  if ('t' in tp) return outs[tp.t];
  if ('a' in tp) return tp.a.map((x) => fillTemplate(x, outs));
  if ('o' in tp) return Object.fromEntries(tp.o.map(([k, x]) => [k, fillTemplate(x, outs)]));
  return tp.v;
}

