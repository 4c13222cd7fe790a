// kiln.stats(): counters of what the compiler did, so nothing happens silently.

export interface RecompileRecord { readonly fn: string; readonly reason: string }
export interface BreakRecord { readonly fn: string; readonly reason: string; readonly location: string; readonly hint: string }

export interface CompilerStats {
  compiles: number;
  recompiles: RecompileRecord[];
  graphBreaks: BreakRecord[];
  /** calls that ran eagerly because of a recompile limit, a stance, or a disabled function */
  eagerFallbacks: number;
  fallbackReasons: string[];
  /** replays of a compiled entry whose guards held */
  cacheHits: number;
  /** calls that had to trace */
  cacheMisses: number;
  /** segments of graph-break functions found by structure */
  segmentHits: number;
  graphsCompiled: number;
  compileTimeMs: number;
  /** graphs whose fusion failed and that run recorded eager kernels instead (each logged) */
  fusionFallbacks: number;
  /** what backend: 'auto' chose in this process, and why (null: never asked) */
  autoBackend: { chosen: string; reason: string } | null;
}

function fresh(): CompilerStats {
  return { compiles: 0, recompiles: [], graphBreaks: [], eagerFallbacks: 0, fallbackReasons: [], cacheHits: 0, cacheMisses: 0, segmentHits: 0, graphsCompiled: 0, compileTimeMs: 0, fusionFallbacks: 0, autoBackend: null };
}

export let counters: CompilerStats = fresh();

export function resetStats(): void {
  counters = fresh();
}

/** A snapshot of the compiler counters. */
export function stats(): CompilerStats {
  return structuredClone(counters);
}
