// The disk byte store of the persistent compile cache (Node; registered by 'kilnjs/node').
//
//   folder     $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln; entries in its
//              compile/ folder (the native backend's libraries are in native/, see toolchain.ts)
//   off        KILN_CACHE=0, or compile(fn, { cache: false })
//   cap        KILN_CACHE_MAX_MB (default 1024): when the folder is over it, least recently used
//              entries (by modification time; a hit touches its entry) are removed down to 90%
//              of it. The folder is scanned (one stat per entry: ~100 ms for 7,000 entries here)
//              once per process, after the call that made the first write returns (a second
//              write before then scans at once); later writes are added to that count, and a
//              scan runs again only when the count passes the cap
//
// Writes go to a temporary name and are renamed into place, so processes sharing a folder
// never read half an entry. Entries are verified above this byte store (entry-store.ts); a bad
// one is removed here and the graph compiles again. I/O errors never throw.

import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { log } from '../logs.js';
import { counters } from '../stats.js';
import type { ByteStore } from './byte-store.js';
import { EntryStore } from './entry-store.js';

const EXT = '.kc';

/** The cache root folder (shared with the native backend's libraries). */
export function cacheRoot(): string {
  const env = process.env;
  const root = env.KILN_CACHE_DIR || (env.XDG_CACHE_HOME ? join(env.XDG_CACHE_HOME, 'kiln') : join(homedir(), '.cache', 'kiln'));
  return isAbsolute(root) ? root : join(process.cwd(), root);
}

export function maxCacheBytes(): number {
  const mb = Number(process.env.KILN_CACHE_MAX_MB);
  return Number.isFinite(mb) && mb > 0 ? mb * 2 ** 20 : 2 ** 30;
}

/** After an eviction the folder is at most this fraction of the cap (so not every write rescans). */
const LOW_WATER = 0.9;

/** The disk store: verified entries (entry-store.ts) in the folder's compile/ subfolder. */
export function diskStore(root = cacheRoot()): EntryStore {
  return new EntryStore(new DiskBytes(root));
}

export class DiskBytes implements ByteStore {
  readonly dir: string;
  /** bytes of entries in the folder as of the last scan plus this process's writes since (null: not scanned yet) */
  private knownBytes: number | null = null;
  private scanScheduled = false;

  constructor(readonly root = cacheRoot()) {
    this.dir = join(root, 'compile');
  }

  get location(): string {
    return this.dir;
  }

  private file(name: string): string {
    return join(this.dir, `${name}${EXT}`);
  }

  read(name: string): Uint8Array | null {
    const path = this.file(name);
    let buf: Buffer;
    try {
      buf = readFileSync(path);
    } catch {
      return null; // absent (or evicted by another process meanwhile)
    }
    try {
      const now = new Date();
      utimesSync(path, now, now); // least recently used: a read is a use
    } catch {
      // removed meanwhile: the bytes are already read
    }
    return buf;
  }

  remove(name: string): void {
    rmSync(this.file(name), { force: true });
  }

  write(name: string, bytes: Uint8Array): boolean {
    const path = this.file(name);
    const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      mkdirSync(this.dir, { recursive: true });
      writeFileSync(tmp, bytes);
      renameSync(tmp, path);
      this.account(path, bytes.length);
      return true;
    } catch (e) {
      rmSync(tmp, { force: true });
      log('cache', `could not write ${path}: ${(e as Error).message} (the cache is skipped, compiling works as usual)`);
      return false;
    }
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
    // the first write of this process usually happens inside a first call: scan after it
    this.scanScheduled = true;
    setImmediate(() => {
      if (this.knownBytes === null) this.evict();
    });
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
          if (now - st.mtimeMs > 3600_000) rmSync(p, { force: true }); // a crashed writer's leftover
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
      rmSync(f.path, { force: true });
      total -= f.size;
      counters.cache.evictions++;
      log('cache', `evicted ${f.path} (${f.size} bytes, least recently used; cap ${cap} bytes)`);
    }
    this.knownBytes = total;
  }
}
