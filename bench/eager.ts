// kiln eager (wasm kernels, src/backend/wasm/eager; KILN_EAGER=js: the JS kernels alone) against
// tfjs-core with tfjs-backend-cpu, side by side in one process, on three reference workloads
// (../shared/WORKLOADS.md), then the first eager op of fresh processes:
//   W1  MLP inference, batch 128, 784 -> 1024 -> ReLU -> 1024 -> ReLU -> 10
//   W2  that MLP's training step: forward, cross-entropy on int class targets, backward,
//       SGD update of all 6 parameters
//   W5  a 1024^3 float32 matmul
//
// Run:  npx tsx bench/eager.ts [--iters=10] [--slow-iters=5] [--warmup=2] [--only=W1,W2,W5]
//                              [--tfjs-layout=out-in|in-out] [--order=round-robin|blocked] [--peak=false]
//                              [--first-op-runs=5] [--out=bench/results/eager.json]
//
// Each workload: the first call of each library (cold: kernel generation, JIT) is timed on
// its own, then both results are checked against each other (and W5 against a float64
// reference), then warm-up calls, then >= --iters steady-state calls per library, run
// round-robin so that load from other processes hits both alike (--order=blocked: all of
// kiln's calls, then all of tfjs's). tfjs's 1024^3 matmul takes
// ~3 s a call, so it gets --slow-iters (default 5) calls; everything else gets --iters.
// First eager op: --first-op-runs fresh processes per kernel family (bench/lib/first-op-child.ts):
// the first pointwise op, matmul, reduction (each builds its family's wasm module), and all three.
// Writes bench/results/eager.json (every sample, machine info, the bar check).

import * as kiln from 'kilnjs';
import { tf, setupTfjsCpu } from './lib/tfjs.js';
import { compare, round, type Candidate, type Timing } from './lib/timing.js';
import { matmulFlops, mlpForwardFlops, mlpTrainStepFlops } from './lib/flops.js';
import {
  finishMachineInfo, floorMs, fmtMs, fmtRatio, gflops, intArg, machineInfo, measureBlasPeak, parseArgs,
  printTable, writeJson, type PeakMeasurement,
} from './lib/report.js';

const args = parseArgs();
const ITERS = intArg(args, 'iters', 10);
const SLOW_ITERS = intArg(args, 'slow-iters', 5);
const WARMUP = intArg(args, 'warmup', 2, 0);
const ONLY = new Set((args.get('only') ?? 'W1,W2,W5').split(',').map((s) => s.trim().toUpperCase()));
const OUT = args.get('out') ?? 'bench/results/eager.json';
const TF_LAYOUT = args.get('tfjs-layout') ?? 'out-in';
const ORDER = (args.get('order') ?? 'round-robin') as 'round-robin' | 'blocked';
if (ORDER !== 'round-robin' && ORDER !== 'blocked') throw new Error(`--order must be round-robin or blocked, got ${ORDER}`);
if (TF_LAYOUT !== 'out-in' && TF_LAYOUT !== 'in-out') throw new Error(`--tfjs-layout must be out-in or in-out, got ${TF_LAYOUT}`);
if (ITERS < 10) console.warn(`note: --iters=${ITERS} is below the 10 steady-state calls WORKLOADS.md asks for`);

const BAR = 3; // kiln eager must be at least 3x faster than tfjs-backend-cpu on every workload
const REF_PEAK_GFLOPS = 325; // WORKLOADS.md: numpy/OpenBLAS f32 1024^3, 2 threads, AVX-512 kernel
const BATCH = 128;
const DIMS = [784, 1024, 1024, 10];
const CLASSES = DIMS[DIMS.length - 1]!;
const LR = 0.01;
const MM = 1024;

const machine = machineInfo();
const tfInfo = await setupTfjsCpu();
console.log(`kiln eager (${kiln.eagerStats().backend} kernels) vs tfjs-core ${tfInfo.tfjsCore} + tfjs-backend-cpu (prod mode)`);
console.log(`${machine.cpuModel} x${machine.logicalCpus}, node ${machine.node}, load avg ${machine.loadAvgStart.join(' ')}`);

