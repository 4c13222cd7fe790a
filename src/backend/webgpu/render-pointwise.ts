// Pointwise kernels: one invocation per element of the iteration space, the flat index split
// into the loop variables, every load and store at its affine offset.

import type { PointwiseKernel } from '../../compiler/loop-ir.js';
import { Body, decompose, grid1d, planBindings, type AliasMap, type WgslKernel } from './wgsl-common.js';
import { HelperSet } from './wgsl-expr.js';

const WG = 256;

export function renderPointwise(k: PointwiseKernel, alias: AliasMap): WgslKernel {
  const total = k.shape.reduce((a, b) => a * b, 1);
  const groups = Math.ceil(total / WG);
  const grid = grid1d(groups);
  const h = new HelperSet();
  const bind = planBindings(k, alias);
  const b = new Body(h, bind);
  b.stmts(k.body);
  b.stores(k.stores);
  const code = [
    bind.decl,
    '',
    `@compute @workgroup_size(${WG})`,
    'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
    `  let flat = (wg.y * ${grid[0]}u + wg.x) * ${WG}u + lid;`,
    `  if (flat >= ${total}u) { return; }`,
    ...decompose('i32(flat)', k.shape, 0, 'rem').map((l) => `  ${l}`),
    ...b.lines,
    '}',
  ];
  return { code: `${h.source()}\n${code.join('\n')}`, bindings: bind.order, writable: bind.writable, grid, name: k.name };
}
