// Program entries: one graph's lowered and scheduled program (loop-IR kernels, steps, buffers,
// constants, fusion decisions, autotuned tiles) and the code the kernel backend generated for
// it, keyed by the graph's exact structure (constants by their bytes), the backend and its code
// fingerprint, the compile mode, and the store's fingerprint (kiln version, platform, sources).
// A hit skips lowering, scheduling, autotuning and code generation (the JS backend takes the
// stored sources; native finds its libraries in toolchain.ts's disk cache by the same key).

import type { Backend } from '../../backend/backend.js';
import type { KernelSpec } from '../../ir/kernel-spec.js';
import { graphKey, type Graph } from '../capture/graph.js';
import type { Lowered } from '../schedule/lowered.js';
import type { FusedProgram } from '../run/fused-program.js';
import { log } from '../../core/logs.js';
import { counters } from '../../core/stats.js';
import { InvalidProgramError } from '../../ir/errors.js';
import { Blobs, decodeLowered, encodeLowered, NotStorable, type StoredLowered } from './serialize.js';
import { cacheStore, type CacheStore } from './store.js';
import { SCHEMA_VERSION, validateProgramInputs } from './validate.js';

const FORMAT = 'kiln-program-1';

export interface ProgramOptions {
  readonly mode?: string;
  readonly cache?: boolean;
}

interface StoredProgram {
  graph: string;
  backend: string;
  lowered: StoredLowered;
  code: unknown;
  compileMs: number;
}

export function loopSpecs(l: Lowered): KernelSpec[] {
  return l.steps.flatMap((s) => (s.kind === 'kernel' ? [{ kind: 'loop' as const, kernel: s.kernel, nBuffers: l.buffers.length }] : []));
}

function programKey(store: CacheStore, graph: Graph, opts: ProgramOptions, kb: Backend): string {
  return store.digest([FORMAT, store.fingerprint, `backend=${kb.name}`, kb.codeFingerprint?.() ?? '', `mode=${opts.mode ?? 'default'}`, graphKey(graph)]); // graphKey holds constants exactly
}

export interface ProgramHit {
  readonly lowered: Lowered;
  /** call with the program built from the hit (records what it saved) */
  done(p: FusedProgram): void;
}

/**
 * The stored program of a graph, with its code handed to the kernel backend, or null (no
 * store, a miss, or an entry that does not decode or does not follow the schema: logged,
 * counted as corrupt or invalid, then compiled again).
 */
export function cachedProgram(graph: Graph, opts: ProgramOptions, kb: Backend): ProgramHit | null {
  const store = cacheStore(opts);
  if (!store) return null;
  const t0 = performance.now();
  const key = programKey(store, graph, opts, kb);
  const payload = store.get('program', key);
  if (!payload) {
    counters.cache.misses++;
    log('cache', `${graph.name}: program miss (${store.location}); lowering and generating code`);
    return null;
  }
  let stored: StoredProgram, lowered: Lowered;
  try {
    stored = payload.meta as StoredProgram;
    if (!stored || typeof stored !== 'object' || typeof stored.compileMs !== 'number' || typeof stored.backend !== 'string') throw new Error('not a program entry');
    // an entry this user's kiln checked when it wrote it is these bytes, under its seal: not checked again
    lowered = decodeLowered(stored.lowered, payload.blobs, `${graph.name} (cached)`, { checked: payload.checked === SCHEMA_VERSION });
    validateProgramInputs(lowered, graph.inputNodes.map((n) => n.meta), `${graph.name} (cached)`);
  } catch (e) {
    const schema = e instanceof InvalidProgramError;
    counters.cache[schema ? 'invalid' : 'corrupt']++;
    counters.cache.misses++;
    log('cache', `${graph.name}: program entry ${schema ? 'does not follow the schema' : 'does not decode'} (${(e as Error).message}); recompiling`);
    return null;
  }
  const imported = stored.code != null && kb.importCode ? kb.importCode(loopSpecs(lowered), stored.code) : false;
  return {
    lowered,
    done: () => {
      const ms = performance.now() - t0;
      counters.cache.hits++;
      counters.cache.compileMsSaved += Math.max(0, stored.compileMs - ms);
      log('cache', `${graph.name}: program hit on ${stored.backend}: lowering and scheduling skipped, ${imported ? 'generated code reused' : 'code regenerated'} (loaded in ${ms.toFixed(1)} ms; compiling took ${stored.compileMs.toFixed(1)} ms)`);
    },
  };
}

/** Stores a freshly built program (best effort: what cannot be stored is logged and skipped). */
export function storeProgram(graph: Graph, opts: ProgramOptions, kb: Backend, p: FusedProgram, compileMs: number): void {
  const store = cacheStore(opts);
  if (!store) return;
  try {
    const blobs = new Blobs();
    const meta: StoredProgram = {
      graph: graph.name, backend: kb.name, lowered: encodeLowered(p.lowered, blobs),
      code: kb.exportCode?.(loopSpecs(p.lowered)) ?? null, compileMs,
    };
    // the stored form is decoded and checked now, on the cold path, so reads need not check it again
    decodeLowered(meta.lowered, blobs.list, `${graph.name} (to be stored)`);
    store.put('program', programKey(store, graph, opts, kb), { meta, blobs: blobs.list, checked: SCHEMA_VERSION });
  } catch (e) {
    if (!(e instanceof NotStorable) && !(e instanceof InvalidProgramError)) throw e;
    log('cache', `${graph.name}: not stored: ${e.message}`);
  }
}
