// The whole project (src, test, bench, examples, scripts) type-checks under tsconfig.json's strict
// settings, noUnusedLocals included: an unused import, local or private function is an error, so
// dead code cannot stay behind a refactor. (tsx runs the sources without checking their types.)
// The benchmarks that import the peers (bench/cpu.ts, eager.ts, serve.ts, bench/peers/) have
// their own project, bench/tsconfig.json, checked where `npm run bench:install` put the peers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(ROOT, 'node_modules', '.bin', process.platform === 'win32' ? 'tsc.cmd' : 'tsc');

function typeCheck(project: string): void {
  const r = spawnSync(TSC, ['--noEmit', '-p', join(ROOT, project)], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.error, undefined, `tsc did not run: ${String(r.error)}`);
  assert.equal(r.status, 0, `tsc -p ${project} reported errors:\n${r.stdout}${r.stderr}`);
}

test('tsc --noEmit over the project reports no error', () => typeCheck('tsconfig.json'));

const peers = existsSync(join(ROOT, 'bench', 'node_modules', '.package-lock.json'));
test('tsc --noEmit over the benchmarks with their peers reports no error', { skip: peers ? false : 'the benchmark peers are not installed (npm run bench:install)' }, () => typeCheck('bench/tsconfig.json'));
