// The WebGPU backend: the op table eager and compiled on WebGPU against the float64
// reference (float32 inputs; float64 inputs must raise the typed dtype error or, for views
// that run no kernel, give the right values), random graphs compiled on WebGPU against eager
// CPU, an MLP training step against the CPU, and the runtime's errors.
//
// Needs a WebGPU adapter. Without a GPU, Dawn (the `webgpu` package) runs on its OpenGL backend
// over Mesa llvmpipe (Debian: libegl-mesa0 libgl1-mesa-dri libgbm1); see
// src/backend/webgpu/README.md. Skipped, with the reason printed, where no adapter is found.
//
// Inputs are made on the CPU backend (the op table's generators read values synchronously),
// then uploaded with their views intact; results are read back with `await t.data()`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as kiln from 'kilnjs';
import { webGpuForTests } from './helpers/webgpu-backend.js';
import { crossEntropyStep } from './helpers/train-step.js';
import { OP_TABLE, Rng, asList, baseSeed, caseSeed, checkOutputs, toND, withSeed, FLOAT32_TOL, mismatch, type OpCase } from './op-table.js';
import { opArb, program, shapeArb, type Op } from './helpers/random-graphs.js';
import { edgeCases, edgeDifferences, edgeInputs } from './helpers/compiled-op-case.js';
import { trainMlpSteps } from './helpers/webgpu-mlp.js';

const { cpu, gpu, skip } = await webGpuForTests();

const base = baseSeed();
const RANDOM = /dropout/;
/** cases that read tensor values while they run (oneHot infers its class count): a sync read */
const READS_DATA = /oneHot.*infer|oneHot$|\(reads data\)/;
/** ops with no WebGPU kernel yet (WebGpuUnsupportedError): sort (sort, argsort, topk, ...) and scan (cumprod, cummax, cummin) */
const UNSUPPORTED_OPS = new Set<string>(['sort', 'scan']);

const onCpu = <T>(fn: () => T): T => {
  kiln.setDefaultBackend(cpu);
  return fn();
};
const onGpu = <T>(fn: () => T): T => {
  kiln.setDefaultBackend(gpu!);
  try {
    return fn();
  } finally {
    kiln.setDefaultBackend(cpu);
  }
};

/** GPU tensors read back into CPU tensors (same shape and dtype). */
async function download(ts: readonly kiln.Tensor[]): Promise<kiln.Tensor[]> {
  const out: kiln.Tensor[] = [];
  for (const t of ts) {
    const d = await t.data();
    out.push(onCpu(() => kiln.tensor(d as Float32Array, [...t.shape], { dtype: t.dtype })));
  }
  return out;
}

type Outcome = { ok: true } | { ok: false; unsupported: string } | { ok: false; failure: string };

/** Expected ways for a case to stop on WebGPU: an op without a kernel, or a synchronous read. */
function classify(c: OpCase, e: unknown, mode: 'eager' | 'compiled'): Outcome {
  if (e instanceof kiln.WebGpuUnsupportedError && UNSUPPORTED_OPS.has(e.op ?? '')) return { ok: false, unsupported: `${e.op}` };
  void mode;
  if (e instanceof kiln.WebGpuSyncReadError && READS_DATA.test(c.name)) return { ok: false, unsupported: 'sync read' };
  return { ok: false, failure: `${c.name}: ${(e as Error).stack ?? e}` };
}

async function runCase(c: OpCase, mode: 'eager' | 'compiled', dtype: 'float32' | 'float64' = 'float32'): Promise<Outcome> {
  const seed = caseSeed(base, c.name);
  const made: kiln.Tensor[] = [];
  try {
    const { inputs, refs } = onCpu(() => withSeed(base, seed, () => {
      const rng = new Rng(seed, dtype);
      const xs = c.make(rng);
      made.push(...xs);
      const nd = xs.map(toND);
      return { inputs: xs.map((x) => kiln.toBackend(x, gpu!)), before: nd, refs: asList(c.reference(nd)) };
    }));
    made.push(...inputs);
    const fn = (...xs: kiln.Tensor[]) => c.run(kiln, xs);
    const calls = mode === 'eager' ? ['eager'] : ['trace', 'replay'];
    if (mode === 'compiled') kiln.compiler.reset();
    const compiled = mode === 'compiled' ? kiln.compile(fn, { backend: 'webgpu', fullgraph: !READS_DATA.test(c.name) }) : null;
    for (const call of calls) {
      const fallbacks = kiln.stats().fusionFallbacks;
      const outs = onGpu(() => asList((compiled ?? fn)(...inputs) as kiln.Tensor | readonly kiln.Tensor[]));
      made.push(...outs);
      if (compiled) assert.equal(kiln.stats().fusionFallbacks, fallbacks, `${c.name}: fusion fell back to recorded eager kernels`);
      const host = await download(outs);
      made.push(...host);
      if (RANDOM.test(c.name)) {
        assert.deepEqual(host.map((o) => o.shape), refs.map((r) => r.shape));
        continue;
      }
      const outDType = c.outDType ?? dtype;
      checkOutputs(`${c.name} (webgpu ${call}, ${dtype})`, host, refs, outDType, dtype === 'float64' && outDType === 'float64' ? { atol: 1e-10, rtol: 1e-9 } : c.tol ?? FLOAT32_TOL);
    }
    return { ok: true };
  } catch (e) {
    if (dtype === 'float64' && e instanceof kiln.DTypeError && /float64 is not supported on webgpu/.test(e.message) && /\.float\(\)/.test(e.message)) return { ok: false, unsupported: 'float64' };
    return classify(c, e, mode);
  } finally {
    onCpu(() => made.forEach((t) => t.dispose()));
  }
}

