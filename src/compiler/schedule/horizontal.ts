// Pass (after lowering): horizontal fusion. Runs of consecutive pointwise kernels become one
// kernel (the order of their loops is kept, so dependencies between them still hold).

import type { PointwiseKernel } from '../../ir/loop-ir.js';
import type { Lowered, Step } from './lowered.js';
import type { FusionDecision } from '../../ir/lowered.js';

/** Groups the runs in l's steps; returns the decisions it added. */
export function groupHorizontally(l: Lowered): FusionDecision[] {
  const out: Step[] = [];
  const added: FusionDecision[] = [];
  let run: PointwiseKernel[] = [];
  const flushRun = () => {
    if (run.length === 1) out.push({ kind: 'kernel', kernel: run[0]! });
    else if (run.length > 1) {
      const name = `${run[0]!.name}_group${run.length}`;
      out.push({ kind: 'kernel', kernel: { kind: 'group', name, parts: run } });
      added.push({ decision: 'fused', nodes: run.flatMap((k) => k.stores.map((st) => st.node)), reason: `horizontal: ${run.map((k) => k.name).join(', ')} launched as one kernel ${name}` });
    }
    run = [];
  };
  for (const s of l.steps) {
    if (s.kind === 'kernel' && s.kernel.kind === 'pointwise') run.push(s.kernel);
    else {
      flushRun();
      out.push(s);
    }
  }
  flushRun();
  l.steps.length = 0;
  l.steps.push(...out);
  l.decisions.push(...added);
  return added;
}
