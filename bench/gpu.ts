// GPU benchmark (issue 10): W1–W7 eager and compiled on kiln's WebGPU backend, a memory copy's
// bandwidth and a large matmul's rate (W5 at its GPU size, 4096³), and in the same run PyTorch
// eager and torch.compile on the same GPU for the same workloads at the same sizes
// (bench/gpu/torch_bench.py). One JSON object out.
//
//   npx tsx bench/gpu.ts [--smoke] [--size gpu|cpu] [--only W1,W4] [--iters 20] [--warmup 3]
//                        [--out bench/results/gpu.json] [--no-torch] [--python python3]
//                        [--max-autotune] [--matmul-config 128x128x16/8x8]
//
// Made for a lent GPU machine (Node with the `webgpu` package on the NVIDIA Vulkan driver).
// Sizes: the GPU column of ../shared/WORKLOADS.md (`setup({ size: 'gpu' })`: W4 at 64M
// elements, W6 with 100,000-row tables and batch 2048, W7 with 12 layers, batch 8, sequence
// 256; W1, W2, W3 as on the CPU), copy over 64M floats, matmul 4096³. `--size cpu` runs the CPU
// column instead. `--smoke` runs the CPU sizes with `quick` (W3 on 1024 rows), copy over 1M
// floats, matmul 256³ and 2 calls, so the harness runs on a software adapter (Dawn over llvmpipe
// here): numbers from a smoke run say nothing about speed and are marked `smoke: true`.
// The JSON records the size option and the shapes every workload ran with (kiln and torch).
//
// Timing: calls are submitted back to back, then `await gpu.sync()`; ms per call is the total
// over the count (the GPU's queue is what is timed, not JavaScript's encoding alone). The first
// call (compile included, for compiled) is timed on its own with a sync after it (`firstMs`).
// Inference workloads build one instance for eager and compiled; training workloads build one
// per mode from the same seed. With --out the file is rewritten after every workload (marked
// `partial: true` until the run ends), so a run cut short by a time limit still leaves results.
// --max-autotune compiles with mode 'max-autotune', runs one call, then `await gpu.autotune()`
// (matmul configurations timed on the device; the report per workload lands in `autotune`),
// before timing. --matmul-config forces one matmul configuration everywhere (eager included).

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import * as kiln from 'kilnjs';
import { requestWebGpuBackend } from 'kilnjs/node';
import { parseConfig } from '../src/backend/webgpu/render-matmul.js';
import { WORKLOADS, type Instance, type WorkloadSize } from './workloads/index.js';

const argv = process.argv.slice(2);
const flag = (name: string): boolean => argv.includes(name);
function opt(name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i >= 0) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

const smoke = flag('--smoke');
const sizeArg = opt('--size');
if (sizeArg !== undefined && sizeArg !== 'cpu' && sizeArg !== 'gpu') throw new Error(`--size must be cpu or gpu, got ${sizeArg}`);
const size: WorkloadSize = (sizeArg as WorkloadSize | undefined) ?? (smoke ? 'cpu' : 'gpu');
const quick = smoke;
const only = opt('--only')?.toUpperCase().split(',').map((s) => s.trim()).filter(Boolean) ?? null;
const outPath = opt('--out') ?? null;
const ITERS = Number(opt('--iters') ?? (smoke ? 2 : 20));
const WARM = Number(opt('--warmup') ?? (smoke ? 1 : 3));
const COPY_N = smoke ? 1 << 20 : 64 << 20;
const MATMUL_N = smoke ? 256 : 4096;

interface Timing { ms?: number; firstMs?: number; error?: string; shapes?: string; GBps?: number; TFLOPs?: number }
interface Row { title: string; kind: string; shapes?: string; flops?: number | null; bytes?: number | null; setupMs?: number; eager: Timing; compiled: Timing; autotune?: string }

const cpu = new kiln.JsBackend();
const gpu = await requestWebGpuBackend();
kiln.setDefaultBackend(gpu);
const maxAutotune = flag('--max-autotune');
const matmulConfig = opt('--matmul-config') ?? null;
if (matmulConfig) gpu.matmulConfig = parseConfig(matmulConfig);

/** Times fn: the first call alone (synced), then WARM calls, then ITERS calls back to back. */
async function time(fn: () => kiln.Tensor | void): Promise<{ ms: number; firstMs: number }> {
  const once = () => kiln.scope(() => void fn());
  let t0 = performance.now();
  once();
  await gpu.sync();
  const firstMs = performance.now() - t0;
  for (let i = 0; i < WARM; i++) once();
  await gpu.sync();
  t0 = performance.now();
  for (let i = 0; i < ITERS; i++) once();
  await gpu.sync();
  return { ms: (performance.now() - t0) / ITERS, firstMs };
}

const errorText = (e: unknown): string => `${(e as Error).name ?? 'Error'}: ${String((e as Error).message ?? e).split('\n')[0]}`;
const fmt = (t: Timing): string => (t.error ? `error: ${t.error}` : `${t.ms!.toFixed(3)} ms (first ${t.firstMs!.toFixed(0)} ms)`);

const results: Record<string, Row> = {};
const extra: Record<string, Timing> = {};
let torch: unknown = flag('--no-torch') ? { skipped: '--no-torch' } : { skipped: 'not run yet' };

