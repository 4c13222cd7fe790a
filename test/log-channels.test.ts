// KILN_LOGS and kiln.compiler.setLogs reject names that are no log channel (a typo logged
// nothing before), listing the channels.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as kiln from 'kilnjs';

test('setLogs rejects an unknown channel with the list; valid names and all still work', () => {
  assert.throws(() => kiln.compiler.setLogs('graph_break'), (e: unknown) => e instanceof kiln.ArgumentError && /unknown log channel 'graph_break'/.test((e as Error).message) && /graph_breaks, recompiles, guards/.test((e as Error).message));
  assert.throws(() => kiln.compiler.setLogs(['perf', 'speed']), kiln.ArgumentError);
  kiln.compiler.setLogs('perf,recompiles');
  kiln.compiler.setLogs('all');
  kiln.compiler.setLogs([]);
});

test('KILN_LOGS with an unknown channel fails at import with the list', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', "import('kilnjs').then(() => console.log('imported'))"], { env: { ...process.env, KILN_LOGS: 'graphs,perf' }, encoding: 'utf8' });
  assert.notEqual(r.status, 0, r.stdout);
  assert.match(r.stderr, /KILN_LOGS: unknown log channel 'graphs'/);
  assert.match(r.stderr, /graph_breaks, recompiles, guards, graph, output_code, perf, fusion, cache/);
  const ok = spawnSync(process.execPath, ['--import', 'tsx', '-e', "import('kilnjs').then(() => console.log('imported'))"], { env: { ...process.env, KILN_LOGS: 'graph, perf' }, encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
});
