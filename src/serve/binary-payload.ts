// Binary requests and responses: a safetensors file as the body (Content-Type
// application/octet-stream), one tensor per input by name (a model with one input accepts a
// single tensor of any name); the response is a safetensors file of the outputs by name.
// The codec (src/io/safetensors.ts) validates the header and offsets; a bad file is a 400.

import { KilnError } from '../core/errors.js';
import { decodeSafetensors, encodeSafetensors, type RawTensor } from '../io/safetensors.js';
import { RequestError } from './errors.js';
import { checkTensor, commonRows, describeInput, type InputSpec } from './signature.js';

const OP = 'POST /v1/predict';

export function decodeBinaryInputs(body: Uint8Array, specs: readonly InputSpec[], maxRows: number): { tensors: RawTensor[]; rows: number } {
  let file: ReturnType<typeof decodeSafetensors>;
  try {
    file = decodeSafetensors(body);
  } catch (e) {
    if (e instanceof KilnError) throw new RequestError(`the body is not a valid safetensors file: ${e.detail}`, OP, 'send a safetensors file (application/octet-stream), or JSON (application/json)');
    throw e;
  }
  const names = Object.keys(file.tensors);
  const lone = specs.length === 1 && names.length === 1;
  const unknown = lone ? [] : names.filter((k) => !specs.some((s) => s.name === k));
  if (unknown.length) throw new RequestError(`unknown input${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')}`, OP, `the model takes ${specs.map(describeInput).join(', ')}`);
  const tensors = specs.map((s) => {
    const t = lone ? file.tensors[names[0]!]! : file.tensors[s.name];
    if (!t) throw new RequestError(`input ${s.name} is missing`, OP, `the model takes ${specs.map(describeInput).join(', ')}`);
    return t;
  });
  return { tensors, rows: commonRows(specs, tensors.map((t, i) => checkTensor(specs[i]!, t, maxRows))) };
}

export function encodeBinaryOutputs(outputs: readonly { name: string; tensor: RawTensor }[]): Uint8Array {
  return encodeSafetensors(Object.fromEntries(outputs.map((o) => [o.name, o.tensor])));
}
