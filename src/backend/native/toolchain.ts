// The C toolchain of the native backend: finding a compiler, compiling one translation unit
// to a shared library (cached on disk), and loading it through koffi.
//
//   KILN_CC        compiler command (default: the first of cc, gcc, clang on PATH); may carry
//                  arguments, e.g. "ccache gcc"
//   KILN_CFLAGS    compile flags (default: -O3 -march=native -fno-math-errno -fno-trapping-math:
//                  IEEE-exact, so NaN, Inf and signed zeros behave as in eager; -ffast-math
//                  breaks them); -fPIC, and -fopenmp where the compiler accepts it, are always added
//   KILN_CACHE_DIR cache folder (default: $XDG_CACHE_HOME/kiln, else ~/.cache/kiln); the
//                  libraries live in its native/ folder, named by a hash of the source, the
//                  flags, the compiler's version line and the CPU model
//
// A library is code: each one is sealed when it is built (<hash>.mac beside it: an HMAC under
// this user's secret of its name and its bytes' sha256, src/trust/secret.ts) and
// verified before it is loaded, once per process. A library that does not verify (edited,
// truncated, swapped for another entry's, or not made by this user's kiln) is rejected
// (stats().cache.untrusted, KILN_LOGS=cache), removed and built again. A native/ folder that
// another user can write, or that cannot be written, is not used: libraries are then built in
// a private folder of this process (warned once).
//
// Compiling and linking are two commands: linking with -ffast-math would add GCC's
// crtfastmath.o, whose constructor turns on flush-to-zero for the whole Node process.
// Libraries are linked with -z nodelete so that libgomp's threads never outlive their code.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, cpus, homedir, platform, tmpdir } from 'node:os';
import { basename, delimiter, dirname, isAbsolute, join } from 'node:path';
import { log as logChannel, warnOnce } from '../../core/logs.js';
import { counters as compilerCounters } from '../../core/stats.js';
import { untrustedFolder } from '../../trust/provenance.js';
import { readRegularFile } from '../../trust/safe-fs.js';
import { mac, macMatches } from '../../trust/secret.js';
import { NativeCompileError, NativeUnavailableError } from './errors.js';

/** Bumped when the code generation changes in a way the source text does not show. */
const FORMAT = 'kiln-native-1';

export interface Compiler {
  /** the command and its leading arguments */
  readonly cmd: readonly string[];
  /** first line of `cc --version` */
  readonly version: string;
}

/** Counters of the native toolchain (tests and kiln.explain read them). */
export const nativeCounters = {
  /** translation units compiled by the C compiler */
  compiles: 0,
  /** translation units found in the disk cache */
  diskHits: 0,
  /** libraries loaded (each once per process) */
  loads: 0,
  /** milliseconds spent in the C compiler */
  compileMs: 0,
  /** compiles that had to drop -fopenmp */
  noOpenmp: 0,
};

const found = new Map<string, Compiler | string>();

/** Whether a path names an executable file. */
function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function which(name: string): string | null {
  if (name.includes('/')) return executable(name) ? name : null;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, name);
    if (executable(p)) return p;
  }
  return null;
}

/** The C compiler to use, or the reason there is none (cached per KILN_CC and PATH). */
export function findCompiler(): Compiler | string {
  const env = process.env.KILN_CC?.trim();
  const key = `${env ?? ''}\0${process.env.PATH ?? ''}`;
  const hit = found.get(key);
  if (hit !== undefined) return hit;
  let result: Compiler | string;
  const candidates = env ? [env.split(/\s+/)] : [['cc'], ['gcc'], ['clang']];
  result = env ? `KILN_CC=${env} is not an executable` : 'no C compiler (cc, gcc or clang) on PATH';
  for (const cand of candidates) {
    const path = which(cand[0]!);
    if (!path) continue;
    const cmd = [path, ...cand.slice(1)];
    const known = knownVersion(cmd);
    if (known !== null) {
      result = { cmd, version: known };
      break;
    }
    const r = spawnSync(cmd[0]!, [...cmd.slice(1), '--version'], { encoding: 'utf8', timeout: 20_000 });
    if (r.status !== 0 || r.error) {
      result = `${cmd.join(' ')} --version failed${r.error ? `: ${r.error.message}` : ''}`;
      continue;
    }
    result = { cmd, version: (r.stdout.split('\n')[0] ?? '').trim() };
    rememberVersion(cmd, result.version);
    break;
  }
  found.set(key, result);
  return result;
}

