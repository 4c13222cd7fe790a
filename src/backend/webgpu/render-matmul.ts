// Matmul with its fused epilogue: a parameterized tiled, register-blocked template.
//
// A configuration (MatmulConfig) says: a workgroup computes a BM x BN tile of C; K advances in
// steps of BK through workgroup-memory tiles of A and B; each invocation holds TM x TN
// accumulators (TM, TN multiples of 4), so the workgroup is (BN/TN) x (BM/TM) invocations.
// The default, 64x64x16 with 4x4 per invocation (16x16 invocations), is the template kiln
// always had; max-autotune (autotune.ts) may pick another per matmul shape on the device.
//
// Layout: both tiles live in workgroup memory as vec4 along M (A) and along N (B), k-major
// (As[kk][m/4], Bs[kk][n/4]). Invocation (tx, ty) owns the vec4 row groups ty + WY*i and the
// vec4 column groups tx + WX*j, so each K step reads TM/4 + TN/4 vec4s (neighbouring invocations
// read neighbouring vec4s of B; invocations of one row share A's: a broadcast) and does TM*TN/4
// vec4 multiply-adds into named registers (no dynamically indexed private array in the hot
// loop, so the accumulators stay in registers).
//
// Global loads: an operand whose 4 consecutive elements along its contiguous dimension are
// aligned (unit stride there, the other stride, the base offset and the extent along it
// multiples of 4, and its buffer bound only for this load) is bound as array<vec4<T>> and read
// 4 elements at a time; otherwise elements are read one by one, ordered along the operand's
// unit-stride dimension (transposed views stay coalesced). Out-of-range elements read as zero;
// the bound checks are emitted only for dimensions that do not divide by the tile. Each
// invocation's loads are unrolled slots whose tile coordinates, offsets and row/column checks
// are computed once, before the K loop. A '+pf' configuration prefetches: the next K step's
// loads are issued into registers before the current step's multiply-adds.
// The epilogue (loads, pointwise math, stores) runs on each accumulator, with the same loop
// variables as before (batch..., i, j).

import type { MatmulKernel, MatmulOperand } from '../../ir/loop-ir.js';
import { bufferDTypes, kernelLoads, kernelStores } from '../../ir/loop-ir.js';
import { Body, affine, decompose, MAX_GROUPS_PER_DIM, type AliasMap, type BindingPlan, type WgslKernel } from './wgsl-common.js';
import { HelperSet, wtype } from './wgsl-expr.js';
import { WebGpuUnsupportedError } from './errors.js';

export interface MatmulConfig {
  /** rows of C per workgroup */
  readonly bm: number;
  /** columns of C per workgroup */
  readonly bn: number;
  /** K step through workgroup memory (a multiple of 4) */
  readonly bk: number;
  /** accumulator rows per invocation (a multiple of 4) */
  readonly tm: number;
  /** accumulator columns per invocation (a multiple of 4) */
  readonly tn: number;
  /** load the next K step's tiles into registers before the current step's multiply-adds */
  readonly prefetch?: boolean;
}

/** 'BMxBNxBK/TMxTN', e.g. '64x64x16/4x4', with '+pf' when it prefetches */
export function configName(c: MatmulConfig): string {
  return `${c.bm}x${c.bn}x${c.bk}/${c.tm}x${c.tn}${c.prefetch ? '+pf' : ''}`;
}

export function parseConfig(s: string): MatmulConfig {
  const m = /^(\d+)x(\d+)x(\d+)\/(\d+)x(\d+)(\+pf)?$/.exec(s.trim());
  if (!m) throw new Error(`kiln: a matmul configuration is 'BMxBNxBK/TMxTN' or 'BMxBNxBK/TMxTN+pf' (e.g. '128x128x16/8x8+pf'), got '${s}'`);
  const c: MatmulConfig = { bm: +m[1]!, bn: +m[2]!, bk: +m[3]!, tm: +m[4]!, tn: +m[5]!, ...(m[6] ? { prefetch: true } : {}) };
  const bad = configProblem(c);
  if (bad) throw new Error(`kiln: matmul configuration ${s}: ${bad}`);
  return c;
}

