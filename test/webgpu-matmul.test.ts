// The WebGPU matmul template (src/backend/webgpu/render-matmul.ts) in every configuration
// max-autotune may pick, against a float64 reference on the CPU: edge shapes (m, n, k not
// multiples of the tile, k = 1, tiny), batched (broadcast batch too), transposed and offset
// views (vec4 and scalar loads), the same buffer as both operands, int32, and fused epilogues
// in compiled programs. Then max-autotune on WebGPU (autotune.ts): `await gpu.autotune(f, args)`
// measures, records the decision, and the program's results equal the default configuration's.
// Then reduce-overhead programs (prerecord.ts) after gpu.matmulConfig changes or a max-autotune
// measurement: they rebuild at their next call and run the new configuration's pipelines.
// Then timestamp profiling (profile.ts), or its typed error where the adapter has no
// 'timestamp-query' (llvmpipe). Inputs are fresh each run: the seed is printed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { webGpuForTests } from './helpers/webgpu-backend.js';
import { configName, DEFAULT_MATMUL_CONFIG, deviceProblem, MATMUL_CONFIGS, parseConfig, renderMatmul, type MatmulConfig } from '../src/backend/webgpu/render-matmul.js';
import type { MatmulKernel } from '../src/ir/loop-ir.js';
import type { Lowered } from '../src/ir/lowered.js';
import type { WgslKernel } from '../src/backend/webgpu/wgsl-common.js';
import { assertCompiledRan } from './helpers/compiled-ran.js';

const { cpu, gpu, skip } = await webGpuForTests((g) => {
  if (g) g.matmulConfig = null;
});

const seed = Math.floor(Math.random() * 2 ** 31);
console.log(`# webgpu-matmul: seed ${seed}`);

function onCpu<T>(fn: () => T): T {
  kiln.setDefaultBackend(cpu);
  return fn();
}
function onGpu<T>(fn: () => T): T {
  kiln.setDefaultBackend(gpu!);
  try {
    return fn();
  } finally {
    kiln.setDefaultBackend(cpu);
  }
}

/** The pipelines `fn` encodes (prerecorded programs and the default mode both go through encode). */
function encodedPipelines(fn: () => void): Set<unknown> {
  const g = gpu as unknown as { encode(p: unknown, ...rest: unknown[]): void };
  const encode = g.encode;
  const seen = new Set<unknown>();
  g.encode = function (this: unknown, p: unknown, ...rest: unknown[]) {
    seen.add(p);
    encode.call(this, p, ...rest);
  };
  try {
    fn();
  } finally {
    Reflect.deleteProperty(g, 'encode');
  }
  return seen;
}

/** One call of a compiled function on the GPU: the pipelines it encoded and its values. */
async function callOnGpu(f: () => kiln.Tensor): Promise<{ pipes: Set<unknown>; values: number[] }> {
  let out!: kiln.Tensor;
  const pipes = encodedPipelines(() => (out = onGpu(() => kiln.scope(() => kiln.keep(f())))));
  const values = Array.from(await out.data());
  out.dispose();
  return { pipes, values };
}

const sameSet = (a: Set<unknown>, b: Set<unknown>) => a.size === b.size && [...a].every((x) => b.has(x));
const added = (now: Set<unknown>, before: Set<unknown>) => [...now].filter((x) => !before.has(x)).length;

// ---- rendering only (no adapter needed) ----

const mm = (m: number, k: number, n: number, a: Partial<MatmulKernel['a']>, b: Partial<MatmulKernel['b']>, extra: Partial<MatmulKernel> = {}): MatmulKernel => ({
  kind: 'matmul', name: 'mm', dtype: 'float32', batch: [], m, n, k,
  a: { buf: 1, base: { c: [], o: 0 }, sRow: k, sCol: 1, ...a }, b: { buf: 2, base: { c: [], o: 0 }, sRow: n, sCol: 1, ...b },
  body: [], stores: [{ buf: 0, at: { c: [n, 1], o: 0 }, value: { k: 'acc' }, dtype: 'float32', node: -1 }], ...extra,
});
const modes = (k: MatmulKernel, cfg = DEFAULT_MATMUL_CONFIG) => /A (\S+), B (\S+)/.exec(renderMatmul(k, new Map(), cfg).code)!.slice(1, 3).join(', ');