async function runTable(mode: 'eager' | 'compiled'): Promise<void> {
  const failures: string[] = [];
  const unsupported = new Map<string, string[]>();
  let passed = 0;
  for (const c of OP_TABLE) {
    if (process.env.KILN_WG_DEBUG) console.log(`# ${mode} ${c.name}`);
    const r = await runCase(c, mode);
    if (r.ok) passed++;
    else if ('failure' in r) failures.push(r.failure);
    else unsupported.set(r.unsupported, [...(unsupported.get(r.unsupported) ?? []), c.name]);
  }
  for (const [why, names] of unsupported) console.log(`# webgpu ${mode}: ${names.length} cases stop with the typed error for ${why}: ${names.join(', ')}`);
  console.log(`# webgpu ${mode}: ${passed} of ${OP_TABLE.length} op-table cases equal the float64 reference`);
  assert.deepEqual(failures, []);
  // the typed stops are only the known gaps (conv/pool, oneHot's read): everything else ran
  assert.ok(passed >= OP_TABLE.length - [...unsupported.values()].flat().length && passed > OP_TABLE.length * 0.9, `${passed} passed`);
}

test('webgpu: every op-table case eager equals the float64 reference', { skip }, async () => {
  await runTable('eager');
});

test('webgpu: every op-table case compiled (backend webgpu) equals the float64 reference', { skip }, async () => {
  await runTable('compiled');
});

test('webgpu: float64 inputs raise the typed dtype error (or, for views, move through intact)', { skip }, async () => {
  const failures: string[] = [];
  let raised = 0;
  for (const c of OP_TABLE) {
    const r = await runCase(c, 'eager', 'float64');
    if (r.ok) continue;
    if ('failure' in r) failures.push(r.failure);
    else if (r.unsupported === 'float64') raised++;
  }
  assert.deepEqual(failures, []);
  assert.ok(raised > OP_TABLE.length / 2, `${raised} cases raised the float64 error`);
});

/**
 * Where WGSL itself does not promise eager's values (WGSL 15.7: implementations may assume no
 * NaN or infinity, and sin/cos/tan are specified on [-pi, pi] only): the shader compiler folds
 * x * 0 and x - x to 0, and the select chains of elu, selu, celu, hardtanh and relu6 into
 * min/max that drop NaN and -0 (Mesa's NIR does, for ops not marked exact, which WGSL cannot
 * ask for); GPUs reduce huge sin/cos/tan arguments inexactly. Everything else must match.
 */
const WGSL_UNSPECIFIED = [
  /^mul by scalar 0 /, /^sub self /, /^(sin|cos|tan) .* at \(-?3e\+38\)/,
  /^(elu|selu|celu|hardtanh|relu6)\b.* at \((-0|NaN)\)/,
];

test('webgpu: pointwise cases on edge values (0, -0, subnormals, ±inf, NaN, ±3e38) compiled equal eager on the CPU', { skip }, async () => {
  const bad: string[] = [];
  for (const c of edgeCases()) {
    const made: kiln.Tensor[] = [];
    try {
      kiln.compiler.reset();
      const fn = (...xs: kiln.Tensor[]) => c.run(kiln, xs);
      const n = onCpu(() => kiln.scope(() => c.make(new Rng(1, 'float32')).length));
      const { inputs, eager } = onCpu(() => {
        const xs = edgeInputs(n);
        const e = asList(fn(...xs));
        made.push(...xs, ...e);
        return { inputs: xs.map((x) => kiln.toBackend(x, gpu!)), eager: e.map((t) => t.dataSync() as ArrayLike<number>) };
      });
      made.push(...inputs);
      const compiled = kiln.compile(fn, { backend: 'webgpu', fullgraph: true });
      for (const call of ['trace', 'replay']) {
        const outs = onGpu(() => asList(compiled(...inputs) as kiln.Tensor | readonly kiln.Tensor[]));
        made.push(...outs);
        const got: ArrayLike<number>[] = [];
        for (const o of outs) got.push(await o.data() as ArrayLike<number>);
        bad.push(...edgeDifferences(`${c.name} (webgpu ${call})`, n, got, eager, c.tol ?? FLOAT32_TOL));
      }
    } finally {
      onCpu(() => made.forEach((t) => t.dispose()));
    }
  }
  assert.equal(kiln.stats().fusionFallbacks, 0);
  const unspecified = bad.filter((b) => WGSL_UNSPECIFIED.some((r) => r.test(b)));
  if (unspecified.length) console.log(`# webgpu edge values: ${unspecified.length} differences WGSL leaves unspecified (x * 0, x - x on NaN/Inf; sin/cos of 3e38)`);
  assert.deepEqual(bad.filter((b) => !unspecified.includes(b)), []);
});

// ---- random graphs: compiled on WebGPU vs eager on the CPU ----

const graphArb = fc.tuple(shapeArb, fc.array(opArb, { minLength: 1, maxLength: 14 }), fc.integer({ min: 1, max: 3 }), fc.nat(1000));

