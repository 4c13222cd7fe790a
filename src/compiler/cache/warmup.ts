// compiled.warmup(...): compiles ahead of the first real call, for example inputs or declared
// shapes (every batch size a server will see), and reports what it compiled, from where, and
// how long each took. Each example runs once (so the first real call also finds the kernels
// warm: JIT, thread pool, native libraries loaded); results are disposed. It runs
// synchronously before the returned promise settles, so kiln.noGrad(() => c.warmup(...))
// warms the entries a no-grad caller will use.
//
// Warming up must not train the model: a training step (or a module updating BatchNorm's
// running statistics) runs for real, so the state kiln knows (a compiled module's parameters
// and buffers, a function's { captures }, and their grads) is saved before each example and
// written back after it. Writes to other tensors (state reached only through a closure, e.g.
// an optimizer's momentum) cannot be undone: each example's report lists them, and a warning
// says how to make them known (pass them as { captures }).

import type { DType } from '../../core/dtype.js';
import { ArgumentError } from '../../core/errors.js';
import { zeros } from '../../ops/creation.js';
import { noGrad } from '../../autograd/grad-mode.js';
import { assign } from '../../ops/inplace.js';
import { copy } from '../../ops/pointwise.js';
import { isTensor, Tensor } from '../../tensor/tensor.js';
import { keep, scope } from '../../core/scope.js';
import { log, warnOnce } from '../../core/logs.js';
import { observeStateWrites, type StateWrite } from '../run/state-writes.js';
import { counters } from '../../core/stats.js';

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
  /** tensors the example wrote that were saved and written back (parameters, buffers, grads) */
  readonly restored: number;
  /** tensors the example wrote that warm-up could not restore (not known state), by label */
  readonly unrestored: readonly string[];
}

/**
 * One example's state bookkeeping: grads of the known tensors are saved up front (usually none
 * exist), values only when a program announces it is about to write them (state-writes.ts), so
 * warming up an inference model copies no weights.
 */
class StateGuard {
  private readonly known: Set<Tensor>;
  private readonly grads: { t: Tensor; grad: Tensor | null; value: Tensor | null }[];
  private readonly values = new Map<Tensor, Tensor>();
  readonly unrestored = new Set<string>();

  constructor(known: readonly Tensor[]) {
    this.known = new Set(known.filter((t) => !t.isDisposed));
    this.grads = noGrad(() => [...this.known].map((t) => {
      const grad = t.grad && !t.grad.isDisposed ? t.grad : null;
      return { t, grad, value: grad ? keep(copy(grad)) : null };
    }));
  }

  /** a program is about to write `w` */
  onWrite(w: StateWrite): void {
    if (!this.known.has(w.tensor)) this.unrestored.add(w.label);
    else if (!w.grad && !this.values.has(w.tensor)) this.values.set(w.tensor, noGrad(() => keep(copy(w.tensor))));
  }

  /** Writes the saved values and grads back; returns how many tensors changed. */
  restore(): number {
    let n = 0;
    noGrad(() => {
      for (const [t, value] of this.values) {
        if (!t.isDisposed) assign(t, value);
        value.dispose();
        n++;
      }
      for (const s of this.grads) {
        if (s.t.grad !== s.grad || (s.grad && s.grad.isDisposed)) {
          const now = s.t.grad;
          s.t.grad = s.value ? keep(copy(s.value)) : null;
          if (now && now !== s.t.grad) now.dispose();
          n++;
        }
        s.value?.dispose();
      }
    });
    return n;
  }
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
export async function warmup(name: string, call: (...args: unknown[]) => unknown, spec: WarmupSpec | readonly (readonly unknown[])[], knownState?: () => readonly Tensor[]): Promise<WarmupReport> {
  const entries: WarmupEntryReport[] = [];
  const t0 = performance.now();
  for (const ex of examples(spec)) {
    const before = { mem: counters.cacheHits, skips: counters.cache.traceSkips, hits: counters.cache.hits };
    const state = new StateGuard(knownState?.() ?? []);
    const t1 = performance.now();
    let args: unknown[] = [];
    let restored = 0;
    try {
      observeStateWrites((w) => state.onWrite(w), () => scope(() => {
        args = ex.make();
        call(...args);
        return undefined;
      }, isTensor));
    } finally {
      restored = state.restore();
    }
    const ms = performance.now() - t1;
    const unrestored = [...state.unrestored];
    if (unrestored.length) {
      warnOnce(`warmup-state ${name}`, `${name}: warm-up ran the function for real and changed ${unrestored.length} tensor(s) it cannot restore (${unrestored.slice(0, 4).join(', ')}${unrestored.length > 4 ? ', ...' : ''}): pass them to kiln.compile as { captures } (e.g. { captures: model } or { ...model.stateDict(), ...optimizerState }) so warm-up saves and restores them, or warm up before loading the real weights`);
    }
    const source = counters.cacheHits > before.mem ? 'memory' : counters.cache.traceSkips > before.skips ? 'cache (trace skipped)' : counters.cache.hits > before.hits ? 'cache (program)' : 'compiled';
    entries.push({ args: describeArgs(args), source, ms, restored, unrestored });
  }
  const report: WarmupReport = { name, entries, totalMs: performance.now() - t0 };
  log('cache', () => `${name}: warm-up, ${entries.length} example${entries.length === 1 ? '' : 's'} in ${report.totalMs.toFixed(0)} ms:\n${entries.map((e) => `  ${e.args.padEnd(28)} ${e.source.padEnd(22)} ${e.ms.toFixed(1)} ms${e.restored ? `, ${e.restored} tensor(s) restored` : ''}${e.unrestored.length ? `, ${e.unrestored.length} NOT restored` : ''}`).join('\n')}`);
  return report;
}