test('matmul template: vec4 loads where strides, offsets and extents allow, scalar loads otherwise', () => {
  assert.equal(modes(mm(64, 32, 48, {}, {})), 'vec-col, vec-col');
  // x @ W.T (a Linear): B's unit stride is along k
  assert.equal(modes(mm(64, 32, 48, {}, { sRow: 1, sCol: 32 })), 'vec-col, vec-row');
  // both transposed
  assert.equal(modes(mm(64, 32, 48, { sRow: 1, sCol: 64 }, { sRow: 1, sCol: 32 })), 'vec-row, vec-row');
  // k = 33: rows of A are not 16-byte aligned; n = 45: B's neither
  assert.equal(modes(mm(70, 33, 45, {}, {})), 'scalar-col, scalar-col');
  // transposed and unaligned: scalars read along the unit stride
  assert.equal(modes(mm(30, 21, 19, { sRow: 1, sCol: 30 }, { sRow: 1, sCol: 21 })), 'scalar-row, scalar-row');
  // an offset of 1 element, a batch stride not a multiple of 4, a column stride of 2
  assert.equal(modes(mm(8, 8, 8, { base: { c: [], o: 1 } }, {})), 'scalar-col, vec-col');
  assert.equal(modes(mm(8, 8, 8, { base: { c: [66], o: 0 } }, {}, { batch: [2] })), 'scalar-col, vec-col');
  assert.match(modes(mm(8, 8, 8, { sCol: 2, sRow: 16 }, {})), /^scalar-/);
  // A also loaded by the epilogue: its binding stays scalar (one binding per buffer)
  const epi = mm(16, 16, 16, {}, {}, { stores: [{ buf: 0, at: { c: [16, 1], o: 0 }, value: { k: 'op', op: 'add', dtype: 'float32', a: [{ k: 'acc' }, { k: 'load', buf: 1, at: { c: [16, 1], o: 0 }, dtype: 'float32' }] }, dtype: 'float32', node: -1 }] });
  assert.equal(modes(epi), 'scalar-col, vec-col');
  // the same buffer as both operands: one binding type for both
  assert.equal(modes(mm(8, 4, 6, { sRow: 8 }, { buf: 1, sRow: 8, base: { c: [], o: 1 } })), 'scalar-col, scalar-col');
  assert.equal(modes(mm(8, 4, 8, { sRow: 8 }, { buf: 1, sRow: 1, sCol: 8 })), 'vec-col, vec-row');
});

test('matmul configurations: the default is the 64x64x16/4x4 template; device limits filter the rest', () => {
  assert.equal(configName(MATMUL_CONFIGS[0]!), '64x64x16/4x4');
  assert.equal(configName(DEFAULT_MATMUL_CONFIG), '64x64x16/4x4');
  const code = renderMatmul(mm(64, 64, 64, {}, {}), new Map()).code;
  assert.match(code, /@workgroup_size\(16, 16\)/);
  assert.match(code, /array<vec4<f32>, 256>/); // 64x16 floats as vec4 per tile
  const limits = { maxComputeInvocationsPerWorkgroup: 256, maxComputeWorkgroupSizeX: 256, maxComputeWorkgroupSizeY: 256, maxComputeWorkgroupStorageSize: 16384 } as GPUSupportedLimits;
  assert.match(deviceProblem(parseConfig('128x128x32/8x8'), limits)!, /32768 bytes of workgroup memory/);
  assert.equal(deviceProblem(parseConfig('128x128x16/8x8'), limits), null);
  assert.match(deviceProblem(parseConfig('128x128x16/4x4'), limits)!, /1024 invocations/);
  assert.throws(() => parseConfig('64x64x16/3x4'), /multiples of 4/);
  assert.throws(() => parseConfig('64x64'), /BMxBNxBK\/TMxTN/);
  // no bound checks where every dimension divides by the tile; checks where one does not
  assert.doesNotMatch(renderMatmul(mm(128, 64, 128, {}, {}), new Map(), parseConfig('128x128x16/8x8')).code, /< 128\)|< 64\)/);
  assert.match(renderMatmul(mm(70, 33, 45, {}, {}), new Map()).code, /< 70/);
});

// ---- every configuration on the device ----

/** Configurations this device can run. */
/**
 * Configurations this device can run; KILN_MATMUL_CONFIGS (names, comma-separated) narrows them
 * (test/webgpu-lavapipe.test.ts: Mesa 25 compiles each large matmul shader for about a second).
 */
const configs = (): MatmulConfig[] => {
  const only = process.env.KILN_MATMUL_CONFIGS?.split(',');
  return MATMUL_CONFIGS.filter((c) => deviceProblem(c, gpu!.device.limits) === null && (!only || only.includes(configName(c))));
};

interface Case {
  readonly label: string;
  /** the operands on the CPU (float32 or int32), already viewed */
  readonly a: kiln.Tensor;
  readonly b: kiln.Tensor;
  /** the same views over GPU copies */
  readonly ga: kiln.Tensor;
  readonly gb: kiln.Tensor;
}

/** Operands: bases made on the CPU and copied to the GPU, the same view applied on both sides. */
function makeCase(label: string, aShape: number[], bShape: number[], va: (t: kiln.Tensor) => kiln.Tensor = (t) => t, vb: (t: kiln.Tensor) => kiln.Tensor = (t) => t, dtype: 'float32' | 'int32' = 'float32'): Case {
  const [a0, b0] = onCpu(() => [aShape, bShape].map((s) => kiln.keep(dtype === 'int32' ? kiln.randint(-4, 5, s) : kiln.randn(s))));
  const [ga0, gb0] = [a0!, b0!].map((t) => kiln.keep(kiln.toBackend(t, gpu!)));
  return { label, a: onCpu(() => kiln.keep(va(a0!))), b: onCpu(() => kiln.keep(vb(b0!))), ga: onGpu(() => kiln.keep(va(ga0!))), gb: onGpu(() => kiln.keep(vb(gb0!))) };
}

