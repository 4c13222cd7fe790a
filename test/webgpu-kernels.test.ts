// WebGPU kernels of issue 10: vec4 pointwise kernels (render-pointwise.ts) and random numbers
// drawn on the GPU (render-random.ts).
//
//  - vec4: which kernels qualify (pure, no adapter needed); eager and compiled results of the
//    vec4 kernels equal the scalar kernels bit for bit and a float64 reference within float32
//    tolerance, on shapes that qualify and shapes that do not (sizes not multiple of 4,
//    broadcasts, transposed views, offsets), W4-style chains, in-place updates, several vec4 per
//    invocation;
//  - random: uniform and randint bit-identical to the CPU backend across seeds, offsets not
//    multiple of 4 (also counters past 2^32), sizes 1..1000, on the GPU path and the host path;
//    normals within NORMAL_TOLERANCE (bit-identical with hostNormals); dropout in a compiled
//    program is one submit per call.
//
// Seeds are fresh each run and printed in the test names.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { webGpuForTests } from './helpers/webgpu-backend.js';
import { coalescePointwise, pointwiseConfig, pointwiseStats, vec4Plan } from '../src/backend/webgpu/render-pointwise.js';
import { gpuIntegerExact, NORMAL_TOLERANCE } from '../src/backend/webgpu/render-random.js';
import { grid1d } from '../src/backend/webgpu/wgsl-common.js';
import { defaultGenerator } from '../src/core/random.js';
import type { Affine, LExpr, PointwiseKernel } from '../src/ir/loop-ir.js';

const { cpu, gpu, skip } = await webGpuForTests(() => {
  pointwiseConfig.vec4 = true;
  pointwiseConfig.vec4PerInvocation = 1;
});

const seed = Math.floor(Math.random() * 2 ** 31);
/** a small deterministic generator for the test's own choices */
function rng(s: number): () => number {
  let x = s >>> 0 || 1;
  return () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

const onCpu = <T>(fn: () => T): T => {
  kiln.setDefaultBackend(cpu);
  return fn();
};
async function onGpu<T>(fn: () => T | Promise<T>): Promise<T> {
  kiln.setDefaultBackend(gpu!);
  try {
    return await fn();
  } finally {
    kiln.setDefaultBackend(cpu);
  }
}
const sameBits = (a: ArrayLike<number>, b: ArrayLike<number>, what: string) => {
  assert.equal(a.length, b.length, what);
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) assert.fail(`${what}: element ${i}: ${a[i]} vs ${b[i]}`);
};
const close = (got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what: string) => {
  assert.equal(got.length, want.length, what);
  for (let i = 0; i < got.length; i++) {
    const g = got[i]!, w = want[i]!;
    if (Number.isNaN(g) && Number.isNaN(w)) continue;
    if (!(Math.abs(g - w) <= tol * Math.max(1, Math.abs(w)))) assert.fail(`${what}: element ${i}: ${g} vs ${w}`);
  }
};

// ---- which kernels qualify (no adapter needed) ----

const load = (buf: number, c: number[], o = 0): LExpr => ({ k: 'load', buf, at: { c, o }, dtype: 'float32' });
const kernel = (shape: number[], store: Affine, value: LExpr): PointwiseKernel => ({
  kind: 'pointwise', name: 'k', shape, body: [], stores: [{ buf: 0, at: store, value, dtype: 'float32', node: 0 }],
});
const add = (a: LExpr, b: LExpr): LExpr => ({ k: 'op', op: 'add', a: [a, b], dtype: 'float32' });