let peak: PeakMeasurement | null = null;
if (args.get('peak') !== 'false') {
  process.stdout.write('measuring the machine floor with numpy/OpenBLAS ... ');
  peak = measureBlasPeak(MM);
  console.log(peak.gflops2Threads ? `${peak.gflops2Threads.toFixed(0)} GFLOP/s (all cores), ${peak.gflops1Thread!.toFixed(0)} (1 thread)` : `unavailable (${peak.error})`);
}

// ---------------------------------------------------------------- shared data

kiln.manualSeed(20261130);
/** fresh random values, never zeros; the same numbers go to both libraries */
const x = kiln.randn([BATCH, DIMS[0]!]);
const target = kiln.randint(0, CLASSES, [BATCH]);
const W: kiln.Tensor[] = [];
const B: kiln.Tensor[] = [];
for (let i = 0; i + 1 < DIMS.length; i++) {
  const fanIn = DIMS[i]!, fanOut = DIMS[i + 1]!;
  W.push(kiln.scope(() => kiln.randn([fanOut, fanIn]).mul(Math.sqrt(2 / fanIn))).requiresGrad_()); // [out, in] as in torch
  B.push(kiln.scope(() => kiln.randn([fanOut]).mul(0.1)).requiresGrad_());
}
const params = W.flatMap((w, i) => [w, B[i]!]);

const f32 = (t: kiln.Tensor) => Float32Array.from(t.dataSync() as Float32Array);
const xTf = tf.tensor2d(f32(x), [BATCH, DIMS[0]!]);
const targetTf = tf.tensor1d(Int32Array.from(target.dataSync() as Int32Array), 'int32');
// out-in: the same [out, in] weights, multiplied with transposeB (what kiln does);
// in-out: [in, out] copies, tfjs's own dense-layer layout. out-in ran faster here.
const WTf = W.map((w) => tf.variable(TF_LAYOUT === 'out-in' ? tf.tensor2d(f32(w), w.shape as [number, number]) : tf.transpose(tf.tensor2d(f32(w), w.shape as [number, number]))));
const BTf = B.map((b) => tf.variable(tf.tensor1d(f32(b))));
const varsTf = WTf.flatMap((w, i) => [w, BTf[i]!]);

function kilnForward(h: kiln.Tensor): kiln.Tensor {
  for (let i = 0; i < W.length; i++) {
    h = kiln.linear(h, W[i]!, B[i]!);
    if (i + 1 < W.length) h = h.relu();
  }
  return h;
}

function tfForward(h: tf.Tensor2D): tf.Tensor2D {
  for (let i = 0; i < WTf.length; i++) {
    h = tf.add(tf.matMul(h, WTf[i]!, false, TF_LAYOUT === 'out-in'), BTf[i]!);
    if (i + 1 < WTf.length) h = tf.relu(h);
  }
  return h;
}

const sgd = tf.train.sgd(LR);

function kilnTrainStep(): void {
  kiln.scope(() => {
    const loss = kiln.crossEntropy(kilnForward(x), target);
    loss.backward();
    kiln.noGrad(() => {
      for (const p of params) {
        p.sub_(p.grad!.mul(LR));
        // backward keep()s gradients (they outlive scopes, as parameters' state); without
        // this dispose() each step leaves 6 tensors to the garbage collector (see gradNullLeak)
        p.grad!.dispose();
        p.grad = null;
      }
    });
  });
}

function tfTrainStep(): void {
  tf.tidy(() => {
    sgd.minimize(() => tf.losses.softmaxCrossEntropy(tf.oneHot(targetTf, CLASSES), tfForward(xTf)) as tf.Scalar, false, varsTf);
  });
}

