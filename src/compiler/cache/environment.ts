// Where this kiln runs (Node): version, platform, a fingerprint of its sources (so an edited
// compiler never reads entries an older one wrote), and the native toolchain (the registered
// native backend's CodeFiles), described for keys and for errors
// ("kiln 0.1.0 on linux-x64 (native: gcc 12.2.0, avx2 avx512f)").

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kernelBackendCodeFiles } from '../../backend/registry.js';
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

/** What an artifact records about the machine that built it. */
export interface BuildEnvironment {
  readonly kiln: string;
  readonly platform: string;
  readonly node: string;
  /** per native backend: compiler, flags, CPU features */
  readonly native: string | null;
}

export function buildEnvironment(withNative: boolean): BuildEnvironment {
  return { kiln: kilnVersion(), platform: platformTag(), node: process.versions.node, native: withNative ? (kernelBackendCodeFiles('native')?.toolchain() ?? null) : null };
}

export function describeEnvironment(e: BuildEnvironment): string {
  return `kiln ${e.kiln} on ${e.platform}${e.native ? ` (native: ${e.native})` : ''}`;
}
