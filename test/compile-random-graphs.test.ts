// Property test: random graphs of ops (random shapes, broadcasting, views, reductions,
// matmuls) compiled with fullgraph give what eager gives.

import { test } from 'node:test';
import fc from 'fast-check';
import { checkGraph, graphArb } from './helpers/random-graphs.js';

test('random graphs: compiled (fullgraph) equals eager', () => {
  fc.assert(fc.property(graphArb, (g) => checkGraph(g, { fullgraph: true })), { numRuns: 150 });
});
