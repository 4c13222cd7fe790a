// Every op-table case compiled (fullgraph) against eager and the float64 reference:
// the first call traces and runs, the second replays the recorded program.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kiln';
import { OP_TABLE, Rng, asList, baseSeed, caseSeed, checkOutputs, toND, withSeed, FLOAT32_TOL } from './op-table.js';

const base = baseSeed();
// ops whose values depend on random draws: compared with eager only in distribution
const RANDOM = /dropout/;
// ops that read a tensor value on the host by design (a graph break is expected)
const READS_DATA = /oneHot.*infer|oneHot$/;

for (const c of OP_TABLE) {
  test(`compiled ${c.name}`, () => {
    const seed = caseSeed(base, c.name);
    withSeed(base, seed, () => {
      kiln.scope(() => {
        kiln.compiler.reset();
        const rng = new Rng(seed, 'float32');
        const inputs = c.make(rng);
        const before = inputs.map(toND);
        const fn = (...xs: kiln.Tensor[]) => c.run(kiln, xs);
        const expectBreak = READS_DATA.test(c.name);
        const compiled = kiln.compile(fn, { fullgraph: !expectBreak });
        for (const call of ['trace', 'replay']) {
          const outs = asList(compiled(...inputs) as kiln.Tensor | readonly kiln.Tensor[]);
          if (RANDOM.test(c.name)) {
            const eager = asList(fn(...inputs));
            assert.deepEqual(outs.map((o) => o.shape), eager.map((o) => o.shape));
            continue;
          }
          checkOutputs(`${c.name} (${call})`, outs, asList(c.reference(before)), c.outDType ?? 'float32', c.tol ?? FLOAT32_TOL);
        }
        if (!expectBreak) assert.equal(kiln.stats().graphBreaks.length, 0, 'no graph breaks');
      });
    });
  });
}
