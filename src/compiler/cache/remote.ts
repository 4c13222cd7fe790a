// A fleet's remote compile cache (Node): useRemoteCache({ url, secret }) makes every compile in
// this process look in the local disk cache, then in Redis, and write new entries to both, so
// the second instance of a model starts warm. Entries are authenticated with the fleet's key
// (auth-bytes.ts) and verified as disk entries are (entry-store.ts). Redis down means compiling
// locally: never an error.

import { ArgumentError } from '../../core/errors.js';
import { AuthenticatedBytes, fleetKey } from './auth-bytes.js';
import type { ByteStore } from './byte-store.js';
import { diskStore } from './disk-store.js';
import { EntryStore } from './entry-store.js';
import { RedisBytes, type RedisStoreOptions, type RedisStoreStats } from './redis-store.js';
import { registerCacheStore } from './store.js';
import { TieredStore } from './tiered-store.js';

export interface RemoteCacheOptions extends RedisStoreOptions {
  /** the fleet's shared secret (at least 32 bytes): HMAC-SHA256 over every entry */
  readonly secret?: Uint8Array | string;
  /** or Ed25519: the public key (PEM) entries must be signed with ... */
  readonly publicKey?: string;
  /** ... and the private key (PEM) of instances that publish entries (without it: read only) */
  readonly privateKey?: string;
  /** use Redis without authenticating entries: anyone who can write to it runs code here */
  readonly unsafeUnauthenticated?: boolean;
}

export interface RemoteCacheStats extends RedisStoreStats {
  /** entries read from Redis that verified (tag and container) */
  hits: number;
  /** entries rejected: bad tag, checksum, key or kiln version */
  rejected: number;
  /** entries published (queued; `writes` counts those Redis acknowledged) */
  published: number;
}

export interface RemoteCache {
  readonly location: string;
  /** true once connected; false if Redis was not reachable within `timeoutMs` (compiles are then local) */
  connected(timeoutMs?: number): Promise<boolean>;
  stats(): RemoteCacheStats;
  /** waits until the entries written so far are in Redis */
  flush(): Promise<void>;
  /** flushes, disconnects, and puts the disk-only cache back */
  close(): Promise<void>;
}

/** Makes this process's compile cache the disk, then Redis (see the file comment). */
export function useRemoteCache(opts: RemoteCacheOptions): RemoteCache {
  if (!opts.url) throw new ArgumentError('no Redis url', 'useRemoteCache', "pass { url: 'redis://host:6379' }");
  const authenticated = opts.secret !== undefined || opts.publicKey !== undefined || opts.privateKey !== undefined;
  if (!authenticated && !opts.unsafeUnauthenticated) {
    throw new ArgumentError('a remote cache needs the fleet\'s key: its entries hold code that every instance runs', 'useRemoteCache', 'pass { secret } (a shared secret of 32+ bytes, e.g. `openssl rand -hex 32`), or { publicKey, privateKey } (Ed25519 PEM; instances with only the public key read and never write), or { unsafeUnauthenticated: true } for a Redis only trusted processes can reach');
  }
  let key: ReturnType<typeof fleetKey> | null = null;
  if (authenticated) {
    try {
      key = fleetKey(opts);
    } catch (e) {
      throw new ArgumentError((e as Error).message, 'useRemoteCache');
    }
  }
  const redis = new RedisBytes(opts);
  const counts = { hits: 0, rejected: 0, published: 0 };
  const bytes: ByteStore = key ? new AuthenticatedBytes(redis, key, () => counts.rejected++) : redis;
  // the fleet's key authenticates entries below (auth-bytes.ts): a per-user seal would differ between machines
  const remote = new EntryStore(bytes, { read: () => counts.hits++, wrote: () => counts.published++, rejected: () => counts.rejected++ }, 'none');
  registerCacheStore(() => new TieredStore(diskStore(), remote));
  return {
    location: redis.location,
    connected: (ms) => redis.connected(ms),
    stats: () => ({ ...redis.stats, ...counts }),
    flush: () => redis.flush(),
    async close() {
      registerCacheStore(() => diskStore());
      await redis.close();
    },
  };
}