async function checkGraph([[a, b, c], ops, nOut, seed]: [[number, number, number], Op[], number, number]): Promise<void> {
  const made: kiln.Tensor[] = [];
  try {
    kiln.compiler.reset();
    const fn = program(ops, nOut);
    const { inputs, eager } = onCpu(() => {
      kiln.manualSeed(seed);
      const xs = [kiln.randn([a, b, c]), kiln.randn([b, c]), kiln.randn([1, c]), kiln.randn([c, c])];
      const e = fn(...xs);
      made.push(...xs, ...e);
      return { inputs: xs.map((x) => kiln.toBackend(x, gpu!)), eager: e.map((t) => ({ shape: t.shape, data: Array.from(t.dataSync()) })) };
    });
    made.push(...inputs);
    const compiled = kiln.compile(fn, { backend: 'webgpu', fullgraph: true });
    for (const call of ['trace', 'replay']) {
      const got = onGpu(() => compiled(...inputs));
      made.push(...got);
      assert.equal(got.length, eager.length);
      for (let i = 0; i < got.length; i++) {
        assert.deepEqual(got[i]!.shape, eager[i]!.shape, `${call} output ${i} shape`);
        const x = await got[i]!.data();
        const y = eager[i]!.data;
        let scale = 1e-3;
        for (const v of y) scale = Math.max(scale, Math.abs(v));
        for (let k = 0; k < y.length; k++) {
          const bad = !(Math.abs(x[k]! - y[k]!) <= 2e-5 * scale + 1e-5) && !(Number.isNaN(x[k]!) && Number.isNaN(y[k]!)) && x[k] !== y[k];
          if (bad) assert.fail(`webgpu ${call} output ${i}[${k}]: compiled ${x[k]} vs eager CPU ${y[k]} (ops ${JSON.stringify(ops)}, shape ${[a, b, c]})`);
        }
      }
    }
  } finally {
    onCpu(() => made.forEach((t) => t.dispose()));
  }
}

test('webgpu: random graphs compiled on webgpu equal eager on the CPU', { skip }, async () => {
  for (const g of fc.sample(graphArb, { numRuns: 40, seed: 20261130 })) await checkGraph(g);
});

// ---- a training step ----

async function mlpTrain(where: 'cpu' | 'gpu-eager' | 'gpu-compiled'): Promise<{ losses: number[]; params: number[][] }> {
  const dev = where === 'cpu' ? cpu : gpu!;
  kiln.setDefaultBackend(dev);
  try {
    kiln.compiler.reset();
    kiln.manualSeed(7);
    // parameters are initialized on the device itself (random numbers: the same stream as the CPU)
    const model = new kiln.nn.Sequential(new kiln.nn.Linear(12, 32), new kiln.nn.ReLU(), new kiln.nn.Linear(32, 16), new kiln.nn.Tanh(), new kiln.nn.Linear(16, 3));
    const optim = new kiln.optim.Adam(model.parameters(), { lr: 0.01 });
    // data on the CPU, uploaded (randint draws float64 numbers, which no WGSL kernel takes);
    // the global generator's stream continues in the same order on both paths
    kiln.setDefaultBackend(cpu);
    const x = kiln.keep(kiln.toBackend(kiln.randn([64, 12]), dev));
    const y = kiln.keep(kiln.toBackend(kiln.randint(0, 3, [64]), dev));
    kiln.setDefaultBackend(dev);
    const step = (xb: kiln.Tensor, yb: kiln.Tensor) => {
      optim.zeroGrad();
      const loss = kiln.crossEntropy(model.call(xb), yb);
      loss.backward();
      optim.step();
      return loss;
    };
    const run = where === 'gpu-compiled' ? kiln.compile(step, { backend: 'webgpu', fullgraph: true }) : step;
    const losses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const loss = kiln.scope(() => kiln.keep(run(x, y) as kiln.Tensor));
      losses.push((await loss.data())[0]!);
      loss.dispose();
    }
    const params: number[][] = [];
    for (const p of model.parameters()) params.push(Array.from(await p.data()));
    return { losses, params };
  } finally {
    kiln.setDefaultBackend(cpu);
  }
}

async function checkMlp(where: 'gpu-eager' | 'gpu-compiled'): Promise<void> {
  const ref = await mlpTrain('cpu');
  const got = await mlpTrain(where);
  got.losses.forEach((l, i) => assert.ok(Math.abs(l - ref.losses[i]!) <= 1e-4 * Math.max(1, Math.abs(ref.losses[i]!)), `${where} step ${i}: loss ${l} vs CPU ${ref.losses[i]}`));
  got.params.forEach((p, i) => p.forEach((v, j) => assert.ok(Math.abs(v - ref.params[i]![j]!) <= 1e-4, `${where} param ${i}[${j}]: ${v} vs CPU ${ref.params[i]![j]}`)));
}

test('webgpu: an MLP training step (Adam) eager on webgpu equals the CPU', { skip }, async () => {
  await checkMlp('gpu-eager');
});

// Constant folding runs on the host when the default backend cannot read synchronously
// (src/compiler/schedule/passes.ts), so tracing the step never reads GPU memory.
test('webgpu: an MLP training step (Adam) compiled on webgpu equals the CPU over 5 steps', { skip }, async () => {
  await checkMlp('gpu-compiled');
});

test('webgpu: a fused kernel binding more buffers than the device allows is split into ordered parts (the MLP example at a limit of 8)', { skip }, async () => {
  // the MLP example's compiled step fuses Adam updates into a reduction's epilogue: 18 buffers,
  // over SwiftShader's 10 and llvmpipe's 16; 8 is WebGPU's guaranteed minimum
  const ref = await trainMlpSteps(null, { steps: 4 });
  const limits = gpu as unknown as { maxStorageBuffers: number };
  const saved = limits.maxStorageBuffers;
  limits.maxStorageBuffers = 8;
  try {
    const got = await trainMlpSteps(gpu!, { steps: 4 });
    got.losses.forEach((l, i) => assert.ok(Math.abs(l - ref.losses[i]!) <= 1e-4 * Math.max(1, Math.abs(ref.losses[i]!)), `step ${i}: loss ${l} vs CPU ${ref.losses[i]}`));
    got.params.forEach((p, i) => p.forEach((v, j) => assert.ok(Math.abs(v - ref.params[i]![j]!) <= 1e-4, `param ${i}[${j}]: ${v} vs CPU ${ref.params[i]![j]}`)));
  } finally {
    limits.maxStorageBuffers = saved;
    kiln.setDefaultBackend(cpu);
  }
});

