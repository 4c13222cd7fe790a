// The bars of issue 5 for bench/cpu.ts, as pure functions of the measured medians.
// A bar is PASS or FAIL; N/A where a side of the comparison did not run (with the reason).
// A kiln backend that did not run FAILs its bars (the bar asks for it to exist).

export interface Bar {
  name: string;
  status: 'PASS' | 'FAIL' | 'N/A';
  detail: string;
}

export interface BarInputs {
  /** median ms by workload id, then by variant ('eager', 'js', 'wasm', 'native', 'ort', ...) */
  medians: Record<string, Record<string, number | undefined>>;
  /** why a variant did not run, by workload id then variant */
  missing: Record<string, Record<string, string | undefined>>;
  backends: readonly string[];
  workloads: readonly string[];
  /** FLOPs of W5 (the 1024³ matmul) */
  w5Flops: number;
  blasGflops: number | null;
  blasMissing?: string;
  w4FloorMs: number | null;
  w4FloorMissing?: string;
}

const f = (x: number): string => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

export function checkBars(b: BarInputs): Bar[] {
  const bars: Bar[] = [];
  const med = (w: string, v: string) => b.medians[w]?.[v];
  const why = (w: string, v: string) => b.missing[w]?.[v] ?? 'not run';

  // native within 1.2x of onnxruntime on W1 and W3
  for (const w of ['W1', 'W3']) {
    if (!b.workloads.includes(w)) continue;
    const n = med(w, 'native'), o = med(w, 'ort');
    const name = `native ${w} <= 1.2x onnxruntime-node`;
    if (n === undefined) bars.push({ name, status: b.backends.includes('native') ? 'FAIL' : 'N/A', detail: `native: ${why(w, 'native')}` });
    else if (o === undefined) bars.push({ name, status: 'N/A', detail: `ort: ${why(w, 'ort')}` });
    else bars.push({ name, status: n <= 1.2 * o ? 'PASS' : 'FAIL', detail: `${f(n)} ms vs ${f(o)} ms (${(n / o).toFixed(2)}x)` });
  }
  // native matmul >= 60% of OpenBLAS
  if (b.workloads.includes('W5')) {
    const n = med('W5', 'native');
    const name = 'native matmul 1024^3 >= 60% of OpenBLAS (same threads)';
    if (n === undefined) bars.push({ name, status: b.backends.includes('native') ? 'FAIL' : 'N/A', detail: `native: ${why('W5', 'native')}` });
    else if (b.blasGflops === null) bars.push({ name, status: 'N/A', detail: b.blasMissing ?? 'no OpenBLAS figure' });
    else {
      const g = b.w5Flops / (n * 1e6);
      bars.push({ name, status: g >= 0.6 * b.blasGflops ? 'PASS' : 'FAIL', detail: `${f(g)} GFLOP/s = ${((100 * g) / b.blasGflops).toFixed(0)}% of ${f(b.blasGflops)}` });
    }
  }
  // native W4 within 2x of the C floor
  if (b.workloads.includes('W4')) {
    const n = med('W4', 'native');
    const name = 'native W4 <= 2x the hand-written C loop';
    if (n === undefined) bars.push({ name, status: b.backends.includes('native') ? 'FAIL' : 'N/A', detail: `native: ${why('W4', 'native')}` });
    else if (b.w4FloorMs === null) bars.push({ name, status: 'N/A', detail: b.w4FloorMissing ?? 'no floor' });
    else bars.push({ name, status: n <= 2 * b.w4FloorMs ? 'PASS' : 'FAIL', detail: `${f(n)} ms vs ${f(b.w4FloorMs)} ms (${(n / b.w4FloorMs).toFixed(2)}x)` });
  }
  // wasm faster than tfjs-wasm and jax-js on every workload
  if (b.backends.includes('wasm')) {
    for (const w of b.workloads) {
      for (const peer of ['tfjs-wasm', 'jax']) {
        const k = med(w, 'wasm'), p = med(w, peer);
        const name = `wasm ${w} faster than ${peer}`;
        if (k === undefined) bars.push({ name, status: 'FAIL', detail: `wasm: ${why(w, 'wasm')}` });
        else if (p === undefined) bars.push({ name, status: 'N/A', detail: `${peer}: ${why(w, peer)}` });
        else bars.push({ name, status: k < p ? 'PASS' : 'FAIL', detail: `${f(k)} ms vs ${f(p)} ms` });
      }
    }
  }
  // compiled faster than eager on every workload and backend
  for (const w of b.workloads) {
    for (const be of b.backends) {
      const c = med(w, be), e = med(w, 'eager');
      const name = `${be} ${w} faster than kiln eager`;
      if (c === undefined) bars.push({ name, status: 'FAIL', detail: `${be}: ${why(w, be)}` });
      else if (e === undefined) bars.push({ name, status: 'N/A', detail: `eager: ${why(w, 'eager')}` });
      else bars.push({ name, status: c < e ? 'PASS' : 'FAIL', detail: `${f(c)} ms vs ${f(e)} ms (${(e / c).toFixed(2)}x)` });
    }
  }
  return bars;
}