test('vec4 plan: contiguous aligned accesses and inner broadcasts qualify; odd sizes, transposes, strides and unaligned offsets do not', () => {
  const none = new Map<number, number>();
  const q = (k: PointwiseKernel) => vec4Plan(k, none);
  // [6, 8] contiguous plus a row broadcast (stride 0 along the inner dim)
  const a = q(kernel([6, 8], { c: [8, 1], o: 0 }, add(load(1, [8, 1]), load(2, [1, 0]))));
  assert.ok(a);
  assert.deepEqual([...a.vecBufs].sort(), [0, 1], 'the broadcast operand stays a scalar binding');
  assert.deepEqual(a.kernel.shape, [6, 8]);
  // [6, 10] contiguous: merged to [60] (a multiple of 4)
  assert.deepEqual(q(kernel([6, 10], { c: [10, 1], o: 0 }, load(1, [10, 1])))?.kernel.shape, [60]);
  // [7, 5]: 35 elements
  assert.equal(q(kernel([7, 5], { c: [5, 1], o: 0 }, load(1, [5, 1]))), null);
  // transposed operand
  assert.equal(q(kernel([8, 8], { c: [8, 1], o: 0 }, load(1, [1, 8]))), null);
  // stride 2 along the inner dim
  assert.equal(q(kernel([8, 8], { c: [8, 1], o: 0 }, load(1, [16, 2]))), null);
  // offsets: aligned (a narrow at column 4 of 16) qualifies, column 1 does not
  assert.ok(q(kernel([9, 8], { c: [8, 1], o: 0 }, load(1, [16, 1], 4))));
  assert.equal(q(kernel([9, 8], { c: [8, 1], o: 0 }, load(1, [16, 1], 1))), null);
  // an outer stride not a multiple of 4 (rows of 18, 8 used)
  assert.equal(q(kernel([9, 8], { c: [8, 1], o: 0 }, load(1, [18, 1]))), null);
  // the store unaligned
  assert.equal(q(kernel([9, 8], { c: [8, 1], o: 2 }, load(1, [8, 1]))), null);
  // an unaligned broadcast is fine (read as a scalar)
  assert.ok(q(kernel([9, 8], { c: [8, 1], o: 0 }, add(load(1, [8, 1]), load(2, [3, 0], 5)))));
  // 0-d and empty
  assert.equal(q(kernel([], { c: [], o: 0 }, load(1, []))), null);
  assert.equal(q(kernel([0, 4], { c: [4, 1], o: 0 }, load(1, [4, 1]))), null);
  // size-1 dims are dropped by coalescing
  assert.deepEqual(coalescePointwise(kernel([3, 1, 4], { c: [4, 4, 1], o: 0 }, load(1, [4, 0, 1]))).shape, [12]);
});

test('dispatch grids: balanced over y when the groups exceed 65535 per dimension', () => {
  assert.deepEqual(grid1d(1), [1, 1, 1]);
  assert.deepEqual(grid1d(65535), [65535, 1, 1]);
  assert.deepEqual(grid1d(65536), [32768, 2, 1]);
  for (const g of [65536, 131071, 262144, 1e6, 4e6]) {
    const [x, y] = grid1d(g);
    assert.ok(x <= 65535 && y <= 65535 && x * y >= g && x * y - g < y, `${g}: ${x}x${y}`);
  }
});

// ---- vec4 pointwise on the GPU ----

/** Runs `fn` eagerly on the GPU with the vec4 renderer on and off; returns both results and how many vec4 kernels rendered. */
async function bothWays(fn: () => kiln.Tensor): Promise<{ vec: Float32Array | Int32Array | Uint8Array; scalar: Float32Array | Int32Array | Uint8Array; vec4Kernels: number }> {
  const s0 = pointwiseStats.vec4;
  pointwiseConfig.vec4 = true;
  const vec = (await onGpu(() => kiln.scope(() => kiln.keep(fn())).data())) as Float32Array;
  const vec4Kernels = pointwiseStats.vec4 - s0;
  pointwiseConfig.vec4 = false;
  try {
    const scalar = (await onGpu(() => kiln.scope(() => kiln.keep(fn())).data())) as Float32Array;
    return { vec, scalar, vec4Kernels };
  } finally {
    pointwiseConfig.vec4 = true;
  }
}

const toGpu = (t: kiln.Tensor) => kiln.keep(kiln.toBackend(t, gpu!));

