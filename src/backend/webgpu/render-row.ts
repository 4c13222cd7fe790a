// Row kernels: one workgroup per row (outer index). Each invocation accumulates a strided
// share of the row, then a tree reduction in workgroup memory combines the partials; every
// invocation reads the result and runs the per-element epilogue over its share of the row.
// Online forms as in the JS renderer: softmax (running max and rescaled sum, combined with
// the max-rescaling rule) and Welford (count, mean, M2, combined with Chan's formula).

import type { LExpr, Reduction, RowKernel } from '../../compiler/loop-ir.js';
import type { ReduceOp } from '../kernel-spec.js';
import { Body, decompose, grid1d, planBindings, type AliasMap, type WgslKernel } from './wgsl-common.js';
import { HelperSet, render, renderAs, type WType } from './wgsl-expr.js';

function workgroupSize(inner: number): number {
  let wg = 32;
  while (wg < inner && wg < 256) wg *= 2;
  return wg;
}

export function renderRow(k: RowKernel, alias: AliasMap): WgslKernel {
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
  /** the tree over workgroup memory: `combine` merges slot lid + s into slot lid */
  const tree = (combine: string[]) => {
    L.push('  workgroupBarrier();');
    L.push(`  for (var s = ${WG / 2}u; s > 0u; s = s >> 1u) {`);
    L.push('    if (lid < s) {', ...combine.map((c) => `      ${c}`), '    }');
    L.push('    workgroupBarrier();', '  }');
  };

  k.reductions.forEach((r, ri) => {
    const next = k.reductions[ri + 1];
    if (next?.online && next.online.kind !== 'sibling') return onlinePair(b, r, next, innerLoop, tree, h);
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
      L.push(`  ${va}[lid] = a${g.id};${isArg(g.op) ? ` shI1[lid] = a${g.id}i;` : ''}`);
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
    '',
    `@compute @workgroup_size(${WG})`,
    'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
    `  let row = wg.y * ${grid[0]}u + wg.x;`,
    // uniform: the whole workgroup returns together, so the barriers below stay uniform
    `  if (row >= ${outer}u) { return; }`,
    ...decompose('i32(row)', k.outer, 0, 'ro').map((l) => `  ${l}`),
    ...L,
    '}',
  ];
  return { code: `${h.source()}\n${code.join('\n')}`, bindings: bind.order, writable: bind.writable, grid, name: k.name };
}

const isArg = (op: ReduceOp) => op === 'argmax' || op === 'argmin';

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

function substituteRed(e: LExpr, id: number, name: string): LExpr {
  if (e.k === 'red' && e.id === id) return { k: 'tmp', id: -1000 - id, name } as unknown as LExpr;
  if (e.k === 'op') return { ...e, a: e.a.map((x) => substituteRed(x, id, name)) };
  if (e.k === 'cast') return { ...e, a: substituteRed(e.a, id, name) };
  return e;
}

function onlinePair(b: Body, r1: Reduction, r2: Reduction, innerLoop: (emit: () => void) => void, tree: (c: string[]) => void, h: HelperSet): void {
  const L = b.lines;
  const on = r2.online as Exclude<Reduction['online'], { kind: 'sibling' } | undefined>;
  const id1 = r1.id, id2 = r2.id;
  if (on.kind === 'softmax') {
    // g(m): the shift as a function of the running max, rendered for a given variable
    const g = (name: string) => {
      const env = b.env();
      return renderAs(substituteRed(on.shift, id1, name), 'f32', { ...env, tmpName: (id) => (id <= -1000 ? name : `t${id}`), tmpType: (id) => (id <= -1000 ? 'f32' : env.tmpType(id)) });
    };
    const nan = h.use('kisnan');
    L.push(`  var om${id1} = -${h.use('kinf')}(); var os${id2} = 0.0;`);
    innerLoop(() => {
      b.stmts(r1.body, '    ');
      L.push(`    { let v = ${renderAs(r1.value, 'f32', b.env())};`);
      L.push(`      if (v > om${id1} || (${nan}(v) && !${nan}(om${id1}))) { if (os${id2} != 0.0) { os${id2} *= exp(${g(`om${id1}`)} - ${g('v')}); } om${id1} = v; }`);
      L.push(`      os${id2} += exp(v - ${g(`om${id1}`)}); }`);
    });
    L.push(`  shF0[lid] = om${id1}; shF1[lid] = os${id2};`);
    tree([
      'let m1 = shF0[lid]; let s1 = shF1[lid]; let m2 = shF0[lid + s]; let s2 = shF1[lid + s];',
      `var m = m1; if (m2 > m1 || (${nan}(m2) && !${nan}(m1))) { m = m2; }`,
      `var t = 0.0; if (s1 != 0.0) { t += s1 * exp(${g('m1')} - ${g('m')}); } if (s2 != 0.0) { t += s2 * exp(${g('m2')} - ${g('m')}); }`,
      'shF0[lid] = m; shF1[lid] = t;',
    ]);
    L.push(`  let r${id1} = shF0[0]; let r${id2} = shF1[0];`, '  workgroupBarrier();');
  } else {
    L.push(`  var wc${id1} = 0.0; var wm${id1} = 0.0; var w2${id2} = 0.0;`);
    innerLoop(() => {
      b.stmts(r1.body, '    ');
      L.push(`    { let v = ${renderAs(r1.value, 'f32', b.env())};`);
      L.push(`      wc${id1} += 1.0; let d = v - wm${id1}; wm${id1} += d / wc${id1}; w2${id2} += d * (v - wm${id1}); }`);
    });
    L.push(`  shF0[lid] = wc${id1}; shF1[lid] = wm${id1}; shF2[lid] = w2${id2};`);
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
