// kiln eager vs compiled on the JS backend vs compiled on the native backend (C compiled at
// run time, OpenMP threads), round-robin in one process (bench/lib/timing.ts):
//   W4      elementwise tanh(1.5x+0.3)*sigmoid(x)-0.1x on 4M float32
//   MM1024  a 1024x1024 @ 1024x1024 float32 matmul
//   W1      MLP inference, batch 128, 784-1024-1024-10
//
// Run:  npx tsx bench/native.ts [--iters=10] [--warmup=3] [--only=W4,MM1024,W1] [--reduce-overhead]
//       (--reduce-overhead: both compiled variants with mode 'reduce-overhead', outputs recycled)
// Threads: KILN_THREADS (default: all cores) for both compiled backends.

import * as kiln from 'kiln';
import { nativeStats, nativeUnavailableReason } from 'kiln/node';
import { compare } from './lib/timing.js';
import { runInference } from './workloads/index.js';
import { w1 } from './workloads/w1.js';
import { w4 } from './workloads/w4.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const ITERS = Number(args.get('iters') ?? 10);
const WARMUP = Number(args.get('warmup') ?? 3);
const RO = args.has('reduce-overhead');
const ONLY = args.has('only') ? new Set(args.get('only')!.split(',')) : null;

const why = nativeUnavailableReason();
if (why) {
  console.log(`native backend unavailable: ${why}`);
  process.exit(0);
}

interface Row { id: string; eager: number; js: number; native: number; firstJs: number; firstNative: number; maxDiff: number; unit: string; work: number }
const rows: Row[] = [];

async function bench(id: string, fn: (...x: kiln.Tensor[]) => kiln.Tensor, inputs: readonly kiln.Tensor[], unit: 'GFLOP/s' | 'GB/s', work: number): Promise<void> {
  if (ONLY && !ONLY.has(id)) return;
  kiln.compiler.reset();
  // reduce-overhead recycles output buffers: fresh output memory costs page faults that can
  // dominate a memory-bound kernel (16 MiB for W4)
  const mode = RO ? 'reduce-overhead' as const : 'default' as const;
  const js = kiln.compile(fn, { backend: 'js', mode });
  const nat = kiln.compile(fn, { backend: 'native', mode });
  const call = (f: (...x: kiln.Tensor[]) => kiln.Tensor) => () => runInference(() => f(...inputs));
  let maxDiff = 0;
  const r = await compare([
    { name: 'native', fn: call(nat) },
    { name: 'js', fn: call(js) },
    { name: 'eager', fn: call(fn) },
  ], {
    iters: ITERS, warmup: WARMUP,
    afterFirst: () => kiln.noGrad(() => kiln.scope(() => {
      const a = nat(...inputs).dataSync(), b = fn(...inputs).dataSync();
      let scale = 1e-6;
      for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(b[i]!));
      for (let i = 0; i < b.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i]! - b[i]!) / scale);
    })),
  });
  rows.push({ id, eager: r.eager!.medianMs, js: r.js!.medianMs, native: r.native!.medianMs, firstJs: r.js!.firstMs, firstNative: r.native!.firstMs, maxDiff, unit, work });
}

kiln.manualSeed(20261130);
{
  const inst = w4.setup();
  await bench('W4', inst.fn, inst.inputs, 'GB/s', inst.bytes!);
}
{
  const a = kiln.keep(kiln.randn([1024, 1024]));
  const b = kiln.keep(kiln.randn([1024, 1024]));
  await bench('MM1024', (x, y) => x.matmul(y), [a, b], 'GFLOP/s', 2 * 1024 ** 3);
}
{
  const inst = w1.setup();
  await bench('W1', inst.fn, inst.inputs, 'GFLOP/s', inst.flops!);
}

const rate = (ms: number, r: Row) => (r.work / (ms * 1e-3) / 1e9).toFixed(1);
console.log(`threads: ${process.env.KILN_THREADS ?? 'all cores'}; compile mode ${RO ? 'reduce-overhead' : 'default'}; iters ${ITERS}, warm-up ${WARMUP}; medians in ms`);
console.log('workload | eager | js compiled | native | native vs js | native vs eager | native rate | first call js / native (ms) | max rel diff vs eager');
for (const r of rows) {
  console.log(`${r.id} | ${r.eager.toFixed(2)} | ${r.js.toFixed(2)} | ${r.native.toFixed(2)} | ${(r.js / r.native).toFixed(2)}x | ${(r.eager / r.native).toFixed(2)}x | ${rate(r.native, r)} ${r.unit} | ${r.firstJs.toFixed(0)} / ${r.firstNative.toFixed(0)} | ${r.maxDiff.toExponential(1)}`);
}
console.log('native stats:', JSON.stringify(nativeStats()));
