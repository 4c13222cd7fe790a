// Fresh `node --import tsx` children of the compile-cache tests (test/fixtures/cache-child.ts),
// each over a cache folder and, for the trust tests, a "machine" (XDG_CONFIG_HOME: where the
// per-user secret lives). Results and kiln.stats() come back as the child's last JSON line.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type * as kiln from 'kilnjs';

export const CHILD = join(import.meta.dirname, '..', 'fixtures', 'cache-child.ts');
export const BIN = join(import.meta.dirname, '..', '..', 'src', 'cli.ts');

export interface ChildResult { out: number[][]; eager: number[][]; stats: kiln.CompilerStats; info: unknown; logs: string }

const childArgs = (opts: object): string[] => ['--import', 'tsx', CHILD, JSON.stringify(opts)];

/** Runs the fixture over cache folder `dir`; it must exit 0 (within `timeout` ms). */
export function runChild(dir: string, opts: object, env: Record<string, string> = {}, timeout = 240_000): ChildResult {
  const r = spawnSync(process.execPath, childArgs(opts), { encoding: 'utf8', env: { ...process.env, KILN_CACHE_DIR: dir, KILN_LOGS: 'cache', ...env }, timeout });
  assert.equal(r.status, 0, `child failed (${r.signal ?? r.status}):\n${r.stderr}`);
  return { ...(JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Omit<ChildResult, 'logs'>), logs: r.stderr };
}

export function runChildAsync(dir: string, opts: object): Promise<Omit<ChildResult, 'logs'>> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, childArgs(opts), { env: { ...process.env, KILN_CACHE_DIR: dir } });
    let out = '', err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!) as ChildResult) : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

/** Runs `kilnjs ...` (src/cli.ts); returns its exit status and output. */
export function runCli(args: readonly string[], env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The entry files of a cache folder. */
export const entries = (dir: string): string[] => readdirSync(join(dir, 'compile')).filter((n) => n.endsWith('.kc')).map((n) => join(dir, 'compile', n));

/** Compiled results equal the eager ones (float32 kernels: relative 1e-5). */
export function assertMatchesEager(r: Pick<ChildResult, 'out' | 'eager'>, what: string): void {
  assert.equal(r.out.length, r.eager.length, what);
  r.out.forEach((row, i) => assert.equal(row.length, r.eager[i]!.length, `${what}: result ${i} has ${row.length} values, eager ${r.eager[i]!.length}`));
  r.out.forEach((row, i) => row.forEach((v, j) => {
    const e = r.eager[i]![j]!;
    assert.ok(Math.abs(v - e) <= 1e-5 * Math.max(1, Math.abs(e)), `${what}: [${i}][${j}] ${v} vs eager ${e}`);
  }));
}

/** The compiled path ran: graphs traced or warm-started, no fusion or eager fallbacks. */
export function assertCompiled(r: Pick<ChildResult, 'stats'>, what: string): void {
  assert.equal(r.stats.fusionFallbacks, 0, `${what}: fusion fallbacks`);
  assert.equal(r.stats.eagerFallbacks, 0, `${what}: eager fallbacks`);
  assert.ok(r.stats.graphsCompiled + r.stats.cache.traceSkips > 0, `${what}: nothing compiled`);
}