test('webgpu: a compiled generator reads at explicit asynchronous breaks (yield* kiln.read): the branch and a training step that reads its loss equal the CPU', { skip }, async () => {
  const x = onGpu(() => kiln.keep(kiln.toBackend(onCpu(() => kiln.tensor([1, -2, 3])), gpu!)));
  function* reads(t: kiln.Tensor) {
    const [s] = yield* kiln.read(t.sum());
    return s! > 0 ? t.relu() : t.neg();
  }
  kiln.compiler.reset();
  const f = kiln.compile(reads, { backend: 'webgpu' });
  const pending = onGpu(() => f(x));
  const y = await pending;
  assert.equal(y.storage.backend, gpu, 'the result lives on the GPU');
  assert.deepEqual(Array.from(await y.data()), [1, 0, 3]);
  const xNeg = onGpu(() => x.neg());
  const neg = await onGpu(() => f(xNeg));
  assert.deepEqual(Array.from(await neg.data()), [1, -2, 3]);
  assert.equal(kiln.stats().asyncReads, 2);
  const r = await onGpu(() => kiln.explain(reads, { backend: 'webgpu', print: false })(x));
  assert.equal(r.graphBreakCount, 1);
  assert.equal(r.stopped, undefined, 'nothing stopped: the read was awaited');
  assert.match(r.text, /break 1 at .*webgpu\.test\.ts:\d+:\d+: asynchronous read of 1 tensor \(kiln\.read\)/);
  onCpu(() => [x, xNeg, y, neg].forEach((t) => t.dispose()));
  // the MLP step reading its loss between forward and backward: the same numbers as the CPU
  const ref = await trainMlpSteps(null, { steps: 4 });
  const got = await trainMlpSteps(gpu!, { steps: 4, readLoss: true });
  got.losses.forEach((l, i) => assert.ok(Math.abs(l - ref.losses[i]!) <= 1e-4 * Math.max(1, Math.abs(ref.losses[i]!)), `step ${i}: loss ${l} vs CPU ${ref.losses[i]}`));
  got.params.forEach((p, i) => p.forEach((v, j) => assert.ok(Math.abs(v - ref.params[i]![j]!) <= 1e-4, `param ${i}[${j}]: ${v} vs CPU ${ref.params[i]![j]}`)));
  assert.equal(kiln.stats().asyncReads, 4, 'one read per step');
});

// ---- the runtime ----

test('webgpu: subgroups are a device feature: on where the device has it, and asking for them elsewhere is a typed error', { skip }, () => {
  assert.equal(gpu!.subgroups, gpu!.hasSubgroups, 'on by default exactly where the device has them');
  if (gpu!.hasSubgroups) return; // a GPU: the switch works both ways (the browser test compares both paths)
  assert.throws(() => {
    gpu!.subgroups = true;
  }, (e: unknown) => e instanceof kiln.WebGpuUnsupportedError && /no 'subgroups' feature/.test((e as Error).message));
  assert.equal(gpu!.subgroups, false, 'unchanged after the refused switch');
});

test('webgpu: synchronous reads throw the typed error that names await t.data()', { skip }, async () => {
  const t = onGpu(() => kiln.ones([3]));
  assert.throws(() => t.dataSync(), (e: unknown) => e instanceof kiln.WebGpuSyncReadError && /await t\.data\(\)/.test((e as Error).message));
  const one = onGpu(() => kiln.ones([1]).add(1));
  assert.throws(() => one.item(), kiln.WebGpuSyncReadError);
  assert.deepEqual(Array.from(await one.data()), [2]);
  assert.deepEqual(Array.from(await t.data()), [1, 1, 1]);
  // a non-contiguous view reads asynchronously too
  const m = onGpu(() => kiln.toBackend(onCpu(() => kiln.tensor([[1, 2, 3], [4, 5, 6]])), gpu!).transpose(0, 1));
  assert.deepEqual(Array.from(await m.data()), [1, 4, 2, 5, 3, 6]);
  onCpu(() => (t.dispose(), m.dispose(), one.dispose()));
});

test('webgpu: a compiled program is one submission, and buffers are reused', { skip }, async () => {
  const x = onGpu(() => kiln.keep(kiln.randn([64, 32])));
  const w = onGpu(() => kiln.keep(kiln.randn([32, 16])));
  const f = kiln.compile((a: kiln.Tensor, b: kiln.Tensor) => kiln.softmax(kiln.matmul(a, b).relu(), -1).sum(0), { backend: 'webgpu', fullgraph: true });
  for (let i = 0; i < 2; i++) await onGpu(() => kiln.scope(() => kiln.keep(f(x, w)))).data();
  const s0 = gpu!.stats;
  const out = onGpu(() => f(x, w));
  await gpu!.sync();
  const s1 = gpu!.stats;
  assert.ok(s1.dispatches - s0.dispatches >= 2, 'the program dispatched its kernels');
  assert.equal(s1.submits - s0.submits, 1, 'all of them in one submit');
  assert.ok(s1.buffersReused > 0, 'freed buffers were reused from the pool');
  onCpu(() => [x, w, out].forEach((t) => t.dispose()));
});

