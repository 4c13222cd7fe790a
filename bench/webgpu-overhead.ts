// Per-call JavaScript cost of a compiled program on WebGPU: the time a call spends in JS to
// encode its dispatches and submit them (not the GPU's work), with and without
// `reduce-overhead`'s prerecorded dispatches (src/backend/webgpu/prerecord.ts).
//
// Modes: 'default'; 'reduce-overhead, re-encoded' (the mode with prerecording turned off:
// output pools only, every dispatch encoded as before); 'reduce-overhead' (prerecorded:
// pipelines, bind groups and grids made once, one tight encode loop per call).
//
// Each call is timed alone: the call itself (guards, bookkeeping, encoding every dispatch into
// the open compute pass: the JS cost prerecording removes), then the submit on its own (on
// Dawn's OpenGL backend over llvmpipe the submit replays the commands into GL and runs part of
// the work, so it is shown apart); the GPU work is awaited outside the timing.
//
// Run: npx tsx bench/webgpu-overhead.ts [--calls 40]   (llvmpipe here: slow GPU, JS numbers hold)

import * as kiln from 'kilnjs';
import { requestWebGpuBackend } from 'kilnjs/node';
import { MlpClassifier } from '../examples/mlp.js';
import { buildMlp, MLP_BATCH, MLP_DIMS } from './workloads/w1.js';
import { intArg, joinSpacedValues, parseArgs } from './lib/report.js';

const args = parseArgs(joinSpacedValues(process.argv.slice(2)));
const CALLS = intArg(args, 'calls', 40);

const cpu = new kiln.JsBackend();
const gpu = await requestWebGpuBackend();
console.log(`adapter: ${gpu.adapterInfo}`);

const up = (t: kiln.Tensor) => kiln.keep(kiln.toBackend(t, gpu));

interface Case {
  name: string;
  /** calls to time (W1's matmuls take ~0.4 s per call on llvmpipe: fewer) */
  calls?: number;
  /** a fresh compiled function over fresh state, and its argument lists (cycled over calls) */
  make(mode: 'default' | 'reduce-overhead'): { f: (...a: kiln.Tensor[]) => unknown; args: kiln.Tensor[][] };
}

