// The remote compile cache's layers: the Redis byte store (a real redis-server on a free
// loopback port: round trips, down, timeouts), fleet-key authentication (HMAC, Ed25519), and
// the disk-then-remote tiered store over verified entry stores.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { AuthenticatedBytes, fleetKey } from '../src/compiler/cache/auth-bytes.js';
import type { ByteStore } from '../src/compiler/cache/byte-store.js';
import { EntryStore } from '../src/compiler/cache/entry-store.js';
import { RedisBytes } from '../src/compiler/cache/redis-store.js';
import { useRemoteCache } from '../src/compiler/cache/remote.js';
import { TieredStore } from '../src/compiler/cache/tiered-store.js';
import { decodeContainer, encodeContainer } from '../src/compiler/cache/container.js';
import { registerCacheStore } from '../src/compiler/cache/store.js';
import { SCHEMA_VERSION } from '../src/compiler/cache/validate.js';
import * as kiln from 'kilnjs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, redisUnavailable, startRedis } from './helpers/serve.js';

process.env.KILN_CACHE_SOURCES = 'off';
process.env.XDG_CONFIG_HOME = mkdtempSync(join(tmpdir(), 'kiln-remote-cache-test-')); // the local tier's per-user secret
const why = redisUnavailable();

class MemoryBytes implements ByteStore {
  readonly map = new Map<string, Uint8Array>();
  readonly location = 'memory';
  read(name: string) {
    return this.map.get(name) ?? null;
  }
  write(name: string, bytes: Uint8Array) {
    this.map.set(name, new Uint8Array(bytes));
    return true;
  }
  remove(name: string) {
    this.map.delete(name);
  }
}

test('Redis byte store: what is written reads back byte for byte (Uint8Array and pooled Buffers), removals stick', { skip: why ?? false }, async () => {
  const redis = await startRedis();
  const r = new RedisBytes({ url: redis.url });
  try {
    assert.equal(await r.connected(20_000), true);
    assert.equal(r.read('absent'), null);
    const big = randomBytes(300_000);
    const pooled = Buffer.from('small values live in a slice of Node\'s shared pool');
    const neighbour = Buffer.from('another pooled buffer');
    assert.ok(r.write('big', new Uint8Array(big)));
    assert.ok(r.write('pooled', pooled));
    await r.flush();
    assert.deepEqual(Buffer.from(r.read('big')!), big);
    assert.deepEqual(Buffer.from(r.read('pooled')!), pooled, 'exactly the slice, not the pool around it');
    assert.equal(neighbour.toString(), 'another pooled buffer', 'the pool is untouched (not transferred away)');
    r.remove('big');
    await r.flush();
    assert.equal(r.read('big'), null);
    assert.equal(r.stats.found, 2);
    assert.equal(r.stats.writes, 3, 'two sets and a del acknowledged');
  } finally {
    await r.close();
    await redis.stop();
  }
});

test('Redis down: reads miss at once and writes are dropped, never an error', async () => {
  const port = await freePort();
  const r = new RedisBytes({ url: `redis://127.0.0.1:${port}` });
  try {
    assert.equal(await r.connected(20_000), false, 'refused (the first word from the client resolves it)');
    const t0 = performance.now();
    assert.equal(r.read('x'), null);
    assert.ok(performance.now() - t0 < 50, 'no waiting on a server known to be down');
    assert.equal(r.write('x', new Uint8Array(4)), false);
    assert.match(r.stats.lastError ?? '', /ECONNREFUSED/);
  } finally {
    await r.close();
  }
});

