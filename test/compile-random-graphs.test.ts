// Property test: random graphs of ops (random shapes, broadcasting, views, reductions,
// matmuls) compiled with fullgraph give what eager gives.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as kiln from 'kiln';
import { opArb, program, shapeArb } from './helpers/random-graphs.js';

test('random graphs: compiled (fullgraph) equals eager', () => {
  fc.assert(
    fc.property(shapeArb, fc.array(opArb, { minLength: 1, maxLength: 14 }), fc.integer({ min: 1, max: 3 }), fc.nat(1000), ([a, b, c], ops, nOut, seed) => {
      kiln.scope(() => {
        kiln.compiler.reset();
        kiln.manualSeed(seed);
        const inputs = [kiln.randn([a, b, c]), kiln.randn([b, c]), kiln.randn([1, c]), kiln.randn([c, c])];
        const fn = program(ops, nOut);
        const eager = fn(...inputs);
        const compiled = kiln.compile(fn, { fullgraph: true });
        for (const call of ['trace', 'replay']) {
          const got = compiled(...inputs);
          assert.equal(got.length, eager.length);
          got.forEach((g, i) => {
            const e = eager[i]!;
            assert.deepEqual(g.shape, e.shape, `${call} output ${i} shape`);
            const x = g.dataSync(), y = e.dataSync();
            let scale = 1e-3;
            for (let k = 0; k < y.length; k++) scale = Math.max(scale, Math.abs(y[k]!));
            for (let k = 0; k < y.length; k++) {
              const bad = !(Math.abs(x[k]! - y[k]!) <= 1e-5 * scale + 1e-6) && !(Number.isNaN(x[k]!) && Number.isNaN(y[k]!)) && x[k] !== y[k];
              if (bad) assert.fail(`${call} output ${i}[${k}]: compiled ${x[k]} vs eager ${y[k]} (ops ${JSON.stringify(ops)})`);
            }
          });
        }
      });
    }),
    { numRuns: 150 },
  );
});
