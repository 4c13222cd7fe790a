// A cache problem costs at most the cache (issue 18): an entry that passes its checksum and seal
// but makes no sense is rejected by the schema and compiled again; a cache folder that cannot be
// used, or an entry that is not a file, is warned about and compiled around, without a fusion
// fallback and without hanging (the size cap for a process that writes and exits at once is in
// cache.test.ts).
// Each case runs in fresh children (test/fixtures/cache-child.ts) and checks that results equal
// eager and that the compiled path ran.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kilnNode from 'kilnjs/node';
import { assertCompiled, assertMatchesEager, entries, runChild, runCli } from './helpers/cache-children.js';
import { tamper } from './helpers/tamper.js';
import { macSealer } from '../src/compiler/cache/seal.js';
import { SCHEMA_VERSION } from '../src/compiler/cache/validate.js';

const ROOT = mkdtempSync(join(tmpdir(), 'kiln-cache-faults-'));
process.env.XDG_CONFIG_HOME = join(ROOT, 'config'); // this process seals entries as the children do
process.env.KILN_CACHE_SOURCES = 'off';
process.on('exit', () => rmSync(ROOT, { recursive: true, force: true }));
const fresh = (name: string) => join(ROOT, name);
const nativeWhy = kilnNode.nativeUnavailableReason();

interface StoredBuffer { kind: string; size: number }
interface StoredProgram { lowered: { steps: unknown[]; buffers: StoredBuffer[] } }

const damages: [string, (p: StoredProgram) => void][] = [
  ['no steps', (p) => (p.lowered.steps = [])],
  ['shrunk buffers', (p) => p.lowered.buffers.forEach((b) => b.kind !== 'input' && b.size > 1 && (b.size = b.size >> 1))],
];

for (const [what, damage] of damages) {
  test(`a sealed program entry with ${what} is rejected by the schema (stats().cache.invalid), compiled again, and equals eager`, () => {
    for (const mode of ['module', 'fn']) {
      const dir = fresh(`${what.replace(' ', '-')}-${mode}`);
      const opts = { backend: 'js', mode, batch: [6] };
      runChild(dir, opts);
      const programs = entries(dir).filter((p) => /program-/.test(p));
      assert.ok(programs.length > 0);
      // sealed (as only this user's kiln can) but never checked: kiln marks an entry checked only
      // after its stored form passed the schema, so a nonsensical one has no mark
      for (const p of programs) tamper(p, (c) => {
        assert.equal(c.header.checked, SCHEMA_VERSION, 'kiln checks what it stores');
        delete c.header.checked;
        damage(c.meta as StoredProgram);
      }, macSealer);
      const r = runChild(dir, opts);
      assertMatchesEager(r, `${what}, ${mode}`);
      assertCompiled(r, `${what}, ${mode}`);
      assert.equal(r.stats.cache.invalid, programs.length, `${mode}: each entry rejected\n${r.logs}`);
      assert.equal(r.stats.cache.hits, 0, mode);
      assert.match(r.logs, /program entry does not follow the schema/, mode);
      assert.equal(runChild(dir, opts).stats.cache.hits, 1, `${mode}: the rewritten entry hits`);
    }
  });
}

test('a nonsensical entry in a signed bundle keeps its maker\'s schema mark only until it is loaded: on the loading machine it is checked when read, rejected, compiled again, equals eager', () => {
  const src = fresh('bundle-src'), dst = fresh('bundle-dst');
  const machineB = { XDG_CONFIG_HOME: join(ROOT, 'machine-b') };
  const opts = { backend: 'js', mode: 'module', batch: [6] };
  runChild(src, opts);
  const programs = entries(src).filter((p) => /program-/.test(p));
  assert.ok(programs.length > 0);
  // its maker's kiln (this user: the seal verifies, so cache save takes it) marked it checked
  for (const p of programs) tamper(p, (c) => {
    assert.equal(c.header.checked, SCHEMA_VERSION);
    (c.meta as StoredProgram).lowered.steps = [];
  }, macSealer);
  const prefix = join(ROOT, 'bundle-signer'), file = join(ROOT, 'signed.kcb');
  assert.equal(runCli(['cache', 'keygen', prefix], {}).status, 0);
  let r = runCli(['cache', 'save', file, '--sign', `${prefix}.key`], { KILN_CACHE_DIR: src });
  assert.equal(r.status, 0, r.stderr);
  r = runCli(['cache', 'load', file, '--trust', `${prefix}.pub`], { KILN_CACHE_DIR: dst, ...machineB });
  assert.equal(r.status, 0, r.stderr);
  const moved = runChild(dst, opts, machineB);
  assert.equal(moved.stats.cache.invalid, programs.length, moved.logs);
  assert.match(moved.logs, /program entry does not follow the schema/);
  assertMatchesEager(moved, 'bundle');
  assertCompiled(moved, 'bundle');
});

test('KILN_CACHE_DIR below a regular file: modules and functions compile normally (warned once, no fusion fallback)', () => {
  const file = fresh('a-file');
  writeFileSync(file, 'not a folder');
  const dir = join(file, 'cache');
  const backends = ['js', ...(nativeWhy ? [] : ['native'])];
  for (const backend of backends) {
    for (const mode of ['module', 'fn']) {
      const r = runChild(dir, { backend, mode, batch: [3, 4] });
      assertMatchesEager(r, `${backend} ${mode}`);
      assertCompiled(r, `${backend} ${mode}`);
      const warnings = r.logs.split('\n').filter((l) => l.startsWith('[kiln] the compile cache at'));
      assert.equal(warnings.length, 1, `${backend} ${mode}: warned once\n${r.logs}`);
      assert.match(warnings[0]!, /is not used: .*a-file is not a folder/);
      if (backend === 'native') assert.match(r.logs, /\[kiln\] the native backend does not use the library cache .*: .*a-file is not a folder.*This process builds its libraries in/);
    }
  }
});

test('a FIFO in place of an entry does not hang the process: it is removed and the entry compiled again', () => {
  const dir = fresh('fifo');
  const opts = { backend: 'js', mode: 'module', batch: [5] };
  runChild(dir, opts);
  const victims = entries(dir);
  for (const p of victims) {
    rmSync(p);
    assert.equal(spawnSync('mkfifo', [p]).status, 0);
  }
  const r = runChild(dir, opts, {}, 60_000);
  assert.equal(r.stats.cache.untrusted, victims.length, r.logs);
  assert.match(r.logs, /rejected .*: not a regular file/);
  assertMatchesEager(r, 'fifo');
  assertCompiled(r, 'fifo');
  for (const p of victims) assert.ok(statSync(p).isFile(), `${p} is an entry again`);
});