const cases: Case[] = [
  {
    name: 'MLP training step (2-64-64-3, Adam, batch 64; inputs alternate between 2 batches)',
    make(mode) {
      kiln.setDefaultBackend(cpu);
      kiln.manualSeed(1);
      const xs = [0, 1].map(() => up(kiln.randn([64, 2])));
      const ys = [0, 1].map(() => up(kiln.randint(0, 3, [64]).int()));
      kiln.setDefaultBackend(gpu);
      kiln.manualSeed(2);
      const model = new MlpClassifier(2, 64, 3);
      const opt = new kiln.optim.Adam(model.parameters(), { lr: 0.01 });
      const f = kiln.compile((x: kiln.Tensor, y: kiln.Tensor) => {
        opt.zeroGrad();
        const loss = kiln.crossEntropy(model.call(x), y);
        loss.backward();
        opt.step();
        return loss;
      }, { backend: 'webgpu', fullgraph: true, mode });
      return { f, args: [[xs[0]!, ys[0]!], [xs[1]!, ys[1]!]] };
    },
  },
  {
    name: `W1 inference (MLP ${MLP_DIMS.join('-')}, batch ${MLP_BATCH})`,
    calls: Math.max(8, Math.round(CALLS / 4)),
    make(mode) {
      kiln.setDefaultBackend(cpu);
      kiln.manualSeed(3);
      const model = buildMlp();
      for (const p of model.parameters()) p.requiresGrad = false;
      const x = up(kiln.randn([MLP_BATCH, MLP_DIMS[0]]));
      const onGpu = model.parameters().map(up);
      // the same network over GPU copies of the weights
      const f = kiln.compile((x: kiln.Tensor) => {
        let h = x;
        for (let i = 0; i < onGpu.length; i += 2) {
          h = kiln.matmul(h, onGpu[i]!.transpose(0, 1)).add(onGpu[i + 1]!);
          if (i + 2 < onGpu.length) h = h.relu();
        }
        return h;
      }, { backend: 'webgpu', fullgraph: true, mode });
      kiln.setDefaultBackend(gpu);
      return { f, args: [[x]] };
    },
  },
  {
    name: 'many kernels: 12 blocks of linear + layerNorm + softmax + residual, [32, 64]',
    make(mode) {
      kiln.setDefaultBackend(cpu);
      kiln.manualSeed(4);
      const ws = Array.from({ length: 12 }, () => up(kiln.randn([64, 64]).mul(0.1)));
      const x = up(kiln.randn([32, 64]));
      kiln.setDefaultBackend(gpu);
      const f = kiln.compile((x: kiln.Tensor) => {
        let h = x;
        for (const w of ws) h = kiln.softmax(kiln.layerNorm(kiln.matmul(h, w), [64]), -1).add(h);
        return h.sum(0);
      }, { backend: 'webgpu', fullgraph: true, mode });
      return { f, args: [[x]] };
    },
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(c: Case, mode: 'default' | 'reduce-overhead', prerecord: boolean) {
  gpu.prerecord = prerecord;
  kiln.compiler.reset();
  const { f, args } = c.make(mode);
  kiln.setDefaultBackend(gpu);
  const calls = c.calls ?? CALLS;
  const times: number[] = [], submitTimes: number[] = [];
  let s0 = gpu.stats;
  for (let i = 0; i < calls + 3; i++) {
    if (i === 3) s0 = gpu.stats; // the first calls trace and compile
    const a = args[i % args.length]!;
    await gpu.sync();
    const t0 = performance.now();
    kiln.scope(() => { f(...a); });
    const t1 = performance.now();
    gpu.submit();
    const t2 = performance.now();
    if (i >= 3) (times.push((t1 - t0) * 1000), submitTimes.push((t2 - t1) * 1000));
  }
  await gpu.sync();
  const s1 = gpu.stats as kiln.WebGpuStats & { bindGroups?: number };
  const b0 = (s0 as { bindGroups?: number }).bindGroups;
  return {
    us: median(times),
    submitUs: median(submitTimes),
    dispatches: (s1.dispatches - s0.dispatches) / calls,
    submits: (s1.submits - s0.submits) / calls,
    bindGroups: s1.bindGroups !== undefined && b0 !== undefined ? (s1.bindGroups - b0) / calls : NaN,
  };
}

console.log(`per-call JS time (the call: guards, bookkeeping, encoding; then the submit alone), median of ${CALLS} calls (W1: fewer)`);
const results: Record<string, Record<string, unknown>> = {};
for (const c of cases) {
  console.log(`\n${c.name}`);
  console.log(`  ${'mode'.padEnd(30)} ${'call µs'.padStart(9)} ${'submit µs'.padStart(10)} ${'dispatches'.padStart(11)} ${'submits'.padStart(8)} ${'bind groups'.padStart(12)}`);
  const rows: [string, 'default' | 'reduce-overhead', boolean][] = [
    ['default', 'default', false],
    ['reduce-overhead, re-encoded', 'reduce-overhead', false],
    ['reduce-overhead (prerecorded)', 'reduce-overhead', true],
  ];
  results[c.name] = {};
  for (const [label, mode, pre] of rows) {
    const r = await measure(c, mode, pre);
    results[c.name]![label] = r;
    console.log(`  ${label.padEnd(30)} ${r.us.toFixed(0).padStart(9)} ${r.submitUs.toFixed(0).padStart(10)} ${r.dispatches.toFixed(1).padStart(11)} ${r.submits.toFixed(1).padStart(8)} ${Number.isNaN(r.bindGroups) ? '-'.padStart(12) : r.bindGroups.toFixed(1).padStart(12)}`);
  }
}
gpu.prerecord = true;
kiln.setDefaultBackend(cpu);
await gpu.destroy();
if (args.has('json')) console.log(JSON.stringify(results));
