// The disk byte store of the persistent compile cache (Node; registered by 'kilnjs/node').
//
//   folder     $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln; entries in its
//              compile/ folder (the native backend's libraries are in native/, see toolchain.ts)
//   off        KILN_CACHE=0, or compile(fn, { cache: false })
//   trusted    only if this user owns the folder and nobody else can write it or a folder above
//              it (provenance.ts), else warned once and not used; each entry must be a regular
//              file owned by this user; entries are sealed with this user's HMAC (entry-store.ts)
//   cap        KILN_CACHE_MAX_MB (default 1024): when the folder is over it, least recently used
//              entries (by modification time; a hit touches its entry) are removed down to 90%
//              of it. The folder is scanned (one stat per entry: ~100 ms for 7,000 entries here)
//              once per process, after the call that made the first write returns (a second
//              write before then scans at once), or when the process exits, whichever is first;
//              later writes are added to that count, and a scan runs again only when the count
//              passes the cap
//
// Writes go to a temporary name and are renamed into place, so processes sharing a folder
// never read half an entry. Nothing here throws: a folder that cannot be written (a read-only
// disk, KILN_CACHE_DIR below a regular file) is warned about once and the cache is skipped;
// a path that is not a regular file (a FIFO, a folder) is never opened for reading. Entries
// are verified above this byte store (entry-store.ts); a bad one is removed here.

