// Row reductions on a WebGPU backend, eager and compiled, for test/webgpu-subgroups-browser.test.ts:
// the page runs this (bundled with kiln) on Chromium's SwiftShader adapter with subgroups on
// and off, and Node compares the numbers with float64 references. Browser-safe (kiln only).
// Results come back as exact bits: float32 outputs as their uint32 patterns, indices as is.

import * as kiln from 'kilnjs';
import type { RowKernel } from '../../src/ir/loop-ir.js';
import { rowConfig, rowStats, subgroupPrologue } from '../../src/backend/webgpu/render-row.js';
import { renderWgsl } from '../../src/backend/webgpu/render-wgsl.js';

export const REDUCTION_OPS = ['sum', 'mean', 'max', 'min', 'argmax', 'argmin', 'softmax', 'logSoftmax', 'var', 'layerNorm', 'rms', 'rmsNorm'] as const;
export type ReductionOp = (typeof REDUCTION_OPS)[number];

/** a [rows, cols] float32 input (row-major values) */
export interface ReductionCase {
  readonly rows: number;
  readonly cols: number;
  readonly x: readonly number[];
}

/** per op: float32 results as uint32 bit patterns, argmax/argmin as indices */
export type CaseResult = Record<ReductionOp, number[]>;

export const RMS_EPS = 1e-6;

/**
 * Every op over the last dim. rms is a reduction with an epilogue per row (sqrt of the mean
 * square), rmsNorm one per element (x / rms); compiled together, the row kernels carry sibling
 * reductions, online softmax and Welford.
 */
export function reductionOps(x: kiln.Tensor): kiln.Tensor[] {
  const cols = x.shape[1]!;
  const ms = x.mul(x).mean(-1, true);
  const out: Record<ReductionOp, kiln.Tensor> = {
    sum: x.sum(-1), mean: x.mean(-1), max: x.amax(-1), min: x.amin(-1),
    argmax: x.argmax(-1), argmin: x.argmin(-1),
    softmax: kiln.softmax(x, -1), logSoftmax: kiln.logSoftmax(x, -1),
    var: kiln.variance(x, -1), layerNorm: kiln.layerNorm(x, [cols]),
    rms: ms.sqrt().reshape([x.shape[0]!]), rmsNorm: x.mul(ms.add(RMS_EPS).rsqrt()),
  };
  return REDUCTION_OPS.map((op) => out[op]);
}

async function bits(t: kiln.Tensor): Promise<number[]> {
  const d = await t.data();
  if (d instanceof Float32Array) return Array.from(new Uint32Array(d.buffer, d.byteOffset, d.length));
  return Array.from(d as ArrayLike<number>);
}

async function collect(outs: readonly kiln.Tensor[]): Promise<CaseResult> {
  const r = {} as CaseResult;
  for (let i = 0; i < REDUCTION_OPS.length; i++) r[REDUCTION_OPS[i]!] = await bits(outs[i]!);
  return r;
}

function onDevice(c: ReductionCase, gpu: kiln.WebGpuBackend): kiln.Tensor {
  const cpu = new kiln.JsBackend();
  kiln.setDefaultBackend(cpu);
  const host = kiln.tensor(Float32Array.from(c.x), [c.rows, c.cols]);
  kiln.setDefaultBackend(gpu);
  return kiln.keep(kiln.toBackend(host, gpu));
}

/**
 * Every case's ops: eager (a kernel per primitive), 'compiled' (all ops in one function: sibling
 * reductions, shared loads) or 'compiled-each' (a function per op: online softmax, Welford).
 */
export async function runReductions(gpu: kiln.WebGpuBackend, cases: readonly ReductionCase[], mode: 'eager' | 'compiled' | 'compiled-each'): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const [i, c] of cases.entries()) {
    const x = onDevice(c, gpu);
    // compiled functions per case: each shape is its own program (no recompile limit)
    const opts = { backend: 'webgpu', fullgraph: true } as const;
    const each = REDUCTION_OPS.map((_, j) => kiln.compile((t: kiln.Tensor) => reductionOps(t)[j]!, { ...opts, name: `reduction_${i}_${j}` }));
    const f = mode === 'eager' ? reductionOps
      : mode === 'compiled' ? kiln.compile((t: kiln.Tensor) => reductionOps(t), { ...opts, name: `reductions_${i}` })
      : (t: kiln.Tensor) => each.map((g) => g(t));
    const outs = kiln.scope(() => f(x).map((t) => kiln.keep(t)));
    results.push(await collect(outs));
    for (const t of outs) t.dispose();
    x.dispose();
  }
  return results;
}