/** The template kiln always had: 64x64 tile, K steps of 16, 4x4 accumulators, 16x16 invocations. */
export const DEFAULT_MATMUL_CONFIG: MatmulConfig = { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4 };

/**
 * What max-autotune tries (the first is the default). Devices drop those above their limits
 * (workgroup memory, invocations per workgroup): 128x128x32 needs 32 KiB, more than WebGPU's
 * default 16 KiB.
 */
export const MATMUL_CONFIGS: readonly MatmulConfig[] = [
  DEFAULT_MATMUL_CONFIG,
  { bm: 128, bn: 128, bk: 16, tm: 8, tn: 8 },
  { bm: 128, bn: 128, bk: 16, tm: 8, tn: 8, prefetch: true },
  { bm: 128, bn: 128, bk: 8, tm: 8, tn: 8 },
  { bm: 128, bn: 128, bk: 8, tm: 8, tn: 8, prefetch: true },
  { bm: 128, bn: 128, bk: 32, tm: 8, tn: 8 },
  { bm: 128, bn: 64, bk: 16, tm: 8, tn: 4 },
  { bm: 128, bn: 64, bk: 16, tm: 8, tn: 4, prefetch: true },
  { bm: 64, bn: 128, bk: 16, tm: 4, tn: 8 },
  { bm: 64, bn: 64, bk: 16, tm: 8, tn: 8 },
  { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4, prefetch: true },
  { bm: 64, bn: 64, bk: 32, tm: 4, tn: 4 },
  { bm: 32, bn: 32, bk: 16, tm: 4, tn: 4 },
];

/** Workgroup invocations of a configuration (x: columns, y: rows). */
export function workgroupOf(c: MatmulConfig): [number, number] {
  return [c.bn / c.tn, c.bm / c.tm];
}

/** Bytes of workgroup memory a configuration uses. */
export function workgroupBytes(c: MatmulConfig): number {
  return (c.bm + c.bn) * c.bk * 4;
}

/** Why a configuration is malformed (null: fine). */
export function configProblem(c: MatmulConfig): string | null {
  const pos = [c.bm, c.bn, c.bk, c.tm, c.tn].every((x) => Number.isInteger(x) && x > 0);
  if (!pos) return 'sizes must be positive integers';
  if (c.tm % 4 || c.tn % 4) return 'TM and TN must be multiples of 4 (vec4 accumulators)';
  if (c.bk % 4) return 'BK must be a multiple of 4';
  if (c.bm % c.tm || c.bn % c.tn) return 'BM must divide by TM and BN by TN';
  return null;
}

/** Why a device cannot run a configuration (null: it can). */
export function deviceProblem(c: MatmulConfig, limits: GPUSupportedLimits | undefined): string | null {
  const bad = configProblem(c);
  if (bad) return bad;
  if (!limits) return null;
  const [x, y] = workgroupOf(c);
  if (x * y > limits.maxComputeInvocationsPerWorkgroup) return `${x * y} invocations per workgroup (limit ${limits.maxComputeInvocationsPerWorkgroup})`;
  if (x > limits.maxComputeWorkgroupSizeX || y > limits.maxComputeWorkgroupSizeY) return `workgroup ${x}x${y} (limits ${limits.maxComputeWorkgroupSizeX}x${limits.maxComputeWorkgroupSizeY})`;
  if (workgroupBytes(c) > limits.maxComputeWorkgroupStorageSize) return `${workgroupBytes(c)} bytes of workgroup memory (limit ${limits.maxComputeWorkgroupStorageSize})`;
  return null;
}

