// A served model's declared inputs: a name, a dtype and the shape of one row for each, in the
// order the model takes them. Every input's first dim is the batch dim (rows); requests carry
// [n, ...row] with 1 <= n <= the largest batch. Payload decoders (json-payload.ts,
// binary-payload.ts) check what they decode against it, and say what was expected.

import type { DType } from '../core/dtype.js';
import { DTYPES } from '../core/dtype.js';
import { ArgumentError } from '../core/errors.js';
import type { RawTensor } from '../io/safetensors.js';
import { RequestError } from './errors.js';

export interface InputSpec {
  readonly name: string;
  readonly dtype: DType;
  /** the shape of one row: the dims after the batch dim */
  readonly row: readonly number[];
}

/** `x: float32[n, 784]` */
export function describeInput(s: InputSpec): string {
  return `${s.name}: ${s.dtype}[${['n', ...s.row].join(', ')}]`;
}

export function describeSignature(inputs: readonly InputSpec[]): string {
  return inputs.map(describeInput).join(', ');
}

/** Checks a declared signature (a module file's `inputs`): names, dtypes, positive integer dims. */
export function checkSignature(inputs: readonly InputSpec[], where: string): InputSpec[] {
  if (inputs.length === 0) throw new ArgumentError('the model declares no inputs', where, "declare them, e.g. inputs: { x: { dtype: 'float32', shape: [784] } }");
  const seen = new Set<string>();
  return inputs.map((s) => {
    if (!/^[A-Za-z_][\w.]*$/.test(s.name) || seen.has(s.name)) throw new ArgumentError(`input name ${JSON.stringify(s.name)} is not a unique identifier`, where);
    seen.add(s.name);
    if (!DTYPES.includes(s.dtype)) throw new ArgumentError(`input ${s.name}: dtype ${JSON.stringify(s.dtype)} is not one of ${DTYPES.join(', ')}`, where);
    if (!Array.isArray(s.row) || !s.row.every((d) => Number.isInteger(d) && d > 0)) throw new ArgumentError(`input ${s.name}: row shape ${JSON.stringify(s.row)} must list positive integers (the dims after the batch dim)`, where);
    return { name: s.name, dtype: s.dtype, row: [...s.row] };
  });
}

/** The rows of a decoded tensor, after checking its shape and dtype against the input's spec. */
export function checkTensor(spec: InputSpec, t: RawTensor, maxRows: number): number {
  const want = describeInput(spec);
  if (t.dtype !== spec.dtype) throw new RequestError(`input ${spec.name} is ${t.dtype}, the model takes ${want}`, 'POST /v1/predict', `send ${spec.dtype} values`);
  const shape = t.shape;
  const ok = shape.length === spec.row.length + 1 && spec.row.every((d, i) => shape[i + 1] === d);
  if (!ok) throw new RequestError(`input ${spec.name} has shape [${shape.join(', ')}], the model takes ${want}`, 'POST /v1/predict', shape.length === spec.row.length ? `wrap a single row in a batch: [[...]] (shape [1, ${spec.row.join(', ')}])` : `send ${want}`);
  const n = shape[0]!;
  if (n < 1 || n > maxRows) throw new RequestError(`input ${spec.name} has ${n} rows, this server takes 1 to ${maxRows} per request`, 'POST /v1/predict', n < 1 ? 'send at least one row' : `split the request into requests of at most ${maxRows} rows`);
  return n;
}

/** Checks that every input of a request has the same number of rows; returns it. */
export function commonRows(specs: readonly InputSpec[], rows: readonly number[]): number {
  const n = rows[0]!;
  const k = rows.findIndex((r) => r !== n);
  if (k >= 0) throw new RequestError(`input ${specs[0]!.name} has ${n} rows but ${specs[k]!.name} has ${rows[k]}`, 'POST /v1/predict', 'send the same number of rows for every input');
  return n;
}