// ---------------------------------------------------------------- checks

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length mismatch ${a.length} vs ${b.length}`);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}
function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]!));
  return m;
}
function tfWeightAsOutIn(i: number): Float32Array {
  return tf.tidy(() => (TF_LAYOUT === 'out-in' ? WTf[i]! : tf.transpose(WTf[i]!)).dataSync() as Float32Array);
}

interface Check { what: string; relErr: number; tol: number; ok: boolean }
const check = (what: string, relErr: number, tol: number): Check => {
  const c = { what, relErr, tol, ok: relErr <= tol };
  if (!c.ok) console.error(`CHECK FAILED: ${what}: relative error ${relErr.toExponential(2)} > ${tol}`);
  return c;
};

function checkW1(): Check[] {
  const k = kiln.noGrad(() => kiln.scope(() => f32(kilnForward(x))));
  const t = tf.tidy(() => tfForward(xTf).dataSync() as Float32Array);
  return [check('W1 logits, kiln vs tfjs', maxAbsDiff(k, t) / maxAbs(t), 1e-4)];
}

let paramsBefore: Float32Array[] = [];
function snapshotParams(): void {
  paramsBefore = params.map(f32);
}
function checkW2(): Check[] {
  // both libraries have now done exactly one step from the same parameters
  const out: Check[] = [];
  let worst = 0;
  params.forEach((p, i) => {
    const after = f32(p);
    const tfAfter = i % 2 === 0 ? tfWeightAsOutIn(i >> 1) : (BTf[i >> 1]!.dataSync() as Float32Array);
    const before = paramsBefore[i]!;
    const dk = after.map((v, j) => v - before[j]!), dt = tfAfter.map((v, j) => v - before[j]!);
    const scale = maxAbs(dt);
    if (scale === 0) throw new Error(`tfjs did not update parameter ${i}`);
    worst = Math.max(worst, maxAbsDiff(dk, dt) / scale);
  });
  out.push(check('W2 SGD update of all 6 params after one step, kiln vs tfjs (relative to the update)', worst, 1e-3));
  const lk = kiln.noGrad(() => kiln.scope(() => kiln.crossEntropy(kilnForward(x), target).item()));
  const lt = tf.tidy(() => tf.losses.softmaxCrossEntropy(tf.oneHot(targetTf, CLASSES), tfForward(xTf)).dataSync()[0]!);
  out.push(check('W2 loss after one step, kiln vs tfjs', Math.abs(lk - lt) / Math.abs(lt), 1e-4));
  return out;
}

let mmA: kiln.Tensor, mmB: kiln.Tensor, mmATf: tf.Tensor2D, mmBTf: tf.Tensor2D;
function checkW5(): Check[] {
  const k = kiln.scope(() => f32(kiln.matmul(mmA, mmB)));
  const t = tf.tidy(() => tf.matMul(mmATf, mmBTf).dataSync() as Float32Array);
  const A = mmA.dataSync(), Bm = mmB.dataSync();
  // float64 reference on 512 sampled entries
  let errK = 0, errT = 0, scale = 0;
  for (let s = 0; s < 512; s++) {
    const i = (s * 7919) % MM, j = (s * 104729 + 13) % MM;
    let ref = 0;
    for (let q = 0; q < MM; q++) ref += A[i * MM + q]! * Bm[q * MM + j]!;
    errK = Math.max(errK, Math.abs(k[i * MM + j]! - ref));
    errT = Math.max(errT, Math.abs(t[i * MM + j]! - ref));
    scale = Math.max(scale, Math.abs(ref));
  }
  return [
    check('W5 kiln vs float64 reference (512 sampled entries)', errK / scale, 1e-5),
    check('W5 tfjs vs float64 reference (512 sampled entries)', errT / scale, 1e-4),
    check('W5 kiln vs tfjs (all entries)', maxAbsDiff(k, t) / maxAbs(t), 1e-4),
  ];
}

// ---------------------------------------------------------------- run

interface MemCheck { kilnTensorsDelta: number; kilnBytesDelta: number; tfjsTensorsDelta: number; calls: number; ok: boolean }
interface WorkloadResult {
  id: string;
  what: string;
  flops: number;
  results: Record<string, Timing & { gflops: number }>;
  floorMs: { reference2Threads: number; measured2Threads: number | null; measured1Thread: number | null };
  /** tfjs median / kiln median */
  speedup: number;
  meetsBar: boolean;
  checks: Check[];
  memory: MemCheck;
  notes: string[];
}

const results: WorkloadResult[] = [];

async function runWorkload(id: string, what: string, flops: number, kilnFn: () => void, tfFn: () => void,
  opts: { tfIters?: number; check: () => Check[]; beforeFirst?: () => void; notes?: string[] }): Promise<void> {
  console.log(`\n${id}: ${what}`);
  const tfIters = opts.tfIters ?? ITERS;
  const kilnT0 = kiln.memory(), tfT0 = tf.memory().numTensors;
  let checks: Check[] = [];
  opts.beforeFirst?.();
  const cands: Candidate[] = [
    { name: 'kiln', fn: kilnFn },
    { name: 'tfjs-cpu', fn: tfFn, iters: tfIters },
  ];
  const t = await compare(cands, {
    iters: ITERS,
    warmup: WARMUP,
    order: ORDER,
    afterFirst: () => { checks = opts.check(); },
  });
  const kilnT1 = kiln.memory(), tfT1 = tf.memory().numTensors;
  const calls = 1 + WARMUP + ITERS;
  const memory: MemCheck = {
    kilnTensorsDelta: kilnT1.tensors - kilnT0.tensors,
    kilnBytesDelta: kilnT1.bytes - kilnT0.bytes,
    tfjsTensorsDelta: tfT1 - tfT0,
    calls,
    ok: kilnT1.tensors === kilnT0.tensors && kilnT1.bytes === kilnT0.bytes,
  };
  const withRate = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, { ...v, gflops: gflops(flops, v.medianMs) }]));
  const speedup = t['tfjs-cpu']!.medianMs / t['kiln']!.medianMs;
  const notes = [...(opts.notes ?? [])];
  if (tfIters < ITERS) {
    notes.push(`tfjs-cpu: ${tfIters} steady-state calls (not ${ITERS}): each takes seconds`);
    console.log(`  (${notes[notes.length - 1]})`);
  }
  results.push({
    id, what, flops, results: withRate,
    floorMs: {
      reference2Threads: floorMs(flops, REF_PEAK_GFLOPS),
      measured2Threads: peak?.gflops2Threads ? floorMs(flops, peak.gflops2Threads) : null,
      measured1Thread: peak?.gflops1Thread ? floorMs(flops, peak.gflops1Thread) : null,
    },
    speedup, meetsBar: speedup >= BAR, checks, memory, notes,
  });
  for (const [name, v] of Object.entries(withRate)) {
    console.log(`  ${name.padEnd(9)} first ${fmtMs(v.firstMs).padStart(7)} ms   median ${fmtMs(v.medianMs).padStart(7)} ms   p95 ${fmtMs(v.p95Ms).padStart(7)} ms   (${v.n} calls)   ${v.gflops.toFixed(2)} GFLOP/s`);
  }
  console.log(`  kiln ${fmtRatio(speedup)} faster than tfjs-cpu (bar ${BAR}x: ${speedup >= BAR ? 'met' : 'MISSED'}); checks ${checks.every((c) => c.ok) ? 'ok' : 'FAILED'}; live tensors after ${calls} calls: kiln ${memory.kilnTensorsDelta >= 0 ? '+' : ''}${memory.kilnTensorsDelta}, tfjs ${memory.tfjsTensorsDelta >= 0 ? '+' : ''}${memory.tfjsTensorsDelta}`);
}

if (ONLY.has('W1')) {
  await runWorkload('W1', `MLP inference, batch ${BATCH}, ${DIMS.join('->')} (ReLU between)`, mlpForwardFlops(BATCH, DIMS),
    () => kiln.noGrad(() => kiln.scope(() => { kilnForward(x); })),
    () => tf.tidy(() => { tfForward(xTf); }),
    { check: checkW1, notes: ['kiln: kiln.linear (x·Wᵀ + b, W [out,in]) + relu under noGrad and scope', `tfjs: tf.matMul(h, W${TF_LAYOUT === 'out-in' ? ', false, true' : ''}) + add + relu in tf.tidy (weights ${TF_LAYOUT})`] });
}

if (ONLY.has('W2')) {
  await runWorkload('W2', `training step of W1's MLP: cross-entropy (int targets), backward, SGD on 6 params (lr ${LR})`, mlpTrainStepFlops(BATCH, DIMS),
    kilnTrainStep, tfTrainStep,
    {
      beforeFirst: snapshotParams,
      check: checkW2,
      notes: [
        'kiln: kiln.scope(() => { crossEntropy(forward(x), target).backward(); noGrad: p.sub_(p.grad.mul(lr)); p.grad.dispose(); p.grad = null })',
        'tfjs: tf.tidy(() => tf.train.sgd(lr).minimize(() => tf.losses.softmaxCrossEntropy(tf.oneHot(target, 10), forward(x)), false, vars))',
        'FLOPs: forward + weight grads + input grads of layers 2-3 (the input needs no grad); elementwise work not counted',
      ],
    });
}