/**
 * `cc --version` costs a process spawn (30-100 ms on a loaded machine) on every warm start,
 * only to rebuild cache keys. Its first line is remembered in the cache folder, keyed by the
 * resolved binary's path, size, mtime and inode: a reinstalled compiler changes them. Only for
 * a bare compiler: a wrapper ("ccache gcc") would hide a change of the compiler behind it.
 */
const VERSIONS_FILE = 'compilers.json';
function binaryIdentity(cmd: readonly string[]): string | null {
  if (cmd.length !== 1) return null;
  try {
    const real = realpathSync(cmd[0]!);
    const st = statSync(real);
    return `${cmd[0]}|${real}|${st.size}|${st.mtimeMs}|${st.ino}`;
  } catch {
    return null;
  }
}
function readVersions(): Record<string, string> {
  const r = readRegularFile(join(cacheDir(), VERSIONS_FILE), { maxBytes: 1 << 20, owned: true });
  if (!('bytes' in r)) return {};
  try {
    const v = JSON.parse(r.bytes.toString('utf8')) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {};
  } catch {
    return {};
  }
}
function knownVersion(cmd: readonly string[]): string | null {
  const id = binaryIdentity(cmd);
  const v = id === null ? undefined : readVersions()[id];
  return typeof v === 'string' && v.length > 0 ? v : null;
}
function rememberVersion(cmd: readonly string[], version: string): void {
  const id = binaryIdentity(cmd);
  if (id === null || !version) return;
  try {
    mkdirSync(cacheDir(), { recursive: true });
    const tmp = join(cacheDir(), `${VERSIONS_FILE}.${process.pid}.${Math.random().toString(36).slice(2)}`);
    writeFileSync(tmp, JSON.stringify({ ...readVersions(), [id]: version }));
    renameSync(tmp, join(cacheDir(), VERSIONS_FILE)); // atomic: concurrent writers never leave half a file
  } catch {
    // best effort: the next start spawns the compiler again
  }
}

let cpuModelMemo: string | undefined;
/** The CPU model (part of every library's key); os.cpus() reads /proc per core, ~10 ms, so once. */
export function cpuModel(): string {
  return (cpuModelMemo ??= cpus()[0]?.model ?? '');
}

/** Compile flags (without -fopenmp). */
export function compileFlags(): string[] {
  const env = process.env.KILN_CFLAGS?.trim();
  const base = env ? env.split(/\s+/) : ['-O3', '-march=native', '-fno-math-errno', '-fno-trapping-math'];
  return [...base, '-fPIC'];
}

/** The native/ folder of the cache, or this process's private folder when that one cannot be trusted or written. */
export function cacheDir(): string {
  const env = process.env;
  const root = env.KILN_CACHE_DIR || (env.XDG_CACHE_HOME ? join(env.XDG_CACHE_HOME, 'kiln') : join(homedir(), '.cache', 'kiln'));
  const dir = join(isAbsolute(root) ? root : join(process.cwd(), root), 'native');
  let use = libDirs.get(dir);
  if (use === undefined) libDirs.set(dir, (use = usableLibDir(dir)));
  return use;
}

const libDirs = new Map<string, string>();
let privateDir: string | null = null;

function usableLibDir(dir: string): string {
  let why = untrustedFolder(dir);
  if (!why) {
    // writable, or creatable (the nearest folder that exists is writable): created when a library is built
    let probe = dir;
    while (!existsSync(probe) && dirname(probe) !== probe) probe = dirname(probe);
    try {
      accessSync(probe, constants.W_OK);
      return dir;
    } catch (e) {
      why = `it cannot be written (${(e as Error).message})`;
    }
  }
  if (!privateDir) {
    privateDir = mkdtempSync(join(tmpdir(), 'kiln-native-'));
    const made = privateDir;
    process.on('exit', () => rmSync(made, { recursive: true, force: true }));
  }
  warnOnce(`native-dir ${dir}`, `the native backend does not use the library cache ${dir}: ${why}. This process builds its libraries in ${privateDir} (compiled again in every process): fix the folder's permissions (chmod go-w) or set KILN_CACHE_DIR to a folder of your own.`);
  return privateDir;
}