test('webgpu: conv2d and max pooling train (im2col/col2im in WGSL) eager and compiled like the CPU', { skip }, async () => {
  // forward and backward through conv2d (im2col, col2im for the input's grad) and maxPool2d
  const run = async (where: 'cpu' | 'gpu-eager' | 'gpu-compiled') => {
    const dev = where === 'cpu' ? cpu : gpu!;
    kiln.compiler.reset();
    const made: kiln.Tensor[] = [];
    try {
      const { x, k, b } = onCpu(() => {
        kiln.manualSeed(3);
        return { x: kiln.randn([2, 3, 9, 9]), k: kiln.randn([4, 3, 3, 3]), b: kiln.randn([4]) };
      });
      made.push(x, k, b);
      // x and k are captured like parameters (grads by owner), the bias is an argument
      const xd = kiln.toBackend(x, dev), kd = kiln.toBackend(k, dev), bd = kiln.toBackend(b, dev);
      xd.requiresGrad = true;
      kd.requiresGrad = true;
      made.push(xd, kd, bd);
      const f = (bias: kiln.Tensor) => {
        xd.grad = null;
        kd.grad = null;
        const y = kiln.maxPool2d(kiln.conv2d(xd, kd, bias, { padding: 1, stride: 2 }).relu(), 2, { stride: 1 });
        const loss = y.square().mean();
        loss.backward();
        return [loss, y.sum([0, 1])];
      };
      const g = where === 'gpu-compiled' ? kiln.compile(f, { backend: 'webgpu', fullgraph: true }) : f;
      kiln.setDefaultBackend(dev);
      let outs: kiln.Tensor[] = [];
      try {
        for (let i = 0; i < 2; i++) {
          made.push(...outs);
          outs = g(bd); // compiled: trace, then replay
        }
      } finally {
        kiln.setDefaultBackend(cpu);
      }
      made.push(...outs);
      const read = async (t: kiln.Tensor) => Array.from(await t.data());
      const r = { outs: await Promise.all(outs.map(read)), gx: await read(xd.grad!), gk: await read(kd.grad!) };
      made.push(xd.grad!, kd.grad!);
      return r;
    } finally {
      onCpu(() => made.forEach((t) => t.dispose()));
    }
  };
  const ref = await run('cpu');
  for (const where of ['gpu-eager', 'gpu-compiled'] as const) {
    const got = await run(where);
    const close = (a: number[], b: number[], what: string) => a.forEach((v, i) => assert.ok(Math.abs(v - b[i]!) <= 1e-4 * Math.max(1, Math.abs(b[i]!)), `${where} ${what}[${i}]: ${v} vs CPU ${b[i]}`));
    got.outs.forEach((o, i) => close(o, ref.outs[i]!, `output ${i}`));
    close(got.gx, ref.gx, 'x.grad');
    close(got.gk, ref.gk, 'k.grad');
  }
});

test('webgpu: a value read inside compiled code is an asynchronous graph break: explain says so, item()/dataSync() raise the typed error with the fix', { skip }, async () => {
  const x = onGpu(() => kiln.keep(kiln.toBackend(onCpu(() => kiln.tensor([1, -2, 3])), gpu!)));
  const reads = (t: kiln.Tensor) => {
    const s = t.sum();
    return s.item() > 0 ? t.relu() : t.neg(); // a data-dependent branch: needs the value
  };
  // explain reports the break (and where compiling stopped) instead of throwing
  kiln.compiler.reset();
  const r = onGpu(() => kiln.explain(reads, { backend: 'webgpu', print: false })(x));
  assert.equal(r.graphBreakCount, 1);
  assert.match(r.breaks[0]!.reason, /item\(\) needs the value.*on webgpu reading a tensor is asynchronous \(await t\.data\(\)\), so this read is a graph break/);
  assert.match(r.breaks[0]!.hint, /yield\* kiln\.read\(t\).*split it at the read.*await t\.data\(\).*WebGpuSyncReadError/);
  assert.match(r.text, /break 1 at .*webgpu\.test\.ts.*asynchronous/);
  assert.match(r.stopped ?? '', /^WebGpuSyncReadError/);
  // compiled, with or without fullgraph: the typed error with the fix, nothing left traced
  for (const fullgraph of [true, false]) {
    kiln.compiler.reset();
    const f = kiln.compile(reads, { backend: 'webgpu', fullgraph });
    assert.throws(() => onGpu(() => f(x)), (e: unknown) => e instanceof kiln.WebGpuSyncReadError && /graph break in reads .*asynchronous/.test((e as Error).message) && /yield\* kiln\.read\(t\)/.test((e as Error).message));
  }
  kiln.compiler.reset();
  const g = kiln.compile((t: kiln.Tensor) => Array.from(t.mul(2).dataSync()), { backend: 'webgpu' });
  assert.throws(() => onGpu(() => g(x)), kiln.WebGpuSyncReadError);
  // `await t.data()` inside the function: an async function cannot be compiled; explain names
  // the asynchronous read as the break, and no rejection is left unhandled
  const awaits = async (t: kiln.Tensor) => {
    const v = await t.max().data();
    return t.sub(v[0]!);
  };
  kiln.compiler.reset();
  const e = onGpu(() => kiln.explain(awaits, { backend: 'webgpu', print: false })(x));
  assert.match(e.breaks[0]!.reason, /await data\(\) needs the value.*asynchronous/);
  assert.match(e.stopped ?? '', /GraphBreakError.*returned a Promise/);
  kiln.compiler.reset();
  assert.throws(() => onGpu(() => kiln.compile(awaits, { backend: 'webgpu' })(x)), (err: unknown) => err instanceof kiln.GraphBreakError && /asynchronous graph break/.test((err as Error).message));
  // the fix works: compiled halves around an awaited read
  kiln.compiler.reset();
  const before = kiln.compile((t: kiln.Tensor) => t.sum(), { backend: 'webgpu', fullgraph: true });
  const relu = kiln.compile((t: kiln.Tensor) => t.relu(), { backend: 'webgpu', fullgraph: true });
  const s = onGpu(() => before(x));
  const positive = (await s.data())[0]! > 0;
  const out = onGpu(() => (positive ? relu(x) : x.neg()));
  assert.deepEqual(Array.from(await out.data()), [1, 0, 3]);
  await new Promise((ok) => setTimeout(ok, 10)); // an unhandled rejection would fail the test here
  onCpu(() => [x, s, out].forEach((t) => t.dispose()));
});