function report(partial: boolean) {
  const shapes: Record<string, string | undefined> = {};
  for (const [id, r] of Object.entries(results)) shapes[id] = r.shapes;
  if (extra.copy) shapes.copy = `x[${COPY_N}]`;
  if (extra.matmul) shapes.matmul = `${MATMUL_N}x${MATMUL_N}x${MATMUL_N}`;
  return {
    bench: 'gpu', date: new Date().toISOString(), smoke, partial, adapter: gpu.adapterInfo,
    note: smoke ? 'smoke run: CPU/quick sizes and 2 calls, to prove the harness; not performance numbers' : 'ms per call, GPU queue timed with sync(); firstMs: the first call alone (compile included for compiled)',
    sizes: { option: size, quick, ...shapes },
    iters: ITERS, warmup: WARM, maxAutotune, matmulConfig, kiln: results, ...extra, torch,
  };
}
function save(partial: boolean): string {
  const json = JSON.stringify(report(partial), null, 2);
  if (outPath) writeFileSync(outPath, json + '\n');
  return json;
}

for (const w of WORKLOADS) {
  if (only && !only.includes(w.id)) continue;
  const row: Row = { title: w.title, kind: w.kind, eager: {}, compiled: {} };
  results[w.id] = row;
  const infer = w.kind === 'inference';
  let shared: Instance | null = null;
  const build = (): Instance => {
    const t0 = performance.now();
    const inst = w.setup({ size, quick });
    row.setupMs ??= performance.now() - t0;
    row.shapes = inst.shapes;
    row.flops = inst.flops;
    row.bytes = inst.bytes;
    return inst;
  };
  try {
    for (const mode of ['eager', 'compiled'] as const) {
      let inst: Instance | null = null;
      try {
        kiln.compiler.reset();
        inst = infer ? (shared ??= build()) : build();
        const i = inst;
        const run = mode === 'eager' ? () => i.fn(...i.inputs) : (() => {
          const c = kiln.compile(i.fn, { backend: 'webgpu', fullgraph: true, name: w.id, ...(maxAutotune ? { mode: 'max-autotune' as const } : {}) });
          return () => c(...i.inputs);
        })();
        if (mode === 'compiled' && maxAutotune) {
          kiln.scope(() => void (infer ? kiln.noGrad(run) : run())); // compiles; the matmuls register
          row.autotune = (await gpu.autotune()).text;
          console.error(`${w.id} autotune:\n${row.autotune}`);
        }
        const t = await time(() => (infer ? kiln.noGrad(run) : run()));
        row[mode] = { ...t, shapes: i.shapes };
        if (i.flops) row[mode].TFLOPs = i.flops / t.ms / 1e9;
        if (i.bytes) row[mode].GBps = i.bytes / t.ms / 1e6;
      } catch (e) {
        row[mode] = { error: errorText(e) };
      } finally {
        if (!infer) inst?.dispose();
      }
    }
  } finally {
    shared?.dispose();
  }
  console.error(`${w.id} [${row.shapes ?? '?'}]: eager ${fmt(row.eager)}, compiled ${fmt(row.compiled)}`);
  save(true);
}

// copy bandwidth (read + write of float32) and the rate of a large float32 matmul (W5, GPU size)
try {
  const x = kiln.keep(kiln.full([COPY_N], 0.5)); // values do not matter to a copy; full is a GPU fill, not a host draw
  const t = await time(() => x.add(0)); // one pointwise kernel: a copy through the shader
  extra.copy = { ...t, GBps: (8 * COPY_N) / t.ms / 1e6, shapes: `x[${COPY_N}]` };
  x.dispose();
} catch (e) {
  extra.copy = { error: errorText(e) };
}
try {
  kiln.manualSeed(20261130);
  const a = kiln.keep(kiln.randn([MATMUL_N, MATMUL_N])), b = kiln.keep(kiln.randn([MATMUL_N, MATMUL_N]));
  const t = await time(() => kiln.matmul(a, b));
  extra.matmul = { ...t, TFLOPs: (2 * MATMUL_N ** 3) / t.ms / 1e9, shapes: `${MATMUL_N}x${MATMUL_N}x${MATMUL_N}` };
  a.dispose();
  b.dispose();
} catch (e) {
  extra.matmul = { error: errorText(e) };
}
console.error(`copy ${fmt(extra.copy!)} (${extra.copy!.GBps?.toFixed(1)} GB/s), matmul ${fmt(extra.matmul!)} (${extra.matmul!.TFLOPs?.toFixed(3)} TFLOP/s)`);
save(true);

// PyTorch on the same GPU, same workloads, same sizes, same run
if (!flag('--no-torch')) {
  const args = ['bench/gpu/torch_bench.py', '--size', size, '--iters', String(ITERS), '--warmup', String(WARM)];
  if (quick) args.push('--quick');
  if (smoke) args.push('--smoke');
  if (only) args.push('--only', only.join(','));
  console.error(`${opt('--python') ?? 'python3'} ${args.join(' ')}`);
  const r = spawnSync(opt('--python') ?? 'python3', args, { encoding: 'utf8', timeout: 600_000, maxBuffer: 64 << 20 });
  if (r.stderr) process.stderr.write(r.stderr.slice(-4000));
  try {
    torch = JSON.parse(r.stdout.trim().split('\n').pop() ?? '');
  } catch {
    torch = { error: `torch_bench.py exited ${r.status}${r.signal ? ` (${r.signal})` : ''}: ${(r.stderr || r.error?.message || '').slice(-500)}` };
  }
}

kiln.setDefaultBackend(cpu);
console.log(save(false));
await gpu.destroy();
