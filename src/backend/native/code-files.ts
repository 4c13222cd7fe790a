// The native backend's code files (backend/registry.ts CodeFiles): its shared libraries in the
// cache folder's native/, as artifacts and cache bundles ship and install them, and the toolchain
// they depend on ("gcc 12.2.0; -O3 -march=native ...; avx2 avx512f").

import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { CodeFiles } from '../registry.js';
import { cacheDir, compileFlags, findCompiler, LIBRARY_NAME, libraryDistrust, sealLibrary } from './toolchain.js';

const FEATURES = ['sse4_2', 'avx', 'avx2', 'fma', 'avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni', 'amx_tile', 'asimd', 'sve'];

let features: string | null = null;

/** CPU features that generated code may use (-march=native), as listed by the OS. */
function cpuFeatures(): string {
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

export const nativeCodeFiles: CodeFiles = {
  folder: 'native',
  dir: cacheDir,
  name: LIBRARY_NAME,
  distrust: libraryDistrust,
  seal: sealLibrary,
  toolchain() {
    const cc = findCompiler();
    if (typeof cc === 'string') return null;
    return `${cc.version}; ${compileFlags().join(' ')}; ${cpuFeatures() || cpus()[0]?.model || 'unknown cpu'}`;
  },
};
