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
import { keep, scope } from '../../tensor/scope.js';
import { log, warnOnce } from '../logs.js';
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
  /** tensors the example wrote that were saved and written back (parameters, buffers, grads) */
  readonly restored: number;
  /** tensors the example wrote that warm-up could not restore (not known state), by label */
  readonly unrestored: readonly string[];
}

/** What warm-up needs from the compiled function to keep its state unchanged. */
export interface WarmupState {
  /** the tensors it knows as the function's state (module parameters and buffers, captures) */
  known(): readonly Tensor[];
  /** what the newest compiled entry writes: tensors updated in place, leaves whose .grad it sets */
  writes(): { tensors: readonly { tensor: Tensor; label: string }[]; gradLeaves: readonly Tensor[] } | null;
}

interface Saved {
  readonly t: Tensor;
  /** the storage's write counter (programs and in-place ops bump it): changed means written */
  readonly version: number;
  readonly value: Tensor;
  readonly grad: Tensor | null;
  readonly gradValue: Tensor | null;
}

function save(state: readonly Tensor[]): Saved[] {
  return noGrad(() => state.filter((t) => !t.isDisposed).map((t) => {
    const grad = t.grad && !t.grad.isDisposed ? t.grad : null;
    return { t, version: t.storage.version, value: keep(copy(t)), grad, gradValue: grad ? keep(copy(grad)) : null };
  }));
}

/** Writes the saved values back where they changed; returns how many tensors had (values or grads). */
function restore(saved: readonly Saved[]): number {
  let n = 0;
  noGrad(() => {
    for (const s of saved) {
      if (!s.t.isDisposed && s.t.storage.version !== s.version) {
        assign(s.t, s.value);
        n++;
      }
      if (s.t.grad !== s.grad || (s.grad && s.grad.isDisposed)) {
        const now = s.t.grad;
        s.t.grad = s.gradValue ? keep(copy(s.gradValue)) : null;
        if (now && now !== s.t.grad) now.dispose();
        n++;
      }
      s.value.dispose();
      s.gradValue?.dispose();
    }
  });
  return n;
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
export async function warmup(name: string, call: (...args: unknown[]) => unknown, spec: WarmupSpec | readonly (readonly unknown[])[], state?: WarmupState): Promise<WarmupReport> {
  const entries: WarmupEntryReport[] = [];
  const t0 = performance.now();
  for (const ex of examples(spec)) {
    const before = { mem: counters.cacheHits, skips: counters.cache.traceSkips, hits: counters.cache.hits };
    const saved = save(state?.known() ?? []);
    const t1 = performance.now();
    let args: unknown[] = [];
    let restored = 0;
    try {
      scope(() => {
        args = ex.make();
        call(...args);
        return undefined;
      }, isTensor);
    } finally {
      restored = restore(saved);
    }
    const writes = state?.writes() ?? null;
    const ms = performance.now() - t1;
    const knownSet = new Set(saved.map((s) => s.t));
    const unrestored = [
      ...(writes?.tensors.filter((w) => !knownSet.has(w.tensor)).map((w) => w.label) ?? []),
      ...(writes?.gradLeaves.filter((l) => !knownSet.has(l)).map(() => 'a .grad') ?? []),
    ];
    if (unrestored.length) {
      warnOnce(`warmup-state ${name}`, `${name}: warm-up ran the function for real and changed ${unrestored.length} tensor(s) it cannot restore (${[...new Set(unrestored)].slice(0, 4).join(', ')}${unrestored.length > 4 ? ', ...' : ''}): pass them to kiln.compile as { captures } (e.g. { ...model.stateDict(), ...optimizerState }) so warm-up saves and restores them, or warm up before loading the real weights`);
    }
    const source = counters.cacheHits > before.mem ? 'memory' : counters.cache.traceSkips > before.skips ? 'cache (trace skipped)' : counters.cache.hits > before.hits ? 'cache (program)' : 'compiled';
    entries.push({ args: describeArgs(args), source, ms, restored, unrestored });
  }
  const report: WarmupReport = { name, entries, totalMs: performance.now() - t0 };
  log('cache', () => `${name}: warm-up, ${entries.length} example${entries.length === 1 ? '' : 's'} in ${report.totalMs.toFixed(0)} ms:\n${entries.map((e) => `  ${e.args.padEnd(28)} ${e.source.padEnd(22)} ${e.ms.toFixed(1)} ms${e.restored ? `, ${e.restored} tensor(s) restored` : ''}${e.unrestored.length ? `, ${e.unrestored.length} NOT restored` : ''}`).join('\n')}`);
  return report;
}
