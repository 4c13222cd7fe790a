// compiled.warmup(...): compiles ahead of the first real call, for example inputs or declared
// shapes (every batch size a server will see), and reports what it compiled, from where, and
// how long each took. Each example runs once (so the first real call also finds the kernels
// warm: JIT, thread pool, native libraries loaded); results are disposed. It runs
// synchronously before the returned promise settles, so kiln.noGrad(() => c.warmup(...))
// warms the entries a no-grad caller will use. A training step takes a step per example.

import type { DType } from '../../core/dtype.js';
import { ArgumentError } from '../../core/errors.js';
import { zeros } from '../../ops/creation.js';
import { isTensor, Tensor } from '../../tensor/tensor.js';
import { scope } from '../../tensor/scope.js';
import { log } from '../logs.js';
import { counters } from '../stats.js';

export interface WarmupSpec {
  /** one entry per call: a shape (a single tensor argument) or one shape per argument */
  readonly shapes?: readonly (readonly number[] | readonly (readonly number[])[])[];
  /** dtype of the zero tensors made for `shapes` (default float32; one per argument allowed) */
  readonly dtype?: DType | readonly DType[];
  /** example argument lists (used as given) */
  readonly inputs?: readonly (readonly unknown[])[];
}

export interface WarmupEntryReport {
  /** the arguments' shapes, e.g. 'x[8,784]' */
  readonly args: string;
  /** 'memory': already compiled in this process; 'cache (trace skipped)': a warm start from disk;
   *  'cache (program)': traced, program from disk; 'compiled': traced and compiled here */
  readonly source: 'memory' | 'cache (trace skipped)' | 'cache (program)' | 'compiled';
  /** compile (or load) plus one run */
  readonly ms: number;
}

export interface WarmupReport {
  readonly name: string;
  readonly entries: WarmupEntryReport[];
  readonly totalMs: number;
}

function describeArgs(args: readonly unknown[]): string {
  return args.map((a, i) => (a instanceof Tensor ? `arg${i}[${a.shape.join(',')}]${a.dtype === 'float32' ? '' : ` ${a.dtype}`}` : `arg${i}=${typeof a}`)).join(' ');
}

function examples(spec: WarmupSpec | readonly (readonly unknown[])[]): { make: () => unknown[] }[] {
  if (Array.isArray(spec)) return spec.map((args) => ({ make: () => [...(args as unknown[])] }));
  const s = spec as WarmupSpec;
  const out: { make: () => unknown[] }[] = (s.inputs ?? []).map((args) => ({ make: () => [...args] }));
  for (const shape of s.shapes ?? []) {
    const perArg = (shape.length > 0 && Array.isArray(shape[0]) ? shape : [shape]) as readonly (readonly number[])[];
    const dtypes = Array.isArray(s.dtype) ? s.dtype : perArg.map(() => (s.dtype as DType | undefined) ?? 'float32');
    out.push({ make: () => perArg.map((sh, i) => zeros(sh, { dtype: dtypes[i] ?? 'float32' })) });
  }
  if (out.length === 0) throw new ArgumentError('warmup needs example inputs or shapes', 'warmup', "pass { shapes: [[1, 784], [32, 784]] } or a list of argument lists");
  return out;
}

/** Warms a compiled callable up (see the file comment). */
export async function warmup(name: string, call: (...args: unknown[]) => unknown, spec: WarmupSpec | readonly (readonly unknown[])[]): Promise<WarmupReport> {
  const entries: WarmupEntryReport[] = [];
  const t0 = performance.now();
  for (const ex of examples(spec)) {
    const before = { mem: counters.cacheHits, skips: counters.cache.traceSkips, hits: counters.cache.hits };
    const t1 = performance.now();
    let args: unknown[] = [];
    scope(() => {
      args = ex.make();
      call(...args);
      return undefined;
    }, isTensor);
    const ms = performance.now() - t1;
    const source = counters.cacheHits > before.mem ? 'memory' : counters.cache.traceSkips > before.skips ? 'cache (trace skipped)' : counters.cache.hits > before.hits ? 'cache (program)' : 'compiled';
    entries.push({ args: describeArgs(args), source, ms });
  }
  const report: WarmupReport = { name, entries, totalMs: performance.now() - t0 };
  log('cache', () => `${name}: warm-up, ${entries.length} example${entries.length === 1 ? '' : 's'} in ${report.totalMs.toFixed(0)} ms:\n${entries.map((e) => `  ${e.args.padEnd(28)} ${e.source.padEnd(22)} ${e.ms.toFixed(1)} ms`).join('\n')}`);
  return report;
}
