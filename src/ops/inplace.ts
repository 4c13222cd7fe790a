// In-place writes. Eager: the kernel writes into the target's memory. While tracing,
// the tracer records the write so the compiled program can write the graph output back
// (functionalization). Autograd forbids in-place writes to tensors it tracks.

import { AutogradError, ShapeError, fmtShape } from '../core/errors.js';
import { broadcastShapes, shapesEqual } from '../core/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { isGradEnabled } from '../autograd/grad-mode.js';
import { copyInto, runtime } from './dispatch.js';
import { broadcastStrides } from './broadcast.js';
import { full } from './creation.js';

/** Throws unless dst may be written in place by `op` (alive, and not tracked by autograd). */
export function checkInplace(dst: Tensor, op: string): void {
  dst.assertAlive(op);
  if (isGradEnabled() && dst.requiresGrad) {
    throw new AutogradError(
      `in-place write into a tensor ${fmtShape(dst.shape)} that requires grad${dst.name ? ` ('${dst.name}')` : ''}`,
      op,
      'do parameter updates inside kiln.noGrad(() => ...), or use an out-of-place op',
    );
  }
}

/** dst.copy_(src): writes src (broadcast, cast to dst's dtype) into dst's memory. `op` names the caller in errors. */
export function assign(dst: Tensor, src: Tensor | number, op = 'copy_'): Tensor {
  checkInplace(dst, op);
  const value = typeof src === 'number' ? full([], src, { dtype: dst.dtype }) : src;
  value.assertAlive(op);
  const shape = broadcastShapes(op, dst.shape, value.shape);
  if (!shapesEqual(shape, dst.shape)) {
    throw new ShapeError(`cannot write ${fmtShape(value.shape)} into ${fmtShape(dst.shape)}`, op, 'the source must broadcast to the destination shape');
  }
  if (runtime.tracer) {
    runtime.tracer.mutate(dst, value);
  } else {
    copyInto(dst, value, broadcastStrides(value, dst.shape));
    dst.storage.version++;
  }
  if (value !== src) value.dispose();
  return dst;
}
