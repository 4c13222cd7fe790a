// JSON requests and responses:
//   request   {"inputs": {"x": [[0.1, 0.2, ...], ...]}}   (one input: {"inputs": [[...], ...]} too)
//   response  {"outputs": {"output": [[...], ...]}}
// Nested arrays are checked level by level against the declared row shape, so a ragged array,
// a string among numbers or a float for an int32 input is a 400 naming the element.

import type { DType, TypedArray } from '../core/dtype.js';
import { TYPED_ARRAY } from '../core/dtype.js';
import type { RawTensor } from '../io/safetensors.js';
import { RequestError } from './errors.js';
import { checkTensor, commonRows, describeInput, type InputSpec } from './signature.js';

const OP = 'POST /v1/predict';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The request's tensors in the model's input order (throws RequestError). */
export function decodeJsonInputs(body: unknown, specs: readonly InputSpec[], maxRows: number): { tensors: RawTensor[]; rows: number } {
  if (!isRecord(body) || !('inputs' in body)) throw new RequestError('the JSON body has no "inputs"', OP, `send {"inputs": {${specs.map((s) => `"${s.name}": [...]`).join(', ')}}}`);
  let named: Record<string, unknown>;
  if (Array.isArray(body.inputs)) {
    if (specs.length !== 1) throw new RequestError(`"inputs" is an array, but the model takes ${specs.length} inputs`, OP, `name them: {"inputs": {${specs.map((s) => `"${s.name}": [...]`).join(', ')}}}`);
    named = { [specs[0]!.name]: body.inputs };
  } else if (isRecord(body.inputs)) named = body.inputs;
  else throw new RequestError('"inputs" must be an object of nested arrays (or one nested array)', OP);
  const unknown = Object.keys(named).filter((k) => !specs.some((s) => s.name === k));
  if (unknown.length) throw new RequestError(`unknown input${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')}`, OP, `the model takes ${specs.map(describeInput).join(', ')}`);
  const tensors = specs.map((s) => {
    if (!(s.name in named)) throw new RequestError(`input ${s.name} is missing`, OP, `the model takes ${specs.map(describeInput).join(', ')}`);
    return nestedToTensor(named[s.name], s);
  });
  return { tensors, rows: commonRows(specs, tensors.map((t, i) => checkTensor(specs[i]!, t, maxRows))) };
}

/** The nested array as a tensor of the declared row shape (rows are counted by checkTensor). */
function nestedToTensor(v: unknown, spec: InputSpec): RawTensor {
  if (!Array.isArray(v)) throw new RequestError(`input ${spec.name} must be a nested array, got ${v === null ? 'null' : typeof v}`, OP, `send ${describeInput(spec)} as [[...], ...]`);
  const shape = [v.length, ...spec.row];
  const size = shape.reduce((a, b) => a * b, 1);
  const data = new TYPED_ARRAY[spec.dtype](size);
  let at = 0;
  const put = scalarWriter(spec);
  const walk = (x: unknown, depth: number, path: string): void => {
    if (depth === shape.length) {
      data[at++] = put(x, path);
      return;
    }
    if (!Array.isArray(x)) throw new RequestError(`input ${spec.name}${path} is ${x === null ? 'null' : typeof x}, expected an array of ${shape[depth]}`, OP, `send ${describeInput(spec)}`);
    if (x.length !== shape[depth]) throw new RequestError(`input ${spec.name}${path} has ${x.length} elements, expected ${shape[depth]} (${describeInput(spec)})`, OP, 'every row must have the declared shape');
    for (let i = 0; i < x.length; i++) walk(x[i], depth + 1, `${path}[${i}]`);
  };
  walk(v, 0, '');
  return { dtype: spec.dtype, shape, data };
}

function scalarWriter(spec: InputSpec): (x: unknown, path: string) => number {
  const bad = (x: unknown, path: string, want: string) => new RequestError(`input ${spec.name}${path} is ${JSON.stringify(x) ?? typeof x}, expected ${want}`, OP, `${spec.name} is ${spec.dtype}`);
  switch (spec.dtype) {
    case 'bool':
      return (x, p) => {
        if (x === true || x === 1) return 1;
        if (x === false || x === 0) return 0;
        throw bad(x, p, 'true, false, 0 or 1');
      };
    case 'int32':
      return (x, p) => {
        if (typeof x === 'number' && Number.isInteger(x) && x >= -(2 ** 31) && x < 2 ** 31) return x;
        throw bad(x, p, 'an integer in the int32 range');
      };
    default:
      return (x, p) => {
        if (typeof x === 'number') return x; // JSON has no NaN or Infinity: every number is finite
        throw bad(x, p, 'a number');
      };
  }
}

/** Nested arrays of a row-major typed array (bool as true/false). */
export function toNested(data: TypedArray, shape: readonly number[], dtype: DType): unknown {
  const strides = shape.map((_, d) => shape.slice(d + 1).reduce((a, b) => a * b, 1));
  const leaf = dtype === 'bool' ? (i: number) => data[i] !== 0 : (i: number) => data[i]!;
  const build = (d: number, off: number): unknown => {
    if (d === shape.length) return leaf(off);
    const out = new Array<unknown>(shape[d]!);
    for (let i = 0; i < shape[d]!; i++) out[i] = build(d + 1, off + i * strides[d]!);
    return out;
  };
  return build(0, 0);
}

export function encodeJsonOutputs(outputs: readonly { name: string; tensor: RawTensor }[]): string {
  const o: Record<string, unknown> = {};
  for (const { name, tensor } of outputs) o[name] = toNested(tensor.data, tensor.shape, tensor.dtype);
  return JSON.stringify({ outputs: o });
}
