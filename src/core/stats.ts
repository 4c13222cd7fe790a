// kiln.stats(): counters of what the compiler did, so nothing happens silently.

export interface RecompileRecord { readonly fn: string; readonly reason: string }
export interface BreakRecord { readonly fn: string; readonly reason: string; readonly location: string; readonly hint: string }

export interface CompilerStats {
  compiles: number;
  recompiles: RecompileRecord[];
  graphBreaks: BreakRecord[];
  /** explicit asynchronous reads (`yield* kiln.read(t)` in compiled generators): each ran the graph before it and read back */
  asyncReads: number;
  /** calls that ran eagerly because of a recompile limit, a stance, or a disabled function */
  eagerFallbacks: number;
  fallbackReasons: string[];
  /** replays of a compiled entry whose guards held */
  cacheHits: number;
  /** calls that had to trace */
  cacheMisses: number;
  /** replays traced once more to confirm the graph had not changed (the `check` compile option) */
  traceChecks: number;
  /** segments of graph-break functions found by structure */
  segmentHits: number;
  graphsCompiled: number;
  compileTimeMs: number;
  /** graphs whose fusion failed and that run recorded eager kernels instead (each logged) */
  fusionFallbacks: number;
  /**
   * replays that ran the graph node by node with eager kernels and autograd instead of a compiled
   * program (backend 'eager' excepted), with why in interpretedReasons; each cause warns once
   */
  interpretedReplays: number;
  interpretedReasons: string[];
  /** compiled forward/backward pairs (AOTAutograd: results that require grad, backward outside), traced or warm-started from the cache */
  aotCompiles: number;
  /** what backend: 'auto' chose in this process, and why (null: never asked) */
  autoBackend: { chosen: string; reason: string } | null;
  /** the persistent compile cache (src/compiler/cache; Node, after importing 'kilnjs/node') */
  cache: CacheStats;
  /** entries compiled with dynamic sizes (issue 7), with their symbols */
  dynamicCompiles: { fn: string; symbols: string[] }[];
  /** dims that were to become dynamic (or be bucketed) but stayed static, with why */
  dynamicFailures: { fn: string; reason: string }[];
  /** bucketed calls (issue 7): per function, dim and bucket size, the calls it served and their sizes */
  buckets: { fn: string; dim: string; bucket: number; hits: number; sizes: number[] }[];
  /** the wasm backend, once a program used it (threads, why one thread, modules, compile time) */
  wasm?: WasmStatsSection;
}

export interface WasmStatsSection {
  /** threads kernels split across (1: no pool) */
  threads: number;
  /** why kernels run on one thread (null: they split across `threads`) */
  singleThreadReason: string | null;
  /** modules compiled (one per program's new kernels) and kernels in them */
  modules: number;
  kernels: number;
  /** kernels found compiled already (same kernel in another program) */
  kernelHits: number;
  compileMs: number;
  /** launches split across threads */
  parallelLaunches: number;
  /** bytes the wasm heap holds for live buffers and scratch */
  heapBytesInUse: number;
}

/** Sections filled by backends when asked (so they need not import the compiler). */
export const statsSections: { wasm?: () => WasmStatsSection } = {};

export interface CacheStats {
  /** entries found on disk: programs (lowering and codegen skipped) and warm starts (tracing skipped too) */
  hits: number;
  /** of the hits, warm starts that bound captures and checked guards without running the function */
  traceSkips: number;
  /** lookups that found nothing usable */
  misses: number;
  /** entries written */
  writes: number;
  bytesRead: number;
  bytesWritten: number;
  /** entries removed to keep the cache under its size cap (least recently used first) */
  evictions: number;
  /** entries rejected (bad checksum, truncated, foreign key or version), deleted and recompiled */
  corrupt: number;
  /** entries and native libraries whose seal (HMAC under this user's secret) did not verify, or that sit in a folder others can write: not run, recompiled */
  untrusted: number;
  /** entries that verified but do not follow the schema (a nonsensical graph or program): not run, recompiled */
  invalid: number;
  /** compile time the hits did not spend (what the entries cost to make, minus loading them) */
  compileMsSaved: number;
  /** time the trust checks took: entries' seals (HMAC), decoded graphs' and programs' schemas, native libraries' seals (the checksum and decoding are not counted) */
  verifyMs: number;
}

function fresh(): CompilerStats {
  return { compiles: 0, recompiles: [], graphBreaks: [], asyncReads: 0, eagerFallbacks: 0, fallbackReasons: [], cacheHits: 0, cacheMisses: 0, traceChecks: 0, segmentHits: 0, graphsCompiled: 0, compileTimeMs: 0, fusionFallbacks: 0, interpretedReplays: 0, interpretedReasons: [], aotCompiles: 0, autoBackend: null, cache: { hits: 0, traceSkips: 0, misses: 0, writes: 0, bytesRead: 0, bytesWritten: 0, evictions: 0, corrupt: 0, untrusted: 0, invalid: 0, compileMsSaved: 0, verifyMs: 0 }, dynamicCompiles: [], dynamicFailures: [], buckets: [] };
}

/** The compiler's counters: one object for the process, which resetStats zeroes in place. */
export const counters: CompilerStats = fresh();

export function resetStats(): void {
  Object.assign(counters, fresh());
}

/** A snapshot of the compiler counters. */
export function stats(): CompilerStats {
  const out = structuredClone(counters);
  if (statsSections.wasm) out.wasm = statsSections.wasm();
  return out;
}
