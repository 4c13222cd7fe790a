// Every differentiable op-table case compiled and differentiated the torch-habit way: the
// compiled function runs in grad mode, backward() outside it (AOTAutograd), gradients checked
// against float64 autograd on the trace and on the replay (test/helpers/compiled-grad-case.ts).

import { test } from 'node:test';
import { OP_TABLE } from './op-table.js';
import { checkCompiledGradCase } from './helpers/compiled-grad-case.js';

for (const c of OP_TABLE) {
  if (c.grad.length === 0) continue;
  test(`compiled forward, backward outside: ${c.name}`, () => checkCompiledGradCase(c, { backend: 'js' }));
}
