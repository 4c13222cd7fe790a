// examples/resume.ts: a compiled training run (DataLoader, SequentialLR warm-up + cosine,
// clipGradNorm_, AdamW) stopped by one process and resumed by another from its checkpoint ends
// bit for bit where the uninterrupted run ends: the final checkpoints are the same bytes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import { loadSafetensors } from 'kilnjs/node';
import { trainResumable } from '../examples/resume.js';

const EXAMPLE = join(import.meta.dirname, '..', 'examples', 'resume.ts');
const FILES = ['model.safetensors', 'optimizer.safetensors', 'checkpoint.json'];

function runExample(args: string[], cacheDir: string): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', EXAMPLE, ...args], { encoding: 'utf8', env: { ...process.env, KILN_CACHE_DIR: cacheDir }, timeout: 300_000 });
  assert.equal(r.status, 0, `examples/resume.ts ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

test('stopped at step 23 in one process, resumed in another: the final checkpoint equals the uninterrupted run\'s, byte for byte', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-resume-'));
  try {
    kiln.compiler.reset();
    const full = await trainResumable({ steps: 60, checkpoint: join(dir, 'full'), every: 1000 });
    assert.equal(full.step, 60);
    const s = kiln.stats();
    assert.equal(s.graphBreaks.length, 0);
    assert.equal(s.fusionFallbacks, 0);
    assert.equal(s.eagerFallbacks, 0);
    assert.ok(s.cacheHits >= 55, `the step replayed (${s.cacheHits} of 60)`);
    assert.ok(new Set(full.lrs).size > 40, 'the schedule moved the lr inside the compiled step');

    const first = runExample(['--steps', '60', '--checkpoint', join(dir, 'resumed'), '--stop-after', '23'], join(dir, 'cache'));
    assert.match(first, /step 23 of 60/);
    assert.match(first, /stopped early/);
    const second = runExample(['--steps', '60', '--checkpoint', join(dir, 'resumed'), '--resume'], join(dir, 'cache'));
    assert.match(second, /resumed at step 23/);
    assert.match(second, /step 60 of 60/);
    assert.match(second, /compiler: 1 compiles, 0 recompiles, 0 graph breaks, \d+ replays, 0 eager fallbacks, 0 fusion fallbacks/);
    for (const f of FILES) assert.ok(readFileSync(join(dir, 'full', f)).equals(readFileSync(join(dir, 'resumed', f))), `${f} differs from the uninterrupted run's`);

    // the model file is a plain state dict under torch's keys
    const sd = await loadSafetensors(join(dir, 'resumed', 'model.safetensors'));
    assert.deepEqual(Object.keys(sd).sort(), ['net.0.bias', 'net.0.weight', 'net.3.bias', 'net.3.weight', 'net.5.bias', 'net.5.weight']);
    const json = JSON.parse(readFileSync(join(dir, 'resumed', 'checkpoint.json'), 'utf8'));
    assert.equal(json.extra.step, 60);
    assert.equal(json.optimizer.type, 'AdamW');
    assert.equal(json.scheduler.type, 'SequentialLR');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('eager runs resume bit for bit too, with dropout drawing from the restored generator', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-resume-'));
  try {
    const bits = (m: kiln.nn.Module) => m.parameters().map((p) => Buffer.from((p.dataSync() as Float32Array).buffer).toString('hex'));
    const full = await trainResumable({ steps: 40, compile: false, dropout: 0.2 });
    await trainResumable({ steps: 40, compile: false, dropout: 0.2, checkpoint: join(dir, 'c'), stopAfter: 17 });
    const resumed = await trainResumable({ steps: 40, compile: false, dropout: 0.2, checkpoint: join(dir, 'c'), resume: true });
    assert.deepEqual(resumed.losses, full.losses.slice(17));
    assert.deepEqual(bits(resumed.model), bits(full.model));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('compiled runs with dropout resume bit for bit', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-resume-'));
  try {
    kiln.compiler.reset();
    const full = await trainResumable({ steps: 40, dropout: 0.2 });
    kiln.compiler.reset();
    await trainResumable({ steps: 40, dropout: 0.2, checkpoint: join(dir, 'c'), stopAfter: 17 });
    kiln.compiler.reset();
    const resumed = await trainResumable({ steps: 40, dropout: 0.2, checkpoint: join(dir, 'c'), resume: true });
    assert.deepEqual(resumed.losses, full.losses.slice(17));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
