// backend: 'auto' picks the fastest kernel backend that can run here and says why, in the
// compile report (explain), in kiln.stats() and in the logs; without a C compiler it falls back
// openly. An explicitly requested backend never falls back.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import * as kiln from 'kilnjs';
import { nativeUnavailableReason } from 'kilnjs/node';

const SCRIPT = `
import * as kiln from 'kilnjs';
import 'kilnjs/node';
const f = (x) => x.mul(2).add(1).tanh();
const x = kiln.randn([64, 32]);
const ex = kiln.explain(f, { backend: 'auto', print: false })(x);
const compiled = kiln.compile(f, { backend: 'auto' });
const y = compiled(x);
const diff = y.sub(f(x)).abs().max().item();
console.log(JSON.stringify({ backend: ex.backend, text: ex.text, stats: kiln.stats().autoBackend, diff }));
`;

function runChild(env: Record<string, string | undefined>): { backend: { chosen: string; reason: string }; text: string; stats: { chosen: string; reason: string }; diff: number } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], { encoding: 'utf8', env: { ...process.env, ...env }, cwd: process.cwd(), timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

test("backend 'auto' without a C compiler on PATH: not native, and the reason is in explain and stats", () => {
  const emptyBin = mkdtempSync(join(tmpdir(), 'kiln-nocc-'));
  const out = runChild({ PATH: emptyBin, KILN_CC: undefined });
  assert.notEqual(out.backend.chosen, 'native');
  assert.match(out.backend.reason, /native unavailable \(no C compiler/);
  assert.deepEqual(out.stats, { chosen: out.backend.chosen, reason: out.backend.reason });
  assert.match(out.text, /backend: \w+ \(requested auto\): .*native unavailable/);
  assert.ok(out.diff < 1e-5, `compiled differs from eager by ${out.diff}`);
});

test("backend 'auto' with a C compiler chooses native and says why", { skip: nativeUnavailableReason() ?? false }, () => {
  const out = runChild({});
  assert.equal(out.backend.chosen, 'native');
  assert.match(out.backend.reason, /^native: /);
  assert.deepEqual(out.stats, { chosen: 'native', reason: out.backend.reason });
  assert.ok(out.diff < 1e-5, `compiled differs from eager by ${out.diff}`);
});

test('an unknown backend name is a typed error naming the registered ones', () => {
  kiln.compiler.reset();
  const f = kiln.compile((x: kiln.Tensor) => x.add(1), { backend: 'cuda' });
  assert.throws(() => f(kiln.ones([2])), (e: Error) => e instanceof kiln.ArgumentError && /backend 'cuda' is not registered/.test(e.message) && /auto, js, eager/.test(e.message));
});