test('a Redis that stops answering costs one timeout, then is skipped', { skip: why ?? false }, async () => {
  const redis = await startRedis();
  const r = new RedisBytes({ url: redis.url, timeoutMs: 150 });
  const Redis = createRequire(import.meta.url)('ioredis') as new (url: string) => { call(...a: string[]): Promise<unknown>; quit(): Promise<unknown> };
  const admin = new Redis(redis.url);
  try {
    assert.equal(await r.connected(20_000), true);
    await admin.call('CLIENT', 'PAUSE', '3000', 'ALL');
    const t0 = performance.now();
    assert.equal(r.read('x'), null);
    const waited = performance.now() - t0;
    assert.ok(waited >= 140 && waited < 1000, `waited ${waited.toFixed(0)} ms (timeout 150)`);
    assert.equal(r.stats.timeouts, 1);
    const t1 = performance.now();
    assert.equal(r.read('y'), null);
    assert.ok(performance.now() - t1 < 20, 'skipped after the timeout');
  } finally {
    await admin.call('CLIENT', 'UNPAUSE').catch(() => {});
    await admin.quit();
    await r.close();
    await redis.stop();
  }
});

test('fleet key (HMAC): entries verify only with the secret, under their own name, unaltered', () => {
  const mem = new MemoryBytes();
  let rejected = 0;
  const secret = randomBytes(32);
  const a = new AuthenticatedBytes(mem, fleetKey({ secret }), () => rejected++);
  const payload = new TextEncoder().encode('generated kernel source');
  assert.ok(a.write('program-1', payload));
  assert.deepEqual(Buffer.from(a.read('program-1')!), Buffer.from(payload));
  // another secret
  const b = new AuthenticatedBytes(mem, fleetKey({ secret: randomBytes(32) }), () => rejected++);
  assert.equal(b.read('program-1'), null);
  assert.equal(rejected, 1);
  assert.equal(mem.map.has('program-1'), false, 'a rejected value is removed');
  // an altered byte, a value moved to another name, no tag at all
  a.write('program-2', payload);
  const tagged = mem.map.get('program-2')!;
  const altered = new Uint8Array(tagged);
  altered[altered.length - 1]! ^= 1;
  mem.map.set('program-2', altered);
  assert.equal(a.read('program-2'), null);
  mem.map.set('program-3', tagged);
  assert.equal(a.read('program-3'), null, 'the tag covers the name');
  mem.map.set('program-4', payload);
  assert.equal(a.read('program-4'), null, 'untagged');
  assert.equal(rejected, 4);
  assert.throws(() => fleetKey({ secret: randomBytes(16) }), /16 bytes, at least 32/);
});

test('fleet key (Ed25519): the private key publishes, the public key only verifies', () => {
  const mem = new MemoryBytes();
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const publisher = new AuthenticatedBytes(mem, fleetKey({ privateKey }));
  const reader = new AuthenticatedBytes(mem, fleetKey({ publicKey }));
  const payload = randomBytes(1000);
  assert.ok(publisher.write('warm-1', payload));
  assert.deepEqual(Buffer.from(reader.read('warm-1')!), payload);
  assert.equal(reader.write('warm-2', payload), false, 'a verify-only instance never writes');
  const stranger = new AuthenticatedBytes(mem, fleetKey({ publicKey: generateKeyPairSync('ed25519').publicKey }));
  assert.equal(stranger.read('warm-1'), null, 'signed by another key');
  const hmacReader = new AuthenticatedBytes(new MemoryBytes(), fleetKey({ secret: randomBytes(32) }));
  assert.equal(hmacReader.read('warm-1'), null);
  assert.throws(() => fleetKey({ publicKey: generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey }), /must be Ed25519/);
});

test('tiered store: a remote hit is verified, returned and kept locally; new entries go to both', () => {
  const localBytes = new MemoryBytes(), remoteBytes = new MemoryBytes();
  const local = new EntryStore(localBytes);
  const counts = { read: 0, wrote: 0, rejected: 0 };
  const remote = new EntryStore(remoteBytes, { read: () => counts.read++, wrote: () => counts.wrote++, rejected: () => counts.rejected++ });
  const tiered = new TieredStore(local, remote);
  const payload = { meta: { kernels: ['k0'] }, blobs: [new Uint8Array([1, 2, 3])] };
  tiered.put('program', 'a'.repeat(64), payload);
  assert.equal(localBytes.map.size, 1);
  assert.equal(remoteBytes.map.size, 1);
  assert.equal(counts.wrote, 1);
  localBytes.map.clear(); // another machine: only the remote has it
  const got = tiered.get('program', 'a'.repeat(64))!;
  assert.deepEqual(got.meta, payload.meta);
  assert.deepEqual(Array.from(got.blobs[0]!), [1, 2, 3]);
  assert.equal(localBytes.map.size, 1, 'kept locally');
  // a damaged remote entry is rejected by the entry checks (sha256), removed, and misses
  localBytes.map.clear();
  const v = remoteBytes.map.values().next().value!;
  v[v.length - 1]! ^= 0xff;
  assert.equal(tiered.get('program', 'a'.repeat(64)), null);
  assert.equal(counts.rejected, 1);
  assert.equal(remoteBytes.map.size, 0);
});

