// Eager reductions of float32 on the wasm row kernels (kernels.ts): the kept dims coalesce into
// the kernel's split outer loop (the last one; the JS loop walks any before it), the reduced
// dims into at most two inner loops, the innermost f32x4 when it is contiguous. Threads split
// only kept rows, so a result never depends on the thread count. Other dtypes, empty
// reductions and reductions over more than two (coalesced) dims run on the JS kernels.

import type { KernelArgs, KernelSpec } from '../../../ir/kernel-spec.js';
import { coalesce } from '../../iteration.js';
import { reduceKey } from './kernels.js';
import type { EagerLauncher } from './launcher.js';
import { forOuter } from './pointwise.js';

type ReduceSpec = Extract<KernelSpec, { kind: 'reduce' }>;
type ReduceArgs = Extract<KernelArgs, { kind: 'reduce' }>;

export function runReduce(l: EagerLauncher, spec: ReduceSpec, a: ReduceArgs): boolean {
  const arg = spec.op === 'argmax' || spec.op === 'argmin';
  if (spec.inDType !== 'float32' || spec.outDType !== (arg ? 'int32' : 'float32')) return false;
  if (a.keepShape.some((s) => s === 0)) return true;
  if (a.reduceShape.some((s) => s === 0)) return false;
  const nk = a.keepShape.length;
  const keep = coalesce(a.keepShape, [a.input.strides.slice(0, nk), a.out.strides]);
  const red = coalesce(a.reduceShape, [a.input.strides.slice(nk)]);
  if (red.shape.length > 2) return false;
  const [r1, r2] = red.shape.length === 2 ? red.shape : [1, red.shape[0]!];
  const rs = red.strides[0]!;
  const [s1, s2] = rs.length === 2 ? rs : [0, rs[0]!];
  const k = l.kernel('reduce', reduceKey(spec.op, s2 === 1 || r2 === 1 ? 'v' : 'g'));
  if (!k || !l.adopt([a.out.buf, a.input.buf])) return false;
  const kr = keep.shape.length;
  const [is, os] = keep.strides as [number[], number[]];
  forOuter(keep.shape.slice(0, kr - 1), [is, os], [a.input.offset, a.out.offset], ([io, oo]) => {
    l.run(k, [a.out.buf, a.input.buf], [keep.shape[kr - 1]!, r1, r2, is[kr - 1]!, s1!, io!, os[kr - 1]!, oo!, s2!]);
  });
  return true;
}
