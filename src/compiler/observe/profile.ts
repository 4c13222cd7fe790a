// kiln.profile(fn, opts)(...args): where the time of `fn` goes, as the PyTorch profiler shows
// it. While a profile runs, the programs of compiled functions time every kernel launch on its
// own (FusedProgram.runProfiled; replay outside a profile is untouched), eager ops and compile
// stages report their spans (src/core/profiling.ts), and a device backend with timestamps
// (webgpu: gpu.profile) attributes each dispatch's device time to the step or op that made it.
// The report (profile-report.ts) has the kernels with bytes, FLOPs and achieved rates against
// the backend's floors (profile-floors.ts), a text table and a Chrome trace.
//
// Calls: `warmup` unrecorded calls first (compile and warm caches, for steady-state kernels),
// then `runs` recorded calls. Each call's tensors are disposed (its result included): the
// profile measures, it does not hand back values. A function returning a Promise (a compiled
// generator), or a default backend that is device-timed (webgpu), makes the call return a
// Promise of the report.

import type { Backend } from '../../backend/backend.js';
import { ArgumentError } from '../../core/errors.js';
import { profiling, type ProfileSink } from '../../core/profiling.js';
import { runtime } from '../../ops/dispatch.js';
import { SteppedScope } from '../../core/scope.js';
import { isTensor } from '../../tensor/tensor.js';
import { floorsFor } from './profile-floors.js';
import { buildReport, type DeviceDispatch, type ProfiledProgram, type ProfileReport, type Recording, type RecordedSpan, type RecordedStep } from './profile-report.js';

export interface ProfileOptions {
  /**
   * unrecorded calls before the profiled ones (default 0: a first call's compile shows in the
   * profile; a compiled function traces on its first call and again on its first replay, the
   * check trace, so 2 leaves only steady-state calls)
   */
  readonly warmup?: number;
  /** recorded calls (default 1); kernel figures are per launch */
  readonly runs?: number;
  /** the floors to compare against instead of measured ones (GB/s of memory, GFLOP/s of compute), for every backend */
  readonly floors?: { readonly gbps?: number; readonly gflops?: number };
}

class Recorder implements ProfileSink {
  readonly rec: Recording = { runs: [], spans: [], steps: [], device: null };
  private readonly open: number[] = [];
  private units = 0;
  constructor(private readonly device: Backend | null) {}

  span(cat: RecordedSpan['cat'], name: string, t0: number, t1: number, args?: Record<string, unknown>): void {
    this.rec.spans.push({ cat, name, t0, t1, args });
  }

  begin(): number {
    const u = this.units++;
    this.open.push(u);
    this.device?.profileMark?.(u);
    return performance.now();
  }

  private close(): number {
    const u = this.open.pop()!;
    this.device?.profileMark?.(this.open.at(-1) ?? null);
    return u;
  }

  endEager(op: string, t0: number, args: Record<string, unknown>): void {
    const t1 = performance.now();
    this.rec.spans.push({ cat: 'eager', name: op, t0, t1, args, unit: this.close() });
  }

  endStep(program: object, step: number, t0: number): void {
    const t1 = performance.now();
    (this.rec.steps as RecordedStep[]).push({ program: program as ProfiledProgram, step, t0, t1, unit: this.close() });
  }
}

function checkCount(name: string, v: number | undefined, min: number, dflt: number): number {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < min) throw new ArgumentError(`${name} must be an integer >= ${min}, got ${v}`, 'profile', `pass { ${name}: ${Math.max(min, 1)} }`);
  return v;
}

/** Disposes the tensors a call left: its scope, and tensors in its (awaited) result. */
function disposeResult(v: unknown, depth = 0): void {
  if (isTensor(v)) {
    if (!v.isDisposed) v.dispose();
  } else if (depth < 4 && Array.isArray(v)) v.forEach((x) => disposeResult(x, depth + 1));
  else if (depth < 4 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach((x) => disposeResult(x, depth + 1));
}

/** One call of fn in a scope of its own; a Promise when fn returned one. */
function callOnce(fn: (...a: unknown[]) => unknown, args: readonly unknown[]): void | Promise<void> {
  const s = new SteppedScope();
  s.enter();
  let r: unknown;
  try {
    r = fn(...args);
  } catch (e) {
    s.exit();
    s.abort();
    throw e;
  }
  s.exit();
  if (r instanceof Promise) return r.then((v) => (s.close(undefined, isTensor), disposeResult(v)), (e) => (s.abort(), Promise.reject(e)));
  s.close(undefined, isTensor);
}

export function profile<A extends unknown[]>(fn: (...args: A) => unknown, opts: ProfileOptions = {}): (...args: A) => ProfileReport | Promise<ProfileReport> {
  if (typeof fn !== 'function') throw new ArgumentError(`expected a function, got ${typeof fn}`, 'profile', 'kiln.profile(fn)(...args)');
  const warmup = checkCount('warmup', opts.warmup, 0, 0);
  const runs = checkCount('runs', opts.runs, 1, 1);
  const call = fn as (...a: unknown[]) => unknown;
  return (...args: A) => {
    if (profiling.sink) throw new ArgumentError('a profile is already running', 'profile', 'profile one function at a time (kiln.profile does not nest)');
    const device = runtime.backend.profile ? runtime.backend : null;
    const finish = (rec: Recording) => buildReport(rec, (kb) => floorsFor(kb, opts.floors));
    if (device) return profileOnDevice(device, call, args, warmup, runs).then(finish);
    const r = new Recorder(null);
    const done = calls(call, args, warmup, runs, r);
    return done ? done.then(() => finish(r.rec)) : finish(r.rec);
  };
}

/**
 * `warmup` unrecorded calls, then `runs` recorded ones (the sink installed for each, until it
 * settles): synchronous while the calls are, a Promise from the first call that returns one.
 */
function calls(fn: (...a: unknown[]) => unknown, args: readonly unknown[], warmup: number, runs: number, r: Recorder, i = 0): void | Promise<void> {
  for (; i < warmup + runs; i++) {
    const recorded = i >= warmup;
    const t0 = performance.now();
    if (recorded) profiling.sink = r;
    let p: void | Promise<void>;
    try {
      p = callOnce(fn, args);
    } catch (e) {
      profiling.sink = null;
      throw e;
    }
    const end = () => {
      profiling.sink = null;
      if (recorded) r.rec.runs.push({ t0, t1: performance.now() });
    };
    if (p) {
      const next = i + 1;
      return p.then(() => (end(), calls(fn, args, warmup, runs, r, next)), (e) => {
        profiling.sink = null;
        throw e;
      });
    }
    end();
  }
}

/** On a device-timed backend: the recorded calls inside its profile, each dispatch's device time attributed to its unit. */
async function profileOnDevice(device: Backend, fn: (...a: unknown[]) => unknown, args: readonly unknown[], warmup: number, runs: number): Promise<Recording> {
  for (let i = 0; i < warmup; i++) await callOnce(fn, args);
  const r = new Recorder(device);
  const p = await device.profile!(() => calls(fn, args, 0, runs, r));
  const rec: Recording = { ...r.rec, device: p.dispatches.map((d): DeviceDispatch => ({ kernel: d.kernel, ns: d.ns, unit: typeof d.mark === 'number' ? d.mark : null })) };
  return rec;
}
