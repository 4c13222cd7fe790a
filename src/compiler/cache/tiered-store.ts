// Two cache stores as one: the local disk first, then a remote store shared by a fleet. A
// remote hit is written to the local store too (the next start of this machine reads its
// disk); a new entry goes to both. Each tier verifies its own entries (entry-store.ts), so a
// tier's key (a per-user secret locally, the fleet's key remotely) never has to be the other's.

import { log } from '../../core/logs.js';
import type { CachePayload, CacheStore, EntryKind } from './store.js';

export class TieredStore implements CacheStore {
  constructor(readonly local: CacheStore, readonly remote: CacheStore) {}

  get location(): string {
    return `${this.local.location}, then ${this.remote.location}`;
  }

  get fingerprint(): string {
    return this.local.fingerprint;
  }

  digest(parts: readonly (string | Uint8Array)[]): string {
    return this.local.digest(parts);
  }

  get(kind: EntryKind, key: string): CachePayload | null {
    const here = this.local.get(kind, key);
    if (here) return here;
    const there = this.remote.get(kind, key);
    if (there) {
      log('cache', `${kind} ${key.slice(0, 12)}: found in the remote cache ${this.remote.location}; keeping a local copy`);
      this.local.put(kind, key, there);
    }
    return there;
  }

  put(kind: EntryKind, key: string, payload: CachePayload): void {
    this.local.put(kind, key, payload);
    this.remote.put(kind, key, payload);
  }
}
