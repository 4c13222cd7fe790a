// Structure the code keeps (issue 20): the compiler's functions fit in one reading. A function in
// src/compiler/ or src/ir/ over MAX_LINES is a scheduler or a driver that should be named passes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { functionLengths } from '../scripts/lib/function-lengths.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAX_LINES = 150;

test('the function-length scan finds the compiler\'s functions, nested ones included', () => {
  const fns = functionLengths(ROOT, 'src/compiler');
  assert.ok(fns.length > 500, `${fns.length} functions`);
  assert.ok(fns.some((f) => f.name === 'normalizeCaptures' && f.at.startsWith('src/compiler/compile.ts')), 'normalizeCaptures() in compile.ts');
  assert.ok(fns.some((f) => f.lines > 40), 'lengths are measured in lines');
});

for (const dir of ['src/compiler', 'src/ir']) {
  test(`no function in ${dir}/ is over ${MAX_LINES} lines`, () => {
    const long = functionLengths(ROOT, dir).filter((f) => f.lines > MAX_LINES);
    assert.deepEqual(long.map((f) => `${f.at} ${f.name}: ${f.lines} lines`), []);
  });
}
