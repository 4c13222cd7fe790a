// Matmul with its fused epilogue: a tiled, register-blocked template. A workgroup of 16x16
// invocations computes a 64x64 tile of C; each invocation holds a 4x4 block of accumulators
// (rows ty + 16 i, columns tx + 16 j, so neighbouring invocations read neighbouring words of
// the shared tiles). K advances in steps of 16 through workgroup-memory tiles of A and B.
// The epilogue (loads, pointwise math, stores) runs on each accumulator in registers.

import type { MatmulKernel } from '../../compiler/loop-ir.js';
import { Body, affine, decompose, MAX_GROUPS_PER_DIM, planBindings, type AliasMap, type WgslKernel } from './wgsl-common.js';
import { HelperSet, wtype } from './wgsl-expr.js';
import { WebGpuUnsupportedError } from './errors.js';

const T = 64; // tile of C per workgroup (T x T)
const KT = 16; // K step
const R = 4; // accumulators per invocation per dim

export function renderMatmul(k: MatmulKernel, alias: AliasMap): WgslKernel {
  const t = wtype(k.dtype, 'matmul');
  const zero = t === 'f32' ? '0.0' : '0';
  const nb = k.batch.length;
  const batch = k.batch.reduce((a, b) => a * b, 1);
  if (batch > MAX_GROUPS_PER_DIM) throw new WebGpuUnsupportedError(`a batched matmul over ${batch} matrices exceeds the dispatch grid (${MAX_GROUPS_PER_DIM})`, 'matmul', 'reshape the batch into fewer, larger matrices');
  const grid: [number, number, number] = [Math.ceil(k.n / T), Math.ceil(k.m / T), batch];
  if (grid[0] > MAX_GROUPS_PER_DIM || grid[1] > MAX_GROUPS_PER_DIM) throw new WebGpuUnsupportedError(`a ${k.m}x${k.n} matmul exceeds the dispatch grid`, 'matmul');
  const h = new HelperSet();
  const bind = planBindings(k, alias);
  const A = bind.name(k.a.buf), B = bind.name(k.b.buf);
  const e = new Body(h, bind);
  e.accType = t;
  e.stmts(k.body, '        ');
  e.stores(k.stores, '        ');
  const code = [
    bind.decl,
    `var<workgroup> As: array<${t}, ${KT * T}>;`,
    `var<workgroup> Bs: array<${t}, ${KT * T}>;`,
    '',
    '@compute @workgroup_size(16, 16)',
    'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
    '  let tx = i32(li.x); let ty = i32(li.y);',
    `  let row0 = i32(wg.y) * ${T}; let col0 = i32(wg.x) * ${T};`,
    ...decompose('i32(wg.z)', k.batch, 0, 'bi').map((l) => `  ${l}`),
    `  let aBase = ${affine(k.a.base)};`,
    `  let bBase = ${affine(k.b.base)};`,
    `  var accs: array<${t}, ${R * R}>;`,
    `  for (var i = 0; i < ${R * R}; i++) { accs[i] = ${zero}; }`,
    `  for (var k0 = 0; k0 < ${k.k}; k0 += ${KT}) {`,
    // each invocation loads 4 elements of each tile (1024 / 256)
    `    for (var l = 0; l < ${(KT * T) / 256}; l++) {`,
    '      let e = i32(lid) + l * 256;',
    `      let ar = e / ${KT}; let ak = e % ${KT};`,
    `      var av = ${zero}; if (row0 + ar < ${k.m} && k0 + ak < ${k.k}) { av = ${A}[aBase + (row0 + ar) * ${k.a.sRow} + (k0 + ak) * ${k.a.sCol}]; }`,
    `      As[ak * ${T} + ar] = av;`,
    `      let bk = e / ${T}; let bn = e % ${T};`,
    `      var bv = ${zero}; if (k0 + bk < ${k.k} && col0 + bn < ${k.n}) { bv = ${B}[bBase + (k0 + bk) * ${k.b.sRow} + (col0 + bn) * ${k.b.sCol}]; }`,
    `      Bs[bk * ${T} + bn] = bv;`,
    '    }',
    '    workgroupBarrier();',
    `    for (var kk = 0; kk < ${KT}; kk++) {`,
    `      var ra: array<${t}, ${R}>; var rb: array<${t}, ${R}>;`,
    `      for (var i = 0; i < ${R}; i++) { ra[i] = As[kk * ${T} + ty + 16 * i]; rb[i] = Bs[kk * ${T} + tx + 16 * i]; }`,
    `      for (var i = 0; i < ${R}; i++) { for (var j = 0; j < ${R}; j++) { accs[i * ${R} + j] += ra[i] * rb[j]; } }`,
    '    }',
    '    workgroupBarrier();',
    '  }',
    `  for (var i = 0; i < ${R}; i++) {`,
    `    for (var j = 0; j < ${R}; j++) {`,
    '      let gi = row0 + ty + 16 * i; let gj = col0 + tx + 16 * j;',
    `      if (gi < ${k.m} && gj < ${k.n}) {`,
    `        let v${nb} = gi; let v${nb + 1} = gj;`,
    `        let acc = accs[i * ${R} + j];`,
    ...e.lines,
    '      }',
    '    }',
    '  }',
    '}',
  ];
  return { code: `${h.source()}\n${code.join('\n')}`, bindings: bind.order, writable: bind.writable, grid, name: k.name };
}
