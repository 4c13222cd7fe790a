// The checks of subgroup row reductions (src/backend/webgpu/render-row.ts), shared by the
// Chromium test (SwiftShader, 4 lanes: test/webgpu-subgroups-browser.test.ts) and the lavapipe
// test in Node (8 lanes: test/webgpu-lavapipe.test.ts). The runs themselves are
// test/helpers/webgpu-reductions.ts `runSubgroupPage`; here: the inputs (fresh per seed), float64
// references with kiln's semantics, and every assertion on a run's result:
//  - every result against the reference within float32 tolerance; max/min exactly, NaN positions
//    and argmax/argmin indices (ties: the first) exactly;
//  - determinism: two runs with subgroups on give the same bits; the forced fallback gives the
//    same bits as subgroups off (it is the plain tree);
//  - the path taken: row kernels rendered with subgroups while on and none while off, the WGSL
//    of a sample kernel, and the prologue's width run alone on the device;
//  - gpu.profile (timestamp queries): one entry per dispatch of a compiled program called often
//    enough to fill more than one query set (1024 dispatches each), durations finite, >= 0.

import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { prng } from './prng.js';
import { REDUCTION_OPS, RMS_EPS, reductionOps, type CaseResult, type ReductionCase, type ReductionOp, type SubgroupPageResult } from './webgpu-reductions.js';

/** row lengths: every workgroup size (32..256), lengths below, at and past multiples of 4, and long rows */
export const SHAPES: readonly [rows: number, cols: number][] = [[3, 1], [2, 3], [70, 5], [4, 31], [5, 33], [3, 100], [6, 200], [2, 257], [3, 1000], [2, 5000]];

/** Inputs in [-2, 2) (float32 values); row 0: ties at the max (3) and the min (-3); row 1: NaNs. */
export function makeCases(seed: number, shapes: readonly (readonly [number, number])[] = SHAPES): ReductionCase[] {
  const r = prng(seed);
  const pick = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo));
  return shapes.map(([rows, cols]) => {
    const x = Array.from({ length: rows * cols }, () => Math.fround(r() * 4 - 2));
    if (cols >= 2) {
      // ties in two halves of the row (different invocations for long rows): the first wins
      const h = Math.floor(cols / 2);
      x[pick(0, h)] = 3;
      x[pick(h, cols)] = 3;
      if (cols >= 4) {
        const q1 = pick(0, h), q2 = pick(h, cols);
        if (x[q1] !== 3) x[q1] = -3;
        if (x[q2] !== 3) x[q2] = -3;
      }
    }
    if (rows >= 2) {
      x[cols + pick(0, cols)] = NaN;
      if (cols >= 2) x[cols + pick(0, cols)] = NaN;
    }
    return { rows, cols, x };
  });
}

// ---- float64 references (kiln's semantics: NaN propagates, NaN is the extreme, ties go to the first index) ----

type Ref = Record<ReductionOp, number[]>;

function argExtreme(row: readonly number[], better: (a: number, b: number) => boolean): number {
  let best = 0;
  for (let j = 0; j < row.length; j++) {
    if (Number.isNaN(row[j])) return j;
    if (better(row[j]!, row[best]!)) best = j;
  }
  return best;
}

export function reference(c: ReductionCase): Ref {
  const out = Object.fromEntries(REDUCTION_OPS.map((op) => [op, [] as number[]])) as Ref;
  for (let i = 0; i < c.rows; i++) {
    const row = c.x.slice(i * c.cols, (i + 1) * c.cols), n = c.cols;
    const sum = row.reduce((a, b) => a + b, 0), mean = sum / n;
    const hasNaN = row.some(Number.isNaN);
    const mx = hasNaN ? NaN : Math.max(...row), mn = hasNaN ? NaN : Math.min(...row);
    const shift = Number.isFinite(mx) ? mx : 0;
    const se = row.reduce((a, v) => a + Math.exp(v - shift), 0);
    const ss = row.reduce((a, v) => a + (v - mean) ** 2, 0);
    const ms = row.reduce((a, v) => a + v * v, 0) / n;
    out.sum.push(sum);
    out.mean.push(mean);
    out.max.push(mx);
    out.min.push(mn);
    out.argmax.push(argExtreme(row, (a, b) => a > b));
    out.argmin.push(argExtreme(row, (a, b) => a < b));
    out.var.push(ss * (1 / Math.max(n - 1, 0)));
    out.rms.push(Math.sqrt(ms));
    for (const v of row) {
      out.softmax.push(Math.exp(v - shift) / se);
      out.logSoftmax.push(v - (Math.log(se) + shift));
      out.layerNorm.push((v - mean) / Math.sqrt(ss / n + 1e-5));
      out.rmsNorm.push(v / Math.sqrt(ms + RMS_EPS));
    }
  }
  return out;
}

