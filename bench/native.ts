// kiln's native backend (C compiled at run time, OpenMP threads) against its floors and kiln's
// other modes, round-robin in one process (bench/lib/timing.ts):
//   W4      elementwise tanh(1.5x+0.3)*sigmoid(x)-0.1x on 4M float32; floor: bench/floors/w4.c
//   MM1024  a 1024x1024 @ 1024x1024 float32 matmul; floor: numpy (OpenBLAS), same threads,
//           measured in a subprocess before and after kiln's calls
//   W1      MLP inference, batch 128, 784-1024-1024-10
//   W3      transformer MLP block, x[8192, 768] (native variants only unless --js)
// Variants: native (mode default), native-ro (mode 'reduce-overhead': disposed outputs are
// recycled), native-tuned (max-autotune, MM1024), js compiled and eager (W4, MM1024, W1).
// Each call disposes the previous call's output (as a program that uses its results does).
//
// Run:  npx tsx bench/native.ts [--iters=20] [--warmup=3] [--only=W4,MM1024,W1,W3] [--js]
// Threads: KILN_THREADS (default: all cores) for kiln, the floor and numpy.

import * as kiln from 'kilnjs';
import { nativeStats, nativeUnavailableReason } from 'kilnjs/node';
import { compare, type Candidate } from './lib/timing.js';
import { w1 } from './workloads/w1.js';
import { w3 } from './workloads/w3.js';
import { w4 } from './workloads/w4.js';
import { w4FloorRunner } from './floors/w4-floor.js';
import { measureNumpyMatmul, type NumpyMatmul } from './floors/numpy-matmul.js';
import { threadCount } from '../src/backend/js/threads.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const ITERS = Number(args.get('iters') ?? 20);
const WARMUP = Number(args.get('warmup') ?? 3);
const ONLY = args.has('only') ? new Set(args.get('only')!.split(',')) : null;
const WITH_JS = args.has('js');
const THREADS = threadCount();

const why = nativeUnavailableReason();
if (why) {
  console.log(`native backend unavailable: ${why}`);
  process.exit(0);
}

interface Row { id: string; unit: string; work: number; cells: { name: string; min: number; median: number; first?: number }[]; note?: string }
const rows: Row[] = [];

type Fn = (...x: kiln.Tensor[]) => kiln.Tensor;

/** A candidate that runs `f` under noGrad and keeps only its latest output alive. */
function candidate(name: string, f: Fn, inputs: readonly kiln.Tensor[]): Candidate {
  let last: kiln.Tensor | null = null;
  return {
    name,
    fn: () => kiln.noGrad(() => {
      last?.dispose();
      last = kiln.keep(kiln.scope(() => f(...inputs)));
    }),
  };
}

async function bench(id: string, fn: Fn, inputs: readonly kiln.Tensor[], unit: 'GFLOP/s' | 'GB/s', work: number, opts: { js: boolean; eager: boolean; tuned?: boolean; extra?: Candidate[] }): Promise<Row | null> {
  if (ONLY && !ONLY.has(id)) return null;
  kiln.compiler.reset();
  const cands: Candidate[] = [
    candidate('native', kiln.compile(fn, { backend: 'native' }), inputs),
    candidate('native-ro', kiln.compile(fn, { backend: 'native', mode: 'reduce-overhead' }), inputs),
  ];
  if (opts.tuned) cands.push(candidate('native-tuned', kiln.compile(fn, { backend: 'native', mode: 'max-autotune' }), inputs));
  if (opts.js) cands.push(candidate('js', kiln.compile(fn, { backend: 'js' }), inputs));
  if (opts.eager) cands.push(candidate('eager', fn, inputs));
  cands.push(...(opts.extra ?? []));
  const r = await compare(cands, { iters: ITERS, warmup: WARMUP });
  const row: Row = { id, unit, work, cells: cands.map((c) => ({ name: c.name, min: r[c.name]!.minMs, median: r[c.name]!.medianMs, first: r[c.name]!.firstMs })) };
  rows.push(row);
  return row;
}

kiln.manualSeed(20261130);
if (!ONLY || ONLY.has('W4')) {
  const inst = w4.setup();
  const floor = w4FloorRunner();
  await bench('W4', inst.fn, inst.inputs, 'GB/s', inst.bytes!, { js: true, eager: true, extra: [{ name: `floor (C, ${floor.threads} thr)`, fn: floor.run }] });
}
if (!ONLY || ONLY.has('MM1024')) {
  const a = kiln.keep(kiln.randn([1024, 1024]));
  const b = kiln.keep(kiln.randn([1024, 1024]));
  const before = measureNumpyMatmul(1024, THREADS);
  const row = await bench('MM1024', (x, y) => x.matmul(y), [a, b], 'GFLOP/s', 2 * 1024 ** 3, { js: WITH_JS, eager: WITH_JS, tuned: true });
  const after = measureNumpyMatmul(1024, THREADS);
  const np = [before, after].filter((x): x is NumpyMatmul => x !== null);
  if (row && np.length) {
    // the better of the two runs' medians (a run beside kiln's can be slowed by it): said in the label
    row.cells.push({ name: `numpy (${THREADS} thr, best median of before/after)`, min: Math.min(...np.map((x) => x.minMs)), median: Math.min(...np.map((x) => x.medianMs)) });
    row.note = `numpy medians ${np.map((x) => x.medianMs.toFixed(2)).join(' / ')} ms`;
  }
}
if (!ONLY || ONLY.has('W1')) {
  const inst = w1.setup();
  await bench('W1', inst.fn, inst.inputs, 'GFLOP/s', inst.flops!, { js: true, eager: true });
}
if (!ONLY || ONLY.has('W3')) {
  const inst = w3.setup();
  await bench('W3', inst.fn, inst.inputs, 'GFLOP/s', inst.flops!, { js: WITH_JS, eager: false });
}

const rate = (ms: number, r: Row) => (r.work / (ms * 1e-3) / 1e9).toFixed(1);
console.log(`threads ${THREADS}; iters ${ITERS}, warm-up ${WARMUP}; ms (min / median), rate at the median`);
for (const r of rows) {
  console.log(`\n${r.id}${r.note ? ` (${r.note})` : ''}`);
  for (const c of r.cells) console.log(`  ${c.name.padEnd(28)} ${c.min.toFixed(2).padStart(8)} / ${c.median.toFixed(2).padStart(8)} ms  ${rate(c.median, r).padStart(7)} ${r.unit}${c.first !== undefined ? `   first call ${c.first.toFixed(0)} ms` : ''}`);
}
console.log('\nnative stats:', JSON.stringify(nativeStats()));