test('webgpu: WGSL the device rejects is a typed error with the source and the line', { skip }, async () => {
  const bad = (gpu as unknown as { pipeline(code: string, w: boolean[]): unknown }).pipeline('@compute @workgroup_size(1)\nfn main() {\n  let x: f32 = undefined_thing;\n}', []);
  void bad;
  await assert.rejects(gpu!.sync(), (e: unknown) => {
    assert.ok(e instanceof kiln.WebGpuShaderError, String(e));
    assert.equal((e as kiln.WebGpuShaderError).line, 3);
    assert.match((e as Error).message, />> +3 \| +let x: f32 = undefined_thing;/);
    return true;
  });
});

test('webgpu: compiling for webgpu while the default backend is the CPU is a typed error', { skip }, () => {
  const x = onCpu(() => kiln.ones([2]));
  assert.throws(() => kiln.compile((t: kiln.Tensor) => t.add(1), { backend: 'webgpu' })(x), (e: unknown) => e instanceof kiln.ArgumentError && /default backend is 'js'/.test((e as Error).message));
  x.dispose();
});

void mismatch;

// ---- reduce-overhead: prerecorded dispatches (src/backend/webgpu/prerecord.ts) ----

/** Every value of some GPU tensors, for exact comparisons. */
async function values(ts: readonly kiln.Tensor[]): Promise<number[][]> {
  const out: number[][] = [];
  for (const t of ts) out.push(Array.from(await t.data()));
  return out;
}

/** The MLP example's step (Adam) compiled in `mode`, trained on batches that cycle over fresh GPU buffers. */
async function trainMode(mode: 'default' | 'reduce-overhead', steps: number) {
  kiln.compiler.reset();
  kiln.setDefaultBackend(cpu);
  kiln.manualSeed(11);
  const batches = [0, 1, 2].map(() => ({ x: kiln.randn([64, 2]), y: kiln.randint(0, 3, [64]).int() }));
  kiln.setDefaultBackend(gpu!);
  try {
    const { MlpClassifier } = await import('../examples/mlp.js');
    kiln.manualSeed(12);
    const model = new MlpClassifier(2, 64, 3);
    const opt = new kiln.optim.Adam(model.parameters(), { lr: 0.01 });
    const step = kiln.compile(crossEntropyStep(model, opt), { name: 'mlp_step', backend: 'webgpu', fullgraph: true, mode });
    const losses: number[] = [];
    const perCall: { bindGroups: number; submits: number; dispatches: number; prerecorded: number }[] = [];
    for (let i = 0; i < steps; i++) {
      const b = batches[i % 3]!;
      // the first steps upload each batch anew (new tensors; the pool may hand back a buffer
      // an earlier batch freed), later ones reuse kept uploads (the same buffers every 3 calls)
      const x = kiln.toBackend(b.x, gpu!), y = kiln.toBackend(b.y, gpu!);
      await gpu!.sync();
      const s0 = gpu!.stats;
      const loss = kiln.scope(() => kiln.keep(step(x, y)));
      await gpu!.sync();
      const s1 = gpu!.stats;
      perCall.push({ bindGroups: s1.bindGroups - s0.bindGroups, submits: s1.submits - s0.submits, dispatches: s1.dispatches - s0.dispatches, prerecorded: s1.prerecordedRuns - s0.prerecordedRuns });
      losses.push((await loss.data())[0]!);
      [loss, x, y].forEach((t) => t.dispose());
    }
    const params = await values(model.parameters());
    const grads = await values(model.parameters().map((p) => p.grad!));
    return { losses, params, grads, perCall };
  } finally {
    kiln.setDefaultBackend(cpu);
  }
}

test('webgpu: reduce-overhead prerecords a training step: the same losses, weights and grads as the default mode, bit for bit, with inputs on new buffers; replays create no bind groups', { skip }, async () => {
  const ref = await trainMode('default', 7);
  const got = await trainMode('reduce-overhead', 7);
  assert.deepEqual(got.losses, ref.losses);
  assert.deepEqual(got.params, ref.params);
  assert.deepEqual(got.grads, ref.grads);
  // call 0 traces a one-shot program (Adam's state is made), call 1 builds the replayed one
  for (const c of got.perCall.slice(1)) {
    assert.equal(c.prerecorded, 1, 'the call ran prerecorded');
    assert.equal(c.submits, 1, 'one submit per call');
  }
  // inputs are new tensors each call: only dispatches binding a buffer not seen before get a
  // bind group (cached per dispatch), never the whole program's again
  const replayDispatches = got.perCall[2]!.dispatches;
  assert.ok(got.perCall.slice(2).every((c) => c.bindGroups < c.dispatches), JSON.stringify(got.perCall));
  assert.equal(got.perCall.at(-1)!.dispatches, replayDispatches);
  for (const c of ref.perCall) assert.equal(c.prerecorded, 0, 'the default mode encodes as before');
});

