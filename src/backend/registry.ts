// Which backend runs a compiled program's loop kernels. Kernel backends register here: 'js' (the
// default backend's own kernels: the JS renderer on the JS backend) below, 'wasm' and 'webgpu'
// from the browser-safe entry, 'native' from 'kilnjs/node', so 'kilnjs' itself never imports
// Node-only code. `backend: 'auto'` takes the fastest one that can run here, the JS renderer when
// no other can, and says which and why, once per process and in every compile report. The caller
// passes the default (eager) backend: a kernel backend runs over its buffers, or refuses.

import type { Backend } from './backend.js';
import { ArgumentError } from '../core/errors.js';
import { log } from '../core/logs.js';
import { counters } from '../core/stats.js';

export interface KernelBackendInfo {
  /** null when it can run here, else why not (e.g. "no C compiler on PATH") */
  available?: () => string | null;
  /** steady-state speed order for 'auto' (higher first): webgpu 40, native 30, wasm 20; the JS renderer is the last resort */
  rank?: number;
  /** one line on why it is fast, for the 'auto' reason */
  summary?: string;
  /** where its generated code lives in files (native: shared libraries); absent: none */
  codeFiles?: CodeFiles;
}

/**
 * Generated code that a kernel backend keeps in files of the cache folder (native: its shared
 * libraries), which artifacts and cache bundles carry: they ship a file only when `distrust`
 * says nothing against it, and install one only with `seal`.
 */
export interface CodeFiles {
  /** its folder under the cache folder (a bundle's file table names it) */
  readonly folder: string;
  /** that folder's path here (KILN_CACHE_DIR applied) */
  dir(): string;
  /** the names it gives its files (no folders) */
  readonly name: RegExp;
  /** null when the file at `path` may be loaded (sealed by this user, in a folder only this user can write), else why not */
  distrust(path: string): string | null;
  /** seals `bytes`, installed at `path`, for this user (as if built here) */
  seal(path: string, bytes: Uint8Array): void;
  /** what the files were built with, in one line (compiler, flags, CPU features): files from another toolchain are not used; null: no toolchain here */
  toolchain(): string | null;
}

/** The kernel backend over the buffers of `eager` (the default backend); throws an ArgumentError when it cannot use them. */
export type KernelBackendGetter = (eager: Backend) => Backend;

interface Registered extends Required<Omit<KernelBackendInfo, 'codeFiles'>> {
  readonly name: string;
  readonly get: KernelBackendGetter;
  readonly codeFiles?: CodeFiles;
}

const registry = new Map<string, Registered>();

/** What a compile used for its loop kernels, recorded in reports (explain, the advisor). */
export interface BackendChoice {
  readonly requested: string;
  /** 'js' means the JS renderer of the default backend */
  readonly chosen: string;
  readonly reason: string;
}

/** The JS renderer: the default backend prepares the loop kernels itself. */
const JS = 'js';

export function registerKernelBackend(name: string, get: KernelBackendGetter, info: KernelBackendInfo = {}): void {
  registry.set(name, { name, get, available: info.available ?? (() => null), rank: info.rank ?? 0, summary: info.summary ?? name, codeFiles: info.codeFiles });
}

export function registeredKernelBackends(): string[] {
  return [...registry.keys()];
}

/** The code files of a registered kernel backend (undefined: it keeps none, or is not registered). */
export function kernelBackendCodeFiles(name: string): CodeFiles | undefined {
  return registry.get(name)?.codeFiles;
}

let announced: string | null = null;

/**
 * The 'auto' choice (also the default): the highest-ranked registered backend that can run
 * here over the default backend's buffers (a WebGPU default takes webgpu, a CPU one native or
 * wasm), with the reason.
 */
export function chooseAuto(eager: Backend, requested = 'auto'): BackendChoice {
  const candidates = [...registry.values()].filter((c) => c.name !== JS).sort((a, b) => b.rank - a.rank);
  const skipped: string[] = [];
  for (const c of candidates) {
    let why = c.available();
    if (!why) {
      try {
        c.get(eager);
      } catch (e) {
        if (!(e instanceof ArgumentError)) throw e;
        why = e.detail;
      }
    }
    if (why) {
      skipped.push(`${c.name} unavailable (${why})`);
      continue;
    }
    return announce({ requested, chosen: c.name, reason: `${c.summary}${skipped.length ? `; ${skipped.join('; ')}` : ''}` });
  }
  const none = skipped.length ? skipped.join('; ') : 'no other kernel backend is registered (import kiln/node for native)';
  return announce({ requested, chosen: JS, reason: `JS renderer: ${none}` });
}

function announce(c: BackendChoice): BackendChoice {
  const line = `backend ${c.requested === 'auto' ? "'auto'" : '(default: auto)'} chose ${c.chosen}: ${c.reason}`;
  if (announced !== line) log('perf', line);
  announced = line;
  counters.autoBackend = { chosen: c.chosen, reason: c.reason };
  return c;
}

/**
 * The kernel backend for compile options, and the recorded choice. No backend named means 'auto'
 * (torch.compile's default is its best backend too); an explicitly named backend that cannot run
 * here throws: it is never silently replaced by another. 'eager' (capture and replay, no
 * programs) names no kernel backend: the default backend stands in.
 */
export function resolveKernelBackend(requested: string | undefined, eager: Backend): { backend: Backend; choice: BackendChoice } {
  const name = requested ?? 'auto';
  if (name === 'eager') return { backend: eager, choice: { requested: name, chosen: name, reason: 'requested' } };
  if (name === 'auto') {
    const choice = chooseAuto(eager, requested === undefined ? 'default' : 'auto');
    return { backend: registry.get(choice.chosen)!.get(eager), choice };
  }
  const r = registry.get(name);
  if (!r) {
    const others = [...registry.keys()].filter((k) => k !== JS);
    const hint = name === 'native'
      ? "the native backend is Node-only: import 'kilnjs/node' to register it"
      : `use one of: auto, js, eager${others.length ? `, ${others.join(', ')}` : ''}`;
    throw new ArgumentError(`backend '${name}' is not registered`, 'kiln.compile', hint);
  }
  return { backend: r.get(eager), choice: { requested: name, chosen: name, reason: 'requested' } };
}

/**
 * kiln.compile resolves its kernel backend at once, so that loading it happens before the first
 * call, not inside it: the JS and wasm worker threads start booting (~60 ms each), native loads
 * koffi and its runtime library (~30 ms warm), the JS matmul engine compiles its micro-kernels. A backend that cannot run here (or an unknown
 * name) is left to report itself at the first call, as before.
 */
export function prewarmKernelBackend(requested: string | undefined, eager: Backend): void {
  if (requested === 'eager') return;
  let backend: Backend;
  try {
    backend = resolveKernelBackend(requested, eager).backend;
  } catch {
    return;
  }
  backend.prewarm?.();
}

registerKernelBackend(JS, (eager) => eager, { summary: 'JS renderer' });