import { mkdirSync, readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { log, warnOnce } from '../../core/logs.js';
import { counters } from '../../core/stats.js';
import type { ByteStore } from './byte-store.js';
import { EntryStore } from './entry-store.js';
import { untrustedFolder } from '../../trust/provenance.js';
import { readRegularFile } from '../../trust/safe-fs.js';

const EXT = '.kc';
/** names the layer above uses (entry-store.ts); anything else is refused */
const NAME = /^[a-z]+-[0-9a-f]{1,64}$/;
/** an entry larger than this is not read (no entry is near it) */
const MAX_ENTRY_BYTES = 1 << 30;

/** The cache root folder (shared with the native backend's libraries). */
export function cacheRoot(): string {
  const env = process.env;
  const root = env.KILN_CACHE_DIR || (env.XDG_CACHE_HOME ? join(env.XDG_CACHE_HOME, 'kiln') : join(homedir(), '.cache', 'kiln'));
  return isAbsolute(root) ? root : join(process.cwd(), root);
}

function maxCacheBytes(): number {
  const mb = Number(process.env.KILN_CACHE_MAX_MB);
  return Number.isFinite(mb) && mb > 0 ? mb * 2 ** 20 : 2 ** 30;
}

/** After an eviction the folder is at most this fraction of the cap (so not every write rescans). */
const LOW_WATER = 0.9;

/** The disk store: entries sealed with this user's HMAC and verified (entry-store.ts) in the folder's compile/ subfolder. */
export function diskStore(root = cacheRoot()): EntryStore {
  return new EntryStore(new DiskBytes(root));
}

export class DiskBytes implements ByteStore {
  readonly dir: string;
  /** bytes of entries in the folder as of the last scan plus this process's writes since (null: not scanned yet) */
  private knownBytes: number | null = null;
  private scanScheduled = false;
  /** why the folder is not used (asked once), or null */
  private distrust: string | null | undefined;

  constructor(readonly root = cacheRoot()) {
    this.dir = join(root, 'compile');
  }

  get location(): string {
    return this.dir;
  }

  /** Whether the folder may be used: this user's, nobody else can write it (warned once when not). */
  private usable(): boolean {
    if (this.distrust === undefined) {
      this.distrust = untrustedFolder(this.dir);
      if (this.distrust) warnOnce(`cache-untrusted ${this.dir}`, `the compile cache at ${this.dir} is not used: ${this.distrust}. kiln runs code from a cache folder only if you own it and nobody else can write it (as ssh checks its keys): fix its permissions (chmod go-w), or set KILN_CACHE_DIR to a folder of your own. Compiling without it.`);
    }
    return this.distrust === null;
  }

  private file(name: string): string | null {
    return NAME.test(name) ? join(this.dir, `${name}${EXT}`) : null;
  }

  read(name: string): Uint8Array | null {
    const path = this.file(name);
    if (!path || !this.usable()) return null;
    const r = readRegularFile(path, { maxBytes: MAX_ENTRY_BYTES, owned: true });
    if (!('bytes' in r)) {
      if (!r.missing) {
        // a FIFO, a folder, another user's file: never an entry kiln wrote
        counters.cache.untrusted++;
        log('cache', `rejected ${path}: ${r.error}; removing it and compiling again`);
        this.remove(name);
      }
      return null; // absent (or evicted by another process meanwhile)
    }
    try {
      const now = new Date();
      utimesSync(path, now, now); // least recently used: a read is a use
    } catch {
      // removed meanwhile: the bytes are already read
    }
    return r.bytes;
  }

  remove(name: string): void {
    const path = this.file(name);
    if (path) rmQuietly(path);
  }

  write(name: string, bytes: Uint8Array): boolean {
    const path = this.file(name);
    if (!path || !this.usable()) return false;
    const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      writeFileSync(tmp, bytes, { mode: 0o600 });
      renameSync(tmp, path);
    } catch (e) {
      rmQuietly(tmp);
      warnOnce(`cache-write ${this.dir}`, `cannot write the compile cache at ${this.dir} (${(e as Error).message}); compiling works as usual, without storing. Set KILN_CACHE_DIR to a writable folder, or KILN_CACHE=0 to turn the cache off.`);
      log('cache', `could not write ${path}: ${(e as Error).message}`);
      return false;
    }
    this.account(path, bytes.length);
    return true;
  }

  /** Keeps the folder under its cap without scanning it on the critical path of every write. */
  private account(path: string, bytes: number): void {
    if (this.knownBytes !== null) {
      this.knownBytes += bytes;
      if (this.knownBytes > maxCacheBytes()) this.evict(path);
      return;
    }
    if (this.scanScheduled) {
      this.evict(path);
      return;
    }
    // the first write of this process usually happens inside a first call: scan after it, or
    // at exit when the process ends first (process.exit() right after the call)
    this.scanScheduled = true;
    const scan = () => {
      process.off('exit', scan);
      if (this.knownBytes === null) this.evict();
    };
    setImmediate(scan).unref();
    process.on('exit', scan);
  }

  /** Removes least recently used entries until the folder is under the cap (and stale temporaries). */
  evict(keep?: string): void {
    const cap = maxCacheBytes();
    this.scanScheduled = false;
    const files: { path: string; size: number; mtime: number }[] = [];
    let total = 0;
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    const now = Date.now();
    for (const n of names) {
      const p = join(this.dir, n);
      try {
        const st = statSync(p);
        if (n.endsWith('.tmp')) {
          if (now - st.mtimeMs > 3600_000) rmQuietly(p); // a crashed writer's leftover
          continue;
        }
        if (!n.endsWith(EXT)) continue;
        files.push({ path: p, size: st.size, mtime: st.mtimeMs });
        total += st.size;
      } catch {
        // removed meanwhile
      }
    }
    this.knownBytes = total;
    if (total <= cap) return;
    // oldest first; the entry just written goes last
    files.sort((a, b) => (a.path === keep ? 1 : b.path === keep ? -1 : a.mtime - b.mtime));
    for (const f of files) {
      if (total <= cap * LOW_WATER) break;
      rmQuietly(f.path);
      total -= f.size;
      counters.cache.evictions++;
      log('cache', `evicted ${f.path} (${f.size} bytes, least recently used; cap ${cap} bytes)`);
    }
    this.knownBytes = total;
  }
}

function rmQuietly(path: string): void {
  try {
    rmSync(path, { force: true, recursive: false });
  } catch {
    // not ours to remove (a folder), or the folder is gone: nothing to do
  }
}