test('webgpu: reduce-overhead with kept inputs creates no bind group per call; outputs kept, recycled, and the same tensor passed twice (another alias pattern) equal the default mode', { skip }, async () => {
  kiln.compiler.reset();
  const [a, b, w] = onCpu(() => {
    kiln.manualSeed(13);
    return [kiln.randn([16, 16]), kiln.randn([16, 16]), kiln.randn([16, 16])];
  });
  const [ga, gb, gw] = [a, b, w].map((t) => kiln.keep(kiln.toBackend(t, gpu!)));
  const fn = (p: kiln.Tensor, q: kiln.Tensor) => [kiln.softmax(p.matmul(gw).relu().add(q.sum(0)), -1), p.mul(q).tanh().sum(1), kiln.layerNorm(p.add(q), [16])];
  const f = kiln.compile(fn, { backend: 'webgpu', fullgraph: true, mode: 'reduce-overhead' });
  const g = kiln.compile(fn, { backend: 'webgpu', fullgraph: true });
  // argument pairs: kept tensors, fresh uploads, the same tensor twice, swapped
  const fresh = () => kiln.toBackend(onCpu(() => a.mul(0.5)), gpu!);
  const calls: (() => [kiln.Tensor, kiln.Tensor])[] = [() => [ga, gb], () => [ga, gb], () => [fresh(), gb], () => [ga, ga], () => [ga, gb], () => [gb, ga], () => [fresh(), fresh()], () => [ga, ga]];
  const kept: { outs: kiln.Tensor[]; want: number[][] }[] = [];
  kiln.setDefaultBackend(gpu!);
  try {
    for (const [i, args] of calls.entries()) {
      const [p, q] = args();
      const want = await values(g(p, q));
      const outs = f(p, q);
      assert.deepEqual(await values(outs), want, `call ${i}`);
      // keep every other call's outputs alive: the pool must not hand their buffers out again
      if (i % 2 === 0) kept.push({ outs, want });
      else outs.forEach((t) => t.dispose());
    }
    for (const [i, k] of kept.entries()) assert.deepEqual(await values(k.outs), k.want, `kept outputs ${i}`);
    // steady state on the same buffers: no bind group created, one submit
    for (let i = 0; i < 2; i++) f(ga, gb).forEach((t) => t.dispose());
    await gpu!.sync();
    const s0 = gpu!.stats;
    const outs = f(ga, gb);
    await gpu!.sync();
    const s1 = gpu!.stats;
    assert.equal(s1.bindGroups - s0.bindGroups, 0, 'no bind group created');
    assert.equal(s1.submits - s0.submits, 1);
    assert.equal(s1.prerecordedRuns - s0.prerecordedRuns, 1);
    assert.ok(s1.dispatches - s0.dispatches >= 3);
    outs.forEach((t) => t.dispose());
  } finally {
    kiln.setDefaultBackend(cpu);
    kept.forEach((k) => k.outs.forEach((t) => t.dispose()));
    [ga, gb, gw, a, b, w].forEach((t) => t.dispose());
  }
});