export interface ProfileCheck {
  /** dispatches of one unprofiled call of the program */
  readonly plainDispatches: number;
  /** calls made inside the profile */
  readonly calls: number;
  /** dispatches the backend counted during the profiled calls */
  readonly countedDispatches: number;
  readonly entries: readonly { readonly kernel: string; readonly ns: number; readonly grid: readonly number[] }[];
  readonly text: string;
}

/**
 * `gpu.profile` around calls of a compiled program (after a warm-up call): enough calls for
 * more than `minDispatches` dispatches (profile.ts starts a query set every 1024).
 */
export async function profileReductions(gpu: kiln.WebGpuBackend, c: ReductionCase, minDispatches = 1100): Promise<ProfileCheck> {
  const x = onDevice(c, gpu);
  const f = kiln.compile((t: kiln.Tensor) => reductionOps(t), { name: 'reductions_profiled', backend: 'webgpu', fullgraph: true });
  const call = () => kiln.scope(() => f(x).map((t) => kiln.keep(t)));
  const run = async (fn: () => kiln.Tensor[], calls = 1) => {
    const before = gpu.stats.dispatches;
    for (let i = 0; i < calls; i++) for (const t of fn()) t.dispose();
    const n = gpu.stats.dispatches - before;
    await gpu.sync();
    return n;
  };
  await run(call); // compiles and runs the program once
  const plainDispatches = await run(call);
  const calls = Math.ceil(minDispatches / Math.max(1, plainDispatches));
  let countedDispatches = 0;
  const p = await gpu.profile(async () => {
    countedDispatches = await run(call, calls);
  });
  x.dispose();
  return { plainDispatches, calls, countedDispatches, entries: p.dispatches.map((d) => ({ kernel: d.kernel, ns: d.ns, grid: [...d.grid] })), text: p.text };
}

/** What the subgroup prologue decided per workgroup: sgW (0: the plain tree) and lane 0's subgroup size. */
export interface ProbeResult {
  readonly wg: number;
  readonly widths: number[];
  readonly sizes: number[];
}

/**
 * Runs render-row.ts's subgroup prologue alone in `groups` workgroups of each size and reads
 * back the width it chose: shows the fast path (not the fallback) runs on this device.
 */
export async function probeSubgroupWidths(gpu: kiln.WebGpuBackend, groups = 4): Promise<ProbeResult[]> {
  const device = gpu.device;
  const out: ProbeResult[] = [];
  for (const wg of [32, 64, 128, 256]) {
    const code = [
      'enable subgroups;',
      '@group(0) @binding(0) var<storage, read_write> out: array<u32>;',
      'var<workgroup> sgSeen: atomic<u32>;',
      'var<workgroup> sgWidth: u32;',
      `@compute @workgroup_size(${wg})`,
      'fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_invocation_id) sgId: u32, @builtin(subgroup_size) sgSize: u32) {',
      ...subgroupPrologue(wg),
      '  if (lid == 0u) { out[wg.x * 2u] = sgW; out[wg.x * 2u + 1u] = sgSize; }',
      '}',
    ].join('\n');
    const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
    const bytes = groups * 8;
    const buf = device.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const read = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: buf } }] }));
    pass.dispatchWorkgroups(groups);
    pass.end();
    enc.copyBufferToBuffer(buf, 0, read, 0, bytes);
    device.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const v = Array.from(new Uint32Array(read.getMappedRange().slice(0)));
    read.destroy();
    buf.destroy();
    out.push({ wg, widths: v.filter((_, i) => i % 2 === 0), sizes: v.filter((_, i) => i % 2 === 1) });
  }
  return out;
}

type Modes = Record<'eager' | 'compiled' | 'compiled-each', CaseResult[]>;
const MODES = ['eager', 'compiled', 'compiled-each'] as const;

