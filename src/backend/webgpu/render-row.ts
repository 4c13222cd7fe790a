// Row kernels: one workgroup per row (outer index). Each invocation accumulates a strided
// share of the row, then a tree reduction in workgroup memory combines the partials; every
// invocation reads the result and runs the per-element epilogue over its share of the row.
// Online forms as in the JS renderer: softmax (running max and rescaled sum, combined with
// the max-rescaling rule) and Welford (count, mean, M2, combined with Chan's formula).
//
// Subgroups (`opts.subgroups`, where the device has the feature): the tree's lowest levels run
// on registers instead. A prologue checks, per workgroup, that invocations [k*n, (k+1)*n) form
// subgroup k with subgroup_invocation_id = lid - k*n (n = min(subgroup size, WG)); WGSL promises
// no such mapping, so where it does not hold (or sizes differ) the width is 0 and the kernel
// runs the plain tree. Each reduction then combines its partials across lanes with
// subgroupShuffleXor butterflies using kiln's own combine steps (NaN-propagating max/min, first
// index on ties, Chan's Welford, max-rescaled softmax sums), not subgroupAdd/Max, so semantics
// are the tree's. After log2(n) levels lane lid = k*n holds its block's value (combined in a
// fixed order by lane), and the workgroup-memory tree stops at stride n: log2(n) fewer barrier
// levels, and the same bits every run for a given subgroup size (no atomics in the arithmetic).

import type { Reduction, RowKernel } from '../../ir/loop-ir.js';
import type { ReduceOp } from '../../ir/kernel-spec.js';
import { Body, decompose, grid1d, planBindings, type AliasMap, type WgslKernel } from './wgsl-common.js';
import { HelperSet, render, renderAs, type WType } from './wgsl-expr.js';

function workgroupSize(inner: number): number {
  let wg = 32;
  while (wg < inner && wg < 256) wg *= 2;
  return wg;
}

export interface RowOptions {
  /** combine within subgroups on registers first (the WGSL then enables the `subgroups` extension) */
  readonly subgroups?: boolean;
}

/**
 * Test switch: render subgroup kernels whose prologue always reports width 0, so the fallback
 * (plain tree inside a subgroup kernel) can be checked on a device whose mapping is regular.
 */
export const rowConfig = { forceSubgroupFallback: false };

/** row kernels rendered each way (tests check which path was taken) */
export const rowStats = { subgroup: 0, plain: 0 };