/** float64 reference of a @ b and of |a| @ |b| (for the rounding bound). */
function reference(c: Case): { want: Float64Array; mag: Float64Array; k: number } {
  return onCpu(() => kiln.scope(() => {
    const a = c.a.double(), b = c.b.double();
    const want = kiln.matmul(a, b).dataSync() as Float64Array;
    const mag = kiln.matmul(a.abs(), b.abs()).dataSync() as Float64Array;
    return { want: Float64Array.from(want), mag: Float64Array.from(mag), k: c.a.shape[c.a.ndim - 1]! };
  }));
}

function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, bound: (i: number) => number, label: string): void {
  assert.equal(got.length, want.length, `${label}: length`);
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(got[i]! - want[i]!);
    if (!(e <= bound(i))) assert.fail(`${label}: element ${i}: got ${got[i]}, want ${want[i]} (error ${e}, bound ${bound(i)}; seed ${seed})`);
  }
}

/** Each case's matmul on the GPU in each configuration (gpu.matmulConfig, cleared after), values to `check`. */
async function eachConfigAndCase(list: readonly MatmulConfig[], cases: readonly Case[], check: (cfg: MatmulConfig, i: number, got: ArrayLike<number>) => void): Promise<void> {
  try {
    for (const cfg of list) {
      gpu!.matmulConfig = cfg;
      for (let i = 0; i < cases.length; i++) {
        const c = cases[i]!;
        const out = onGpu(() => kiln.matmul(c.ga, c.gb));
        const got = await out.data();
        out.dispose();
        check(cfg, i, got);
      }
    }
  } finally {
    gpu!.matmulConfig = null;
  }
}

test(`webgpu matmul: every configuration against float64 on edge, batched, transposed and offset operands (seed ${seed})`, { skip }, async () => {
  kiln.manualSeed(seed);
  const T = (t: kiln.Tensor) => t.transpose(-1, -2);
  const cases: Case[] = [
    makeCase('edge 70x33 @ 33x45', [70, 33], [33, 45]),
    makeCase('k=1 17x1 @ 1x9', [17, 1], [1, 9]),
    makeCase('k=0 5x0 @ 0x3 (zeros)', [5, 0], [0, 3]),
    makeCase('tiny 1x1 @ 1x1', [1, 1], [1, 1]),
    makeCase('tiny 3x5 @ 5x2', [3, 5], [5, 2]),
    makeCase('tile multiples 128x64 @ 64x128', [128, 64], [64, 128]),
    makeCase('x @ W.T (Linear) 40x36 @ (52x36).T', [40, 36], [52, 36], undefined, T),
    makeCase('both transposed, aligned (36x64).T @ (40x36).T', [36, 64], [40, 36], T, T),
    makeCase('both transposed, unaligned (21x30).T @ (19x21).T', [21, 30], [19, 21], T, T),
    makeCase('batched [3] 20x24 @ 24x36', [3, 20, 24], [3, 24, 36]),
    makeCase('batched broadcast [2,3] x [3], B transposed', [2, 3, 9, 12], [3, 20, 12], undefined, T),
    makeCase('offset and step views', [40, 70], [35, 66], (t) => t.slice(1, 1, 67, 2), (t) => t.slice(0, 2, 35).slice(1, 3, 64)),
    makeCase('int32 70x33 @ 33x45', [70, 33], [33, 45], undefined, undefined, 'int32'),
  ];
  // the same buffer as both operands (one vec4 and one scalar view of it: both scalar)
  {
    const x = onCpu(() => kiln.keep(kiln.randn([8, 8])));
    const gx = kiln.keep(kiln.toBackend(x, gpu!));
    const va = (t: kiln.Tensor) => t.slice(1, 0, 4), vb = (t: kiln.Tensor) => t.slice(0, 0, 4).slice(1, 1, 7);
    cases.push({ label: 'same buffer, x[:, :4] @ x[:4, 1:7]', a: onCpu(() => kiln.keep(va(x))), b: onCpu(() => kiln.keep(vb(x))), ga: onGpu(() => kiln.keep(va(gx))), gb: onGpu(() => kiln.keep(vb(gx))) });
    cases.push({ label: 'same buffer, x @ x.T', a: x, b: onCpu(() => kiln.keep(x.transpose(0, 1))), ga: gx, gb: onGpu(() => kiln.keep(gx.transpose(0, 1))) });
  }
  const refs = cases.map(reference);
  const list = configs();
  assert.ok(list.some((c) => configName(c) === '64x64x16/4x4'), 'the default configuration runs here');
  await eachConfigAndCase(list, cases, (cfg, i, got) => {
    const c = cases[i]!, r = refs[i]!;
    const label = `${configName(cfg)} ${c.label}`;
    if (c.a.dtype === 'int32') assert.deepEqual(Array.from(got), Array.from(r.want), label);
    else assertClose(got as Float32Array, r.want, (j) => 1e-6 + 2 * (r.k + 2) * 2 ** -24 * r.mag[j]!, label);
  });
  console.log(`# ${list.length} configurations x ${cases.length} cases: ${list.map(configName).join(', ')}`);
});

