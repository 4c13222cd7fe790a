// The bars of issue 21 (eager on wasm kernels) for bench/cpu.ts, as pure functions of the
// measured medians: eager at least as fast as tfjs-wasm on W1 and W3, eager's 1024³ matmul at
// least half of compiled wasm's rate, eager W2 at least 3x faster than eager on the JS kernels
// ('eager-js', kiln's eager before), and compiled faster than eager on every workload with
// kiln.compile's default backend and with 'auto'. N/A where a side did not run.

import type { Bar } from './cpu-bars.js';

export interface EagerBarInputs {
  /** median ms by workload id, then by variant ('eager', 'eager-js', 'js', 'wasm', 'native', 'tfjs-wasm', ...) */
  medians: Record<string, Record<string, number | undefined>>;
  missing: Record<string, Record<string, string | undefined>>;
  workloads: readonly string[];
  /** FLOPs of W5 (the 1024³ matmul) */
  w5Flops: number;
  /** the backend kiln.compile uses when none is named, and the one backend: 'auto' chose here */
  compileDefault: string;
  auto: string;
}

const f = (x: number): string => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

export function checkEagerBars(b: EagerBarInputs): Bar[] {
  const bars: Bar[] = [];
  const med = (w: string, v: string) => b.medians[w]?.[v];
  const why = (w: string, v: string) => b.missing[w]?.[v] ?? 'not run';
  /** a bar over two medians: `ok(x, y)` decides, `detail` describes */
  const pair = (w: string, name: string, x: string, y: string, ok: (a: number, c: number) => boolean, detail: (a: number, c: number) => string) => {
    if (!b.workloads.includes(w)) return;
    const a = med(w, x), c = med(w, y);
    if (a === undefined) bars.push({ name, status: x === 'eager' ? 'FAIL' : 'N/A', detail: `${x}: ${why(w, x)}` });
    else if (c === undefined) bars.push({ name, status: 'N/A', detail: `${y}: ${why(w, y)}` });
    else bars.push({ name, status: ok(a, c) ? 'PASS' : 'FAIL', detail: detail(a, c) });
  };
  for (const w of ['W1', 'W3']) {
    pair(w, `eager ${w} at least as fast as tfjs-wasm`, 'eager', 'tfjs-wasm', (e, t) => e <= t, (e, t) => `${f(e)} ms vs ${f(t)} ms (${(t / e).toFixed(2)}x)`);
  }
  const rate = (ms: number) => b.w5Flops / (ms * 1e6);
  pair('W5', 'eager matmul 1024^3 >= 50% of compiled wasm GFLOP/s', 'eager', 'wasm', (e, c) => rate(e) >= 0.5 * rate(c), (e, c) => `${f(rate(e))} vs ${f(rate(c))} GFLOP/s (${((100 * rate(e)) / rate(c)).toFixed(0)}%)`);
  pair('W2', 'eager W2 >= 3x faster than eager on the JS kernels', 'eager', 'eager-js', (e, j) => j >= 3 * e, (e, j) => `${f(e)} ms vs ${f(j)} ms (${(j / e).toFixed(2)}x)`);
  const backends = [...new Set([b.compileDefault, b.auto])];
  for (const w of b.workloads) {
    for (const be of backends) {
      const label = be === b.compileDefault && be === b.auto ? `${be} (kiln.compile's default and auto's choice)` : be === b.compileDefault ? `${be} (kiln.compile's default)` : `${be} (auto's choice)`;
      pair(w, `compiled ${label} ${w} faster than eager`, be, 'eager', (c, e) => c < e, (c, e) => `${f(c)} ms vs ${f(e)} ms (${(e / c).toFixed(2)}x)`);
    }
  }
  return bars;
}
