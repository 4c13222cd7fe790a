// Timing helpers shared by kiln's benchmarks.
//
// Method (see ../../../shared/WORKLOADS.md): every candidate's very first call is timed on
// its own (it pays for kernel generation, JIT warm-up, first allocations), then a few
// warm-up calls are run and discarded, then at least `iters` steady-state calls are timed
// one by one. Candidates that are compared are run round-robin (A, B, A, B, ...) in one
// process, so load from other processes on a shared machine hits all of them alike.

export interface Summary {
  /** number of timed steady-state calls */
  n: number;
  medianMs: number;
  /** nearest-rank 95th percentile; with n < 20 this is the slowest call */
  p95Ms: number;
  minMs: number;
  maxMs: number;
  meanMs: number;
}

export interface Timing extends Summary {
  /** the first call in this process, timed on its own */
  firstMs: number;
  warmup: number;
  /** every steady-state sample, in call order */
  samplesMs: number[];
}

export function summarize(samples: readonly number[]): Summary {
  if (samples.length === 0) throw new Error('summarize: no samples');
  const s = [...samples].sort((a, b) => a - b);
  const n = s.length;
  const mid = n >> 1;
  const median = n % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  const p95 = s[Math.min(n - 1, Math.ceil(0.95 * n) - 1)]!;
  return { n, medianMs: median, p95Ms: p95, minMs: s[0]!, maxMs: s[n - 1]!, meanMs: s.reduce((a, b) => a + b, 0) / n };
}

export type BenchFn = () => unknown;

/** Times one call; awaits it if it returns a promise (async backends). */
export async function timeOnce(fn: BenchFn): Promise<number> {
  const t0 = performance.now();
  const r = fn();
  if (r instanceof Promise) await r;
  return performance.now() - t0;
}

export interface Candidate {
  /** key in the result, e.g. 'kiln' or 'tfjs-cpu' */
  name: string;
  fn: BenchFn;
  /** steady-state calls to time (default: options.iters) */
  iters?: number;
  /** untimed calls after the first (default: options.warmup) */
  warmup?: number;
}

export interface CompareOptions {
  iters: number;
  warmup: number;
  /** runs once after the first calls, before warm-up (a correctness check that must not steal the cold call) */
  afterFirst?: () => unknown;
  /**
   * round-robin (default): A, B, A, B, ... so that load from other processes hits all
   * candidates alike; blocked: all of A's calls, then all of B's (no candidate runs while
   * another's garbage is being collected, but load drift lands on one of them)
   */
  order?: 'round-robin' | 'blocked';
  /** called after each timed call (progress output) */
  onSample?: (name: string, i: number, ms: number) => void;
}

/**
 * First call of each candidate (in the given order), then `afterFirst`, then warm-up, then
 * steady-state calls round-robin until every candidate has its count.
 */
export async function compare(cands: readonly Candidate[], opts: CompareOptions): Promise<Record<string, Timing>> {
  const first = new Map<string, number>();
  for (const c of cands) first.set(c.name, await timeOnce(c.fn));
  const r = opts.afterFirst?.();
  if (r instanceof Promise) await r;
  const warm = (c: Candidate) => c.warmup ?? opts.warmup;
  for (let i = 0; cands.some((c) => i < warm(c)); i++) {
    for (const c of cands) if (i < warm(c)) await timeOnce(c.fn);
  }
  const samples = new Map<string, number[]>(cands.map((c) => [c.name, []]));
  const want = (c: Candidate) => c.iters ?? opts.iters;
  const sample = async (c: Candidate, i: number) => {
    const ms = await timeOnce(c.fn);
    samples.get(c.name)!.push(ms);
    opts.onSample?.(c.name, i, ms);
  };
  if (opts.order === 'blocked') {
    for (const c of cands) for (let i = 0; i < want(c); i++) await sample(c, i);
  } else {
    for (let i = 0; cands.some((c) => i < want(c)); i++) {
      for (const c of cands) if (i < want(c)) await sample(c, i);
    }
  }
  const out: Record<string, Timing> = {};
  for (const c of cands) {
    const s = samples.get(c.name)!;
    out[c.name] = { ...summarize(s), firstMs: first.get(c.name)!, warmup: warm(c), samplesMs: s.map((x) => round(x, 3)) };
  }
  return out;
}

export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
