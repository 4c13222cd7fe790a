// The persistent compile cache, as a restarted process sees it: the first compiled call(s) of
// the workload in a fresh child process (first-call-runner.ts) with an empty temporary
// KILN_CACHE_DIR (cold), then again on the same folder (warm), plus whether the cache the
// user's own processes would use is configured and writable.
//
// Why the child processes: the in-process measurement (measure.ts) runs with the cache off, so
// its first call is the cold one; what a restart with a warm cache costs can only be seen in a
// process that has compiled nothing yet. Each child runs only the warm-up calls K (1 or 2) to
// stay lean: most of a child's wall time is Node + kiln start-up (+ tsx from the sources),
// which the figures exclude (they time the calls only).

import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as kiln from '../api/kiln.js';
import type { LoadedWorkload } from './workload.js';
import type { RunnerArgs, RunnerResult } from './first-call-runner.js';
import { round } from './calls.js';
import { untrustedFolder } from '../trust/provenance.js';

export interface FirstCallRun {
  /** the first compiled call (ms) */
  firstCallMs: number;
  /** each of the K calls (ms) */
  callsMs: number[];
  /** their sum: what this process start paid for the warm-up calls (ms) */
  totalMs: number;
  /** kiln.stats().compileTimeMs in the child */
  compileTimeMs: number;
  /** calls that traced in the child (kiln.stats().cacheMisses) */
  traces: number;
  /** kiln.stats().cache in the child */
  cache: kiln.CompilerStats['cache'];
  /** the child's wall time, start-up included (ms) */
  processMs: number;
}

export interface CacheCheck {
  /** 'skipped': not run (--no-cache-check, a workload that is not a module); 'failed': a child failed */
  status: 'ok' | 'skipped' | 'failed';
  /** why skipped or failed; null when ok */
  reason: string | null;
  /** calls each child ran: K, the in-process warm-up calls (up to 3) */
  calls: number;
  cold: FirstCallRun | null;
  warm: FirstCallRun | null;
  /** cold.totalMs - warm.totalMs: what the warm cache saves at each process start (ms) */
  savedMs: number | null;
  /** the warm run read entries from the cache (cache.hits > 0) */
  hit: boolean;
  /** what the warm run did not redo: 'tracing' (a warm start: traceSkips > 0, so codegen too), 'code generation' (program entries only), 'nothing' */
  skipped: 'tracing' | 'code generation' | 'nothing' | null;
}

/** The cache folder this process (and so the user's service, started the same way) would use. */
export interface CacheConfig {
  dir: string;
  /** where the folder comes from */
  from: 'KILN_CACHE_DIR' | 'XDG_CACHE_HOME' | 'default';
  /** KILN_CACHE=0/false/off/no turns the cache off */
  disabled: boolean;
  /** the folder, or the nearest existing folder above it (kiln creates the rest), is writable */
  writable: boolean;
  /** why kiln would not use the folder (another user could write it or a folder above it: src/trust/provenance.ts), or null */
  untrusted: string | null;
}

/** Mirrors src/compiler/cache/disk-store.ts cacheRoot() and store.ts cacheDisabledByEnv(), and its provenance check. */
export function cacheConfig(env: NodeJS.ProcessEnv = process.env): CacheConfig {
  const from = env.KILN_CACHE_DIR ? 'KILN_CACHE_DIR' : env.XDG_CACHE_HOME ? 'XDG_CACHE_HOME' : 'default';
  const dir = resolve(env.KILN_CACHE_DIR || (env.XDG_CACHE_HOME ? join(env.XDG_CACHE_HOME, 'kiln') : join(homedir(), '.cache', 'kiln')));
  const off = env.KILN_CACHE?.trim().toLowerCase();
  let probe = dir;
  while (!existsSync(probe) && dirname(probe) !== probe) probe = dirname(probe);
  let writable = true;
  try {
    accessSync(probe, constants.W_OK);
  } catch {
    writable = false;
  }
  return { dir, from, disabled: off === '0' || off === 'false' || off === 'off' || off === 'no', writable, untrusted: untrustedFolder(join(dir, 'compile')) };
}

const here = fileURLToPath(import.meta.url);
/** The child's script: first-call-runner.ts from the sources, first-call-runner.js in the built package. */
export const RUNNER = join(dirname(here), `first-call-runner${extname(here)}`);

export function skippedCheck(reason: string, calls = 0): CacheCheck {
  return { status: 'skipped', reason, calls, cold: null, warm: null, savedMs: null, hit: false, skipped: null };
}

/** Why a workload cannot be loaded by a child process, or null when it can. */
export function childLoadable(lw: LoadedWorkload): string | null {
  if (lw.source.startsWith('example:')) return null;
  const file = resolve(lw.source);
  if (existsSync(file) && statSync(file).isFile()) return null;
  return `the workload did not come from a module file (source '${lw.source}'), so a fresh process cannot load it`;
}

