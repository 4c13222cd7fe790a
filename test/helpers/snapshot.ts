// Text snapshots under test/snapshots/. A missing snapshot is written (except under CI,
// where it fails); KILN_UPDATE_SNAPSHOTS=1 rewrites them after an intended change.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import assert from 'node:assert/strict';

const DIR = join(dirname(new URL(import.meta.url).pathname), '..', 'snapshots');

export function matchSnapshot(name: string, text: string): void {
  const file = join(DIR, `${name}.txt`);
  const update = process.env.KILN_UPDATE_SNAPSHOTS === '1';
  if (!existsSync(file) || update) {
    if (!update && process.env.CI) assert.fail(`snapshot ${name} is missing (run the tests locally to write it)`);
    mkdirSync(DIR, { recursive: true });
    writeFileSync(file, text.endsWith('\n') ? text : text + '\n');
    return;
  }
  const want = readFileSync(file, 'utf8');
  const got = text.endsWith('\n') ? text : text + '\n';
  if (want !== got) {
    const a = want.split('\n'), b = got.split('\n');
    const i = a.findIndex((l, k) => l !== b[k]);
    assert.fail(`snapshot ${name} differs at line ${i + 1}:\n  want: ${a[i]}\n  got:  ${b[i]}\n(set KILN_UPDATE_SNAPSHOTS=1 if the change is intended)`);
  }
}