if (ONLY.has('W5')) {
  mmA = kiln.randn([MM, MM]);
  mmB = kiln.randn([MM, MM]);
  mmATf = tf.tensor2d(f32(mmA), [MM, MM]);
  mmBTf = tf.tensor2d(f32(mmB), [MM, MM]);
  await runWorkload('W5', `matmul ${MM}x${MM}x${MM} float32`, matmulFlops(MM, MM, MM),
    () => kiln.scope(() => { kiln.matmul(mmA, mmB); }),
    () => tf.tidy(() => { tf.matMul(mmATf, mmBTf); }),
    { tfIters: Math.min(SLOW_ITERS, ITERS), check: checkW5 });
}

// Leak check of the torch idiom `p.grad = null` without dispose(): backward keep()s
// gradients, so a scope does not release them and they wait for the garbage collector.
let gradNullLeak: { steps: number; liveTensorsPerStep: number; liveBytesPerStep: number } | null = null;
if (ONLY.has('W2')) {
  const steps = 3;
  const m0 = kiln.memory();
  for (let s = 0; s < steps; s++) {
    kiln.scope(() => {
      kiln.crossEntropy(kilnForward(x), target).backward();
      kiln.noGrad(() => { for (const p of params) { p.sub_(p.grad!.mul(LR)); p.grad = null; } });
    });
  }
  const m1 = kiln.memory();
  gradNullLeak = { steps, liveTensorsPerStep: (m1.tensors - m0.tensors) / steps, liveBytesPerStep: (m1.bytes - m0.bytes) / steps };
}

