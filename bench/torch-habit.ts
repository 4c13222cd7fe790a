// The torch-habit training loop (issue 17) against the whole-step compile and eager, on W2's MLP
// and W6's DLRM. Each variant has its own model from the same seed; all run round-robin in one
// process:
//
//   eager          zeroGrad, forward, loss, backward, optimizer step, all eager
//   whole step     the same step compiled as one function (forward, backward, SGD fused)
//   habit          kiln.compile(model) in the unchanged loop: the compiled forward/backward pair,
//                  loss and opt.step() eager outside it (what a PyTorch user writes)
//   habit no step  the same without opt.step() (zeroGrad, compiled forward, loss, backward): the
//                  part the compiler owns, compared with the whole step
//   infer grad     the compiled module called in grad mode (results carry the compiled backward)
//   infer noGrad   the same call under kiln.noGrad
//
// No variant disposes by hand (kiln.scope frees each step, as a user's loop would). The bars:
// habit no step <= 1.5x whole step; habit >= 3x faster than eager; infer grad <= 1.2x infer noGrad.
// Peak memory of one step (each variant in a fresh process, --memory): the process's peak resident
// memory above what setup left (the physical figure), beside tensor bytes (kiln.memory) and, on
// wasm, the heap's peak (heap-resident tensors are in both of those).
//
// Run: npx tsx bench/torch-habit.ts [--backends=wasm,native] [--workloads=W2,W6] [--iters=20] [--memory=0]
// Writes bench/results/torch-habit.json.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as kiln from 'kilnjs';
import { nativeUnavailableReason } from 'kilnjs/node';
import { buildMlp, MLP_BATCH, MLP_DIMS } from './workloads/w1.js';
import { W2_LR } from './workloads/w2.js';
import { Dlrm, W6_BATCH, W6_DENSE, W6_LR, W6_ROWS, W6_TABLES } from './workloads/w6.js';
import { compare, type Timing } from './lib/timing.js';
import { finishMachineInfo, fmtMs, fmtRatio, intArg, machineInfo, parseArgs, printTable, writeJson } from './lib/report.js';

const args = parseArgs();
const ITERS = intArg(args, 'iters', 20);
const WORKLOADS = (args.get('workloads') ?? 'W2,W6').split(',');
const BACKENDS = (args.get('backends') ?? 'wasm,native').split(',').filter((b) => b !== 'native' || !nativeUnavailableReason());

interface Model {
  model: kiln.nn.Module;
  opt: kiln.optim.SGD;
}
interface Setup {
  build(): Model;
  /** the model's arguments and the labels, kept */
  inputs: kiln.Tensor[];
  labels: kiln.Tensor;
  loss(out: kiln.Tensor, labels: kiln.Tensor): kiln.Tensor;
}

function setup(id: string): Setup {
  kiln.manualSeed(7);
  if (id === 'W2') {
    return {
      build() {
        kiln.manualSeed(1);
        const model = buildMlp();
        return { model, opt: new kiln.optim.SGD(model.parameters(), { lr: W2_LR }) };
      },
      inputs: [kiln.keep(kiln.randn([MLP_BATCH, MLP_DIMS[0]]))],
      labels: kiln.keep(kiln.randint(0, MLP_DIMS[MLP_DIMS.length - 1]!, [MLP_BATCH])),
      loss: (out, y) => kiln.crossEntropy(out, y),
    };
  }
  if (id === 'W6') {
    return {
      build() {
        kiln.manualSeed(2);
        const model = new Dlrm(W6_ROWS);
        return { model, opt: new kiln.optim.SGD(model.parameters(), { lr: W6_LR }) };
      },
      inputs: [kiln.keep(kiln.randn([W6_BATCH, W6_DENSE])), ...Array.from({ length: W6_TABLES }, () => kiln.keep(kiln.randint(0, W6_ROWS, [W6_BATCH, 1])))],
      labels: kiln.keep(kiln.scope(() => kiln.randint(0, 2, [W6_BATCH, 1]).float())),
      loss: (out, y) => kiln.binaryCrossEntropyWithLogits(out, y),
    };
  }
  throw new Error(`unknown workload ${id} (W2 or W6)`);
}

type Call = (...a: kiln.Tensor[]) => kiln.Tensor;
const VARIANTS = ['eager', 'whole step', 'habit', 'habit no step', 'infer grad', 'infer noGrad'] as const;
type VariantName = (typeof VARIANTS)[number];

/** One step of a variant, on its own model; returns the loss (for the agreement check), or NaN for inference. */
function makeStep(s: Setup, variant: VariantName, backend: string): () => number {
  const { model, opt } = s.build();
  const fwd = model as unknown as { call: Call };
  const compiled = kiln.compile(model, { backend }) as unknown as Call;
  const stepOf = (forward: Call, step: boolean) => () => kiln.scope(() => {
    opt.zeroGrad();
    const loss = s.loss(forward(...s.inputs), s.labels);
    loss.backward();
    if (step) opt.step();
    return loss.item();
  });
  switch (variant) {
    case 'eager': return stepOf((...a) => fwd.call(...a), true);
    case 'habit': return stepOf(compiled, true);
    case 'habit no step': return stepOf(compiled, false);
    case 'whole step': {
      const whole = kiln.compile((...a: kiln.Tensor[]) => {
        opt.zeroGrad();
        const loss = s.loss(fwd.call(...a.slice(0, -1)), a.at(-1)!);
        loss.backward();
        opt.step();
        return loss;
      }, { backend, name: 'whole_step' });
      return () => kiln.scope(() => whole(...s.inputs, s.labels).item());
    }
    case 'infer grad': return () => (kiln.scope(() => { compiled(...s.inputs); }), NaN);
    case 'infer noGrad': return () => (kiln.scope(() => kiln.noGrad(() => { compiled(...s.inputs); })), NaN);
  }
}

