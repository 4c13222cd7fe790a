// Reading files kiln did not necessarily write (Node): cache entries, native libraries, the
// per-user secret. A path may name a FIFO (readFileSync would wait forever for a writer), a
// device, a folder or a symlink to any of these; only a regular file is read, through one
// file descriptor (opened non-blocking, so a FIFO never blocks), and its owner and mode come
// from that same descriptor, so what is checked is what is read.

import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';

interface ReadFile {
  readonly bytes: Buffer;
  readonly stat: Stats;
}

/** Why a file or folder may not be trusted (owned by another user, writable by group or others), or null. */
export function unsafeMode(st: Stats, what: string): string | null {
  if (typeof process.getuid !== 'function') return null; // Windows: no POSIX owners and modes
  const uid = process.getuid();
  if (st.uid !== uid && st.uid !== 0) return `${what} is owned by uid ${st.uid}, not by this user (uid ${uid})`;
  // a sticky folder (/tmp) lets others create entries but not replace ours
  if ((st.mode & 0o022) !== 0 && !(st.isDirectory() && (st.mode & 0o1000) !== 0)) return `${what} is writable by ${st.mode & 0o002 ? 'others' : 'its group'} (mode ${(st.mode & 0o7777).toString(8)})`;
  return null;
}

/**
 * The bytes of a regular file, or why not: absent, not a regular file, larger than `maxBytes`,
 * or (with `owned`) not owned by this user or writable by group or others. Never throws, never blocks.
 */
export function readRegularFile(path: string, opts: { maxBytes?: number; owned?: boolean } = {}): ReadFile | { error: string; missing: boolean } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { error: `cannot open it (${code ?? (e as Error).message})`, missing: code === 'ENOENT' };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { error: 'not a regular file', missing: false };
    if (opts.maxBytes !== undefined && stat.size > opts.maxBytes) return { error: `${stat.size} bytes, more than ${opts.maxBytes}`, missing: false };
    const why = opts.owned ? unsafeMode(stat, 'the file') : null;
    if (why) return { error: why, missing: false };
    const bytes = Buffer.allocUnsafe(stat.size);
    let at = 0;
    while (at < bytes.length) {
      const n = readSync(fd, bytes, at, bytes.length - at, at);
      if (n === 0) break; // shrank meanwhile: the checksum above this layer rejects it
      at += n;
    }
    return { bytes: at === bytes.length ? bytes : bytes.subarray(0, at), stat };
  } catch (e) {
    return { error: `cannot read it (${(e as Error).message})`, missing: false };
  } finally {
    closeSync(fd);
  }
}