test(`vec4 eager pointwise kernels equal the scalar kernels bit for bit and a float64 reference (seed ${seed})`, { skip }, async () => {
  const r = rng(seed);
  const data = (n: number) => Float32Array.from({ length: n }, () => (r() - 0.5) * 8);
  const T = (shape: number[]) => onCpu(() => kiln.tensor(data(shape.reduce((a, b) => a * b, 1)), shape));
  type Case = { name: string; inputs: kiln.Tensor[]; f: (xs: kiln.Tensor[]) => kiln.Tensor; vec4: boolean };
  const base = T([9, 16]);
  const cases: Case[] = [
    { name: 'W4 chain, [37, 16]', inputs: [T([37, 16])], f: ([x]) => x!.mul(1.5).add(0.3).tanh().mul(x!.sigmoid()).sub(x!.mul(0.1)), vec4: true },
    { name: 'row broadcast [5, 12] + [12]', inputs: [T([5, 12]), T([12])], f: ([x, b]) => x!.add(b!).mul(x!), vec4: true },
    { name: 'column broadcast [5, 12] * [5, 1]', inputs: [T([5, 12]), T([5, 1])], f: ([x, c]) => x!.mul(c!).exp(), vec4: true },
    { name: 'scalar broadcast [3, 4, 8] / [1]', inputs: [T([3, 4, 8]), T([1])], f: ([x, s]) => x!.div(s!), vec4: true },
    { name: '[6, 10]: merged to 60 elements', inputs: [T([6, 10])], f: ([x]) => x!.square().sqrt(), vec4: true },
    { name: '[7, 13]: 91 elements', inputs: [T([7, 13])], f: ([x]) => x!.mul(2).add(1).relu(), vec4: false },
    { name: '[1001]', inputs: [T([1001])], f: ([x]) => x!.sin().mul(x!.cos()), vec4: false },
    // (one kernel each: a second op on their contiguous results would be a vec4 kernel)
    { name: 'transposed [16, 8]^T', inputs: [T([16, 8])], f: ([x]) => x!.transpose(0, 1).mul(3), vec4: false },
    { name: 'transposed [16, 8]^T plus contiguous', inputs: [T([16, 8]), T([8, 16])], f: ([x, y]) => x!.transpose(0, 1).add(y!), vec4: false },
    { name: 'narrow at column 4 of 16 (aligned offset)', inputs: [base], f: ([x]) => x!.narrow(1, 4, 8).mul(-2).add(0.5), vec4: true },
    { name: 'narrow at column 1 of 16 (unaligned offset)', inputs: [base], f: ([x]) => x!.narrow(1, 1, 8).mul(-2), vec4: false },
    { name: 'narrow at row 3 (offset 48)', inputs: [base], f: ([x]) => x!.narrow(0, 3, 5).log1p(), vec4: true },
  ];
  for (const c of cases) {
    const ins = c.inputs.map(toGpu);
    const got = await bothWays(() => c.f(ins));
    sameBits(got.vec, got.scalar, `${c.name}: vec4 vs scalar`);
    assert.equal(got.vec4Kernels > 0, c.vec4, `${c.name}: ${c.vec4 ? 'renders' : 'does not render'} a vec4 kernel (${got.vec4Kernels})`);
    const want = onCpu(() => c.f(c.inputs.map((t) => t.double())).dataSync());
    close(got.vec, want, 2e-5, `${c.name}: vs float64`);
    ins.forEach((t) => t.dispose());
  }
});

test(`vec4 kernels of int32 and bool tensors (vec4<i32>, vec4<u32>) equal the scalar kernels (seed ${seed})`, { skip }, async () => {
  const r = rng(seed + 1);
  const ints = onCpu(() => kiln.tensor(Int32Array.from({ length: 96 }, () => Math.floor(r() * 200 - 100)), [8, 12], { dtype: 'int32' }));
  const floats = onCpu(() => kiln.tensor(Float32Array.from({ length: 96 }, () => r() - 0.5), [8, 12]));
  const [gi, gf] = [ints, floats].map(toGpu);
  const cases: [string, () => kiln.Tensor, () => kiln.Tensor][] = [
    ['int32 add/mul', () => gi!.add(gi!).mul(3), () => ints.add(ints).mul(3)],
    ['bool compare', () => gf!.gt(0), () => floats.gt(0)],
    ['where over bool', () => kiln.where(gf!.gt(0), gf!, gi!.float()), () => kiln.where(floats.gt(0), floats, ints.float())],
    ['logical and of bools', () => kiln.logicalAnd(gf!.gt(0), gi!.lt(0)), () => kiln.logicalAnd(floats.gt(0), ints.lt(0))],
  ];
  for (const [name, g, c] of cases) {
    const got = await bothWays(g);
    assert.ok(got.vec4Kernels > 0, name);
    sameBits(got.vec, got.scalar, `${name}: vec4 vs scalar`);
    sameBits(Array.from(got.vec), Array.from(onCpu(c).dataSync()), `${name}: vs CPU`);
  }
  [gi, gf].forEach((t) => t!.dispose());
});