/** float32 bits (as the page returns them) to numbers; indices stay as they are */
function values(op: ReductionOp, bits: readonly number[]): number[] {
  if (op === 'argmax' || op === 'argmin') return [...bits];
  return Array.from(new Float32Array(Uint32Array.from(bits).buffer));
}

/** Tolerance of one float32 result against its float64 reference (`absSum`: the row's sum of |x|). */
function tolerance(op: ReductionOp, ref: number, absSum: number, n: number): number {
  switch (op) {
    case 'sum': return 1e-6 * absSum + 1e-7;
    case 'mean': return (1e-6 * absSum) / n + 1e-8;
    case 'max': case 'min': case 'argmax': case 'argmin': return 0;
    case 'softmax': return 1e-5 * Math.abs(ref) + 1e-8;
    case 'var': case 'rms': return 5e-6 * Math.abs(ref) + 1e-7;
    default: return 1e-5 * (1 + Math.abs(ref)); // logSoftmax, layerNorm, rmsNorm
  }
}

/** the largest error seen per op, as a fraction of its tolerance */
const worst = new Map<ReductionOp, number>();

/** Compares one case's results with the reference (and notes the largest errors). */
function check(c: ReductionCase, got: CaseResult, ref: Ref, what: string): void {
  for (const op of REDUCTION_OPS) {
    const g = values(op, got[op]), r = ref[op];
    assert.equal(g.length, r.length, `${what} ${op}: length`);
    const perRow = r.length === c.rows ? 1 : c.cols;
    for (let k = 0; k < r.length; k++) {
      const i = Math.floor(k / perRow);
      const at = `${what} ${op} [${c.rows}x${c.cols}] row ${i} element ${k}: got ${g[k]}, reference ${r[k]}`;
      if (Number.isNaN(r[k]) || Number.isNaN(g[k])) {
        assert.ok(Number.isNaN(r[k]) && Number.isNaN(g[k]), `${at} (NaN positions differ)`);
        continue;
      }
      const row = c.x.slice(i * c.cols, (i + 1) * c.cols);
      const tol = tolerance(op, r[k]!, row.reduce((a, v) => a + Math.abs(v), 0), c.cols);
      const err = Math.abs(g[k]! - r[k]!);
      if (tol === 0) assert.equal(g[k], r[k], at);
      else {
        assert.ok(err <= tol, `${at} (error ${err}, tolerance ${tol})`);
        worst.set(op, Math.max(worst.get(op) ?? 0, err / tol));
      }
    }
  }
}

function sameBits(a: readonly CaseResult[], b: readonly CaseResult[], what: string): void {
  a.forEach((ca, i) => {
    for (const op of REDUCTION_OPS) assert.deepEqual(ca[op], b[i]![op], `${what}: case ${i} ${op}`);
  });
}

/** The references agree with kiln's CPU backend (NaNs, extremes and indices included). */
export function checkReferencesOnCpu(cases: readonly ReductionCase[], refs: readonly Ref[]): void {
  kiln.setDefaultBackend(new kiln.JsBackend());
  cases.forEach((c, i) => {
    const outs = kiln.scope(() => reductionOps(kiln.tensor(Float32Array.from(c.x), [c.rows, c.cols])).map((o) => Array.from(o.dataSync() as ArrayLike<number>)));
    const bits = Object.fromEntries(REDUCTION_OPS.map((op, j) => [op, op.startsWith('arg') ? outs[j]! : Array.from(new Uint32Array(Float32Array.from(outs[j]!).buffer))])) as CaseResult;
    check(c, bits, refs[i]!, 'cpu');
  });
}

/**
 * Every assertion on a run with subgroups (see the file comment); `label` names the adapter in
 * the printed lines. Returns false (after printing why) where the adapter has no 'subgroups'.
 */