// ---------------------------------------------------------------- first eager op of a fresh process

interface FirstOp { family: string; importMs: number; firstMs: number; warmMs: number; eager: { backend: string; modules: number; buildMs: number } }
/** --first-op-runs fresh processes per kernel family (0: skipped): the first op builds its family's wasm module */
const FIRST_RUNS = intArg(args, 'first-op-runs', 5, 0);
const firstOps: Record<string, { runs: FirstOp[]; medianFirstMs: number; medianWarmMs: number }> = {};
if (FIRST_RUNS > 0) {
  const { spawnSync } = await import('node:child_process');
  const child = new URL('./lib/first-op-child.ts', import.meta.url).pathname;
  console.log(`\nfirst eager op of a fresh process (${FIRST_RUNS} processes per family; 256x256 float32 operands)`);
  for (const family of ['pointwise', 'matmul', 'reduce', 'all']) {
    const runs: FirstOp[] = [];
    for (let i = 0; i < FIRST_RUNS; i++) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', child, family], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`first-op child (${family}) failed: ${r.stderr}`);
      runs.push(JSON.parse(r.stdout.trim().split('\n').pop()!) as FirstOp);
    }
    const med = (xs: number[]) => [...xs].sort((p, q) => p - q)[xs.length >> 1]!;
    firstOps[family] = { runs, medianFirstMs: round(med(runs.map((x) => x.firstMs))), medianWarmMs: round(med(runs.map((x) => x.warmMs)), 3) };
    console.log(`  ${family.padEnd(9)} first ${fmtMs(firstOps[family]!.medianFirstMs).padStart(6)} ms (median; runs ${runs.map((x) => fmtMs(x.firstMs)).join(', ')}), the same op again ${fmtMs(firstOps[family]!.medianWarmMs)} ms, eager on ${runs[0]!.eager.backend}`);
  }
}

// ---------------------------------------------------------------- report

