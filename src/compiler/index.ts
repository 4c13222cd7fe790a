// The compiler's public surface: kiln.compile, kiln.explain, kiln.stats, kiln.compiler.*

import { ArgumentError } from '../core/errors.js';
import { runtime } from '../ops/dispatch.js';
import { checkEnum } from '../core/enum-arg.js';
import { CompiledFunction, normalizeCaptures, resetCompiled, setStance as setStanceNow, getStance, type CompileMode, type CompileOptions, type Stance } from './compile.js';
import { resetStats } from '../core/stats.js';
import { Tracer } from './capture/tracer.js';
import { warmup, type WarmupSpec, type WarmupReport } from './cache/warmup.js';
import { compiledInfo, type CompiledInfo } from './compiled-info.js';

export { explain, type ExplainResult } from './observe/explain.js';
export { profile, type ProfileOptions } from './observe/profile.js';
export type { ProfileReport, KernelProfile, EagerOpProfile, ChromeTrace, ChromeTraceEvent } from './observe/profile-report.js';
export type { Floors as ProfileFloors } from './observe/profile-floors.js';
export { stats, type CompilerStats } from '../core/stats.js';
export { customOp, type CustomOpDef } from './capture/custom-op.js';
export { read, ReadRequest } from './capture/async-read.js';
export { markDynamic, markStatic } from './dynamic/dynamic.js';
export type { BucketSpec } from './dynamic/bucket.js';
export { GraphBreakError, RecompileError } from './errors.js';
export { InvalidProgramError } from '../ir/errors.js';
export type { CompileOptions, CompileMode, CompileReport, Stance } from './compile.js';
export type { CompiledInfo } from './compiled-info.js';
export { setLogs, LOG_CHANNELS } from '../core/logs.js';
export { setDebugDir } from './observe/debug-dir.js';
export type { WarmupSpec, WarmupReport, WarmupEntryReport } from './cache/warmup.js';
export { printGraph, type Graph } from './capture/graph.js';

interface ModuleLike {
  training: boolean;
  forward(...args: unknown[]): unknown;
  /** nn.Module's call: forward with its hooks */
  call?(...args: unknown[]): unknown;
  modules?(): Iterable<ModuleLike>;
  parameters?(): unknown;
}

export type Compiled<F extends (...args: never[]) => unknown> = F & {
  /** what the compiler did: name, latest report, entry count */
  readonly compiled: CompiledInfo;
  /** compiles ahead for example inputs or declared shapes, and reports what it did (src/compiler/cache/warmup.ts) */
  warmup(spec: WarmupSpec | readonly (readonly unknown[])[]): Promise<WarmupReport>;
};

export type CompiledModule<M extends ModuleLike> = ((...args: Parameters<M['forward']>) => ReturnType<M['forward']>) & {
  readonly module: M;
  readonly compiled: CompiledInfo;
  forward(...args: Parameters<M['forward']>): ReturnType<M['forward']>;
  /** compiles ahead for example inputs or declared shapes, and reports what it did (src/compiler/cache/warmup.ts) */
  warmup(spec: WarmupSpec | readonly (readonly unknown[])[]): Promise<WarmupReport>;
};

/**
 * A compiled generator function (async-read.ts): reads inside it are explicit graph breaks
 * (`const v = yield* kiln.read(t)`), so a call returns a Promise of what the generator returns.
 */
export type CompiledGenerator<A extends unknown[], R> = ((...args: A) => Promise<R>) & {
  readonly compiled: CompiledInfo;
  /** not supported for generators (their reads are awaited): call the function once with example inputs */
  warmup(spec: WarmupSpec | readonly (readonly unknown[])[]): Promise<WarmupReport>;
};

function isModuleLike(x: unknown): x is ModuleLike {
  return typeof x === 'object' && x !== null && typeof (x as ModuleLike).forward === 'function';
}

/** Compiles a function or an nn.Module (which keeps sharing its parameters). */
// any: the generator's next-value type is whatever kiln.read resumes it with
export function compile<A extends unknown[], R>(fn: (...args: A) => Generator<unknown, R, any>, opts?: CompileOptions): CompiledGenerator<A, R>;
export function compile<F extends (...args: never[]) => unknown>(fn: F, opts?: CompileOptions): Compiled<F>;
export function compile<M extends ModuleLike>(module: M, opts?: CompileOptions): CompiledModule<M>;
export function compile(target: unknown, options: CompileOptions = {}): unknown {
  if (options.mode !== undefined) checkEnum('compile', 'mode', options.mode, COMPILE_MODES);
  const opts = normalizeCaptures(options);
  if (isModuleLike(target)) {
    const m = target;
    const cf = new CompiledFunction((...a: unknown[]) => (m.call ? m.call(...a) : m.forward(...a)), opts, m as never);
    const call = (...args: unknown[]) => cf.call(args);
    return Object.assign(call, { module: m, compiled: compiledInfo(cf), forward: call, warmup: (s: WarmupSpec) => (cf.isGeneratorFn ? Promise.reject(generatorWarmupError(cf.name)) : warmup(cf.name, call, s, () => cf.knownState())) });
  }
  if (typeof target !== 'function') throw new ArgumentError(`compile expects a function or a module, got ${typeof target}`, 'compile');
  const cf = new CompiledFunction(target as (...a: unknown[]) => unknown, opts);
  const call = (...args: unknown[]) => cf.call(args);
  Object.defineProperty(call, 'name', { value: `compiled ${cf.name}` });
  return Object.assign(call, { compiled: compiledInfo(cf), warmup: (s: WarmupSpec) => (cf.isGeneratorFn ? Promise.reject(generatorWarmupError(cf.name)) : warmup(cf.name, call, s, () => cf.knownState())) });
}

function generatorWarmupError(name: string): ArgumentError {
  return new ArgumentError(`warmup is not supported for the compiled generator ${name}: its reads are awaited, so warm-up could not restore the state it changes`, 'warmup', 'call it once with example inputs at start-up (its segments are compiled then), or warm up a synchronous function without reads');
}

const DISABLED = Symbol('kiln.disabled');

/** Marks fn as never traced: inside a compiled function, calling it is a graph break. */
export function disable<F extends (...args: never[]) => unknown>(fn: F): F {
  const wrapped = ((...args: Parameters<F>) => {
    const tracer = runtime.tracer as Tracer | null;
    if (!tracer) return fn(...args);
    graphBreak(`called kiln.compiler.disable'd function ${fn.name || 'anonymous'}`);
    runtime.tracer = null;
    try {
      return fn(...args);
    } finally {
      runtime.tracer = tracer;
    }
  }) as F;
  (wrapped as unknown as Record<symbol, boolean>)[DISABLED] = true;
  return wrapped;
}

/** An explicit graph break (a no-op outside compiled code). */
export function graphBreak(reason = 'explicit kiln.compiler.graphBreak()'): void {
  const tracer = runtime.tracer as Tracer | null;
  if (!tracer) return;
  tracer.breakNow(reason);
}

/** Forgets every compiled entry and zeroes the counters. */
export function reset(): void {
  resetCompiled();
  resetStats();
}

const COMPILE_MODES: readonly CompileMode[] = ['default', 'reduce-overhead', 'max-autotune'];
const STANCES: readonly Stance[] = ['default', 'forceEager', 'eagerOnRecompile', 'failOnRecompile'];

/** Sets how every compiled function behaves ('forceEager': run eagerly; see Stance). */
export function setStance(s: Stance): void {
  checkEnum('setStance', 'stance', s, STANCES);
  setStanceNow(s);
}

export { getStance };
