// Provenance of the local cache folder (Node), checked as ssh checks ~/.ssh: kiln loads code
// from a folder only if this user owns it and neither it nor any folder above it can be
// written by another user (a sticky folder such as /tmp is fine: others cannot replace what is
// in it). Checked once per folder per process (a few stat calls).

import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { unsafeMode } from './safe-fs.js';

const memo = new Map<string, string | null>();

/** Why kiln must not load code from `dir` (or create it there), or null when it may. */
export function untrustedFolder(dir: string): string | null {
  const abs = resolve(dir);
  const hit = memo.get(abs);
  if (hit !== undefined) return hit;
  let why: string | null = null;
  for (let p = abs; ; p = dirname(p)) {
    let st;
    try {
      st = statSync(p);
    } catch {
      st = null; // not created yet: kiln creates it (mode 0700)
    }
    if (st) {
      if (!st.isDirectory()) {
        why = `${p} is not a folder`;
        break;
      }
      const bad = unsafeMode(st, p);
      if (bad) {
        why = bad;
        break;
      }
    }
    if (dirname(p) === p) break;
  }
  memo.set(abs, why);
  return why;
}

