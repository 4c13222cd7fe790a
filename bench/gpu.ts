// GPU benchmark (issue 10): W1–W7 eager and compiled on kiln's WebGPU backend, a memory copy's
// bandwidth and a large matmul's rate, and in the same run PyTorch eager and torch.compile on
// the same GPU (bench/gpu/torch_bench.py). One JSON object out.
//
//   npx tsx bench/gpu.ts [--smoke] [--out bench/results/gpu.json] [--no-torch]
//
// Made for a lent GPU machine (Node with the `webgpu` package on the NVIDIA Vulkan driver).
// `--smoke` uses tiny sizes so the harness runs on a software adapter (Dawn over llvmpipe here):
// numbers from a smoke run say nothing about speed and are marked `smoke: true`.
//
// Sizes (../shared/WORKLOADS.md, GPU column): W4 at 64M elements is built here; W1, W2, W3, W6
// and W7 use bench/workloads/ as they are (W6 and W7 at their CPU sizes: the workloads have no
// size options yet, so W6 at 100,000 rows / batch 2048 and W7 at 12 layers / batch 8 /
// sequence 256 are not measured by kiln yet; the JSON says which sizes ran).
// Timing: calls are submitted back to back, then `await gpu.sync()`; ms per call is the total
// over the count (the GPU's queue is what is timed, not JavaScript's encoding alone).

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import * as kiln from 'kiln';
import { requestWebGpuBackend } from 'kiln/node';
import { WORKLOADS, type Instance } from './workloads/index.js';
import { elementwiseChain } from './workloads/w4.js';

const smoke = process.argv.includes('--smoke');
const outIx = process.argv.indexOf('--out');
const outPath = outIx >= 0 ? process.argv[outIx + 1] : null;
const ITERS = smoke ? 2 : 20, WARM = smoke ? 1 : 3;

interface Timing { ms?: number; error?: string; shapes?: string; GBps?: number; TFLOPs?: number }

const cpu = new kiln.JsBackend();
const gpu = await requestWebGpuBackend();
kiln.setDefaultBackend(gpu);

async function time(fn: () => kiln.Tensor | void): Promise<number> {
  const once = () => kiln.scope(() => void fn());
  for (let i = 0; i < WARM; i++) once();
  await gpu.sync();
  const t0 = performance.now();
  for (let i = 0; i < ITERS; i++) once();
  await gpu.sync();
  return (performance.now() - t0) / ITERS;
}

/** An instance whose tensors live on the GPU (setup runs with the GPU as default backend). */
function setupOnGpu(make: () => Instance): Instance {
  kiln.setDefaultBackend(gpu);
  try {
    return make();
  } finally {
    kiln.setDefaultBackend(gpu);
  }
}

const results: Record<string, { eager: Timing; compiled: Timing; title?: string }> = {};
for (const w of WORKLOADS) {
  const row: { eager: Timing; compiled: Timing; title?: string } = { eager: {}, compiled: {}, title: w.title };
  for (const mode of ['eager', 'compiled'] as const) {
    let inst: Instance | null = null;
    try {
      kiln.compiler.reset();
      inst = w.id === 'W4' ? w4Gpu() : setupOnGpu(() => w.setup({ quick: smoke }));
      const i = inst;
      const run = mode === 'eager' ? () => i.fn(...i.inputs) : (() => {
        const c = kiln.compile(i.fn, { backend: 'webgpu', fullgraph: true, name: `${w.id}` });
        return () => c(...i.inputs);
      })();
      const infer = w.kind === 'inference';
      const ms = await time(() => (infer ? kiln.noGrad(run) : run()));
      row[mode] = { ms, shapes: i.shapes };
    } catch (e) {
      row[mode] = { error: (e as Error).message.split('\n')[0] };
    } finally {
      inst?.dispose();
    }
  }
  results[w.id] = row;
  console.error(`${w.id}: eager ${fmt(row.eager)}, compiled ${fmt(row.compiled)}`);
}

/** W4 at the GPU size (64M elements; 1M for --smoke). */
function w4Gpu(): Instance {
  const n = smoke ? 1 << 20 : 64 << 20;
  kiln.manualSeed(20261130);
  const x = kiln.keep(kiln.randn([n]));
  return { inputs: [x], fn: elementwiseChain, step: () => elementwiseChain(x), shapes: `x[${n}]`, flops: null, bytes: 8 * n, params: [], dispose: () => x.dispose() };
}

function fmt(t: Timing): string {
  return t.error ? `error: ${t.error}` : `${t.ms!.toFixed(3)} ms`;
}

// copy bandwidth (read + write of float32) and the rate of a large float32 matmul
const extra: Record<string, Timing> = {};
try {
  const n = smoke ? 1 << 20 : 64 << 20;
  const x = kiln.keep(kiln.randn([n]));
  const ms = await time(() => x.add(0)); // one pointwise kernel: a copy through the shader
  extra.copy = { ms, GBps: (8 * n) / ms / 1e6, shapes: `x[${n}]` };
  x.dispose();
} catch (e) {
  extra.copy = { error: (e as Error).message.split('\n')[0] };
}
try {
  const m = smoke ? 256 : 4096;
  const a = kiln.keep(kiln.randn([m, m])), b = kiln.keep(kiln.randn([m, m]));
  const ms = await time(() => kiln.matmul(a, b));
  extra.matmul = { ms, TFLOPs: (2 * m ** 3) / ms / 1e9, shapes: `${m}x${m}x${m}` };
  a.dispose();
  b.dispose();
} catch (e) {
  extra.matmul = { error: (e as Error).message.split('\n')[0] };
}
console.error(`copy ${fmt(extra.copy!)} (${extra.copy!.GBps?.toFixed(1)} GB/s), matmul ${fmt(extra.matmul!)} (${extra.matmul!.TFLOPs?.toFixed(3)} TFLOP/s)`);

// PyTorch on the same GPU, same workloads, same run
let torch: unknown = { skipped: '--no-torch' };
if (!process.argv.includes('--no-torch')) {
  const r = spawnSync('python3', ['bench/gpu/torch_bench.py', ...(smoke ? ['--smoke'] : [])], { encoding: 'utf8', timeout: 600_000 });
  try {
    torch = JSON.parse(r.stdout.trim().split('\n').pop() ?? '');
  } catch {
    torch = { error: `torch_bench.py exited ${r.status}: ${(r.stderr || r.error?.message || '').slice(-500)}` };
  }
}

kiln.setDefaultBackend(cpu);
const report = {
  bench: 'gpu', date: new Date().toISOString(), smoke, adapter: gpu.adapterInfo,
  note: smoke ? 'smoke run: tiny sizes, to prove the harness; not performance numbers' : 'ms per call, GPU queue timed with sync()',
  sizes: 'W4 at 64M elements (1M smoke); W1, W2, W3, W6, W7 at bench/workloads sizes (quick for smoke): W6/W7 GPU sizes need size options in the workloads (not built)',
  iters: ITERS, warmup: WARM, kiln: results, ...extra, torch,
};
const json = JSON.stringify(report, null, 2);
if (outPath) writeFileSync(outPath, json + '\n');
console.log(json);
await gpu.destroy();
