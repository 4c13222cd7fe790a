// Every op-table case compiled (fullgraph) against eager and the float64 reference:
// the first call traces and runs, the second replays the recorded program.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { OP_TABLE } from './op-table.js';
import { READS_DATA, checkCompiledCase } from './helpers/compiled-op-case.js';

for (const c of OP_TABLE) {
  test(`compiled ${c.name}`, () => {
    checkCompiledCase(c, {});
    // a case that reads data breaks the graph by design; no other case may
    if (!READS_DATA.test(c.name)) assert.equal(kiln.stats().graphBreaks.length, 0, 'no graph breaks');
  });
}