/** How an operand's tile is read from global memory. */
type LoadMode =
  /** vec4 along its column (k for A, n for B) */
  | 'vec-col'
  /** vec4 along its row (m for A, k for B) */
  | 'vec-row'
  /** scalars, consecutive invocations along the column dimension */
  | 'scalar-col'
  /** scalars, consecutive invocations along the row dimension (a transposed view) */
  | 'scalar-row';

const aligned = (x: number) => x % 4 === 0;

/**
 * The load mode of an operand whose rows have `rows` and columns `cols` elements. vec4 needs
 * unit stride along one dimension, the other stride, the offset (for every batch entry) and the
 * extent along the unit-stride dimension multiples of 4 (a vec4 is then wholly in or out of range).
 */
function loadMode(op: MatmulOperand, rows: number, cols: number, vecOk: boolean): LoadMode {
  const baseAligned = aligned(op.base.o) && op.base.c.every(aligned);
  if (vecOk && baseAligned) {
    if (op.sCol === 1 && aligned(op.sRow) && aligned(cols)) return 'vec-col';
    if (op.sRow === 1 && aligned(op.sCol) && aligned(rows)) return 'vec-row';
  }
  return op.sRow === 1 && op.sCol !== 1 ? 'scalar-row' : 'scalar-col';
}

/**
 * How float32 operands are held in workgroup memory: 'float32', or 'f16' (rounded to f16 there,
 * widened back to f32 for the multiply-adds: half the workgroup memory and its bandwidth, TF32's
 * 10 mantissa bits with f16's range; needs the device feature 'shader-f16').
 */
export type MatmulPrecision = 'float32' | 'f16';