test(`webgpu matmul precision f16: operands rounded to f16 in the tiles, f32 sums, within the f16 bound of float64; int32 exact; a typed error without shader-f16 (seed ${seed})`, { skip }, async () => {
  if (!gpu!.hasShaderF16) {
    assert.throws(() => {
      gpu!.matmulPrecision = 'f16';
    }, (e: unknown) => e instanceof kiln.WebGpuUnsupportedError && /no 'shader-f16' feature/.test((e as Error).message));
    assert.equal(gpu!.matmulPrecision, 'float32', 'unchanged after the refused switch');
    return;
  }
  assert.throws(() => {
    gpu!.matmulPrecision = 'bf16' as never;
  }, kiln.ArgumentError);
  kiln.manualSeed(seed + 1);
  const T = (t: kiln.Tensor) => t.transpose(-1, -2);
  const cases: Case[] = [
    makeCase('edge 70x33 @ 33x45', [70, 33], [33, 45]),
    makeCase('k=1 17x1 @ 1x9', [17, 1], [1, 9]),
    makeCase('x @ W.T 40x36 @ (52x36).T', [40, 36], [52, 36], undefined, T),
    makeCase('batched [3] 20x24 @ 24x36', [3, 20, 24], [3, 24, 36]),
    makeCase('offset and step views', [40, 70], [35, 66], (t) => t.slice(1, 1, 67, 2), (t) => t.slice(0, 2, 35).slice(1, 3, 64)),
    makeCase('long k 16x1000 @ 1000x24', [16, 1000], [1000, 24]),
    makeCase('int32 70x33 @ 33x45', [70, 33], [33, 45], undefined, undefined, 'int32'),
  ];
  const refs = cases.map(reference);
  const f32 = await Promise.all(cases.map(async (c) => Array.from(await onGpu(() => kiln.matmul(c.ga, c.gb)).data())));
  // a rendered kernel says what it does: f16 tiles for float32, none for int32
  for (const k of [mm(70, 33, 45, {}, {}), mm(64, 32, 48, {}, { sRow: 1, sCol: 32 })]) {
    const wgsl = renderMatmul(k, new Map(), DEFAULT_MATMUL_CONFIG, 'f16').code;
    assert.match(wgsl, /^enable f16;/);
    assert.match(wgsl, /var<workgroup> As: array<vec4<f16>, /);
    assert.doesNotMatch(renderMatmul(k, new Map(), DEFAULT_MATMUL_CONFIG).code, /f16/);
  }
  assert.doesNotMatch(renderMatmul(mm(8, 8, 8, {}, {}, { dtype: 'int32' }), new Map(), DEFAULT_MATMUL_CONFIG, 'f16').code, /f16/);
  const list = configs().filter((c) => ['64x64x16/4x4', '32x32x16/4x4', '128x128x16/8x8+pf'].includes(configName(c)));
  let differs = 0;
  gpu!.matmulPrecision = 'f16';
  try {
    await eachConfigAndCase(list, cases, (cfg, i, got) => {
      const c = cases[i]!, r = refs[i]!;
      const label = `f16 ${configName(cfg)} ${c.label}`;
      if (c.a.dtype === 'int32') return assert.deepEqual(Array.from(got), Array.from(r.want), `${label}: integers never go through f16`);
      // each operand rounds to a neighbouring f16 (relative 2^-10; subnormals below 2^-14 absolute
      // 2^-24), the f32 products of f16 values are exact, the sums round as in float32
      assertClose(got as Float32Array, r.want, (j) => 1e-5 + r.k * 2 ** -24 * 8 + (2.1 * 2 ** -10 + 2 * (r.k + 2) * 2 ** -24) * r.mag[j]!, label);
      differs += Array.from(got).filter((v, j) => v !== f32[i]![j]).length;
    });
  } finally {
    gpu!.matmulPrecision = 'float32';
  }
  assert.ok(differs > 0, 'the f16 tiles change results (the f16 path ran)');
  // back to float32: the float32 results again, bit for bit
  const again = Array.from(await onGpu(() => kiln.matmul(cases[0]!.ga, cases[0]!.gb)).data());
  assert.deepEqual(again, f32[0]);
  console.log(`# f16 tiles: ${list.map(configName).join(', ')} x ${cases.length} cases; ${differs} elements differ from float32`);
});

