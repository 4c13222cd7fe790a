// Typed errors of the WebGPU backend. GPU work is asynchronous: an error the device reports
// later (out of memory, a shader that failed to compile, a lost device) is kept by the backend
// and thrown by its next call (launch, write, alloc) or rejected by the next read, never dropped.

import { DTypeError, KilnError, OutOfMemoryError, SyncReadError } from '../../core/errors.js';

/** No WebGPU adapter or device here (no navigator.gpu, no `webgpu` package, no driver). */
export class WebGpuUnavailableError extends KilnError {
  override name = 'WebGpuUnavailableError';
}

/** A synchronous read of GPU memory (dataSync, item, toArray, a graph break, a JS-side check). */
export class WebGpuSyncReadError extends SyncReadError {
  override name = 'WebGpuSyncReadError';
}

/** The device was lost (driver reset, destroy(), too much work): tensors on it are gone. */
export class WebGpuDeviceLostError extends KilnError {
  override name = 'WebGpuDeviceLostError';
}

/** A buffer allocation the device refused. */
export class WebGpuOutOfMemoryError extends OutOfMemoryError {
  override name = 'WebGpuOutOfMemoryError';
}

/** WGSL the device rejected: the message carries the line and the whole source. */
export class WebGpuShaderError extends KilnError {
  override name = 'WebGpuShaderError';
  constructor(message: string, readonly source: string, readonly line?: number) {
    super(message, 'webgpu', 'this is a kiln bug: please report it with the WGSL above');
  }
}

/** Any other validation error the device reported (a kiln bug: bindings, sizes). */
export class WebGpuValidationError extends KilnError {
  override name = 'WebGpuValidationError';
}

/** An op with no WebGPU kernel yet. */
export class WebGpuUnsupportedError extends KilnError {
  override name = 'WebGpuUnsupportedError';
}

/** float64 on WebGPU: WGSL has no f64. */
export function float64Error(op: string): DTypeError {
  return new DTypeError('float64 is not supported on webgpu (WGSL has no f64)', op, "use float32 on the GPU: cast with .float() before moving the tensor there, or create it with { dtype: 'float32' }");
}

/** The WGSL source with line numbers, the failing line marked. */
export function numberedSource(src: string, line?: number): string {
  return src.split('\n').map((l, i) => `${i + 1 === line ? '>>' : '  '}${String(i + 1).padStart(4)} | ${l}`).join('\n');
}
