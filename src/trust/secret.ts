// The per-user secret that keys the HMAC of everything kiln executes from its local cache
// (Node): program and warm-start entries (JS kernel sources, wasm module bytes, native library
// names) and the native backend's shared libraries. Whoever can write the cache folder (a
// restored CI cache, a shared volume, a copied folder) cannot forge an entry without it.
//
//   where   $KILN_SECRET_FILE, else $XDG_CONFIG_HOME/kiln/cache-secret, else
//           ~/.config/kiln/cache-secret: outside the cache folder on purpose, so that copying,
//           restoring or sharing a cache never carries the key along with the entries it signs
//   made    on first use: 32 random bytes (hex), mode 0600 in a 0700 folder, written to a
//           temporary name and linked into place (two processes starting together agree on one)
//   checked like an ssh key: a file owned by another user or readable by group or others is
//           not used (kiln warns once and uses a key of this process only: the cache then
//           serves only what this process wrote)
//
// Losing or changing the secret costs a recompile: entries sealed with another key are
// rejected (stats().cache.untrusted) and written again.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { warnOnce } from '../core/logs.js';
import { readRegularFile } from './safe-fs.js';

/** Where the secret lives (see the file comment). */
export function secretPath(): string {
  const env = process.env;
  if (env.KILN_SECRET_FILE) return isAbsolute(env.KILN_SECRET_FILE) ? env.KILN_SECRET_FILE : join(process.cwd(), env.KILN_SECRET_FILE);
  const config = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(config, 'kiln', 'cache-secret');
}

const keys = new Map<string, Buffer>();

function parseSecret(b: Buffer): Buffer | null {
  const text = b.toString('latin1').trim();
  return /^[0-9a-f]{64}$/.test(text) ? Buffer.from(text, 'hex') : null;
}

function loadOrCreate(path: string): Buffer {
  for (let attempt = 0; attempt < 2; attempt++) {
    const r = readRegularFile(path, { maxBytes: 4096, owned: true });
    if ('bytes' in r) {
      if ((r.stat.mode & 0o077) !== 0 && typeof process.getuid === 'function') throw new Error(`${path} is readable by ${r.stat.mode & 0o007 ? 'others' : 'its group'} (mode ${(r.stat.mode & 0o777).toString(8)}): chmod 600 it, or delete it (kiln makes a new one; cached entries are then compiled again)`);
      const key = parseSecret(r.bytes);
      if (!key) throw new Error(`${path} does not hold a kiln secret (64 hex digits): delete it and kiln makes a new one`);
      return key;
    }
    if (!r.missing) throw new Error(`${path}: ${r.error}`);
    // first use: create it, complete, under a temporary name, then link it into place (fails if another process won)
    const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      writeFileSync(tmp, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
      linkSync(tmp, path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new Error(`cannot create ${path} (${(e as Error).message}); set KILN_SECRET_FILE to a file this user can write`);
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  throw new Error(`${path} could not be read after it was created`);
}

/** This user's secret (created on first use); a key of this process only when it cannot be used (warned once). */
export function cacheSecret(): Buffer {
  const path = secretPath();
  let key = keys.get(path);
  if (!key) {
    try {
      key = loadOrCreate(path);
    } catch (e) {
      warnOnce(`secret ${path}`, `the compile cache's secret cannot be used: ${(e as Error).message}. This process seals cache entries with a key of its own, so it reuses only what it compiled itself.`);
      key = randomBytes(32);
    }
    keys.set(path, key);
  }
  return key;
}

/** HMAC-SHA256 (hex) of `text` under this user's secret, for one purpose (`domain`). */
export function mac(domain: string, text: string): string {
  return createHmac('sha256', cacheSecret()).update(`${domain}\0`).update(text).digest('hex');
}

/** Whether `tag` is the HMAC of `text` (constant time). */
export function macMatches(domain: string, text: string, tag: unknown): boolean {
  if (typeof tag !== 'string' || !/^[0-9a-f]{64}$/.test(tag)) return false;
  return timingSafeEqual(Buffer.from(mac(domain, text), 'hex'), Buffer.from(tag, 'hex'));
}
