// The lines the examples' main() print after training: kiln.memory() after the warm-up and
// at the end (equal when nothing leaks) and the compiler's counters (what compiled, what
// replayed, what fell back), worded the same in every example.

import * as kiln from 'kilnjs';
import type { Memory } from './training-loop.js';

/** kiln.stats() as one line; `fusionFallbacks: false` leaves that counter out. */
export function compilerSummary(opts: { fusionFallbacks?: boolean } = {}): string {
  const s = kiln.stats();
  const fusion = opts.fusionFallbacks === false ? '' : `, ${s.fusionFallbacks} fusion fallbacks`;
  return `compiler: ${s.compiles} compiles, ${s.recompiles.length} recompiles, ${s.graphBreaks.length} graph breaks, ${s.cacheHits} replays, ${s.eagerFallbacks} eager fallbacks${fusion}`;
}

/** The memory lines of a step-counted run, then the compiler line when the step was compiled. */
export function printMemoryAndCompiler(run: { memoryBefore: Memory; memoryAfter: Memory }, compiled: boolean): void {
  console.log(`memory after warm-up: ${JSON.stringify(run.memoryBefore)}`);
  console.log(`memory at the end:    ${JSON.stringify(run.memoryAfter)}`);
  if (compiled) console.log(compilerSummary());
}