/** The WGSL of a matmul kernel in configuration `cfg` (default: DEFAULT_MATMUL_CONFIG). */
export function renderMatmul(k: MatmulKernel, alias: AliasMap, cfg: MatmulConfig = DEFAULT_MATMUL_CONFIG, precision: MatmulPrecision = 'float32'): WgslKernel {
  const bad = configProblem(cfg);
  if (bad) throw new Error(`kiln internal: matmul configuration ${configName(cfg)}: ${bad}`);
  const { bm: BM, bn: BN, bk: BK, tm: TM, tn: TN } = cfg;
  const [WX, WY] = workgroupOf(cfg);
  const NT = WX * WY, RM = TM / 4, RN = TN / 4, BM4 = BM / 4, BN4 = BN / 4;
  const t = wtype(k.dtype, 'matmul');
  const v4 = `vec4<${t}>`;
  // the tiles' element type: f16 only for float32 kernels asked for it (integers stay exact)
  const half = precision === 'f16' && t === 'f32';
  const tile = half ? 'vec4<f16>' : v4;
  /** a register value (t or vec4<t>) as stored into a tile */
  const toTile = (x: string, vec: boolean) => (half ? `${vec ? 'vec4<f16>' : 'f16'}(${x})` : x);
  const nb = k.batch.length;
  const batch = k.batch.reduce((a, b) => a * b, 1);
  if (batch > MAX_GROUPS_PER_DIM) throw new WebGpuUnsupportedError(`a batched matmul over ${batch} matrices exceeds the dispatch grid (${MAX_GROUPS_PER_DIM})`, 'matmul', 'reshape the batch into fewer, larger matrices');
  const grid: [number, number, number] = [Math.ceil(k.n / BN), Math.ceil(k.m / BM), batch];
  if (grid[0] > MAX_GROUPS_PER_DIM || grid[1] > MAX_GROUPS_PER_DIM) throw new WebGpuUnsupportedError(`a ${k.m}x${k.n} matmul exceeds the dispatch grid`, 'matmul');

  // bindings: an operand read as vec4 gets an array<vec4<T>> binding, allowed only when its buffer
  // is bound for nothing else (no epilogue load or store of it, not the other operand read as scalars)
  const canon = (b: number) => alias.get(b) ?? b;
  const written = new Set(kernelStores(k).map((s) => canon(s.buf)));
  const epilogueUses = new Set([...epilogueLoads(k), ...kernelStores(k).map((s) => s.buf)].map(canon));
  const ca = canon(k.a.buf), cb = canon(k.b.buf);
  const free = (b: number) => !written.has(b) && !epilogueUses.has(b);
  let modeA = loadMode(k.a, k.m, k.k, free(ca));
  let modeB = loadMode(k.b, k.k, k.n, free(cb));
  if (ca === cb && isVec(modeA) !== isVec(modeB)) {
    // one buffer, one binding type: both scalar
    modeA = loadMode(k.a, k.m, k.k, false);
    modeB = loadMode(k.b, k.k, k.n, false);
  }
  const vecBufs = new Set<number>();
  if (isVec(modeA)) vecBufs.add(ca);
  if (isVec(modeB)) vecBufs.add(cb);
  const scalarBufs = new Set(epilogueUses);
  if (!isVec(modeA)) scalarBufs.add(ca);
  if (!isVec(modeB)) scalarBufs.add(cb);
  const order = [...new Set([...scalarBufs, ...vecBufs])].sort((x, y) => x - y);
  const dtypeOf = bufferDTypes(k);
  const decl = order.map((b, i) => {
    const vec = vecBufs.has(b);
    const et = wtype(dtypeOf.get(b) ?? 'float32', k.name);
    return `@group(0) @binding(${i}) var<storage, ${written.has(b) ? 'read_write' : 'read'}> b${b}${vec ? 'v' : ''}: array<${vec ? `vec4<${et}>` : et}>;`;
  }).join('\n');
  const bind: BindingPlan = { decl, order, writable: order.map((b) => written.has(b)), name: (b) => `b${canon(b)}` };

  const h = new HelperSet();
  const e = new Body(h, bind);
  e.accType = t;
  e.stmts(k.body, '            ');
  e.stores(k.stores, '            ');

  const checkM = k.m % BM !== 0, checkN = k.n % BN !== 0, checkK = k.k % BK !== 0;

  // ---- tile loads (global -> registers -> workgroup memory) ----
  // Each invocation moves `units / NT` loads per operand and K step ("slots", unrolled). What does
  // not depend on the K step (coordinates in the tile, global offset, the row/column bound check)
  // is computed once, before the K loop. With prefetch the next K step's loads are issued before
  // the current step's multiply-adds, so their latency hides behind them.
  interface Loader { setup: string[]; decl: string[]; fetch(ko: string): string[]; put: string[] }
  const loader = (X: string, mode: LoadMode, op: MatmulOperand, buf: string): Loader => {
    const isA = X === 'A';
    const vec = isVec(mode);
    const units = (BM * (isA ? 1 : 0) + BN * (isA ? 0 : 1)) * BK / (vec ? 4 : 1);
    const S = isA ? 'As' : 'Bs', W4 = isA ? BM4 : BN4, D = isA ? BM : BN;
    const base = isA ? 'aBase' : 'bBase', origin = isA ? 'row0' : 'col0';
    // strides of this operand along its own dimension (m for A, n for B) and along k
    const sD = isA ? op.sRow : op.sCol, sK = isA ? op.sCol : op.sRow;
    const checkD = isA ? checkM : checkN, extent = isA ? k.m : k.n;
    const zero = vec ? `${v4}()` : `${t}(0)`;
    const setup: string[] = [], decl: string[] = [], put: string[] = [];
    const slots = Math.ceil(units / NT);
    const partial = (l: number) => (l + 1) * NT > units;
    for (let l = 0; l < slots; l++) {
      const x = `${X}${l}`, e = `e${x}`, d = `d${x}`, kk = `k${x}`;
      const L = [`let ${e} = t + ${l * NT};`];
      // d: this operand's own coordinate in the tile (a multiple of 4 for 'vec-row'/'vec-col' of the own dim), kk: k in the tile
      if (mode === 'vec-row' && isA || mode === 'vec-col' && !isA) L.push(`let ${d} = (${e} % ${W4}) * 4; let ${kk} = ${e} / ${W4};`);
      else if (vec) L.push(`let ${kk} = (${e} % ${BK / 4}) * 4; let ${d} = ${e} / ${BK / 4};`);
      else if ((mode === 'scalar-row') === isA) L.push(`let ${d} = ${e} % ${D}; let ${kk} = ${e} / ${D};`);
      else L.push(`let ${kk} = ${e} % ${BK}; let ${d} = ${e} / ${BK};`);
      const off = `${base} + (${origin} + ${d}) * ${sD} + ${kk} * ${sK}`;
      L.push(`let o${x} = ${vec ? `(${off}) / 4` : off};`);
      if (checkD) L.push(`let in${x} = ${origin} + ${d} < ${extent};`);
      setup.push(`  ${L.join(' ')}`);
      decl.push(`  var p${x}: ${vec ? v4 : t};`);
      // workgroup memory: vec4 along the own dimension, k-major
      let store: string;
      if (!vec) store = `${S}[${kk} * ${W4} + ${d} / 4][${d} % 4] = ${toTile(`p${x}`, false)};`;
      else if (mode === 'vec-row' && isA || mode === 'vec-col' && !isA) store = `${S}[${kk} * ${W4} + ${d} / 4] = ${toTile(`p${x}`, true)};`;
      else store = [0, 1, 2, 3].map((i) => `${S}[(${kk} + ${i}) * ${W4} + ${d} / 4][${d} % 4] = ${toTile(`p${x}.${'xyzw'[i]}`, false)};`).join(' ');
      put.push(partial(l) ? `    if (${e} < ${units}) { ${store} }` : `    ${store}`);
    }
    const fetch = (ko: string): string[] => {
      const L: string[] = [];
      for (let l = 0; l < slots; l++) {
        const x = `${X}${l}`;
        const step = vec ? (sK === 1 ? `(${ko}) / 4` : `(${ko}) * ${sK / 4}`) : `(${ko}) * ${sK}`;
        const at = ko === '0' ? `o${x}` : `o${x} + ${step}`;
        const c = [partial(l) && `e${x} < ${units}`, checkD && `in${x}`, checkK && `${ko === '0' ? '' : `${ko} + `}k${x} < ${k.k}`].filter(Boolean).join(' && ');
        const load = `${buf}${vec ? 'v' : ''}[${at}]`;
        L.push(c ? `    p${x} = ${zero}; if (${c}) { p${x} = ${load}; }` : `    p${x} = ${load};`);
      }
      return L;
    };
    return { setup, decl, fetch, put };
  };
  const la = loader('A', modeA, k.a, `b${ca}`), lb = loader('B', modeB, k.b, `b${cb}`);
  const pf = cfg.prefetch === true;
  const kLoop: string[] = k.k <= 0 ? [] : [
    ...la.setup, ...lb.setup, ...la.decl, ...lb.decl,
    ...(pf ? [...la.fetch('0'), ...lb.fetch('0')].map((x) => x.slice(2)) : []),
    `  for (var k0 = 0; k0 < ${k.k}; k0 += ${BK}) {`,
    ...(pf ? [] : [...la.fetch('k0'), ...lb.fetch('k0')]),
    ...la.put, ...lb.put,
    '    workgroupBarrier();',
    ...(pf ? [`    if (k0 + ${BK} < ${k.k}) {`, ...[...la.fetch(`k0 + ${BK}`), ...lb.fetch(`k0 + ${BK}`)].map((x) => `  ${x}`), '    }'] : []),
    'KK',
    '    workgroupBarrier();',
    '  }',
  ];

  // ---- the K loop on registers: acc row r (0..TM), vec4 column group j (0..RN) ----
  const acc = (r: number, j: number) => `c${r}_${j}`;
  const accDecl: string[] = [];
  for (let r = 0; r < TM; r++) accDecl.push(`  var ${Array.from({ length: RN }, (_, j) => acc(r, j)).join(`: ${v4}; var `)}: ${v4};`);
  const inner: string[] = [];
  const fromTile = (x: string) => (half ? `${v4}(${x})` : x);
  for (let i = 0; i < RM; i++) inner.push(`      let ra${i} = ${fromTile(`As[kk * ${BM4} + ty + ${WY * i}]`)};`);
  for (let j = 0; j < RN; j++) inner.push(`      let rb${j} = ${fromTile(`Bs[kk * ${BN4} + tx + ${WX * j}]`)};`);
  const lanes = ['x', 'y', 'z', 'w'];
  for (let i = 0; i < RM; i++) {
    for (let c = 0; c < 4; c++) {
      inner.push(`      ${Array.from({ length: RN }, (_, j) => `${acc(4 * i + c, j)} += ra${i}.${lanes[c]} * rb${j};`).join(' ')}`);
    }
  }
  const accList = Array.from({ length: TM }, (_, r) => Array.from({ length: RN }, (_, j) => acc(r, j))).flat();

  const code = [
    decl,
    `var<workgroup> As: array<${tile}, ${BK * BM4}>;`,
    `var<workgroup> Bs: array<${tile}, ${BK * BN4}>;`,
    '',
    `// matmul ${configName(cfg)}${half ? ', f16 tiles' : ''}: A ${modeA}, B ${modeB}`,
    `@compute @workgroup_size(${WX}, ${WY})`,
    'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>, @builtin(local_invocation_index) lid: u32) {',
    '  let tx = i32(li.x); let ty = i32(li.y); let t = i32(lid);',
    `  let row0 = i32(wg.y) * ${BM}; let col0 = i32(wg.x) * ${BN};`,
    ...decompose('i32(wg.z)', k.batch, 0, 'bi').map((l) => `  ${l}`),
    `  let aBase = ${affine(k.a.base)};`,
    `  let bBase = ${affine(k.b.base)};`,
    ...accDecl,
    ...kLoop.flatMap((l) => (l === 'KK' ? [`    for (var kk = 0; kk < ${BK}; kk++) {`, ...inner, '    }'] : [l])),
    // the epilogue over an array of the accumulators (indexed dynamically: after the K loop only)
    `  var accs = array<${v4}, ${accList.length}>(${accList.join(', ')});`,
    `  for (var i = 0; i < ${RM}; i++) {`,
    '    for (var c = 0; c < 4; c++) {',
    `      let gi = row0 + 4 * (ty + ${WY} * i) + c;`,
    `      ${checkM ? `if (gi < ${k.m}) {` : '{'}`,
    `        for (var j = 0; j < ${RN}; j++) {`,
    '          for (var d = 0; d < 4; d++) {',
    `            let gj = col0 + 4 * (tx + ${WX} * j) + d;`,
    `            ${checkN ? `if (gj >= ${k.n}) { continue; }` : ''}`,
    `            let v${nb} = gi; let v${nb + 1} = gj;`,
    `            let acc = accs[(i * 4 + c) * ${RN} + j][d];`,
    ...e.lines,
    '          }',
    '        }',
    '      }',
    '    }',
    '  }',
    '}',
  ];
  // `enable` comes before every declaration, the helpers' included
  return { code: `${half ? 'enable f16;\n' : ''}${h.source()}\n${code.filter((l) => l.trim() !== '').join('\n')}`, bindings: order, writable: bind.writable, grid, name: k.name };
}

const isVec = (m: LoadMode) => m === 'vec-col' || m === 'vec-row';

/** Buffers the epilogue loads (the operands excluded). */
function epilogueLoads(k: MatmulKernel): number[] {
  const only = { ...k, a: { ...k.a, buf: -1 }, b: { ...k.b, buf: -1 } };
  return [...kernelLoads(only)].filter((b) => b >= 0);
}
