// One op-table case compiled and checked against the float64 reference, on the first call
// (trace) and the second (replay). Shared by compile-ops (js), wasm and native tests, so every
// backend passes literally the same check.

import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { OP_TABLE, Rng, asList, baseSeed, caseSeed, checkInputsUnchanged, checkOutputs, toND, withSeed, FLOAT32_TOL, type OpCase } from '../op-table.js';
import { assertCompiledRan } from './compiled-ran.js';

/** one base seed per test process; each case derives its own from it and its name */
const base = baseSeed();
/** ops whose values depend on random draws: compared with eager only in shape */
const RANDOM = /dropout/;
/** ops that read a tensor value on the host by design (a graph break is expected) */
export const READS_DATA = /oneHot.*infer|oneHot$|\(reads data\)/;

/**
 * Compiles case `c` with `opts` (fullgraph unless the case reads data) and calls it twice,
 * checking both outputs. `check` false: one call, unchecked (a trace inside nativeBatch).
 * Failure messages name the backend, e.g. `sum dim=1 (wasm replay)`.
 */
export function checkCompiledCase(c: OpCase, opts: kiln.CompileOptions, check = true): void {
  const seed = caseSeed(base, c.name);
  withSeed(base, seed, () => {
    kiln.scope(() => {
      kiln.compiler.reset();
      const rng = new Rng(seed, 'float32');
      const inputs = c.make(rng);
      const before = inputs.map(toND);
      const fn = (...xs: kiln.Tensor[]) => c.run(kiln, xs);
      const compiled = kiln.compile(fn, { ...opts, fullgraph: !READS_DATA.test(c.name) });
      const on = opts.backend ? `${opts.backend} ` : '';
      for (const call of check ? ['trace', 'replay'] : ['trace']) {
        const outs = asList(compiled(...inputs) as kiln.Tensor | readonly kiln.Tensor[]);
        if (!check) continue;
        if (RANDOM.test(c.name)) {
          const eager = asList(fn(...inputs));
          assert.deepEqual(outs.map((o) => o.shape), eager.map((o) => o.shape));
          continue;
        }
        checkOutputs(`${c.name} (${on}${call})`, outs, asList(c.reference(before)), c.outDType ?? 'float32', c.tol ?? FLOAT32_TOL);
        checkInputsUnchanged(`${c.name} (${on}${call})`, inputs, before);
      }
      if (check) assertCompiledRan(`${c.name} (${on.trim() || 'default'})`);
    });
  });
}

/**
 * Runs `check` on every op-table case and returns one line per failing case (all cases run,
 * so one report names every failure). `maxLines`: keep that many lines of each message,
 * joined with ' | ' (default: the whole message).
 */
export function opTableFailures(check: (c: OpCase) => void, maxLines?: number): string[] {
  const failures: string[] = [];
  for (const c of OP_TABLE) {
    try {
      check(c);
    } catch (e) {
      const msg = (e as Error).message;
      failures.push(`${c.name}: ${maxLines === undefined ? msg : msg.split('\n').slice(0, maxLines).join(' | ')}`);
    }
  }
  return failures;
}
