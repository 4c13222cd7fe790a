// The whole project (src, test, bench, examples, scripts) type-checks under tsconfig.json's strict
// settings, noUnusedLocals included: an unused import, local or private function is an error, so
// dead code cannot stay behind a refactor. (tsx runs the sources without checking their types.)

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('tsc --noEmit over the project reports no error', () => {
  const tsc = join(ROOT, 'node_modules', '.bin', process.platform === 'win32' ? 'tsc.cmd' : 'tsc');
  const r = spawnSync(tsc, ['--noEmit', '-p', join(ROOT, 'tsconfig.json')], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.error, undefined, `tsc did not run: ${String(r.error)}`);
  assert.equal(r.status, 0, `tsc reported errors:\n${r.stdout}${r.stderr}`);
});