finishMachineInfo(machine);
console.log('\nmedians of steady-state calls; speedup = tfjs median / kiln median; floor = FLOPs at the 2-thread BLAS peak');
const peakNote = peak?.gflops2Threads ? `measured ${peak.gflops2Threads.toFixed(0)} GFLOP/s` : `reference ${REF_PEAK_GFLOPS} GFLOP/s`;
const rows: string[][] = [];
for (const r of results) {
  const floor = r.floorMs.measured2Threads ?? r.floorMs.reference2Threads;
  for (const [name, v] of Object.entries(r.results)) {
    rows.push([
      r.id, name, fmtMs(v.firstMs), fmtMs(v.medianMs), fmtMs(v.p95Ms), String(v.n), v.gflops.toFixed(2),
      fmtMs(floor), `${(v.medianMs / floor).toFixed(0)}x`,
      name === 'kiln' ? `${fmtRatio(r.speedup)} ${r.meetsBar ? 'ok' : 'MISSED'}` : '',
    ]);
  }
}
printTable(['workload', 'impl', 'first ms', 'median ms', 'p95 ms', 'calls', 'GFLOP/s', `floor ms (${peakNote})`, 'vs floor', `kiln speedup (bar ${BAR}x)`], rows);
console.log(`reference peak (WORKLOADS.md): ${REF_PEAK_GFLOPS} GFLOP/s, numpy/OpenBLAS, 2 threads, AVX-512; kiln eager's wasm kernels use KILN_THREADS threads, tfjs-backend-cpu one`);
if (peak?.gflops1Thread) console.log(`measured 1-thread BLAS peak: ${peak.gflops1Thread.toFixed(0)} GFLOP/s`);
if (gradNullLeak) {
  console.log(`leak check: with p.grad.dispose() the training step keeps live tensors flat (${results.find((r) => r.id === 'W2')?.memory.kilnTensorsDelta ?? '?'} after all calls); ` +
    `with only \`p.grad = null\` each step leaves ${gradNullLeak.liveTensorsPerStep} tensors (${(gradNullLeak.liveBytesPerStep / 2 ** 20).toFixed(1)} MiB) for the garbage collector`);
}
const failed = results.flatMap((r) => r.checks.filter((c) => !c.ok));
const allMet = results.length > 0 && results.every((r) => r.meetsBar);
console.log(`bar (kiln >= ${BAR}x tfjs-cpu on every workload): ${allMet ? 'met' : 'MISSED'}${failed.length ? `; ${failed.length} correctness check(s) FAILED` : ''}`);
console.log(`load avg start ${machine.loadAvgStart.join(' ')}, end ${machine.loadAvgEnd!.join(' ')} (other processes on this machine skew timings)`);

writeJson(OUT, {
  benchmark: 'eager',
  command: `npx tsx bench/eager.ts ${process.argv.slice(2).join(' ')}`.trim(),
  date: machine.date,
  machine,
  peers: { tfjs: tfInfo },
  kiln: kiln.eagerStats(),
  options: { iters: ITERS, slowIters: SLOW_ITERS, warmup: WARMUP, order: ORDER, tfjsLayout: TF_LAYOUT, batch: BATCH, dims: DIMS, lr: LR },
  method: `first call timed alone; then correctness checks; then warm-up calls; then steady-state calls ${ORDER === 'blocked' ? 'blocked (all kiln calls, then all tfjs calls)' : 'round-robin (kiln, tfjs, kiln, ...)'}. p95 is nearest-rank (the slowest call when n < 20).`,
  peak: {
    reference: { gflops2Threads: REF_PEAK_GFLOPS, source: 'WORKLOADS.md: numpy/OpenBLAS f32 matmul 1024^3, 2 threads, AVX-512 kernel, 2026-11-30' },
    measured: peak,
  },
  bar: { required: BAR, allMet, perWorkload: Object.fromEntries(results.map((r) => [r.id, round(r.speedup, 2)])) },
  workloads: Object.fromEntries(results.map((r) => [r.id, {
    ...r,
    results: Object.fromEntries(Object.entries(r.results).map(([k, v]) => [k, { ...v, medianMs: round(v.medianMs), p95Ms: round(v.p95Ms), minMs: round(v.minMs), maxMs: round(v.maxMs), meanMs: round(v.meanMs), firstMs: round(v.firstMs), gflops: round(v.gflops) }])),
    floorMs: Object.fromEntries(Object.entries(r.floorMs).map(([k, v]) => [k, v === null ? null : round(v)])),
    speedup: round(r.speedup),
  }])),
  gradNullLeak,
  firstEagerOp: firstOps,
});
console.log(`wrote ${OUT}`);
if (failed.length) process.exitCode = 1;