test(`compiled W4-style chains: vec4 programs equal scalar programs bit for bit and float64 within tolerance, also with several vec4 per invocation (seed ${seed})`, { skip }, async () => {
  const r = rng(seed + 2);
  const w4 = (x: kiln.Tensor, b: kiln.Tensor) => kiln.sub(kiln.mul(kiln.tanh(kiln.add(kiln.mul(x, 1.5), 0.3)), kiln.sigmoid(x)), kiln.mul(x, 0.1)).add(b);
  const ref = (x: number, b: number) => Math.tanh(x * 1.5 + 0.3) * (1 / (1 + Math.exp(-x))) - 0.1 * x + b;
  for (const [shape, bshape, expectVec] of [[[1 << 16], [1], true], [[1000, 3], [1, 3], false], [[999], [1], false], [[250, 12], [12], true], [[40, 4, 6], [40, 1, 1], true]] as [number[], number[], boolean][]) {
    const n = shape.reduce((a, b) => a * b, 1), nb = bshape.reduce((a, b) => a * b, 1);
    const xs = Float32Array.from({ length: n }, () => (r() - 0.5) * 10), bs = Float32Array.from({ length: nb }, () => r() - 0.5);
    const [x, b] = [onCpu(() => kiln.tensor(xs, shape)), onCpu(() => kiln.tensor(bs, bshape))].map(toGpu);
    const results: Float32Array[] = [];
    for (const [vec, per] of [[true, 1], [false, 1], [true, 3]] as [boolean, number][]) {
      pointwiseConfig.vec4 = vec;
      pointwiseConfig.vec4PerInvocation = per;
      kiln.compiler.reset();
      const s0 = pointwiseStats.vec4;
      const f = kiln.compile(w4, { backend: 'webgpu', fullgraph: true });
      results.push((await onGpu(() => kiln.scope(() => kiln.keep(f(x!, b!) as kiln.Tensor)).data())) as Float32Array);
      if (vec) assert.equal(pointwiseStats.vec4 > s0, expectVec, `[${shape}] + [${bshape}]: vec4 kernel`);
    }
    pointwiseConfig.vec4 = true;
    pointwiseConfig.vec4PerInvocation = 1;
    sameBits(results[0]!, results[1]!, `[${shape}]: vec4 vs scalar`);
    sameBits(results[2]!, results[1]!, `[${shape}]: 3 vec4 per invocation vs scalar`);
    const bidx = (i: number) => {
      // broadcast index of element i into b (b's shape is 1 or the trailing dims)
      if (nb === 1) return 0;
      if (bshape.length === 1 || bshape[bshape.length - 1] !== 1) return i % nb;
      return Math.floor(i / (n / nb));
    };
    close(results[0]!, Array.from(xs, (v, i) => ref(v, bs[bidx(i)]!)), 2e-5, `[${shape}]: vs float64`);
    [x, b].forEach((t) => t!.dispose());
  }
});

