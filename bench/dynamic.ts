// Dynamic shapes (issue 7): W3 (transformer MLP block, batch rows vary 1-512) and W7 (GPT
// decoder, sequence length varies 16-256) over a stream of calls with random sizes:
//   eager        kiln eager
//   static       kiln.compile(fn, { dynamic: false, recompileLimit: 1e6 }): one program per size
//   auto         kiln.compile(fn): static first, then automatic dynamic
//   bucketed     kiln.compile(fn, { buckets: { arg: 0, dim, sizes: 'pow2' } }) (refused, and then
//                the same as auto, where the graph mixes padded rows, e.g. W7's attention)
// Reports total time including compiles, compiles, and the steady-state ratio of the dynamic
// program against the static one for the same shape (bar: <= 1.15).
//
// Run:  npx tsx bench/dynamic.ts [--calls=200] [--only=W3,W7] [--seed=1] [--ratio-iters=5]
//                                [--backend=js|wasm|native] [--ratio-only] [--variants=eager,auto]
//                                [--out=bench/results/dynamic[-BACKEND].json]
// --backend: the kernel backend of every compiled variant (default: js, the JS renderer);
// --ratio-only: skip the 200-call stream (its static variant compiles once per size) and
// measure only the steady-state ratios.

import * as kiln from 'kilnjs';
import { finishMachineInfo, fmtMs, intArg, machineInfo, parseArgs, printTable, writeJson } from './lib/report.js';
import { MlpBlock, W3_DIM } from './workloads/w3.js';
import { Decoder, W7_DIM } from './workloads/w7.js';
import { DEFAULT_SEED, freeze } from './workloads/types.js';
import { maxRelDiff } from './lib/compare.js';

const args = parseArgs();
const CALLS = intArg(args, 'calls', 200);
const SEED = intArg(args, 'seed', 1);
const RATIO_ITERS = intArg(args, 'ratio-iters', 5);
const BACKEND = args.get('backend') ?? 'js';
const RATIO_ONLY = args.get('ratio-only') === 'true';
const OUT = args.get('out') ?? `bench/results/dynamic${BACKEND === 'js' ? '' : `-${BACKEND}`}.json`;
if (BACKEND === 'native') await import('kilnjs/node'); // registers the native backend
const ONLY = new Set((args.get('only') ?? 'W3,W7').split(',').map((s) => s.trim().toUpperCase()));

