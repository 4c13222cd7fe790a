// Moving tensors between backends. Upload is synchronous (the source is CPU memory); moving
// off a GPU is asynchronous (a GPU read). The view (shape, strides, offset) is kept: the
// whole underlying buffer moves.

import type { Backend } from '../backend/backend.js';
import { Storage } from './storage.js';
import { Tensor } from './tensor.js';

function wrap(t: Tensor, backend: Backend, data: ReturnType<Backend['readSync']>): Tensor {
  const buf = backend.alloc(t.dtype, data.length);
  backend.write(buf, data);
  return new Tensor(new Storage(backend, buf), t.shape, t.strides, t.offset, t.dtype);
}

/** A copy of `t` on `backend`, from a backend that reads synchronously (the CPU). */
export function toBackend(t: Tensor, backend: Backend): Tensor {
  t.assertAlive('toBackend');
  if (t.storage.backend === backend) return t;
  return wrap(t, backend, t.storage.backend.readSync(t.storage.buf));
}

/** A copy of `t` on `backend`, from any backend (a GPU read is awaited). */
export async function toBackendAsync(t: Tensor, backend: Backend): Promise<Tensor> {
  t.assertAlive('toBackendAsync');
  if (t.storage.backend === backend) return t;
  return wrap(t, backend, await t.storage.backend.read(t.storage.buf));
}