test('webgpu: reduce-overhead says what runs prerecorded and why not: random draws each call, a temporary copy stays per call, pad/cumsum are captured; results equal the default mode', { skip }, async () => {
  kiln.compiler.reset();
  const [x, w] = onCpu(() => {
    kiln.manualSeed(14);
    return [kiln.randn([8, 6]), kiln.randn([6, 6])];
  });
  const gx = kiln.keep(kiln.toBackend(x, gpu!)), gw = kiln.keep(kiln.toBackend(w, gpu!));
  const idx = kiln.keep(kiln.toBackend(onCpu(() => kiln.tensor([2, 0, 5, 1], { dtype: 'int32' })), gpu!));
  // dropout: a random step; indexSelect of a transposed view: its eager kernel copies the
  // input to a contiguous temporary; pad and cumsum: opaque steps on program buffers only
  const fn = (t: kiln.Tensor) => [kiln.dropout(t.matmul(gw), 0.5).sum(0), kiln.indexSelect(t.matmul(gw).transpose(0, 1), 0, idx), kiln.pad(t, [1, 1]).cumsum(1)];
  kiln.setDefaultBackend(gpu!);
  const logged: string[] = [];
  const saved = console.error;
  try {
    const r = kiln.explain(fn, { backend: 'webgpu', mode: 'reduce-overhead', print: false })(gx);
    const program = r.graphs[0]!.program!;
    // the report reads the program's summary after explain's call: pad and cumsum were captured then
    assert.match(program, /reduce-overhead: prerecorded 4 of 6 steps/);
    assert.match(r.text, /\n {4}reduce-overhead: prerecorded 4 of 6 steps/, 'explain prints how the program runs');
    assert.match(program, /random \(%\d+\): runs its eager kernels each call: fresh random numbers each call: one Philox dispatch on the GPU/);
    assert.match(program, /pad \(%\d+\): replayed as captured on the first call/);
    assert.match(program, /indexSelect \(%\d+\): runs its eager kernels each call: they allocate a temporary buffer/);
    const runs: number[][][] = [];
    for (const mode of ['default', 'reduce-overhead'] as const) {
      kiln.compiler.reset();
      kiln.compiler.setLogs('perf');
      console.error = (...m: unknown[]) => void logged.push(m.join(' '));
      const f = kiln.compile(fn, { backend: 'webgpu', mode });
      kiln.manualSeed(15);
      const got: number[][] = [];
      for (let i = 0; i < 3; i++) {
        const outs = f(gx);
        got.push(...(await values(outs)));
        outs.forEach((t) => t.dispose());
      }
      console.error = saved;
      kiln.compiler.setLogs([]);
      runs.push(got);
    }
    assert.deepEqual(runs[1], runs[0], 'reduce-overhead equals the default mode (the same random numbers, the same kernels)');
    const last = logged.filter((l) => /reduce-overhead on webgpu/.test(l)).at(-1) ?? '';
    assert.match(last, /prerecorded 4 of 6 steps \(\d+ dispatches\)/, logged.join('\n'));
    assert.match(last, /indexSelect \(%\d+\): runs its eager kernels each call: they allocate a temporary buffer/);
    assert.match(last, /pad \(%\d+\): replayed as captured on the first call \(\d dispatch/);
    assert.match(last, /cumsum \(%\d+\): replayed as captured/);
  } finally {
    console.error = saved;
    kiln.compiler.setLogs([]);
    kiln.setDefaultBackend(cpu);
    [gx, gw, idx, x, w].forEach((t) => t.dispose());
  }
});

test('webgpu: reduce-overhead keeps device errors typed (thrown by the next prerecorded call), and prerecord = false re-encodes as before', { skip }, async () => {
  kiln.compiler.reset();
  const x = kiln.keep(kiln.toBackend(onCpu(() => kiln.tensor([1, -2, 3, -4])), gpu!));
  const fn = (t: kiln.Tensor) => t.relu().mul(2).sum();
  const f = kiln.compile(fn, { backend: 'webgpu', fullgraph: true, mode: 'reduce-overhead' });
  kiln.setDefaultBackend(gpu!);
  try {
    for (let i = 0; i < 2; i++) assert.deepEqual(Array.from(await f(x).data()), [8]);
    // an error the device reported (validation, out of memory, ...) is thrown by the next call
    const err = new kiln.WebGpuValidationError('injected by the test', 'webgpu', 'none');
    (gpu as unknown as { fail(e: Error): void }).fail(err);
    assert.throws(() => f(x), (e: unknown) => e === err);
    assert.deepEqual(Array.from(await f(x).data()), [8], 'the next call runs');
    // turned off: the program says so and encodes every dispatch on each call
    gpu!.prerecord = false;
    kiln.compiler.reset();
    const r = kiln.explain(fn, { backend: 'webgpu', mode: 'reduce-overhead', print: false })(x);
    assert.match(r.graphs[0]!.program!, /reduce-overhead: not prerecorded: turned off/);
    const g = kiln.compile(fn, { backend: 'webgpu', fullgraph: true, mode: 'reduce-overhead' });
    const s0 = gpu!.stats;
    for (let i = 0; i < 2; i++) assert.deepEqual(Array.from(await g(x).data()), [8]);
    assert.equal(gpu!.stats.prerecordedRuns - s0.prerecordedRuns, 0);
  } finally {
    gpu!.prerecord = true;
    kiln.setDefaultBackend(cpu);
    x.dispose();
  }
});

test('webgpu: reduce-overhead replays conv2d/maxPool training (im2col, col2im, gather-like steps captured) exactly like the default mode', { skip }, async () => {
  const run = async (mode: 'default' | 'reduce-overhead') => {
    kiln.compiler.reset();
    const [x, k, b] = onCpu(() => {
      kiln.manualSeed(16);
      return [kiln.randn([2, 3, 9, 9]), kiln.randn([4, 3, 3, 3]), kiln.randn([4])];
    });
    const [xd, kd, bd] = [x, k, b].map((t) => kiln.keep(kiln.toBackend(t, gpu!)));
    xd!.requiresGrad = true;
    kd!.requiresGrad = true;
    const f = kiln.compile((bias: kiln.Tensor) => {
      xd!.grad = null;
      kd!.grad = null;
      const y = kiln.maxPool2d(kiln.conv2d(xd!, kd!, bias, { padding: 1, stride: 2 }).relu(), 2, { stride: 1 });
      const loss = y.square().mean();
      loss.backward();
      return [loss, y.sum([0, 1])];
    }, { backend: 'webgpu', fullgraph: true, mode });
    kiln.setDefaultBackend(gpu!);
    const got: number[][] = [];
    let last = { bindGroups: -1, prerecorded: -1 };
    try {
      for (let i = 0; i < 4; i++) {
        const s0 = gpu!.stats;
        const outs = f(bd!);
        await gpu!.sync();
        last = { bindGroups: gpu!.stats.bindGroups - s0.bindGroups, prerecorded: gpu!.stats.prerecordedRuns - s0.prerecordedRuns };
        got.push(...(await values([...outs, xd!.grad!, kd!.grad!])));
        outs.forEach((t) => t.dispose());
      }
    } finally {
      kiln.setDefaultBackend(cpu);
      [x, k, b, xd!, kd!, bd!, xd!.grad, kd!.grad].forEach((t) => t?.dispose());
    }
    return { got, last };
  };
  const ref = await run('default');
  const pre = await run('reduce-overhead');
  assert.deepEqual(pre.got, ref.got);
  assert.equal(pre.last.prerecorded, 1);
  assert.ok(pre.last.bindGroups < ref.last.bindGroups, `bind groups per call: ${pre.last.bindGroups} prerecorded vs ${ref.last.bindGroups}`);
});