test(`an in-place update compiled with vec4 kernels equals the scalar kernels (seed ${seed})`, { skip }, async () => {
  const r = rng(seed + 3);
  const p0 = Float32Array.from({ length: 64 * 8 }, () => r() - 0.5), g0 = Float32Array.from({ length: 64 * 8 }, () => r() - 0.5);
  const runs: Float32Array[] = [];
  for (const vec of [true, false]) {
    pointwiseConfig.vec4 = vec;
    kiln.compiler.reset();
    const p = toGpu(onCpu(() => kiln.tensor(p0, [64, 8])));
    const g = toGpu(onCpu(() => kiln.tensor(g0, [64, 8])));
    const step = kiln.compile((grad: kiln.Tensor) => {
      p.sub_(grad.mul(0.1).add(p.mul(0.01)));
      return p.sum();
    }, { backend: 'webgpu', fullgraph: true });
    await onGpu(async () => {
      for (let i = 0; i < 3; i++) kiln.scope(() => step(g));
    });
    runs.push((await p.data()) as Float32Array);
    [p, g].forEach((t) => t.dispose());
  }
  pointwiseConfig.vec4 = true;
  sameBits(runs[0]!, runs[1]!, 'vec4 vs scalar');
  let want = Float64Array.from(p0);
  for (let i = 0; i < 3; i++) want = want.map((v, j) => v - (g0[j]! * 0.1 + v * 0.01));
  close(runs[0]!, want, 1e-5, 'vs float64');
});

// ---- random numbers on the GPU ----

/** Draws on `dev` from (s, offset): the generator state set directly (offsets past 2^32 counters too). */
function drawAt(dev: kiln.Backend, s: number, offset: number, fn: () => kiln.Tensor): kiln.Tensor {
  kiln.setDefaultBackend(dev);
  defaultGenerator.setState({ seed: s, offset });
  try {
    return fn();
  } finally {
    kiln.setDefaultBackend(cpu);
  }
}

/** CPU and GPU draws of `fn` at (s, offset); the GPU's dispatches counted (0: the host path). */
async function compareDraw(s: number, offset: number, fn: () => kiln.Tensor): Promise<{ want: ArrayLike<number>; got: ArrayLike<number>; dispatches: number }> {
  const want = drawAt(cpu, s, offset, fn).dataSync();
  const d0 = gpu!.stats.dispatches;
  const t = drawAt(gpu!, s, offset, fn);
  const dispatches = gpu!.stats.dispatches - d0;
  const got = await t.data();
  t.dispose();
  return { want, got, dispatches };
}

test(`GPU uniform draws are the CPU's bit for bit: seeds, offsets not multiple of 4, sizes 1..1000, counters past 2^32 (seed ${seed})`, { skip }, async () => {
  const r = rng(seed + 4);
  const sizes = [1, 2, 3, 4, 5, 7, 8, 9, 255, 256, 257, 999, 1000, ...Array.from({ length: 8 }, () => 1 + Math.floor(r() * 1000))];
  const seeds = [0, 1, seed, 2 ** 32 + seed, 2 ** 40 + 12345];
  let i = 0;
  for (const s of seeds) {
    for (const n of sizes) {
      const offset = [0, 1, 2, 3, 5, 4097, 2 ** 34 - 3, 2 ** 34 + 2][i++ % 8]!;
      const { want, got, dispatches } = await compareDraw(s, offset, () => kiln.rand([n]));
      assert.equal(dispatches, 1, 'drawn on the GPU');
      sameBits(got, want, `rand([${n}]) seed ${s} offset ${offset}`);
      assert.ok(Array.from(got).every((v) => v >= 0 && v < 1));
    }
  }
  // float64 outputs stay on the host (no f64 in WGSL): still the CPU's numbers
  const f64 = await compareDraw(seed, 6, () => kiln.rand([33], { dtype: 'float64' }));
  assert.equal(f64.dispatches, 0);
  sameBits(f64.got, f64.want, 'float64 rand');
});

