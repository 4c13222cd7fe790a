// The WGSL renderer of the compiler's loop IR (one file per kernel kind). A horizontal
// group renders as one kernel per part, dispatched in order in the same compute pass (parts
// may be ordered: a later part can read what an earlier one wrote), and so each part binds
// only its own buffers.

import type { LoopKernel } from '../../ir/loop-ir.js';
import { checkKernel } from '../../ir/loop-ir-check.js';
import { renderMatmul } from './render-matmul.js';
import { renderPointwise } from './render-pointwise.js';
import { renderRow } from './render-row.js';
import type { AliasMap, WgslKernel } from './wgsl-common.js';

export type { WgslKernel, AliasMap } from './wgsl-common.js';

/** The WGSL kernels (dispatched in order) that compute a loop kernel; the kernel is checked against the loop IR's schema first. */
export function renderWgsl(k: LoopKernel, alias: AliasMap = new Map()): WgslKernel[] {
  checkKernel(k, 'webgpu kernel');
  switch (k.kind) {
    case 'group': return k.parts.map((p) => renderPointwise(p, alias));
    case 'pointwise': return [renderPointwise(k, alias)];
    case 'row': return [renderRow(k, alias)];
    case 'matmul': return [renderMatmul(k, alias)];
    // WebGPU does not declare Backend.attentionKernels: programs keep the three kernels
    case 'attention': throw new Error('kiln internal: the WGSL renderer does not render attention kernels');
  }
}
