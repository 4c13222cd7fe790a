// Launching a kernel that runs along one dim (scan, sort): the input as contiguous
// [outer, len, inner] (copied when it is a strided view), the output contiguous.

import type { KernelSpec } from '../ir/kernel-spec.js';
import { numel } from '../core/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { view } from './dispatch.js';
import { contiguous } from './movement.js';

export function launchAlongDim(spec: Extract<KernelSpec, { kind: 'scan' | 'sort' }>, x0: Tensor, out: Tensor, dim: number): void {
  const x = x0.isContiguous ? x0 : contiguous(x0);
  try {
    const backend = out.storage.backend;
    backend.launch(backend.prepare(spec), {
      kind: spec.kind, input: view(x), out: view(out), outer: numel(x.shape.slice(0, dim)), len: x.shape[dim]!, inner: numel(x.shape.slice(dim + 1)),
    });
  } finally {
    if (x !== x0) x.dispose();
  }
}
