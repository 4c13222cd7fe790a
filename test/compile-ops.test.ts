// Every op-table case compiled (fullgraph) against eager and the float64 reference:
// the first call traces and runs, the second replays the recorded program.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { OP_TABLE } from './op-table.js';
import { READS_DATA, checkCompiledCase, checkEdgeCase, edgeCases, opTableFailures } from './helpers/compiled-op-case.js';

for (const c of OP_TABLE) {
  test(`compiled ${c.name}`, () => {
    checkCompiledCase(c, {});
    // a case that reads data breaks the graph by design; no other case may
    if (!READS_DATA.test(c.name)) assert.equal(kiln.stats().graphBreaks.length, 0, 'no graph breaks');
  });
}

test('compiled pointwise cases on edge values (0, -0, subnormals, ±inf, NaN, ±3e38) equal eager', () => {
  const cases = edgeCases();
  assert.ok(cases.length > 40, `${cases.length} pointwise functions`);
  assert.deepEqual(opTableFailures((c) => (cases.includes(c) ? checkEdgeCase(c, {}) : undefined)), []);
});
