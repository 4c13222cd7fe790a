// Where this kiln runs (Node): version, platform, a fingerprint of its sources (so an edited
// compiler never reads entries an older one wrote), and the native toolchain, described for
// keys and for errors ("kiln 0.1.0 on linux-x64 (native: gcc 12.2.0, avx2 avx512f)").

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { arch, cpus, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileFlags, findCompiler } from '../../backend/native/toolchain.js';
import { sha256 } from './container.js';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

let version: string | null = null;

/** kiln's version (package.json). */
export function kilnVersion(): string {
  if (version === null) {
    try {
      version = (JSON.parse(readFileSync(join(SRC, '..', 'package.json'), 'utf8')) as { version?: string }).version ?? '0.0.0';
    } catch {
      version = '0.0.0';
    }
  }
  return version;
}

export function platformTag(): string {
  return `${platform()}-${arch()}`;
}

let sources: string | null = null;

/** sha256 of kiln's source files (names and contents), computed once per process. */
export function sourceFingerprint(): string {
  if (sources !== null) return sources;
  // KILN_CACHE_SOURCES=off: version only (tests in a source tree that is being edited meanwhile)
  if (process.env.KILN_CACHE_SOURCES === 'off') return (sources = 'off');
  const parts: string[] = [];
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(dir, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(ts|js|c|h)$/.test(n)) parts.push(p.slice(SRC.length), readFileSync(p, 'utf8'));
    }
  };
  walk(SRC);
  return (sources = sha256(parts).slice(0, 16));
}

const FEATURES = ['sse4_2', 'avx', 'avx2', 'fma', 'avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni', 'amx_tile', 'asimd', 'sve'];

let features: string | null = null;

/** CPU features that generated code may use (-march=native), as listed by the OS. */
export function cpuFeatures(): string {
  if (features !== null) return features;
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const line = /^(?:flags|Features)\s*:(.*)$/m.exec(info)?.[1] ?? '';
    const have = new Set(line.trim().split(/\s+/));
    features = FEATURES.filter((f) => have.has(f)).join(' ');
  } catch {
    features = cpus()[0]?.model ?? '';
  }
  return features;
}

/** The native toolchain in one line, or null when there is no C compiler. */
export function nativeDescription(): string | null {
  const cc = findCompiler();
  if (typeof cc === 'string') return null;
  return `${cc.version}; ${compileFlags().join(' ')}; ${cpuFeatures() || cpus()[0]?.model || 'unknown cpu'}`;
}

/** What an artifact records about the machine that built it. */
export interface BuildEnvironment {
  readonly kiln: string;
  readonly platform: string;
  readonly node: string;
  /** per native backend: compiler, flags, CPU features */
  readonly native: string | null;
}

export function buildEnvironment(withNative: boolean): BuildEnvironment {
  return { kiln: kilnVersion(), platform: platformTag(), node: process.versions.node, native: withNative ? nativeDescription() : null };
}

export function describeEnvironment(e: BuildEnvironment): string {
  return `kiln ${e.kiln} on ${e.platform}${e.native ? ` (native: ${e.native})` : ''}`;
}