export function renderRow(k: RowKernel, alias: AliasMap, opts: RowOptions = {}): WgslKernel {
  const sg = opts.subgroups === true && k.reductions.length > 0;
  rowStats[sg ? 'subgroup' : 'plain']++;
  const outer = k.outer.reduce((a, b) => a * b, 1);
  const inner = k.inner.reduce((a, b) => a * b, 1);
  const no = k.outer.length;
  const WG = workgroupSize(inner);
  const grid = grid1d(outer);
  const h = new HelperSet();
  const bind = planBindings(k, alias);
  const b = new Body(h, bind);
  const L = b.lines;
  const innerLoop = (emit: () => void) => {
    L.push(`  for (var j = i32(lid); j < ${inner}; j += ${WG}) {`);
    L.push(...decompose('j', k.inner, no, 'ri').map((l) => `    ${l}`));
    emit();
    L.push('  }');
  };
  /** the tree over workgroup memory: `combine` merges slot lid + s into slot lid (from stride sgLo up with subgroups) */
  const tree = (combine: string[]) => {
    L.push('  workgroupBarrier();');
    L.push(`  for (var s = ${WG / 2}u; ${sg ? 's >= sgLo' : 's > 0u'}; s = s >> 1u) {`);
    L.push('    if (lid < s) {', ...combine.map((c) => `      ${c}`), '    }');
    L.push('    workgroupBarrier();', '  }');
  };

  k.reductions.forEach((r, ri) => {
    const next = k.reductions[ri + 1];
    if (next?.online && next.online.kind !== 'sibling') return onlinePair(b, r, next, innerLoop, tree, h, sg);
    if (r.online) return; // rendered with the reduction before it
    const group = [r];
    for (let j = ri + 1; k.reductions[j]?.online?.kind === 'sibling'; j++) group.push(k.reductions[j]!);
    // the accumulator type: the value's type (bool values sum as i32)
    const types = group.map((g) => accType(g, b));
    group.forEach((g, gi) => {
      const t = types[gi]!;
      L.push(`  var a${g.id}: ${t} = ${init(g.op, t, h)};${isArg(g.op) ? ` var a${g.id}i = -1;` : ''}`);
    });
    innerLoop(() => {
      group.forEach((g, gi) => {
        b.stmts(g.body, '    ');
        L.push(`    { let x = ${renderAs(g.value, types[gi]!, b.env())};`, `      ${step(g.op, types[gi]!, `a${g.id}`, h)} }`);
      });
    });
    group.forEach((g, gi) => {
      const t = types[gi]!;
      const va = t === 'f32' ? 'shF0' : 'shI0';
      if (sg) butterfly(L, isArg(g.op) ? [`a${g.id}`, `a${g.id}i`] : [`a${g.id}`], isArg(g.op) ? [va, 'shI1'] : [va], shuffleStep(g.op, t, h));
      else L.push(`  ${va}[lid] = a${g.id};${isArg(g.op) ? ` shI1[lid] = a${g.id}i;` : ''}`);
      tree([
        `var a = ${va}[lid]; let b = ${va}[lid + s];`,
        ...(isArg(g.op) ? [`var ai = shI1[lid]; let bi = shI1[lid + s];`, `if (bi >= 0 && (ai < 0 || ${takeArg(g.op, t, h)})) { a = b; ai = bi; }`, `${va}[lid] = a; shI1[lid] = ai;`] : [`${combineStep(g.op, t, h)}`, `${va}[lid] = a;`]),
      ]);
      L.push(`  let r${g.id} = ${isArg(g.op) ? 'shI1' : va}[0];`, '  workgroupBarrier();');
      b.redTypes.set(g.id, isArg(g.op) ? 'i32' : t);
    });
  });

  b.stmts(k.outerBody);
  if (k.outerStores.length) {
    L.push('  if (lid == 0u) {');
    b.stores(k.outerStores, '    ');
    L.push('  }');
  }
  if (k.rowBody.length || k.rowStores.length) {
    innerLoop(() => {
      b.stmts(k.rowBody, '    ');
      b.stores(k.rowStores, '    ');
    });
  }
  const code = [
    bind.decl,
    ...['shF0', 'shF1', 'shF2'].map((n) => `var<workgroup> ${n}: array<f32, ${WG}>;`),
    ...['shI0', 'shI1'].map((n) => `var<workgroup> ${n}: array<i32, ${WG}>;`),
    ...(sg ? ['var<workgroup> sgSeen: atomic<u32>;', 'var<workgroup> sgWidth: u32;'] : []),
    '',
    `@compute @workgroup_size(${WG})`,
    sg
      ? 'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_invocation_id) sgId: u32, @builtin(subgroup_size) sgSize: u32) {'
      : 'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
    `  let row = wg.y * ${grid[0]}u + wg.x;`,
    // uniform: the whole workgroup returns together, so the barriers below stay uniform
    `  if (row >= ${outer}u) { return; }`,
    ...(sg ? subgroupPrologue(WG) : []),
    ...decompose('i32(row)', k.outer, 0, 'ro').map((l) => `  ${l}`),
    ...L,
    '}',
  ];
  return { code: `${sg ? 'enable subgroups;\n' : ''}${h.source()}\n${code.join('\n')}`, bindings: bind.order, writable: bind.writable, grid, name: k.name };
}

const isArg = (op: ReduceOp) => op === 'argmax' || op === 'argmin';

/**
 * The subgroup width `sgW` this workgroup's butterflies use (uniform: read through workgroup
 * memory) and `sgLo`, the stride the memory tree stops at. sgW = n only if every invocation
 * sees: its id below n, lid % n == its id, the subgroup's smallest lid is lid - id, n active
 * lanes, and every subgroup the same n. Then subgroup k is exactly lids [k*n, (k+1)*n) (n
 * distinct ids below n, one base), so a butterfly over masks < n combines exactly that block.
 * Otherwise sgW = 0: no butterfly level runs and the tree runs all its levels (the plain path).
 */
export function subgroupPrologue(WG: number): string[] {
  const width = rowConfig.forceSubgroupFallback ? '0u; // forced (rowConfig.forceSubgroupFallback)' : 'select(0u, seen, countOneBits(seen) == 1u);';
  return [
    `  let sgN = min(sgSize, ${WG}u);`,
    // subgroup ops first: && short-circuits, and they need uniform control flow
    '  let sgBase = subgroupMin(lid); let sgCount = subgroupAdd(1u);',
    '  let sgOk = sgId < sgN && lid % sgN == sgId && sgBase == lid - sgId && sgCount == sgN;',
    // every subgroup's id-0 lane reports its n, any irregular lane a bit no n can have
    '  if (!sgOk || sgId == 0u) { atomicOr(&sgSeen, select(sgN, 0x80000000u, !sgOk)); }',
    '  workgroupBarrier();',
    '  if (lid == 0u) {',
    '    let seen = atomicLoad(&sgSeen);',
    `    sgWidth = ${width}`,
    '  }',
    '  let sgW = workgroupUniformLoad(&sgWidth);',
    '  let sgLo = max(sgW, 1u);',
  ];
}