export function checkSubgroupResult(res: SubgroupPageResult, cases: readonly ReductionCase[], refs: readonly Ref[], label: string): boolean {
  console.log(`# ${label} webgpu adapter: ${res.adapter}; features: ${res.features.join(', ')}; subgroup sizes ${res.subgroupMinSize}..${res.subgroupMaxSize}`);
  if (!res.hasSubgroups) {
    console.log(`# skipped: this adapter (${res.adapter}) has no 'subgroups' feature`);
    return false;
  }
  assert.ok(res.onByDefault, 'kiln turns subgroups on where the device has them');

  // the prologue alone: every workgroup of every size takes the subgroup path on this device
  for (const p of res.probe!) {
    p.widths.forEach((w, i) => assert.equal(w, Math.min(p.sizes[i]!, p.wg), `workgroup size ${p.wg}, group ${i}: width ${w} with subgroup size ${p.sizes[i]}`));
  }
  console.log(`# prologue widths: ${res.probe!.map((p) => `wg ${p.wg}: ${[...new Set(p.widths)].join('/')}`).join(', ')}`);

  // which renderer ran
  const { on, off, fallback } = res.stats!;
  assert.ok(on.subgroup > 0 && on.plain === 0, `with subgroups on, row kernels rendered: ${JSON.stringify(on)}`);
  assert.ok(off.subgroup === 0 && off.plain > 0, `with subgroups off: ${JSON.stringify(off)}`);
  assert.ok(fallback.subgroup > 0 && fallback.plain === 0, `forced fallback: ${JSON.stringify(fallback)}`);
  const w = res.wgsl!;
  assert.ok(w.on.startsWith('enable subgroups;') && w.on.includes('subgroupShuffleXor(') && w.on.includes('@builtin(subgroup_size)'), `subgroup WGSL:\n${w.on}`);
  assert.ok(!/subgroup/i.test(w.off), `WGSL with subgroups off:\n${w.off}`);
  assert.equal(w.off, w.plain, 'off, the backend renders exactly the plain renderer\'s WGSL');

  // numbers: every mode, on and off, against the references
  worst.clear();
  for (const [name, runs] of [['on', res.on!], ['off', res.off!]] as const) {
    for (const mode of ['eager', 'compiled', 'compiled-each'] as const) runs[mode].forEach((got, i) => check(cases[i]!, got, refs[i]!, `${name} ${mode}`));
  }
  console.log(`# largest errors (% of tolerance): ${[...worst].map(([op, f]) => `${op} ${(100 * f).toFixed(1)}`).join(', ')}`);

  // determinism, and the fallback is the plain tree
  for (const mode of ['eager', 'compiled', 'compiled-each'] as const) sameBits(res.on![mode], res.onAgain![mode], `subgroups on, ${mode}, run twice`);
  for (const mode of ['eager', 'compiled'] as const) sameBits(res.fallback![mode], res.off![mode], `forced fallback vs subgroups off, ${mode}`);
  let differ = 0;
  res.on!.compiled.forEach((c, i) => REDUCTION_OPS.forEach((op) => (differ += c[op].some((b, k) => b !== res.off!.compiled[i]![op][k]) ? 1 : 0)));
  console.log(`# compiled outputs whose bits differ between subgroups on and off: ${differ}`);

  // gpu.profile: one timed entry per dispatch of the program
  const p = res.profile!;
  console.log(`# ${p.text.split('\n')[0]}`);
  assert.ok(p.plainDispatches > 0);
  assert.ok(p.countedDispatches > 1024, `${p.countedDispatches} dispatches fill more than one query set`);
  assert.equal(p.countedDispatches, p.calls * p.plainDispatches, 'the profiled calls dispatch what unprofiled calls do');
  assert.equal(p.entries.length, p.countedDispatches, 'one profile entry per dispatch');
  assert.deepEqual(p.entries.slice(0, p.plainDispatches).map((e) => e.kernel), p.entries.slice(-p.plainDispatches).map((e) => e.kernel), 'entries in dispatch order');
  for (const e of p.entries) {
    assert.ok(Number.isFinite(e.ns) && e.ns >= 0, `${e.kernel}: ${e.ns} ns`);
    assert.ok(e.kernel.length > 0 && e.grid.length === 3 && e.grid.every((g) => g >= 1), JSON.stringify(e));
  }
  return true;
}