/** Child mode: three steps of one variant in a fresh process; prints its peak memory. */
function memoryChild(id: string, backend: string, variant: VariantName): void {
  const s = setup(id);
  const step = makeStep(s, variant, backend);
  const setupRss = process.memoryUsage().rss;
  step(); // compile, first-call allocations
  const base = kiln.memory().bytes;
  kiln.resetPeakMemory();
  for (let i = 0; i < 3; i++) step();
  const heap = backend === 'wasm' ? kiln.wasmStats().heap.peakBytes : null;
  // the physical figure: the process's peak resident memory above what setup left (tensor bytes
  // count heap-resident tensors again inside the wasm heap's figure)
  const rssPeakBytes = process.resourceUsage().maxRSS * 1024 - setupRss;
  process.stdout.write(JSON.stringify({ tensorPeakBytes: kiln.memory().peakBytes - base, heapPeakBytes: heap, rssPeakBytes }) + '\n');
}

interface Row { workload: string; backend: string; timings: Record<string, Timing>; ratios: Record<string, number>; memory?: Record<string, unknown>; stats: Partial<kiln.CompilerStats> }

async function measure(id: string, backend: string): Promise<Row> {
  kiln.compiler.reset();
  const s = setup(id);
  const steps = new Map(VARIANTS.map((v) => [v, makeStep(s, v, backend)]));
  const losses = new Map<string, number[]>(VARIANTS.map((v) => [v, []]));
  const timings = await compare(VARIANTS.map((v) => ({ name: v, fn: () => losses.get(v)!.push(steps.get(v)!()) })), { iters: ITERS, warmup: 3 });
  // the training variants took the same steps from the same weights: their losses must agree
  const ref = losses.get('eager')!;
  for (const v of ['whole step', 'habit'] as const) {
    const worst = losses.get(v)!.reduce((m, l, i) => Math.max(m, Math.abs(l - ref[i]!) / Math.max(1e-6, Math.abs(ref[i]!))), 0);
    if (worst > 1e-3) throw new Error(`${id} ${backend} ${v}: loss differs from eager by ${worst.toExponential(2)} (relative)`);
  }
  const st = kiln.stats();
  if (st.interpretedReplays || st.eagerFallbacks || st.fusionFallbacks) throw new Error(`${id} ${backend}: the compiled path did not run as compiled: ${JSON.stringify({ interpreted: st.interpretedReasons, eager: st.fallbackReasons, fusion: st.fusionFallbacks })}`);
  const m = (v: VariantName) => timings[v]!.medianMs;
  const ratios = {
    habitNoStepVsWholeStep: m('habit no step') / m('whole step'),
    eagerVsHabit: m('eager') / m('habit'),
    inferGradVsNoGrad: m('infer grad') / m('infer noGrad'),
  };
  return { workload: id, backend, timings, ratios, stats: { compiles: st.compiles, aotCompiles: st.aotCompiles, interpretedReplays: st.interpretedReplays, eagerFallbacks: st.eagerFallbacks, fusionFallbacks: st.fusionFallbacks } };
}

function peakMemory(id: string, backend: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const v of ['eager', 'habit', 'whole step'] as const) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), `--child=${id},${backend},${v}`], { encoding: 'utf8', timeout: 600_000 });
    if (r.status !== 0) throw new Error(`memory child ${id} ${backend} ${v} failed:\n${r.stderr}`);
    out[v] = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
  }
  return out;
}

const child = args.get('child');
if (child) {
  const [id, backend, variant] = child.split(',') as [string, string, VariantName];
  memoryChild(id, backend, variant);
} else {
  const machine = machineInfo();
  const rows: Row[] = [];
  for (const id of WORKLOADS) {
    for (const backend of BACKENDS) {
      const row = await measure(id, backend);
      if (args.get('memory') !== '0') row.memory = peakMemory(id, backend);
      rows.push(row);
      console.log(`\n${id} on ${backend}, ${ITERS} calls each (round-robin), median ms:`);
      printTable(['variant', '', 'median', 'p95', 'first call'], VARIANTS.map((v) => [v, '', fmtMs(row.timings[v]!.medianMs), fmtMs(row.timings[v]!.p95Ms), fmtMs(row.timings[v]!.firstMs)]));
      const r = row.ratios;
      console.log(`  habit no step / whole step ${fmtRatio(r.habitNoStepVsWholeStep)} (bar <= 1.5x); eager / habit ${fmtRatio(r.eagerVsHabit)} (bar >= 3x); infer grad / noGrad ${fmtRatio(r.inferGradVsNoGrad)} (bar <= 1.2x)`);
      if (row.memory) {
        const mb = (b: unknown) => (typeof b === 'number' ? `${(b / 2 ** 20).toFixed(1)} MB` : '-');
        for (const [v, x] of Object.entries(row.memory)) {
          const m = x as { tensorPeakBytes: number; heapPeakBytes: number | null; rssPeakBytes: number };
          console.log(`  peak memory of a step, ${v}: process RSS above setup ${mb(m.rssPeakBytes)}; tensors ${mb(m.tensorPeakBytes)}, wasm heap ${mb(m.heapPeakBytes)}`);
        }
      }
    }
  }
  writeJson('bench/results/torch-habit.json', { machine: finishMachineInfo(machine), iters: ITERS, rows });
  console.log('wrote bench/results/torch-habit.json');
}