/**
 * The child's Node options. From the sources: tsx from kiln's own dependencies, so this works
 * from any working directory. From the built package: the parent's module loaders.
 */
function childNodeArgs(): string[] {
  return RUNNER.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : loaderArgs(process.execArgv);
}

/**
 * The module-loader options among `execArgv` (--import, --require, --loader), so that a
 * TypeScript workload run with `npx tsx node_modules/.bin/kilnjs advise w.ts` loads in the
 * child too; other options (--inspect, ...) are not the child's business.
 */
export function loaderArgs(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i]!;
    if (/^--(import|require|loader|experimental-loader)=/.test(a)) out.push(a);
    else if (['--import', '--require', '-r', '--loader', '--experimental-loader'].includes(a) && i + 1 < execArgv.length) out.push(a, execArgv[++i]!);
  }
  return out;
}

function runChild(args: RunnerArgs, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ r: RunnerResult; processMs: number }> {
  const t0 = performance.now();
  return new Promise((res, rej) => {
    execFile(process.execPath, [...childNodeArgs(), RUNNER, JSON.stringify(args)], { env, timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, _stdout, stderr) => {
      const processMs = performance.now() - t0;
      if (err) {
        const tail = String(stderr).trim().split('\n').filter((l) => l.trim()).slice(-3).join(' | ');
        rej(new Error(`${err.killed ? `timed out after ${timeoutMs / 1000} s` : `exit ${err.code ?? err.signal}`}${tail ? `: ${tail}` : ''}`));
        return;
      }
      try {
        res({ r: JSON.parse(readFileSync(args.out, 'utf8')) as RunnerResult, processMs });
      } catch (e) {
        rej(new Error(`no result from the child process: ${(e as Error).message}`));
      }
    });
  });
}

function toRun(x: { r: RunnerResult; processMs: number }): FirstCallRun {
  const callsMs = x.r.callsMs.map((v) => round(v));
  return {
    firstCallMs: callsMs[0] ?? NaN,
    callsMs,
    totalMs: round(x.r.callsMs.reduce((a, b) => a + b, 0)),
    compileTimeMs: round(x.r.compileTimeMs),
    traces: x.r.traces,
    cache: x.r.cache,
    processMs: round(x.processMs, 1),
  };
}

export interface CacheCheckOptions {
  seed: number;
  config?: string;
  backend: string;
  /** warm-up calls K to run in each child */
  calls: number;
  timeoutMs?: number;
  progress?: (line: string) => void;
}

/** Cold, then warm, first calls in fresh processes on one temporary cache folder. */
export async function checkCache(lw: LoadedWorkload, o: CacheCheckOptions): Promise<CacheCheck> {
  const calls = Math.max(1, Math.min(3, o.calls));
  const why = childLoadable(lw);
  if (why !== null) return skippedCheck(why, calls);
  const say = o.progress ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), 'kiln-advise-cache-'));
  // the user's KILN_CACHE=0 must not turn the measurement off (the checklist reports it)
  const { KILN_CACHE: _off, ...rest } = process.env;
  // KILN_CACHE_SOURCES=off: keys without the fingerprint of kiln's sources, so an edit to the
  // checkout between the two children (a development tree) cannot turn the warm run into a miss
  const env = { ...rest, KILN_CACHE_DIR: dir, KILN_CACHE_SOURCES: 'off' };
  const source = lw.source.startsWith('example:') ? lw.source : resolve(lw.source);
  const args = (phase: string): RunnerArgs => ({ source, seed: o.seed, backend: o.backend, calls, out: join(dir, `${phase}.json`), ...(o.config !== undefined ? { config: o.config } : {}) });
  const timeout = o.timeoutMs ?? 180_000;
  try {
    const cold = toRun(await runChild(args('cold'), env, timeout));
    say(`  ${o.backend}: restarted process, cold cache: first ${calls} call(s) ${cold.totalMs.toFixed(0)} ms (${cold.cache.writes} entries written)`);
    const warm = toRun(await runChild(args('warm'), env, timeout));
    const hit = warm.cache.hits > 0;
    const skipped = warm.cache.traceSkips > 0 ? 'tracing' : hit ? 'code generation' : 'nothing';
    say(`  ${o.backend}: restarted process, warm cache: first ${calls} call(s) ${warm.totalMs.toFixed(0)} ms (${warm.cache.hits} hits, skipped ${skipped})`);
    return { status: 'ok', reason: null, calls, cold, warm, savedMs: round(cold.totalMs - warm.totalMs), hit, skipped };
  } catch (e) {
    say(`  ${o.backend}: cache check failed: ${(e as Error).message}`);
    return { ...skippedCheck(`a child process failed: ${(e as Error).message}`, calls), status: 'failed' };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
