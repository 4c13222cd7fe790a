// What a read inside a compiled training step costs. W2's MLP step (784-1024-1024-10, batch
// 128, SGD), each variant with its own model from the same seed, timed round-robin in one run:
//
//   eager            the step run eagerly, the loss read with item() after backward (the baseline)
//   compiled         the whole step compiled, the loss read after the call (no break: the floor
//                    for the same work with a read)
//   sync break       compiled, loss.item() inside, before backward: a graph break
//   generator read   compiled generator, `yield* kiln.read(loss)` before backward (the form
//                    WebGPU needs): an asynchronous break, the call returns a Promise
//
// A function with a break runs its JavaScript on every call (tracing it again and finding each
// segment's program by structure), so the cost of a break is its retrace plus the segments'
// missed fusion across the break: the two break rows minus the compiled row.
//
// Run: npx tsx bench/graph-break.ts [--backend=js|wasm|native] [--iters=30] [--dims=64,256,10]
// Writes bench/results/graph-break-<backend>[-<dims>].json.

import * as kiln from 'kilnjs';
import { buildMlp, MLP_BATCH, MLP_DIMS } from './workloads/w1.js';
import { compare } from './lib/timing.js';
import { fmtMs, fmtRatio, intArg, machineInfo, parseArgs, printTable, writeJson } from './lib/report.js';

const args = parseArgs();
const BACKEND = args.get('backend') ?? 'js';
const ITERS = intArg(args, 'iters', 30);
/** the MLP's layer sizes (default W2's 784-1024-1024-10); a small one shows the re-trace a break costs */
const DIMS = (args.get('dims') ?? MLP_DIMS.join(',')).split(',').map(Number);
if (BACKEND === 'native') await import('kilnjs/node'); // registers the native backend

interface Variant {
  name: string;
  /** one step; returns the loss value read back */
  step(): Promise<number> | number;
}

function setup() {
  kiln.manualSeed(1);
  const model = buildMlp(DIMS);
  const opt = new kiln.optim.SGD(model.parameters(), { lr: 0.01 });
  const x = kiln.keep(kiln.randn([MLP_BATCH, DIMS[0]!]));
  const y = kiln.keep(kiln.randint(0, DIMS[DIMS.length - 1]!, [MLP_BATCH]));
  return { model, opt, x, y };
}

function variants(): Variant[] {
  const eager = setup();
  const plain = setup();
  const syncBreak = setup();
  const gen = setup();
  const opts = { backend: BACKEND };
  const whole = kiln.compile((x: kiln.Tensor, y: kiln.Tensor) => {
    plain.opt.zeroGrad();
    const loss = kiln.crossEntropy(plain.model.call(x), y);
    loss.backward();
    plain.opt.step();
    return loss;
  }, { ...opts, name: 'whole' });
  const broken = kiln.compile((x: kiln.Tensor, y: kiln.Tensor) => {
    syncBreak.opt.zeroGrad();
    const loss = kiln.crossEntropy(syncBreak.model.call(x), y);
    if (Number.isFinite(loss.item())) {
      loss.backward();
      syncBreak.opt.step();
    }
    return loss;
  }, { ...opts, name: 'sync_break' });
  const reads = kiln.compile(function* (x: kiln.Tensor, y: kiln.Tensor) {
    gen.opt.zeroGrad();
    const loss = kiln.crossEntropy(gen.model.call(x), y);
    const [l] = yield* kiln.read(loss);
    if (Number.isFinite(l!)) {
      loss.backward();
      gen.opt.step();
    }
    return loss;
  }, { ...opts, name: 'generator_read' });
  return [
    {
      name: 'eager',
      step: () => kiln.scope(() => {
        eager.opt.zeroGrad();
        const loss = kiln.crossEntropy(eager.model.call(eager.x), eager.y);
        loss.backward();
        eager.opt.step();
        return loss.item();
      }),
    },
    { name: 'compiled', step: () => kiln.scope(() => whole(plain.x, plain.y).item()) },
    { name: 'sync break', step: () => kiln.scope(() => broken(syncBreak.x, syncBreak.y).item()) },
    {
      name: 'generator read',
      step: async () => {
        const loss = await reads(gen.x, gen.y);
        const l = loss.item();
        loss.dispose();
        return l;
      },
    },
  ];
}

const vs = variants();
const losses = new Map<string, number[]>(vs.map((v) => [v.name, []]));
const timings = await compare(vs.map((v) => ({ name: v.name, fn: async () => losses.get(v.name)!.push(await v.step()) })), { iters: ITERS, warmup: 3 });
// the four models trained the same steps: their losses must agree (a variant that skipped work would not)
const ref = losses.get('eager')!;
for (const [name, ls] of losses) {
  const worst = ls.reduce((m, l, i) => Math.max(m, Math.abs(l - ref[i]!) / Math.max(1, Math.abs(ref[i]!))), 0);
  if (worst > 1e-3) throw new Error(`${name}: loss differs from eager by ${worst.toExponential(2)} (relative)`);
}
const floor = timings['compiled']!.medianMs;
const signed = (ms: number) => `${ms >= 0 ? '+' : '-'}${fmtMs(Math.abs(ms))}`;
console.log(`\nMLP ${DIMS.join('-')} step (batch ${MLP_BATCH}) with a read of its loss, backend ${BACKEND}, ${ITERS} calls each (round-robin), median ms:`);
printTable(['variant', '', 'median', 'p95', 'first call', 'vs compiled', 'break cost'], vs.map((v) => {
  const t = timings[v.name]!;
  return [v.name, '', fmtMs(t.medianMs), fmtMs(t.p95Ms), fmtMs(t.firstMs), fmtRatio(t.medianMs / floor), v.name.includes('break') || v.name.includes('read') ? signed(t.medianMs - floor) : ''];
}));
console.log(`floor: the compiled step without a break (${fmtMs(floor)}); eager is ${fmtRatio(timings['eager']!.medianMs / floor)} of it`);
const custom = DIMS.join(',') !== MLP_DIMS.join(',');
const out = `bench/results/graph-break-${BACKEND}${custom ? `-${DIMS.join('-')}` : ''}.json`;
writeJson(out, { machine: machineInfo(), backend: BACKEND, iters: ITERS, workload: `MLP ${DIMS.join('-')} step, batch ${MLP_BATCH}, loss read each step`, timings, stats: { asyncReads: kiln.stats().asyncReads, graphsCompiled: kiln.stats().graphsCompiled, segmentHits: kiln.stats().segmentHits } });
console.log(`wrote ${out}`);
