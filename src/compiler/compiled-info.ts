// What a compiled callable shows of itself as `.compiled`: a read-only view of the compiler state
// behind it. The state itself (CompiledFunction: entries, bucketing state, the report it fills)
// stays internal; kiln's own code and tests reach it through compiledFunctionOf.

import type { CompiledFunction, CompileReport } from './compile.js';

/** A compiled callable's `.compiled`: its name, what its latest trace found, how many entries it holds. */
export interface CompiledInfo {
  /** opts.name, else the module's class or the function's name */
  readonly name: string;
  /** the latest trace's graphs, breaks, guards and timings; null before the first trace */
  readonly report: CompileReport | null;
  /** the compiled entries so far (one per set of guards) */
  readonly entryCount: number;
}

const stateOf = new WeakMap<CompiledInfo, CompiledFunction>();

/** The view of `cf` that its compiled callable carries. */
export function compiledInfo(cf: CompiledFunction): CompiledInfo {
  const info: CompiledInfo = Object.freeze({
    get name() { return cf.name; },
    get report() { return cf.report; },
    get entryCount() { return cf.entryCount; },
  });
  stateOf.set(info, cf);
  return info;
}

/** The compiler state behind a kiln.compile result (for kiln's own code and tests, not users). */
export function compiledFunctionOf(compiled: unknown): CompiledFunction {
  const info = (compiled as { compiled?: unknown } | null)?.compiled;
  const cf = typeof info === 'object' && info !== null ? stateOf.get(info as CompiledInfo) : undefined;
  if (!cf) throw new Error('kiln internal: not the result of kiln.compile');
  return cf;
}