test(`GPU randint is the CPU's bit for bit where exact, the host path elsewhere (seed ${seed})`, { skip }, async () => {
  const r = rng(seed + 5);
  const L = 2 ** 29;
  const ranges: [number, number, 'int32' | 'float32' | 'bool'][] = [
    [0, 10, 'int32'], [-7, 100_000, 'int32'], [3, 4, 'int32'], [0, 2, 'int32'], [-L, 0, 'int32'], [0, L, 'int32'], [-L / 2, L / 2, 'int32'],
    [-1000, 1000, 'float32'], [-(2 ** 24), 2 ** 24, 'float32'],
    // host path: ranges beyond 2^29, float32 outputs beyond 2^24, bool outputs
    [-L, L, 'int32'], [0, 2 ** 31 - 1, 'int32'], [-(2 ** 31), 2 ** 31 - 1, 'int32'], [L, L + 10, 'int32'], [0, 2 ** 25, 'float32'], [0, 2, 'bool'],
  ];
  for (const [k, [low, high, dtype]] of ranges.entries()) {
    for (const n of [1, 3, 64, 1 + Math.floor(r() * 1000)]) {
      const offset = [0, 1, 2, 3, 2 ** 34 - 1][(k + n) % 5]!;
      const s = k % 2 ? seed : 2 ** 33 + seed;
      const { want, got, dispatches } = await compareDraw(s, offset, () => kiln.randint(low, high, [n], { dtype }));
      assert.equal(dispatches, gpuIntegerExact(low, high, dtype) ? 1 : 0, `randint(${low}, ${high}) ${dtype}: GPU path iff exact`);
      sameBits(Array.from(got), Array.from(want), `randint(${low}, ${high}, [${n}], ${dtype}) seed ${s} offset ${offset}`);
    }
  }
});

test(`GPU normals are within NORMAL_TOLERANCE (${NORMAL_TOLERANCE}) of the CPU's, and the CPU's bit for bit with hostNormals (seed ${seed})`, { skip }, async () => {
  const r = rng(seed + 6);
  let worst = 0;
  for (const [k, n] of [1, 2, 3, 5, 64, 999, 1000, 65536 + 3, 1 + Math.floor(r() * 1000)].entries()) {
    const offset = [0, 1, 3, 2 ** 33 + 1][k % 4]!;
    const s = k % 2 ? seed : 2 ** 32 + seed;
    const { want, got, dispatches } = await compareDraw(s, offset, () => kiln.randn([n]));
    assert.equal(dispatches, 1);
    for (let i = 0; i < n; i++) {
      const d = Math.abs(got[i]! - want[i]!);
      worst = Math.max(worst, d);
      if (!(d <= NORMAL_TOLERANCE)) assert.fail(`randn([${n}]) offset ${offset} element ${i}: ${got[i]} vs ${want[i]}`);
    }
  }
  console.log(`# largest |gpu - cpu| of normals: ${worst}`);
  gpu!.hostNormals = true;
  try {
    const { want, got, dispatches } = await compareDraw(seed, 7, () => kiln.randn([257]));
    assert.equal(dispatches, 0);
    sameBits(got, want, 'hostNormals');
  } finally {
    gpu!.hostNormals = false;
  }
  // moments of a large draw
  const z = Array.from(await drawAt(gpu!, seed, 0, () => kiln.randn([1 << 18])).data());
  const mean = z.reduce((a, b) => a + b, 0) / z.length;
  const v = z.reduce((a, b) => a + (b - mean) ** 2, 0) / z.length;
  assert.ok(Math.abs(mean) < 0.01 && Math.abs(v - 1) < 0.01, `mean ${mean} var ${v}`);
});

test(`dropout compiled on webgpu: one submit per call (no upload), the CPU's mask for the same seed (seed ${seed})`, { skip }, async () => {
  const xs = onCpu(() => kiln.rand([32, 16]).add(0.5));
  const x = toGpu(xs);
  const fn = (t: kiln.Tensor) => kiln.dropout(t.mul(2), 0.5).add(1);
  for (const mode of ['default', 'reduce-overhead'] as const) {
    kiln.compiler.reset();
    const f = kiln.compile(fn, { backend: 'webgpu', fullgraph: true, mode });
    const g = kiln.compile(fn, { backend: 'js', fullgraph: true });
    for (let i = 0; i < 3; i++) {
      kiln.manualSeed(seed + i);
      const want = onCpu(() => g(xs) as kiln.Tensor).dataSync();
      kiln.manualSeed(seed + i);
      await gpu!.sync();
      const s0 = gpu!.stats;
      const out = await onGpu(() => f(x) as kiln.Tensor);
      await gpu!.sync();
      const s1 = gpu!.stats;
      if (i > 0) assert.equal(s1.submits - s0.submits, 1, `${mode} call ${i}: one submit`);
      sameBits(await out.data(), want, `${mode} call ${i}`);
      out.dispose();
    }
  }
  x.dispose();
});