/**
 * Combines the registers `vars` across lanes (masks 1, 2, .. < sgW) and stores the result in
 * `slots`[lid]. `step` reads the lane's values as x0.. and the partner's (shuffled first, in
 * uniform control flow) and updates x0..: lane k*n only ever meets higher lanes, so its value
 * is its block's, combined lower-first.
 */
function butterfly(L: string[], vars: readonly string[], slots: readonly string[], step: string[]): void {
  L.push(`  { ${vars.map((v, i) => `var x${i} = ${v};`).join(' ')}`);
  L.push('    for (var sgm = 1u; sgm < sgW; sgm = sgm << 1u) {', ...step.map((l) => `      ${l}`), '    }');
  L.push(`    ${slots.map((sl, i) => `${sl}[lid] = x${i};`).join(' ')} }`);
}

/** The butterfly step of a plain or arg reduction: the tree's combine on registers. */
function shuffleStep(op: ReduceOp, t: WType, h: HelperSet): string[] {
  if (!isArg(op)) return ['var a = x0; let b = subgroupShuffleXor(x0, sgm);', combineStep(op, t, h), 'x0 = a;'];
  return [
    'var a = x0; var ai = x1; let b = subgroupShuffleXor(x0, sgm); let bi = subgroupShuffleXor(x1, sgm);',
    `if (bi >= 0 && (ai < 0 || ${takeArg(op, t, h)})) { a = b; ai = bi; }`,
    'x0 = a; x1 = ai;',
  ];
}

function accType(r: Reduction, b: Body): WType {
  // render once for its type only (the statements it reads are typed by now or default f32)
  const probe = new Body(b.h, b.bind);
  b.tmpTypes.forEach((t, id) => probe.tmpTypes.set(id, t));
  b.redTypes.forEach((t, id) => probe.redTypes.set(id, t));
  probe.stmts(r.body);
  const t = render(r.value, probe.env()).type;
  return t === 'f32' ? 'f32' : 'i32';
}

function init(op: ReduceOp, t: WType, h: HelperSet): string {
  if (op === 'sum') return t === 'f32' ? '0.0' : '0';
  if (op === 'prod') return t === 'f32' ? '1.0' : '1';
  const low = op === 'max' || op === 'argmax';
  if (t === 'f32') return low ? `-${h.use('kinf')}()` : `${h.use('kinf')}()`;
  return low ? 'i32(-2147483647 - 1)' : '2147483647';
}

/** One element into accumulator `a` (the value is `x`, its index in the row `j`), as the JS renderer. */
function step(op: ReduceOp, t: WType, a: string, h: HelperSet): string {
  const nan = (x: string) => (t === 'f32' ? `${h.use('kisnan')}(${x})` : 'false');
  switch (op) {
    case 'sum': return `${a} += x;`;
    case 'prod': return `${a} *= x;`;
    case 'max': return `if (x > ${a} || ${nan('x')}) { ${a} = x; }`;
    case 'min': return `if (x < ${a} || ${nan('x')}) { ${a} = x; }`;
    case 'argmax': return `if (${a}i < 0 || (!${nan(a)} && (x > ${a} || ${nan('x')}))) { ${a} = x; ${a}i = j; }`;
    case 'argmin': return `if (${a}i < 0 || (!${nan(a)} && (x < ${a} || ${nan('x')}))) { ${a} = x; ${a}i = j; }`;
  }
}

function combineStep(op: ReduceOp, t: WType, h: HelperSet): string {
  const nan = (x: string) => (t === 'f32' ? `${h.use('kisnan')}(${x})` : 'false');
  switch (op) {
    case 'sum': return 'a += b;';
    case 'prod': return 'a *= b;';
    case 'max': return `if (b > a || ${nan('b')}) { a = b; }`;
    case 'min': return `if (b < a || ${nan('b')}) { a = b; }`;
    default: throw new Error('kiln internal: arg reductions combine with their index');
  }
}

/** Whether partial (b, bi) replaces (a, ai): the extreme wins, NaN counts as extreme, ties go to the lower index. */
function takeArg(op: ReduceOp, t: WType, h: HelperSet): string {
  const cmp = op === 'argmax' ? '>' : '<';
  if (t !== 'f32') return `(b ${cmp} a || (b == a && bi < ai))`;
  const n = h.use('kisnan');
  return `((${n}(b) && (!${n}(a) || bi < ai)) || (!${n}(a) && !${n}(b) && (b ${cmp} a || (b == a && bi < ai))))`;
}

