// Per-call overhead: replaying a compiled 50-op graph of tiny tensors vs running the same
// ops eagerly. Both compute the same thing; the difference is dispatch and bookkeeping.
// Run: npx tsx bench/overhead.ts   (writes bench/results/overhead.json)

import { writeFileSync, mkdirSync } from 'node:fs';
import * as kiln from 'kilnjs';

const OPS = 50;
function chain(x: kiln.Tensor, w: kiln.Tensor): kiln.Tensor {
  let h = x;
  for (let i = 0; i < OPS / 5; i++) h = h.mul(w).add(0.5).tanh().sub(h).mul(0.9); // 5 ops per round
  return h;
}

function timeCalls(fn: () => void, calls: number): number[] {
  const per: number[] = [];
  for (let r = 0; r < 15; r++) {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) fn();
    per.push(((performance.now() - t0) / calls) * 1000); // µs per call
  }
  return per.sort((a, b) => a - b);
}

const median = (xs: number[]) => xs[Math.floor(xs.length / 2)]!;

kiln.manualSeed(0);
const x = kiln.keep(kiln.randn([4]));
const w = kiln.keep(kiln.randn([4]));
const results: Record<string, { medianUs: number; p95Us: number }> = {};
const modes: [string, () => void][] = [
  ['eager', () => kiln.scope(() => { chain(x, w); })],
  ['compiled (default)', (() => { const f = kiln.compile((a: kiln.Tensor) => chain(a, w)); return () => kiln.scope(() => { f(x); }); })()],
  ['compiled (reduce-overhead)', (() => { const f = kiln.compile((a: kiln.Tensor) => chain(a, w), { mode: 'reduce-overhead' }); return () => kiln.scope(() => { f(x); }); })()],
];
for (const [name, fn] of modes) {
  for (let i = 0; i < 500; i++) fn(); // warm-up (the first compiled call traces)
  const t = timeCalls(fn, 400);
  results[name] = { medianUs: median(t), p95Us: t[Math.floor(t.length * 0.95)]! };
}
const eager = results['eager']!.medianUs;
console.log(`per-call time of a ${OPS}-op graph on [4]-element tensors (median of 15 x 400 calls)`);
console.log('mode'.padEnd(30), 'µs/call'.padStart(10), 'µs/op'.padStart(8), 'vs eager'.padStart(10));
for (const [name, r] of Object.entries(results)) {
  console.log(name.padEnd(30), r.medianUs.toFixed(1).padStart(10), (r.medianUs / OPS).toFixed(2).padStart(8), `${(eager / r.medianUs).toFixed(2)}x`.padStart(10));
}
console.log('floor: the arithmetic itself is ~200 flops per call (nanoseconds); everything above is overhead');
mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/overhead.json', JSON.stringify({ date: new Date().toISOString(), node: process.version, ops: OPS, results, ratioDefault: eager / results['compiled (default)']!.medianUs, ratioReduceOverhead: eager / results['compiled (reduce-overhead)']!.medianUs }, null, 2));