// ---------------------------------------------------------------- sealed libraries

const LIB_DOMAIN = 'kiln-native-lib';
/** the names of libraries kiln builds (and accepts from artifacts and bundles) */
export const LIBRARY_NAME = /^[0-9a-f]{40}\.so$/;
const tagPath = (lib: string) => lib.replace(/\.so$/, '.mac');
const libTag = (lib: string, bytes: Uint8Array) => mac(LIB_DOMAIN, `${basename(lib)}\0${createHash('sha256').update(bytes).digest('hex')}`);

/** Writes the seal of a library (its bytes as they will be loaded) beside it: temporary file + rename. */
export function sealLibrary(lib: string, bytes: Uint8Array): void {
  const tmp = `${tagPath(lib)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(tmp, libTag(lib, bytes), { mode: 0o600 });
  renameSync(tmp, tagPath(lib));
}

/** Why the library at `lib` must not be loaded (not sealed by this user's kiln, altered, not a regular file), or null. */
export function libraryDistrust(lib: string): string | null {
  const r = readRegularFile(lib, { owned: true });
  if (!('bytes' in r)) return r.error;
  const tag = readRegularFile(tagPath(lib), { maxBytes: 256, owned: true });
  if (!('bytes' in tag)) return `its seal ${basename(tagPath(lib))}: ${tag.error}`;
  const text = `${basename(lib)}\0${createHash('sha256').update(r.bytes).digest('hex')}`;
  return macMatches(LIB_DOMAIN, text, tag.bytes.toString('latin1').trim()) ? null : 'its seal does not match its bytes (altered, swapped for another library, or not built by this user\'s kiln)';
}

/** Removes a library and its seal. */
function removeLibrary(lib: string): void {
  rmSync(lib, { force: true });
  rmSync(tagPath(lib), { force: true });
}

/** Compilers found to reject -fopenmp (by version line). */
const noOpenmp = new Set<string>();

function run(cmd: readonly string[], args: readonly string[]): { ok: boolean; command: string; stderr: string } {
  const r = spawnSync(cmd[0]!, [...cmd.slice(1), ...args], { encoding: 'utf8', timeout: 300_000 });
  const command = [...cmd, ...args].map(quote).join(' ');
  return { ok: r.status === 0 && !r.error, command, stderr: `${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}` };
}

export interface Built {
  readonly path: string;
  /** true: found in the disk cache */
  readonly cached: boolean;
  readonly openmp: boolean;
}

/** One translation unit to build: its source, `light` (small kernels: -O1), libraries to link. */
export interface Unit {
  readonly source: string;
  readonly light?: boolean;
  readonly libs?: readonly string[];
}

/** Flags of a unit: light units (only small kernels) trade -O2/-O3 for -O1, 3-4x faster to compile. */
function unitFlags(u: Unit): string[] {
  const flags = compileFlags();
  return u.light && flags.some((f) => /^-O([2-9]|fast)$/.test(f)) ? [...flags, '-O1'] : flags;
}

interface Planned {
  readonly unit: Unit;
  readonly flags: string[];
  readonly hash: string;
  readonly lib: string;
}

function plan(u: Unit, cc: Compiler): Planned {
  const flags = unitFlags(u);
  const wantOmp = !noOpenmp.has(cc.version);
  const hash = createHash('sha256').update([FORMAT, u.source, cc.cmd.join(' '), flags.join(' '), wantOmp ? 'omp' : 'no-omp', cc.version, cpuModel(), platform(), ...(u.libs ?? [])].join('\0')).digest('hex').slice(0, 40);
  return { unit: u, flags, hash, lib: join(cacheDir(), `${hash}.so`) };
}

/** Creates the cache folder; a folder that cannot be written makes the backend unavailable. */
function ensureCacheDir(): void {
  const dir = cacheDir();
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
  } catch (e) {
    throw new NativeUnavailableError(`cannot write the cache folder ${dir} (${(e as Error).message}); set KILN_CACHE_DIR to a writable folder`);
  }
}

const linkFlags = (omp: boolean) => ['-shared', ...(omp ? ['-fopenmp'] : []), ...(platform() === 'darwin' ? [] : ['-Wl,-z,nodelete'])];

function tempBase(p: Planned): string {
  return join(cacheDir(), `${p.hash}.${process.pid}.${Math.random().toString(36).slice(2)}`);
}

/**
 * Moves a built library (and its source, for reading) to its cache name, sealed. The seal is
 * written before the rename (a reader never finds a library without one) and again after it
 * (two processes building one unit at once: the last library renamed gets its own seal).
 */
function publish(p: Planned, tmp: string): void {
  const bytes = readFileSync(`${tmp}.so`);
  sealLibrary(p.lib, bytes);
  renameSync(`${tmp}.so`, p.lib);
  sealLibrary(p.lib, bytes);
  try {
    writeFileSync(`${tmp}.keep.c`, p.unit.source);
    renameSync(`${tmp}.keep.c`, join(cacheDir(), `${p.hash}.c`));
  } catch {
    // optional
  }
  nativeCounters.compiles++;
}

/** Compiles one unit on this thread, dropping -fopenmp if the compiler rejects it. */
function compileOne(p: Planned, cc: Compiler, log: (msg: string) => void): Built {
  ensureCacheDir();
  const tmp = tempBase(p);
  const src = `${tmp}.c`, obj = `${tmp}.o`, out = `${tmp}.so`;
  writeFileSync(src, p.unit.source);
  try {
    let omp = !noOpenmp.has(cc.version);
    let c = run(cc.cmd, [...p.flags, ...(omp ? ['-fopenmp'] : []), '-c', src, '-o', obj]);
    if (!c.ok && omp) {
      const plain = run(cc.cmd, [...p.flags, '-c', src, '-o', obj]);
      if (plain.ok) {
        omp = false;
        noOpenmp.add(cc.version);
        nativeCounters.noOpenmp++;
        log(`${cc.cmd.join(' ')} rejected -fopenmp; native kernels run on one thread (${c.stderr.trim().split('\n')[0] ?? ''})`);
      }
      c = plain;
    }
    if (!c.ok) throw new NativeCompileError(c.command, c.stderr);
    const l = run(cc.cmd, [...linkFlags(omp), '-o', out, obj, ...(p.unit.libs ?? []), '-lm']);
    if (!l.ok) throw new NativeCompileError(l.command, l.stderr);
    publish(p, tmp);
    return { path: p.lib, cached: false, openmp: omp };
  } finally {
    for (const f of [src, obj, out]) rmSync(f, { force: true });
  }
}

const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);

/**
 * The shared libraries of some translation units: from the disk cache, or compiled there
 * (each written under a temporary name, then renamed, so concurrent builds never see half a
 * file). Several units compile in parallel (one shell running a job per core at a time); a
 * unit that fails there is compiled again alone, for the exact error or the -fopenmp fallback.
 */
export function buildLibraries(units: readonly Unit[], cc: Compiler, log: (msg: string) => void): Built[] {
  const planned = units.map((u) => plan(u, cc));
  const out: (Built | null)[] = planned.map((p) => {
    if (!existsSync(p.lib)) return null;
    nativeCounters.diskHits++;
    return { path: p.lib, cached: true, openmp: !noOpenmp.has(cc.version) };
  });
  const todo = planned.flatMap((p, i) => (out[i] ? [] : [i]));
  const t0 = performance.now();
  try {
    if (todo.length > 1 && !noOpenmp.has(cc.version)) {
      ensureCacheDir();
      const jobs = todo.map((i) => ({ i, p: planned[i]!, tmp: tempBase(planned[i]!) }));
      for (const j of jobs) writeFileSync(`${j.tmp}.c`, j.p.unit.source);
      const lines = jobs.map((j) => {
        const c = [...cc.cmd, ...j.p.flags, '-fopenmp', '-c', `${j.tmp}.c`, '-o', `${j.tmp}.o`].map(quote).join(' ');
        const l = [...cc.cmd, ...linkFlags(true), '-o', `${j.tmp}.so`, `${j.tmp}.o`, ...(j.p.unit.libs ?? []), '-lm'].map(quote).join(' ');
        return `( ${c} 2>/dev/null && ${l} 2>/dev/null ) &`;
      });
      const par = Math.max(1, availableParallelism());
      const script: string[] = [];
      for (let k = 0; k < lines.length; k += par) script.push(...lines.slice(k, k + par), 'wait');
      spawnSync('sh', ['-c', script.join('\n')], { stdio: 'ignore', timeout: 600_000 });
      for (const j of jobs) {
        if (existsSync(`${j.tmp}.so`)) {
          publish(j.p, j.tmp);
          out[j.i] = { path: j.p.lib, cached: false, openmp: true };
        }
        for (const ext of ['c', 'o', 'so']) rmSync(`${j.tmp}.${ext}`, { force: true });
      }
    }
    // what is left (one unit, or failures of the parallel run): one by one, with the exact error
    return out.map((b, i) => b ?? compileOne(planned[i]!, cc, log));
  } finally {
    nativeCounters.compileMs += performance.now() - t0;
  }
}

/** The shared library of one translation unit (see buildLibraries). */
export function buildLibrary(source: string, cc: Compiler, log: (msg: string) => void, libs: readonly string[] = []): Built {
  return buildLibraries([{ source, libs }], cc, log)[0]!;
}

// ---------------------------------------------------------------- koffi

export interface KoffiLib {
  func(name: string, result: string, params: string[]): (...args: unknown[]) => unknown;
}
interface Koffi {
  load(path: string): KoffiLib;
}

let koffi: Koffi | string | null = null;

/** koffi, loaded on first use (a Node-only native module), or the reason it cannot be. */
export function getKoffi(): Koffi | string {
  if (koffi === null) {
    try {
      koffi = createRequire(import.meta.url)('koffi') as Koffi;
    } catch (e) {
      // an optional dependency of kilnjs: npm leaves it out with --omit=optional or where it has no binary
      koffi = `the koffi package cannot be loaded (${(e as Error).message.split('\n')[0]}): it is kilnjs's optional dependency for the native backend; add it with \`npm install koffi\``;
    }
  }
  return koffi;
}

