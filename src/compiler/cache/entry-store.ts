// Cache entries over a byte store (Node): one container (container.ts) per entry, named
// `${kind}-${key}`, verified on every read, in this order:
//
//   the container decodes (magic, canonical header, format, length, sha256, blob table), and
//   its kind, key and kiln version are this lookup's                        (else: corrupt)
//   its seal verifies, where the store has one: on the disk an HMAC under this user's secret
//   (secret.ts, seal.ts); a fleet's Redis is authenticated below, by auth-bytes.ts (else: untrusted)
//
// then the caller's decode validates the schema (serialize.ts, validate.ts: invalid), unless
// the entry carries `checked` (SCHEMA_VERSION) in its header under this user's seal: then this
// user's kiln checked it when it wrote it. A mark from any other tier is not returned, so what
// a fleet's store holds is checked on every read. A bad entry is logged under KILN_LOGS=cache,
// counted, removed from its byte store, and the graph compiles again. Every byte store (the
// disk, a remote one) gets these checks.

import { log } from '../../core/logs.js';
import { counters } from '../../core/stats.js';
import type { ByteStore } from './byte-store.js';
import { ContainerError, decodeContainer, encodeContainer, sha256 } from './container.js';
import { kilnVersion, platformTag, sourceFingerprint } from './environment.js';
import { macSealer, macValid } from './seal.js';
import type { CachePayload, CacheStore, EntryKind } from './store.js';

/** Where an entry store counts what it read, wrote and rejected (default: kiln.stats().cache). */
export interface EntryTally {
  read(bytes: number): void;
  wrote(bytes: number): void;
  rejected(why: 'corrupt' | 'untrusted'): void;
}

const statsTally: EntryTally = {
  read: (n) => void (counters.cache.bytesRead += n),
  wrote: (n) => {
    counters.cache.writes++;
    counters.cache.bytesWritten += n;
  },
  rejected: (why) => void counters.cache[why]++,
};

/** How a store's entries are sealed: 'user' (this user's HMAC: the local disk) or 'none' (authenticated below it, or not at all). */
export type EntrySeal = 'user' | 'none';

/** The name of an entry in its byte store (keys are sha256 hex; 40 digits are plenty). */
export function entryName(kind: EntryKind, key: string): string {
  return `${kind}-${key.slice(0, 40)}`;
}

export class EntryStore implements CacheStore {
  readonly fingerprint = `kiln ${kilnVersion()} ${platformTag()} src ${sourceFingerprint()}`;

  constructor(readonly bytes: ByteStore, private readonly tally: EntryTally = statsTally, private readonly seal: EntrySeal = 'user') {}

  get location(): string {
    return this.bytes.location;
  }

  digest(parts: readonly (string | Uint8Array)[]): string {
    return sha256(parts);
  }

  get(kind: EntryKind, key: string): CachePayload | null {
    const name = entryName(kind, key);
    const buf = this.bytes.read(name);
    if (!buf) return null;
    let why: 'corrupt' | 'untrusted' = 'corrupt';
    try {
      const { header, payload } = decodeContainer(buf);
      if (header.kind !== kind) throw new ContainerError(`a ${header.kind} entry, expected ${kind}`);
      if (header.key !== key) throw new ContainerError('foreign entry (its key differs)');
      if (header.kiln !== kilnVersion()) throw new ContainerError(`written by kiln ${header.kiln}, this is kiln ${kilnVersion()}`);
      if (this.seal === 'user') {
        const t0 = performance.now();
        const sealed = macValid(header);
        counters.cache.verifyMs += performance.now() - t0;
        if (!sealed) {
          why = 'untrusted';
          throw new ContainerError("its seal does not verify under this user's secret (not written by this user's kiln, or altered since)");
        }
      }
      this.tally.read(buf.length);
      const checked = this.seal === 'user' && typeof header.checked === 'string' ? header.checked : undefined;
      return checked ? { ...payload, checked } : payload;
    } catch (e) {
      this.tally.rejected(why);
      log('cache', `rejected ${name} in ${this.location}: ${(e as Error).message}; deleting it and compiling again`);
      this.bytes.remove(name);
      return null;
    }
  }

  put(kind: EntryKind, key: string, payload: CachePayload): void {
    const name = entryName(kind, key);
    const buf = encodeContainer({ kind, kiln: kilnVersion(), key, ...(payload.checked ? { checked: payload.checked } : {}) }, payload, this.seal === 'user' ? macSealer : undefined);
    if (this.bytes.write(name, buf)) {
      this.tally.wrote(buf.length);
      log('cache', `wrote ${name} to ${this.location} (${buf.length} bytes)`);
    }
  }
}