/** A small seeded generator for the size stream (independent of kiln's). */
function lcg(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

interface Case {
  id: 'W3' | 'W7';
  dim: number;
  range: [number, number];
  ratioSizes: number[];
  make(): (x: kiln.Tensor) => kiln.Tensor;
  input(n: number): kiln.Tensor;
}

const CASES: Case[] = [
  {
    id: 'W3', dim: 0, range: [1, 512], ratioSizes: [256, 384],
    make() {
      kiln.manualSeed(DEFAULT_SEED);
      const m = freeze(new MlpBlock());
      return (x) => m.call(x);
    },
    input: (n) => kiln.randn([n, W3_DIM]),
  },
  {
    id: 'W7', dim: 1, range: [16, 256], ratioSizes: [128, 200],
    make() {
      kiln.manualSeed(DEFAULT_SEED);
      const m = freeze(new Decoder());
      return (x) => m.call(x);
    },
    input: (n) => kiln.randn([1, n, W7_DIM]),
  },
];

type Variant = 'eager' | 'static' | 'auto' | 'bucketed';
const VARIANTS = (args.get('variants') ?? 'eager,static,auto,bucketed').split(',').map((v) => v.trim()) as Variant[];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const results: unknown[] = [];
const machine = machineInfo();
for (const c of CASES) {
  if (!ONLY.has(c.id)) continue;
  const rnd = lcg(SEED);
  const sizes = Array.from({ length: CALLS }, () => c.range[0] + Math.floor(rnd() * (c.range[1] - c.range[0] + 1)));
  const fn = c.make();
  const inputs = new Map<number, kiln.Tensor>();
  kiln.manualSeed(SEED);
  for (const n of new Set(sizes)) inputs.set(n, kiln.keep(c.input(n)));
  // eager reference outputs for a few calls (correctness)
  const checkAt = [0, 1, 2, Math.floor(CALLS / 2), CALLS - 1].filter((i) => i < CALLS);
  const ref = new Map<number, kiln.Tensor>();
  kiln.noGrad(() => checkAt.forEach((i) => ref.set(i, kiln.keep(fn(inputs.get(sizes[i]!)!)))));
  const rows: Record<string, unknown>[] = [];
  for (const v of RATIO_ONLY ? [] : VARIANTS) {
    kiln.compiler.reset();
    const run = v === 'eager' ? fn
      : v === 'static' ? kiln.compile(fn, { backend: BACKEND, dynamic: false, recompileLimit: 1_000_000, name: `${c.id}-static` })
      : v === 'auto' ? kiln.compile(fn, { backend: BACKEND, name: `${c.id}-auto` })
      : kiln.compile(fn, { backend: BACKEND, name: `${c.id}-bucketed`, buckets: { arg: 0, dim: c.dim, sizes: 'pow2' } });
    let worst = 0;
    let failed: string | null = null;
    const t0 = performance.now();
    try {
      sizes.forEach((n, i) => {
        kiln.noGrad(() => kiln.scope(() => {
          const y = run(inputs.get(n)!) as kiln.Tensor;
          const r = ref.get(i);
          if (r) worst = Math.max(worst, maxRelDiff(y, r));
        }));
      });
    } catch (e) {
      // e.g. the wasm heap (4 GiB) filled by one static program per size: report, go on
      failed = `failed after ${Math.round(performance.now() - t0)} ms: ${(e as Error).message}`;
      console.log(`${c.id} ${v}: ${failed}`);
    }
    const total = performance.now() - t0;
    const s = kiln.stats();
    rows.push({
      variant: v, totalMs: Math.round(total), compiles: v === 'eager' ? 0 : s.compiles, recompiles: s.recompiles.length,
      eagerFallbacks: s.eagerFallbacks, dynamicCompiles: s.dynamicCompiles.length, maxRelErr: worst,
      notes: [...(failed ? [failed] : []), ...s.dynamicFailures.map((f) => f.reason), ...(s.buckets.length ? [`buckets: ${s.buckets.map((b) => `${b.bucket}x${b.hits}`).join(' ')}`] : [])],
    });
    console.log(`${c.id} ${v}: ${fmtMs(total)} total, ${v === 'eager' ? 0 : s.compiles} compiles, max rel err ${worst.toExponential(1)}`);
  }
  // steady state: the dynamic program vs the static one at the same shape
  // ratio: of medians (the bar); ratioMin: of the fastest runs (less sensitive to a busy machine)
  const ratios: { size: number; staticMs: number; dynamicMs: number; ratio: number; ratioMin: number }[] = [];
  for (const n of c.ratioSizes) {
    kiln.compiler.reset();
    const st = kiln.compile(fn, { backend: BACKEND, dynamic: false, name: `${c.id}-st` });
    const dy = kiln.compile(fn, { backend: BACKEND, dynamic: true, name: `${c.id}-dy` });
    kiln.manualSeed(SEED);
    const x = kiln.keep(c.input(n));
    const other = kiln.keep(c.input(n + 3));
    kiln.noGrad(() => kiln.scope(() => (dy(other), st(x), dy(x), st(x), dy(x))));
    const ts: number[] = [], td: number[] = [];
    for (let i = 0; i < RATIO_ITERS; i++) {
      // alternate which runs first, so drift (a busy core, a GC) lands on both
      const pair = i % 2 === 0 ? [[st, ts], [dy, td]] as const : [[dy, td], [st, ts]] as const;
      for (const [f, into] of pair) {
        const t0 = performance.now();
        kiln.noGrad(() => kiln.scope(() => void f(x)));
        into.push(performance.now() - t0);
      }
    }
    const s = median(ts), d = median(td);
    const rMin = Math.min(...td) / Math.min(...ts);
    ratios.push({ size: n, staticMs: Math.round(s * 100) / 100, dynamicMs: Math.round(d * 100) / 100, ratio: Math.round((d / s) * 1000) / 1000, ratioMin: Math.round(rMin * 1000) / 1000 });
    console.log(`${c.id} size ${n}: static ${fmtMs(s)}, dynamic ${fmtMs(d)}, ratio ${(d / s).toFixed(3)} (bar <= 1.15; of the fastest runs ${rMin.toFixed(3)})`);
    x.dispose();
    other.dispose();
  }
  if (rows.length) printTable(['variant', 'total', 'compiles', 'fallbacks', 'max rel err'], rows.map((r) => [String(r.variant), fmtMs(r.totalMs as number), String(r.compiles), String(r.eagerFallbacks), (r.maxRelErr as number).toExponential(1)]), 1);
  results.push({ id: c.id, backend: BACKEND, calls: CALLS, sizeRange: c.range, distinctSizes: inputs.size, variants: rows, steadyState: ratios });
  for (const t of [...inputs.values(), ...ref.values()]) t.dispose();
}
writeJson(OUT, { machine: finishMachineInfo(machine), seed: SEED, results });
console.log(`wrote ${OUT}`);
