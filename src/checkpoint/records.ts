// State dicts to and from the safetensors codec's raw tensors: row-major copies with their file
// dtypes on the way out, kept kiln tensors named by their keys on the way in.

import { DTypeError, StateDictError } from '../core/errors.js';
import { isTensor, type Tensor } from '../tensor/tensor.js';
import { keep } from '../core/scope.js';
import { tensor } from '../ops/creation.js';
import { setOwn, type RawTensor, type SafetensorsFileDType } from '../io/safetensors.js';

/** The tensors of a state dict as the codec takes them (row-major copies), with their file dtypes. */
export function rawTensors(stateDict: Record<string, Tensor>, dtypes?: SafetensorsFileDType | Record<string, SafetensorsFileDType>): Record<string, RawTensor> {
  const op = 'saveSafetensors';
  const raw: Record<string, RawTensor> = {};
  if (dtypes !== undefined && typeof dtypes === 'object') {
    for (const k of Object.keys(dtypes)) if (!Object.hasOwn(stateDict, k)) throw new StateDictError(`dtypes names '${k}', which the state dict lacks`, op);
  }
  for (const [name, t] of Object.entries(stateDict)) {
    if (!isTensor(t)) throw new StateDictError(`'${name}' is not a tensor`, op);
    t.assertAlive(op);
    if (t.dtype !== 'float32' && t.dtype !== 'float64' && t.dtype !== 'int32' && t.dtype !== 'bool') {
      throw new DTypeError(`'${name}' has dtype ${String(t.dtype)}, which safetensors files here cannot hold`, op);
    }
    const fileDType = typeof dtypes === 'string' ? dtypes : dtypes?.[name];
    setOwn(raw, name, { dtype: t.dtype, shape: [...t.shape], data: t.dataSync(), ...(fileDType ? { fileDType } : {}) }); // dataSync: a row-major copy
  }
  return raw;
}

/** Decoded raw tensors as kept kiln tensors named by their keys. */
export function keptTensors(file: { tensors: Record<string, RawTensor>; metadata: Record<string, string> }): { tensors: Record<string, Tensor>; metadata: Record<string, string>; dtypes: Record<string, SafetensorsFileDType> } {
  const tensors: Record<string, Tensor> = {};
  const dtypes: Record<string, SafetensorsFileDType> = {};
  for (const [name, r] of Object.entries(file.tensors)) {
    const t = keep(tensor(r.data, r.shape, { dtype: r.dtype }));
    t.name = name;
    setOwn(tensors, name, t);
    setOwn(dtypes, name, r.fileDType!);
  }
  return { tensors, metadata: file.metadata, dtypes };
}

