// kiln as npm ships it, shared by test/package.test.ts (in `npm test`) and
// scripts/package-check.ts (CI, after `npm test`): `npm pack` (whose prepack script builds
// dist/), what the tarball must and must not hold, and the consumer files of test/package/.

import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The consumer projects' files (plain JavaScript and a strict TypeScript consumer). */
export const CONSUMER_DIR = join(ROOT, 'test', 'package');
/** The packed size the package must stay under (bytes). */
export const MAX_PACKED_BYTES = 1_000_000;

export interface Packed {
  tarball: string;
  /** bytes of the .tgz */
  size: number;
  unpackedSize: number;
  /** paths inside the package */
  files: string[];
}

interface PackageJson {
  name: string;
  dependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
  exports: Record<string, string | Record<string, string>>;
  bin: Record<string, string>;
  sideEffects: string[];
}

export function packageJson(): PackageJson {
  return JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
}

/**
 * An environment for the processes that play a user: none of the repository's TypeScript
 * loader (NODE_OPTIONS, tsx's variables), a compile cache of their own.
 */
export function consumerEnv(cacheDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (k !== 'NODE_OPTIONS' && !k.startsWith('TSX_') && !k.startsWith('npm_')) env[k] = v;
  return { ...env, KILN_CACHE_DIR: cacheDir };
}

export function run(cmd: string, args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, encoding: 'utf8', timeout: opts.timeoutMs ?? 300_000, maxBuffer: 64 << 20 });
}

/** The last lines of a failed command's output, for an error message. */
export function tail(r: SpawnSyncReturns<string>, lines = 15): string {
  return `${r.error ? `${r.error.message}\n` : ''}${`${r.stdout ?? ''}\n${r.stderr ?? ''}`.trim().split('\n').slice(-lines).join('\n')}`;
}

/** `npm pack` into `dest`: runs the prepack script (the build), then packs what `files` lists. */
export function pack(dest: string): Packed {
  const r = run('npm', ['pack', '--json', '--pack-destination', dest]);
  if (r.status !== 0) throw new Error(`npm pack failed (exit ${r.status}):\n${tail(r, 60)}`);
  // the prepack script's output comes first on stdout; npm's JSON is the rest
  const json = r.stdout.slice(r.stdout.search(/^\[/m));
  const [info] = JSON.parse(json) as { filename: string; size: number; unpackedSize: number; files: { path: string }[] }[];
  if (!info) throw new Error(`npm pack printed no package:\n${r.stdout}`);
  return { tarball: join(dest, info.filename), size: info.size, unpackedSize: info.unpackedSize, files: info.files.map((f) => f.path).sort() };
}

/** Every file an exports condition or the bin points at (without './'). */
export function entryTargets(pkg: PackageJson = packageJson()): string[] {
  const targets = Object.values(pkg.exports).flatMap((e) => (typeof e === 'string' ? [e] : Object.values(e)));
  return [...new Set([...targets, ...Object.values(pkg.bin)].map((t) => posix.normalize(t)))].sort();
}

/** Files a built dist/ imports for their side effects only (`import './x.js';`), as package paths. */
export function bareImports(dist: string): string[] {
  const found = new Set<string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js')) {
        for (const m of readFileSync(p, 'utf8').matchAll(/^import '(\.[^']+)';$/gm)) {
          found.add(posix.join('dist', posix.relative(dist, join(dirname(p), m[1]!)).split('\\').join('/')));
        }
      }
    }
  };
  walk(dist);
  return [...found].sort();
}

/** Whether `file` (a package path) matches one of package.json's sideEffects patterns ('*' within a folder). */
export function hasSideEffects(file: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => new RegExp(`^${posix.normalize(p).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`).test(file));
}

/** What is wrong with a packed tarball, given the dist/ it was built from (empty when nothing). */
export function packProblems(p: Packed, dist: string, pkg: PackageJson = packageJson()): string[] {
  const problems: string[] = [];
  if (p.size >= MAX_PACKED_BYTES) problems.push(`packed ${p.size} bytes, over ${MAX_PACKED_BYTES}`);
  const allowed = /^(dist\/.+\.(js|d\.ts|cjs|txt)|docs\/advisor-report\.schema\.json|package\.json|README\.md|LICENSE)$/;
  const stray = p.files.filter((f) => !allowed.test(f));
  if (stray.length) problems.push(`files that users do not need: ${stray.slice(0, 10).join(', ')}${stray.length > 10 ? ` (+${stray.length - 10})` : ''}`);
  const missing = entryTargets(pkg).filter((t) => !p.files.includes(t));
  if (missing.length) problems.push(`exports/bin targets not in the package: ${missing.join(', ')}`);
  const unmarked = bareImports(dist).filter((f) => !hasSideEffects(f, pkg.sideEffects));
  if (unmarked.length) problems.push(`imported for their side effects but not listed in "sideEffects" (bundlers would drop them): ${unmarked.join(', ')}`);
  const undeclared = p.files.filter((f) => f.startsWith('dist/') && f.endsWith('.js') && !p.files.includes(f.replace(/\.js$/, '.d.ts')));
  if (undeclared.length) problems.push(`modules without declarations: ${undeclared.slice(0, 5).join(', ')}`);
  return problems;
}
