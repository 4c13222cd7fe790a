// A fleet: two `kilnjs serve` processes with separate local caches share compiled programs
// through one Redis (Debian's redis-server on a free loopback port). The second instance's
// warm-up compiles nothing (cache counters from /metrics); Redis down or a foreign key means
// compiling locally, never failing. Entries are authenticated with the fleet's key.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import { fixtureModel, freePort, maxAbsDiff, metric, metrics, MODEL_FILE, postJson, redisUnavailable, reference, rowsOf, spawnServe, startRedis, tempDir, type ServeChild } from './helpers/serve.js';

const IN = 16;
const BUCKETS = '1,4,16';
const why = redisUnavailable();

async function instance(dir: string, name: string, weights: string, args: string[]): Promise<{ child: ServeChild; url: string; startMs: number; warmupMs: number; text: string }> {
  const child = spawnServe([MODEL_FILE, '--weights', weights, '--port', '0', '--buckets', BUCKETS, ...args], { KILN_CACHE_DIR: join(dir, `cache-${name}`) });
  const url = await child.url();
  const ready = await child.waitFor(/^ready in (\d+) ms: warm-up (\d+) ms/);
  return { child, url, startMs: Number(ready[1]), warmupMs: Number(ready[2]), text: await metrics(url) };
}

async function stop(c: ServeChild): Promise<void> {
  c.proc.kill('SIGTERM');
  assert.equal(await c.exited, 0);
}

test('two instances, one Redis: the second warm-up compiles nothing', { skip: why ?? false }, async (t) => {
  const dir = tempDir('fleet');
  const { model, weights } = await fixtureModel(dir, 31);
  const secret = join(dir, 'fleet.key');
  writeFileSync(secret, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  const redis = await startRedis();
  try {
    const fleet = ['--remote-cache', redis.url, '--cache-secret-file', secret];
    const a = await instance(dir, 'a', weights, fleet);
    await stop(a.child);
    assert.ok(metric(a.text, 'kiln_cache_misses_total')! >= 3, 'the first instance compiled its 3 buckets');
    assert.equal(metric(a.text, 'kiln_remote_cache_up'), 1);
    assert.ok(metric(a.text, 'kiln_remote_cache_writes_total')! >= 6, 'and published program + warm entries to Redis');

    const b = await instance(dir, 'b', weights, fleet);
    try {
      t.diagnostic(`serve() to ready: first instance ${a.startMs} ms (warm-up ${a.warmupMs} ms, compiled), second ${b.startMs} ms (warm-up ${b.warmupMs} ms, from Redis)`);
      assert.equal(metric(b.text, 'kiln_cache_misses_total'), 0, 'the second instance compiled nothing');
      assert.equal(metric(b.text, 'kiln_cache_trace_skips_total'), 3, 'every bucket a warm start (tracing skipped)');
      assert.ok(metric(b.text, 'kiln_remote_cache_hits_total')! >= 3, 'found in Redis');
      for (const bucket of BUCKETS.split(',')) assert.notEqual(metric(b.text, `kiln_serve_warmup_entry_seconds{bucket="${bucket}",source="cache (trace skipped)"}`), null, `bucket ${bucket} from the cache`);
      assert.ok(readdirSync(join(dir, 'cache-b', 'compile')).length >= 6, 'the remote entries were copied to the local cache');
      const x = kiln.randn([3, IN]).dataSync() as Float32Array;
      const r = await postJson(b.url, { inputs: { x: rowsOf(x, 3, IN) } });
      assert.equal(r.status, 200);
      assert.ok(maxAbsDiff((r.json.outputs as { output: number[][] }).output.flat(), reference(model, x, 3)) < 1e-4);
    } finally {
      await stop(b.child);
    }

    // another key: the entries do not verify, so they are not loaded (they hold code) and the instance compiles
    const other = join(dir, 'other.key');
    writeFileSync(other, randomBytes(32).toString('hex'));
    const c = await instance(dir, 'c', weights, ['--remote-cache', redis.url, '--cache-secret-file', other]);
    try {
      assert.ok(metric(c.text, 'kiln_remote_cache_rejected_total')! >= 3, 'entries under another key are rejected');
      assert.equal(metric(c.text, 'kiln_cache_trace_skips_total'), 0);
      assert.ok(metric(c.text, 'kiln_cache_misses_total')! >= 3, 'compiled locally');
      const x = kiln.randn([2, IN]).dataSync() as Float32Array;
      const r = await postJson(c.url, { inputs: { x: rowsOf(x, 2, IN) } });
      assert.ok(maxAbsDiff((r.json.outputs as { output: number[][] }).output.flat(), reference(model, x, 2)) < 1e-4);
    } finally {
      await stop(c.child);
    }
  } finally {
    await redis.stop();
  }
});

test('Redis down: the instance compiles locally and serves', { skip: why ?? false }, async () => {
  const dir = tempDir('fleet-down');
  const { model, weights } = await fixtureModel(dir, 33);
  const secret = join(dir, 'fleet.key');
  writeFileSync(secret, randomBytes(32).toString('hex'));
  const dead = await freePort(); // nothing listens there
  const d = await instance(dir, 'd', weights, ['--remote-cache', `redis://127.0.0.1:${dead}`, '--cache-secret-file', secret]);
  try {
    assert.ok(d.child.lines.some((l) => /remote compile cache redis:\/\/127\.0\.0\.1:\d+ .* is unreachable .*compiling locally/.test(l)), d.child.lines.join('\n'));
    assert.equal(metric(d.text, 'kiln_remote_cache_up'), 0);
    assert.ok(metric(d.text, 'kiln_cache_misses_total')! >= 3);
    const x = kiln.randn([4, IN]).dataSync() as Float32Array;
    const r = await postJson(d.url, { inputs: { x: rowsOf(x, 4, IN) } });
    assert.equal(r.status, 200);
    assert.ok(maxAbsDiff((r.json.outputs as { output: number[][] }).output.flat(), reference(model, x, 4)) < 1e-4);
  } finally {
    await stop(d.child);
  }
});

test('a remote cache without the fleet key is refused at start, saying how to give one', { skip: why ?? false }, async () => {
  const dir = tempDir('fleet-nokey');
  const { weights } = await fixtureModel(dir);
  const child = spawnServe([MODEL_FILE, '--weights', weights, '--port', '0', '--remote-cache', 'redis://127.0.0.1:1'], { KILN_CACHE_DIR: join(dir, 'cache') });
  assert.equal(await child.exited, 1);
  assert.ok(child.lines.some((l) => /a remote cache needs the fleet's key/.test(l)), child.lines.join('\n'));
});
