// kiln.setCheckNumerics(true) inside compiled code: a program's outputs are checked for NaN and
// Inf after it runs (eager ops check each kernel's output; a fused program has no per-op outputs).

import { assertFinite } from '../../ops/dispatch.js';
import { withOwnNaming } from '../../core/user-op.js';
import type { Tensor } from '../../tensor/tensor.js';

export function checkOutputsFinite(name: string, outs: readonly Tensor[], what = 'output'): void {
  // the error names the compiled function, also when a public op (backward) ran its program
  withOwnNaming(() => outs.forEach((t, i) => assertFinite(`compiled ${name}`, t, `${what} ${i} (${t.dtype}[${t.shape.join(', ')}])`, "find the op: run the function eagerly with setCheckNumerics on (kiln.compiler.setStance('forceEager')), where each op's output is checked")));
}