test(`webgpu matmul: fused epilogues in compiled programs, every configuration (seed ${seed})`, { skip }, async () => {
  kiln.manualSeed(seed + 1);
  const host = onCpu(() => ({
    x: kiln.keep(kiln.randn([50, 36])), w: kiln.keep(kiln.randn([44, 36]).mul(0.2)), bias: kiln.keep(kiln.randn([44])),
    r: kiln.keep(kiln.randn([50, 44])), s: kiln.keep(kiln.randn([36, 36])), ba: kiln.keep(kiln.randn([2, 10, 12])), bb: kiln.keep(kiln.randn([2, 12, 7])),
  }));
  const dev = Object.fromEntries(Object.entries(host).map(([k, t]) => [k, kiln.keep(kiln.toBackend(t, gpu!))])) as typeof host;
  // Linear + GELU(tanh) + residual; the epilogue reading A's own buffer; a batched epilogue
  const fns: [string, (t: typeof host) => kiln.Tensor][] = [
    ['gelu(x @ W.T + b) + r', (t) => kiln.gelu(kiln.linear(t.x, t.w, t.bias), 'tanh').add(t.r)],
    ['s @ s + s (A read by the epilogue)', (t) => kiln.matmul(t.s, t.s).add(t.s)],
    ['relu(batched) * 2', (t) => kiln.matmul(t.ba, t.bb).relu().mul(2)],
  ];
  const wants = fns.map(([, f]) => onCpu(() => kiln.scope(() => Float64Array.from(f(Object.fromEntries(Object.entries(host).map(([k, t]) => [k, t.double()])) as typeof host).dataSync() as Float64Array))));
  try {
    for (const cfg of configs()) {
      gpu!.matmulConfig = cfg;
      for (let i = 0; i < fns.length; i++) {
        const [label, f] = fns[i]!;
        const compiled = kiln.compile(() => f(dev), { backend: 'webgpu', fullgraph: true, name: `epi${i}` });
        const out = onGpu(() => compiled() as kiln.Tensor);
        const got = await out.data();
        out.dispose();
        const want = wants[i]!;
        assertClose(got as Float32Array, want, (j) => 1e-4 * (1 + Math.abs(want[j]!)), `${configName(cfg)} ${label}`);
      }
    }
  } finally {
    gpu!.matmulConfig = null;
  }
});

test('webgpu: float64 matmuls still raise the dtype error', { skip }, () => {
  const a = onGpu(() => kiln.toBackend(onCpu(() => kiln.randn([4, 4]).double()), gpu!));
  assert.throws(() => onGpu(() => kiln.matmul(a, a)), /float64 is not supported on webgpu/);
});

// ---- max-autotune on WebGPU ----