test("a schema mark is returned only under this user's seal: a remote entry comes back without it, and so does its local copy", () => {
  const localBytes = new MemoryBytes(), remoteBytes = new MemoryBytes();
  const local = new EntryStore(localBytes);
  const remote = new EntryStore(new AuthenticatedBytes(remoteBytes, fleetKey({ secret: randomBytes(32) })), undefined, 'none');
  const tiered = new TieredStore(local, remote);
  const key = 'b'.repeat(64);
  tiered.put('program', key, { meta: { m: 1 }, blobs: [], checked: SCHEMA_VERSION });
  assert.equal(local.get('program', key)!.checked, SCHEMA_VERSION, 'this user wrote and sealed it');
  assert.equal(remote.get('program', key)!.checked, undefined, "the fleet's store: checked on every read");
  localBytes.map.clear();
  assert.equal(tiered.get('program', key)!.checked, undefined);
  assert.equal(local.get('program', key)!.checked, undefined, 'the local copy of a remote hit is not marked');
});

test('a fleet-authenticated remote entry that makes no sense (no steps, its writer\'s mark kept) is rejected by the schema, compiled again, and equals eager', () => {
  const localBytes = new MemoryBytes(), remoteBytes = new MemoryBytes();
  const fleet = new AuthenticatedBytes(remoteBytes, fleetKey({ secret: randomBytes(32) }));
  registerCacheStore(() => new TieredStore(new EntryStore(localBytes), new EntryStore(fleet, undefined, 'none')));
  try {
    const f = (x: kiln.Tensor) => kiln.relu(x.mul(2).add(1)).sum(-1);
    const x = kiln.randn([5, 7]);
    const want = Array.from(f(x).dataSync());
    kiln.compile(f, { backend: 'js', dynamic: false })(x);
    const names = [...remoteBytes.map.keys()].filter((n) => n.startsWith('program-'));
    assert.equal(names.length, 1, 'the program was published');
    // a holder of the fleet's key (or a bug in another instance) publishes a nonsensical program
    for (const name of names) {
      const { header, payload } = decodeContainer(fleet.read(name)!);
      assert.equal(header.checked, SCHEMA_VERSION);
      (payload.meta as { lowered: { steps: unknown[] } }).lowered.steps = [];
      fleet.write(name, encodeContainer({ kind: header.kind, kiln: header.kiln, key: header.key, checked: header.checked }, payload));
    }
    localBytes.map.clear(); // another machine: only the fleet has it
    kiln.compiler.reset();
    const got = Array.from(kiln.compile(f, { backend: 'js', dynamic: false })(x).dataSync());
    const s = kiln.stats();
    assert.equal(s.cache.invalid, 1);
    assert.equal(s.cache.hits, 0);
    assert.equal(s.fusionFallbacks, 0);
    assert.equal(s.eagerFallbacks, 0);
    assert.equal(s.graphsCompiled, 1);
    got.forEach((v, i) => assert.ok(Math.abs(v - want[i]!) <= 1e-5 * Math.max(1, Math.abs(want[i]!)), `[${i}] ${v} vs eager ${want[i]}`));
  } finally {
    registerCacheStore(() => null);
  }
});

test('useRemoteCache needs the fleet key (entries hold code)', () => {
  assert.throws(() => useRemoteCache({ url: 'redis://127.0.0.1:1' }), /a remote cache needs the fleet's key: its entries hold code/);
  assert.throws(() => useRemoteCache({ url: 'redis://127.0.0.1:1', secret: 'short' }), /at least 32/);
});
