// Helpers shared by the advisor's measurements (measure.ts, cache-check.ts, shape-policies.ts):
// one timed call, reading outputs back, relative errors, summaries.

import * as kiln from '../api/kiln.js';
import type { WorkloadInstance } from './workload.js';

export type Values = Float64Array[];

function outputsOf(out: unknown): kiln.Tensor[] {
  if (kiln.isTensor(out)) return [out];
  if (Array.isArray(out) && out.every((t) => kiln.isTensor(t))) return out as kiln.Tensor[];
  throw new Error(`the workload's fn must return a tensor or an array of tensors, got ${out === null ? 'null' : typeof out}`);
}

export function read(out: unknown): Values {
  return outputsOf(out).map((t) => Float64Array.from(t.dataSync() as ArrayLike<number>));
}

/** max|a - b| / max(max|b|, floor) for one tensor; NaN where exactly one side is NaN counts as Infinity. */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>, floor = 1e-6): number {
  if (a.length !== b.length) return Infinity;
  let d = 0, m = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!, y = b[i]!;
    if (Number.isNaN(x) || Number.isNaN(y)) {
      if (Number.isNaN(x) !== Number.isNaN(y)) return Infinity;
      continue;
    }
    const diff = Math.abs(x - y);
    if (diff > d || diff === Infinity) d = diff;
    if (Math.abs(y) > m) m = Math.abs(y);
  }
  if (d === Infinity) return Infinity;
  return d / Math.max(m, floor);
}

/** Max relative error of the parameters' gradients (after both sides ran the same first step). */
export function gradsRelErr(c: WorkloadInstance, e: WorkloadInstance): number | null {
  if (!c.params || !e.params) return null;
  if (c.params.length !== e.params.length) return Infinity;
  let worst = 0;
  for (let k = 0; k < c.params.length; k++) {
    const gc = c.params[k]!.grad, ge = e.params[k]!.grad;
    if (!gc && !ge) continue;
    if (!gc || !ge) return Infinity;
    worst = Math.max(worst, relErr(Float64Array.from(gc.dataSync() as ArrayLike<number>), Float64Array.from(ge.dataSync() as ArrayLike<number>)));
  }
  return worst;
}

export function valuesRelErr(c: Values, e: Values): number {
  if (c.length !== e.length) return Infinity;
  let r = 0;
  for (let i = 0; i < c.length; i++) r = Math.max(r, relErr(c[i]!, e[i]!));
  return r;
}

export function summarizeMs(samples: readonly number[]): { n: number; medianMs: number; p95Ms: number; minMs: number; meanMs: number } {
  if (samples.length === 0) return { n: 0, medianMs: NaN, p95Ms: NaN, minMs: NaN, meanMs: NaN };
  const s = [...samples].sort((a, b) => a - b);
  const n = s.length, mid = n >> 1;
  return {
    n,
    medianMs: n % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2,
    p95Ms: s[Math.min(n - 1, Math.ceil(0.95 * n) - 1)]!, // nearest rank
    minMs: s[0]!,
    meanMs: s.reduce((a, b) => a + b, 0) / n,
  };
}

/** 95% bootstrap percentile interval of median(eager) / median(compiled), deterministic. */
export function speedupInterval(eager: readonly number[], compiled: readonly number[], resamples = 1000, seed = 12345): [number, number] | null {
  if (eager.length < 3 || compiled.length < 3) return null;
  let st = seed >>> 0;
  const rand = (): number => {
    st = (st + 0x6d2b79f5) >>> 0; // mulberry32
    let t = st;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const med = (xs: readonly number[]): number => {
    const r = Array.from({ length: xs.length }, () => xs[Math.floor(rand() * xs.length)]!).sort((a, b) => a - b);
    const m = r.length >> 1;
    return r.length % 2 ? r[m]! : (r[m - 1]! + r[m]!) / 2;
  };
  const ratios: number[] = [];
  for (let i = 0; i < resamples; i++) ratios.push(med(eager) / med(compiled));
  ratios.sort((a, b) => a - b);
  return [ratios[Math.floor(0.025 * (resamples - 1))]!, ratios[Math.ceil(0.975 * (resamples - 1))]!];
}

export interface CallResult {
  ms: number;
  peakBytes: number;
  values: Values;
}

export function timedCall(call: () => unknown, inference: boolean): CallResult {
  let values: Values = [];
  let readMs = 0;
  const before = kiln.memory().bytes;
  kiln.resetPeakMemory();
  const body = (): void => {
    kiln.scope(() => {
      const out = call();
      const r0 = performance.now();
      values = read(out);
      readMs = performance.now() - r0;
    });
  };
  const t0 = performance.now();
  if (inference) kiln.noGrad(body);
  else body();
  const ms = performance.now() - t0 - readMs;
  return { ms, peakBytes: Math.max(0, kiln.memory().peakBytes - before), values };
}

export const shapeOf = (t: kiln.Tensor): string => `[${t.shape.join(',')}] ${t.dtype}`;
export const round = (x: number, d = 4): number => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : x);

export function fmt(ms: number): string {
  return ms >= 100 ? `${ms.toFixed(0)} ms` : ms >= 1 ? `${ms.toFixed(2)} ms` : `${ms.toFixed(3)} ms`;
}

export function dispose(inst: WorkloadInstance | null): void {
  try {
    inst?.dispose?.();
  } catch {
    // a failing dispose must not hide the measurement
  }
}