test(`webgpu max-autotune: gpu.autotune measures, records the decision, and results equal the default's (seed ${seed})`, { skip }, async () => {
  kiln.manualSeed(seed + 2);
  const host = onCpu(() => ({ x: kiln.keep(kiln.randn([72, 40])), w1: kiln.keep(kiln.randn([96, 40]).mul(0.2)), w2: kiln.keep(kiln.randn([40, 96]).mul(0.2)) }));
  const { x, w1, w2 } = Object.fromEntries(Object.entries(host).map(([k, t]) => [k, kiln.keep(kiln.toBackend(t, gpu!))])) as typeof host;
  const fn = (x: kiln.Tensor) => kiln.matmul(kiln.gelu(kiln.matmul(x, w1.transpose(0, 1)), 'tanh'), w2.transpose(0, 1)).add(x);
  const candidates = ['64x64x16/4x4', '32x32x16/4x4', '128x64x16/8x4'];

  // before measuring: the default, and the decision says so
  const before = onGpu(() => kiln.explain(fn, { backend: 'webgpu', mode: 'max-autotune', print: false })(x));
  const pre = before.graphs[0]!.fusion!;
  assert.match(pre, /autotuned .*on webgpu: default 64x64x16\/4x4 for now \(not measured/);
  assert.equal((pre.match(/autotuned/g) ?? []).length, 2, 'one decision per matmul');

  const f = kiln.compile(fn, { backend: 'webgpu', mode: 'max-autotune', fullgraph: true });
  const report = await onGpu(() => gpu!.autotune(f, [x], { candidates, repeats: 1, targetMs: 2 }));
  assert.equal(report.measured.length, 2, report.text);
  for (const r of report.measured) {
    assert.ok(candidates.includes(r.chosen), `${r.chosen} is a candidate`);
    assert.equal(r.candidates.length, 3);
    assert.ok(r.candidates.every((c) => c.ms !== null && c.ms > 0), JSON.stringify(r.candidates));
    const best = Math.min(...r.candidates.map((c) => c.ms!));
    assert.equal(r.candidates.find((c) => c.config === r.chosen)!.ms, best, 'the fastest is chosen');
    assert.equal(r.timing, gpu!.canProfile ? 'timestamp-query' : 'wall clock');
  }
  console.log(`# autotune (${report.ms.toFixed(0)} ms):\n${report.text.replace(/^/gm, '#   ')}`);
  // measured once: nothing left
  assert.equal((await gpu!.autotune()).measured.length, 0);

  // the tuned program equals the default configuration's results
  const plain = kiln.compile(fn, { backend: 'webgpu', fullgraph: true });
  const base = (await callOnGpu(() => plain(x) as kiln.Tensor)).values;
  const tuned = await callOnGpu(() => f(x) as kiln.Tensor);
  assertClose(tuned.values, base, (j) => 1e-5 * (1 + Math.abs(base[j]!)), 'tuned vs default');

  // measuring again (force) with one candidate: the winners' pipelines (made while measuring)
  // join the backend's cache, and the existing program renders them at its next call
  const only = '128x64x16/8x4+pf';
  const pipelines = gpu!.stats.pipelines;
  const again = await gpu!.autotune(undefined, [], { force: true, candidates: [only], includeDefault: false, repeats: 1, targetMs: 1 });
  assert.deepEqual(again.measured.map((r) => r.chosen), [only, only]);
  assert.equal(gpu!.stats.pipelines - pipelines, 2, 'the two winners are cached');
  const retuned = await callOnGpu(() => f(x) as kiln.Tensor);
  assert.equal(gpu!.stats.pipelines - pipelines, 2, 'the program found the winners in the cache');
  assert.equal(added(retuned.pipes, tuned.pipes), 2, 'both matmuls run new pipelines');
  assertClose(retuned.values, base, (j) => 1e-5 * (1 + Math.abs(base[j]!)), 'retuned vs default');

  // the decision names the winner (a new compile of the same shapes takes it at once)
  const afterExplain = onGpu(() => kiln.explain(fn, { backend: 'webgpu', mode: 'max-autotune', print: false })(x));
  const post = afterExplain.graphs[0]!.fusion!;
  assert.equal((post.match(new RegExp(`on webgpu: ${only.replace(/\+/g, '\\+')} \\(.*measured with`, 'g')) ?? []).length, 2, post);

  // a winner holds for the precision it was measured at: with f16 tiles both keys wait again
  if (!gpu!.hasShaderF16) return;
  gpu!.matmulPrecision = 'f16';
  try {
    assert.equal(gpu!.tuner.pending, 2, 'not measured with f16 tiles yet');
    const half = await gpu!.autotune(undefined, [], { candidates: ['32x32x16/4x4'], includeDefault: false, repeats: 1, targetMs: 1 });
    assert.deepEqual(half.measured.map((r) => [r.chosen, r.precision]), [['32x32x16/4x4', 'f16'], ['32x32x16/4x4', 'f16']]);
    const h = await callOnGpu(() => f(x) as kiln.Tensor);
    assertClose(h.values, base, (j) => 2e-2 * (1 + Math.abs(base[j]!)), 'f16 tiles vs float32 default');
  } finally {
    gpu!.matmulPrecision = 'float32';
  }
  // back to float32: its winners are still known, nothing to measure
  assert.equal(gpu!.tuner.pending, 0);
  assert.equal((await gpu!.autotune()).measured.length, 0);
  const back = await callOnGpu(() => f(x) as kiln.Tensor);
  assert.deepEqual(back.values, retuned.values, 'the float32 winners again, bit for bit');
});

// ---- reduce-overhead after a configuration change ----

test(`webgpu reduce-overhead: after gpu.matmulConfig changes, a prerecorded program rebuilds at its next call and runs the default mode's new pipelines, with its numbers (seed ${seed})`, { skip }, async () => {
  kiln.manualSeed(seed + 3);
  const host = onCpu(() => ({ x: kiln.keep(kiln.randn([72, 40])), w: kiln.keep(kiln.randn([96, 40]).mul(0.2)) }));
  const x = kiln.keep(kiln.toBackend(host.x, gpu!)), w = kiln.keep(kiln.toBackend(host.w, gpu!));
  // two matmuls (one with a relu epilogue) and a row reduction
  const fn = (t: kiln.Tensor) => kiln.matmul(kiln.matmul(t, w.transpose(0, 1)).relu(), w).sum(1);
  const f = kiln.compile(fn, { backend: 'webgpu', fullgraph: true, mode: 'reduce-overhead', name: 'ro_mm' });
  const g = kiln.compile(fn, { backend: 'webgpu', fullgraph: true, name: 'plain_mm' });
  const logged: string[] = [];
  const saved = console.error;
  const prerecorded = async (h: typeof f) => {
    const n = gpu!.stats.prerecordedRuns;
    const r = await callOnGpu(() => h(x));
    return { ...r, prerecorded: gpu!.stats.prerecordedRuns - n };
  };
  try {
    kiln.compiler.setLogs('perf');
    console.error = (...m: unknown[]) => void logged.push(m.join(' '));
    const plain0 = await prerecorded(g);
    await prerecorded(f);
    const ro0 = await prerecorded(f);
    assert.equal(ro0.prerecorded, 1);
    assert.ok(sameSet(ro0.pipes, plain0.pipes), 'the same pipelines as the default mode');
    assert.deepEqual(ro0.values, plain0.values);

    gpu!.matmulConfig = parseConfig('32x32x16/4x4');
    // the prerecorded program first: its rebuild renders the new configuration
    const ro1 = await prerecorded(f);
    const plain1 = await prerecorded(g);
    assert.equal(ro1.prerecorded, 1, 'still prerecorded');
    assert.equal(added(ro1.pipes, ro0.pipes), 2, 'both matmuls run new pipelines (the row kernel keeps its own)');
    assert.ok(sameSet(ro1.pipes, plain1.pipes), 'the pipelines the default mode renders for the new configuration');
    assert.deepEqual(ro1.values, plain1.values, 'the default mode\'s numbers, bit for bit');
    assertClose(ro1.values, ro0.values, (j) => 1e-5 * (1 + Math.abs(ro0.values[j]!)), '32x32 vs the default configuration');
    const last = logged.filter((l) => /reduce-overhead on webgpu/.test(l)).at(-1) ?? '';
    assert.match(last, /rebuilt 1x, last for gpu\.matmulConfig set to 32x32x16\/4x4/, logged.join('\n'));

    // cleared: back to the default configuration's pipelines at the next call
    gpu!.matmulConfig = null;
    const ro2 = await prerecorded(f);
    assert.ok(sameSet(ro2.pipes, ro0.pipes), 'the default configuration again');
    assert.deepEqual(ro2.values, ro0.values);
    // unchanged since: no rebuild
    const summary = logged.filter((l) => /reduce-overhead on webgpu/.test(l)).at(-1);
    assert.ok(sameSet((await prerecorded(f)).pipes, ro0.pipes));
    assert.equal(logged.filter((l) => /reduce-overhead on webgpu/.test(l)).at(-1), summary);
    assert.match(summary ?? '', /rebuilt 2x, last for gpu\.matmulConfig cleared/);
  } finally {
    console.error = saved;
    kiln.compiler.setLogs([]);
    gpu!.matmulConfig = null;
    [x, w, host.x, host.w].forEach((t) => t.dispose());
  }
});

test('webgpu reduce-overhead: a prerecorded max-autotune matmul runs the winner after gpu.autotune measures it; a candidate whose WGSL fails is reported with the typed error', { skip }, async () => {
  // a recording of one tracked matmul, made through the backend (the compiler makes reduce-overhead
  // and max-autotune programs apart; the backend's recording holds whatever kernels it is given)
  const [m, kk, n] = [24, 16, 20];
  const k = mm(m, kk, n, {}, {}, { name: 'mm_ro_tuned' });
  const lowered = { steps: [{ kind: 'kernel', kernel: k }], buffers: [{ id: 0, dtype: 'float32', size: m * n }, { id: 1, dtype: 'float32', size: m * kk }, { id: 2, dtype: 'float32', size: kk * n }], inputBuffers: [1, 2], outputs: [], decisions: [] } as unknown as Lowered;
  gpu!.autotuneProgram(lowered);
  const rec = gpu!.recordProgram([{ prepared: gpu!.prepare({ kind: 'loop', kernel: k, nBuffers: 3 }) }], [0, 1, 2]);
  kiln.manualSeed(seed + 4);
  const [a, b] = onCpu(() => [kiln.randn([m, kk]), kiln.randn([kk, n])]);
  const want = onCpu(() => kiln.scope(() => Float64Array.from(kiln.matmul(a.double(), b.double()).dataSync() as Float64Array)));
  const bufs = [gpu!.alloc('float32', m * n), gpu!.alloc('float32', m * kk), gpu!.alloc('float32', kk * n)];
  gpu!.write(bufs[1]!, a.dataSync());
  gpu!.write(bufs[2]!, b.dataSync());
  const pipelineOf = (cfg: MatmulConfig) => {
    const w = renderMatmul(k, new Map(), cfg);
    return (gpu as unknown as { pipeline(code: string, writable: readonly boolean[]): unknown }).pipeline(w.code, w.writable);
  };
  const run = async () => {
    const pipes = encodedPipelines(() => rec.run!(bufs, () => assert.fail('no opaque step')));
    return { pipes: [...pipes], values: await gpu!.read(bufs[0]!) };
  };
  // one candidate's WGSL broken on its way to the backend: the device rejects it
  const g = gpu as unknown as { tryCompile(w: WgslKernel): Promise<unknown> };
  const tryCompile = g.tryCompile;
  g.tryCompile = function (this: unknown, w: WgslKernel) {
    return tryCompile.call(this, /matmul 128x64x16\/8x4:/.test(w.code) ? { ...w, code: `${w.code}\nfn broken() { let v: f32 = undefined_thing; }\n` } : w);
  };
  try {
    const r0 = await run();
    assert.deepEqual(r0.pipes, [pipelineOf(DEFAULT_MATMUL_CONFIG)], 'the default configuration while unmeasured');
    assertClose(r0.values, want, (j) => 1e-4 * (1 + Math.abs(want[j]!)), 'default');

    const report = await gpu!.autotune(undefined, [], { candidates: ['128x64x16/8x4', '32x32x16/4x4'], includeDefault: false, repeats: 1, targetMs: 1 });
    const r = report.measured.find((x) => x.kernel === 'mm_ro_tuned');
    assert.ok(r, report.text);
    assert.equal(r.chosen, '32x32x16/4x4');
    assert.equal(r.timing, gpu!.canProfile ? 'timestamp-query' : 'wall clock');
    const failed = r.candidates.find((c) => c.config === '128x64x16/8x4')!;
    assert.equal(failed.ms, null);
    assert.match(failed.error ?? '', /^webgpu: WGSL rejected at line \d+: [^\n]*undefined_thing[^\n]*$/, 'the first line of the backend\'s WebGpuShaderError');
    await gpu!.sync(); // the rejected candidate is no pending error

    const pipelines = gpu!.stats.pipelines;
    const r1 = await run();
    assert.deepEqual(r1.pipes, [pipelineOf(parseConfig('32x32x16/4x4'))], 'the winner at the next call');
    assert.equal(gpu!.stats.pipelines, pipelines, 'its pipeline made while measuring');
    assert.match(rec.summary, /rebuilt 1x, last for max-autotune measured/);
    assertClose(r1.values, want, (j) => 1e-4 * (1 + Math.abs(want[j]!)), 'winner');
  } finally {
    Reflect.deleteProperty(g, 'tryCompile');
    bufs.forEach((buf) => gpu!.free(buf));
    [a, b].forEach((t) => t.dispose());
  }
});

// ---- timestamp profiling ----

test('kiln.profile on webgpu: device time per kernel of the program from timestamps, the typed error without', { skip }, async () => {
  kiln.compiler.reset();
  const x = onGpu(() => kiln.keep(kiln.toBackend(onCpu(() => kiln.randn([64, 48])), gpu!)));
  const f = kiln.compile((x: kiln.Tensor) => kiln.matmul(x, x.transpose(0, 1)).relu().sum(1), { backend: 'webgpu', fullgraph: true, name: 'kprof' });
  onGpu(() => kiln.scope(() => void f(x)));
  const run = () => onGpu(() => kiln.profile(() => onGpu(() => f(x)), { runs: 2, floors: { gbps: 100, gflops: 1000 } })()) as Promise<kiln.ProfileReport>;
  if (!gpu!.canProfile) {
    await assert.rejects(run(), (e: Error) => e instanceof kiln.WebGpuUnsupportedError && /timestamp-query/.test(e.message));
    return;
  }
  const r = await run();
  assert.equal(r.deviceTimed, true);
  const kernels = [...(f.compiled.report!.graphs[0]!.program ?? '').matchAll(/^kernel (\S+):/gm)].map((m) => m[1]);
  assert.deepEqual(r.kernels.map((k) => k.name), kernels, r.table());
  for (const k of r.kernels) assert.ok(k.calls === 2 && Number.isFinite(k.msPerCall) && k.msPerCall >= 0, JSON.stringify(k));
  assert.ok(r.kernelMs > 0, r.table());
  const trace = JSON.parse(JSON.stringify(r.chromeTrace())) as kiln.ChromeTrace;
  assert.ok(trace.traceEvents.some((e) => e.cat === 'device'), 'device-time events on their own track');
  console.log(r.table().replace(/^/gm, '# '));
  assertCompiledRan('profiled webgpu program');
});

test('webgpu profile: per-dispatch GPU time with timestamp-query, a typed error without', { skip }, async () => {
  const x = onGpu(() => kiln.keep(kiln.toBackend(onCpu(() => kiln.randn([64, 48])), gpu!)));
  const f = kiln.compile((x: kiln.Tensor) => kiln.matmul(x, x.transpose(0, 1)).relu().sum(1), { backend: 'webgpu', fullgraph: true, name: 'prof' });
  onGpu(() => kiln.scope(() => void f(x)));
  if (!gpu!.canProfile) {
    await assert.rejects(gpu!.profile(() => onGpu(() => kiln.scope(() => void f(x)))), (e: Error) => e instanceof kiln.WebGpuUnsupportedError && /timestamp-query/.test(e.message));
    console.log(`# no timestamp-query on ${gpu!.adapterInfo}: profile() raises WebGpuUnsupportedError`);
    return;
  }
  const p = await gpu!.profile(() => onGpu(() => kiln.scope(() => void f(x))));
  assert.ok(p.dispatches.length >= 2, p.text);
  assert.ok(p.dispatches.every((d) => Number.isFinite(d.ns) && d.ns >= 0), p.text);
  assert.ok(p.dispatches.some((d) => /matmul|mm/.test(d.kernel)), p.text);
  console.log(p.text.replace(/^/gm, '# '));
  // results after profiling are unaffected, and the backend encodes normally again
  const s0 = gpu!.stats.submits;
  await onGpu(() => kiln.scope(() => kiln.keep(f(x) as kiln.Tensor))).data();
  assert.ok(gpu!.stats.submits - s0 <= 2);
});
