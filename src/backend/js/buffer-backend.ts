// The common part of the backends that run only compiled loop kernels themselves (wasm, native):
// their buffers are the wrapped JS backend's typed arrays (JsBuffer), so eager kernels, opaque
// steps and the JS backend work on the same memory. Freeing, writing and reading are therefore
// the JS backend's, in one place; each subclass allocates (pooled, or in a wasm heap) and
// prepares and launches its own kernels.

import type { BackendBuffer } from '../backend.js';
import type { TypedArray } from '../../core/dtype.js';
import type { JsBackend } from './index.js';

export abstract class JsBufferBackend {
  constructor(readonly js: JsBackend) {}

  free(buf: BackendBuffer): void {
    this.js.free(buf);
  }
  write(buf: BackendBuffer, data: TypedArray, offset?: number): void {
    this.js.write(buf, data, offset);
  }
  readSync(buf: BackendBuffer): TypedArray {
    return this.js.readSync(buf);
  }
  read(buf: BackendBuffer): Promise<TypedArray> {
    return this.js.read(buf);
  }
}
