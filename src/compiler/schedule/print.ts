// Printers of the scheduler's passes: the fusion decisions (the KILN_LOGS=fusion lines and
// fusion.txt) and a one-line-per-step summary of a schedule.

import { kernelStores, type LoopKernel } from '../../ir/loop-ir.js';
import type { Step } from './lowered.js';
import type { FusionDecision } from '../../ir/lowered.js';

export function printDecisions(ds: readonly FusionDecision[]): string {
  return ds.map((d) => `  ${d.decision.padEnd(12)} ${d.nodes.map((n) => `%${n}`).join(', ')}: ${d.reason}`).join('\n');
}

/** Each step: its kernel (what it loops over, what it reduces, which nodes it stores) or opaque op. */
export function printSchedule(steps: readonly Step[]): string {
  return steps.map((s, i) => `${i}: ${s.kind === 'opaque' ? `opaque ${s.node.op} %${s.node.id}` : printKernelSummary(s.kernel)}`).join('\n');
}

function printKernelSummary(k: LoopKernel): string {
  const stores = kernelStores(k).map((st) => `%${st.node}`).join(', ');
  const what = (): string => {
    switch (k.kind) {
      case 'pointwise': return `pointwise [${k.shape.join(', ')}]`;
      case 'row': return `row [${k.outer.join(', ')}] x [${k.inner.join(', ')}], reduces ${k.reductions.map((r) => `%${r.node} (${r.op}${r.online ? `, ${r.online.kind}` : ''})`).join(', ')}`;
      case 'matmul': return `matmul [${[...k.batch, k.m, k.k].join(', ')}] @ [${k.k}, ${k.n}]`;
      case 'attention': return `attention [${[...k.batch, k.rows, k.keys].join(', ')}]`;
      case 'group': return `group of ${k.parts.map((p) => p.name).join(', ')}`;
    }
  };
  return `${k.name} ${what()}${stores ? `, stores ${stores}` : ''}`;
}