function onlinePair(b: Body, r1: Reduction, r2: Reduction, innerLoop: (emit: () => void) => void, tree: (c: string[]) => void, h: HelperSet, sg: boolean): void {
  const L = b.lines;
  const on = r2.online as Exclude<Reduction['online'], { kind: 'sibling' } | undefined>;
  const id1 = r1.id, id2 = r2.id;
  if (on.kind === 'softmax') {
    // g(m): the shift as a function of the running max, rendered for a given variable
    const g = (name: string) => {
      const env = b.env();
      return renderAs(on.shift, 'f32', { ...env, redName: (id) => (id === id1 ? name : env.redName?.(id) ?? `r${id}`), redType: (id) => (id === id1 ? 'f32' : env.redType(id)) });
    };
    const nan = h.use('kisnan');
    L.push(`  var om${id1} = -${h.use('kinf')}(); var os${id2} = 0.0;`);
    innerLoop(() => {
      b.stmts(r1.body, '    ');
      L.push(`    { let v = ${renderAs(r1.value, 'f32', b.env())};`);
      L.push(`      if (v > om${id1} || (${nan}(v) && !${nan}(om${id1}))) { if (os${id2} != 0.0) { os${id2} *= exp(${g(`om${id1}`)} - ${g('v')}); } om${id1} = v; }`);
      L.push(`      os${id2} += exp(v - ${g(`om${id1}`)}); }`);
    });
    const merge = [
      `var m = m1; if (m2 > m1 || (${nan}(m2) && !${nan}(m1))) { m = m2; }`,
      `var t = 0.0; if (s1 != 0.0) { t += s1 * exp(${g('m1')} - ${g('m')}); } if (s2 != 0.0) { t += s2 * exp(${g('m2')} - ${g('m')}); }`,
    ];
    if (sg) butterfly(L, [`om${id1}`, `os${id2}`], ['shF0', 'shF1'], ['let m1 = x0; let s1 = x1; let m2 = subgroupShuffleXor(x0, sgm); let s2 = subgroupShuffleXor(x1, sgm);', ...merge, 'x0 = m; x1 = t;']);
    else L.push(`  shF0[lid] = om${id1}; shF1[lid] = os${id2};`);
    tree(['let m1 = shF0[lid]; let s1 = shF1[lid]; let m2 = shF0[lid + s]; let s2 = shF1[lid + s];', ...merge, 'shF0[lid] = m; shF1[lid] = t;']);
    L.push(`  let r${id1} = shF0[0]; let r${id2} = shF1[0];`, '  workgroupBarrier();');
  } else {
    L.push(`  var wc${id1} = 0.0; var wm${id1} = 0.0; var w2${id2} = 0.0;`);
    innerLoop(() => {
      b.stmts(r1.body, '    ');
      L.push(`    { let v = ${renderAs(r1.value, 'f32', b.env())};`);
      L.push(`      wc${id1} += 1.0; let d = v - wm${id1}; wm${id1} += d / wc${id1}; w2${id2} += d * (v - wm${id1}); }`);
    });
    if (sg) {
      // Chan's combine as the tree's below, on registers
      butterfly(L, [`wc${id1}`, `wm${id1}`, `w2${id2}`], ['shF0', 'shF1', 'shF2'], [
        'let na = x0; let nb = subgroupShuffleXor(x0, sgm); let mb = subgroupShuffleXor(x1, sgm); let qb = subgroupShuffleXor(x2, sgm);',
        'if (nb > 0.0) { let n = na + nb; let d = mb - x1;',
        '  x1 = x1 + d * nb / n; x2 = x2 + qb + d * d * na * nb / n; x0 = n; }',
      ]);
    } else L.push(`  shF0[lid] = wc${id1}; shF1[lid] = wm${id1}; shF2[lid] = w2${id2};`);
    tree([
      'let na = shF0[lid]; let nb = shF0[lid + s];',
      'if (nb > 0.0) { let n = na + nb; let d = shF1[lid + s] - shF1[lid];',
      '  shF1[lid] = shF1[lid] + d * nb / n; shF2[lid] = shF2[lid] + shF2[lid + s] + d * d * na * nb / n; shF0[lid] = n; }',
    ]);
    L.push(`  let r${id1} = shF1[0] * ${on.n}.0; let r${id2} = shF2[0];`, '  workgroupBarrier();');
  }
  b.redTypes.set(id1, 'f32');
  b.redTypes.set(id2, 'f32');
}