export interface SubgroupPageResult {
  readonly adapter: string;
  readonly features: string[];
  readonly subgroupMinSize?: number;
  readonly subgroupMaxSize?: number;
  /** the device has 'subgroups' and kiln turned them on by default */
  readonly hasSubgroups: boolean;
  readonly onByDefault: boolean;
  readonly probe?: ProbeResult[];
  /** runs with subgroups on (twice: determinism), off, and on with the fallback forced */
  readonly on?: Modes;
  readonly onAgain?: Modes;
  readonly off?: Modes;
  readonly fallback?: Pick<Modes, 'eager' | 'compiled'>;
  /** row kernels rendered each way during each run */
  readonly stats?: Record<'on' | 'off' | 'fallback', { subgroup: number; plain: number }>;
  /** a row kernel's WGSL as the backend renders it on and off, and the plain renderer's */
  readonly wgsl?: { on: string; off: string; plain: string };
  readonly profile?: ProfileCheck;
}

async function allModes(gpu: kiln.WebGpuBackend, cases: readonly ReductionCase[], modes: readonly (keyof Modes)[] = MODES): Promise<Modes> {
  const r = {} as Modes;
  for (const m of modes) r[m] = await runReductions(gpu, cases, m);
  return r;
}

async function counted<T>(fn: () => Promise<T>): Promise<[T, { subgroup: number; plain: number }]> {
  const s0 = rowStats.subgroup, p0 = rowStats.plain;
  const r = await fn();
  return [r, { subgroup: rowStats.subgroup - s0, plain: rowStats.plain - p0 }];
}

/** A row kernel (the eager sum of a [2, 33] tensor) for looking at its WGSL. */
function sampleRowKernel(): RowKernel {
  return {
    kind: 'row', name: 'sample_sum', outer: [2], inner: [33],
    reductions: [{ id: 0, op: 'sum', body: [], value: { k: 'load', buf: 1, at: { c: [33, 1], o: 0 }, dtype: 'float32' }, node: -1 }],
    outerBody: [], rowBody: [], rowStores: [],
    outerStores: [{ buf: 0, at: { c: [1, 0], o: 0 }, value: { k: 'red', id: 0 }, dtype: 'float32', node: -1 }],
  };
}

/** Everything the subgroups browser test checks, run on one page's backend. */
export async function runSubgroupPage(gpu: kiln.WebGpuBackend, cases: readonly ReductionCase[], profileCase: ReductionCase): Promise<SubgroupPageResult> {
  const info = (gpu.device as GPUDevice & { adapterInfo?: { subgroupMinSize?: number; subgroupMaxSize?: number } }).adapterInfo;
  const base = {
    adapter: gpu.adapterInfo, features: [...gpu.device.features].sort(),
    subgroupMinSize: info?.subgroupMinSize, subgroupMaxSize: info?.subgroupMaxSize,
    hasSubgroups: gpu.hasSubgroups, onByDefault: gpu.subgroups,
  };
  if (!gpu.hasSubgroups) return base;
  const probe = await probeSubgroupWidths(gpu);
  const k = sampleRowKernel();
  const wgslOn = gpu.wgsl(k).join('\n');
  const [on, sOn] = await counted(() => allModes(gpu, cases));
  const onAgain = await allModes(gpu, cases);
  gpu.subgroups = false;
  const wgslOff = gpu.wgsl(k).join('\n');
  const [off, sOff] = await counted(() => allModes(gpu, cases));
  gpu.subgroups = true;
  rowConfig.forceSubgroupFallback = true;
  let fallback: Modes, sFb: { subgroup: number; plain: number };
  try {
    [fallback, sFb] = await counted(() => allModes(gpu, cases, ['eager', 'compiled']));
  } finally {
    rowConfig.forceSubgroupFallback = false;
  }
  const profile = await profileReductions(gpu, profileCase);
  return {
    ...base, probe, on, onAgain, off, fallback: { eager: fallback.eager, compiled: fallback.compiled },
    stats: { on: sOn, off: sOff, fallback: sFb },
    wgsl: { on: wgslOn, off: wgslOff, plain: renderWgsl(k).map((w) => w.code).join('\n') },
    profile,
  };
}