const libs = new Map<string, KoffiLib>();

/** A library that does not verify (see libraryDistrust): never loaded. */
class UntrustedLibraryError extends Error {}

/** Loads a library once per process, after verifying its seal (once per process too). */
export function loadLibrary(path: string): KoffiLib {
  let lib = libs.get(path);
  if (lib) return lib;
  const k = getKoffi();
  if (typeof k === 'string') throw new NativeUnavailableError(k);
  const t0 = performance.now();
  const why = libraryDistrust(path);
  compilerCounters.cache.verifyMs += performance.now() - t0;
  if (why) {
    compilerCounters.cache.untrusted++;
    logChannel('cache', `rejected native library ${path}: ${why}; it is not loaded`);
    throw new UntrustedLibraryError(`${path}: ${why}`);
  }
  lib = k.load(path);
  nativeCounters.loads++;
  libs.set(path, lib);
  return lib;
}

/**
 * Builds (or finds) and loads units. A cached library that does not load (a truncated file,
 * say) is removed and built again once.
 */
export function buildAndLoad(units: readonly Unit[], cc: Compiler, log: (msg: string) => void): { built: Built[]; libs: KoffiLib[] } {
  const built = buildLibraries(units, cc, log);
  const loaded = built.map((b, i) => {
    try {
      return loadLibrary(b.path);
    } catch (e) {
      if (!b.cached || e instanceof NativeUnavailableError) throw e;
      log(`removing a cached library that does not load (${(e as Error).message.split('\n')[0]}): ${b.path}`);
      removeLibrary(b.path);
      built[i] = buildLibraries([units[i]!], cc, log)[0]!;
      return loadLibrary(built[i]!.path);
    }
  });
  return { built, libs: loaded };
}

/** Forgets what was found (compiler) so the next use looks again (tests change KILN_CC). */
export function resetToolchain(): void {
  found.clear();
}

export { NativeCompileError, NativeUnavailableError };
