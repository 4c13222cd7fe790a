// One function compiled on a backend against the same function run eagerly, on trace and on
// replay: the check of the large-kernel cases of the wasm and native tests (threaded splits,
// vector loops, blocked matmuls), kept in one place so both backends meet the same bound.

import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { asList } from '../op-table.js';
import { assertCompiledRan } from './compiled-ran.js';

type T = kiln.Tensor;

/**
 * Every output of `fn` compiled with `opts` is within `tol` * max |eager| + 1e-5 of eager
 * (NaNs matching). Failure messages start with `name` and name `opts.backend`.
 */
export function compareWithEager(name: string, fn: (...xs: T[]) => T | T[], inputs: T[], opts: kiln.CompileOptions, tol = 2e-5): void {
  kiln.scope(() => {
    kiln.compiler.reset();
    const js = asList(fn(...inputs)).map((t) => Array.from(t.dataSync()));
    const compiled = kiln.compile(fn, opts);
    for (const call of ['trace', 'replay']) {
      const got = asList(compiled(...inputs)).map((t) => Array.from(t.dataSync()));
      got.forEach((g, o) => {
        const e = js[o]!;
        assert.equal(g.length, e.length);
        let scale = 1e-3;
        for (const v of e) scale = Math.max(scale, Math.abs(v));
        for (let k = 0; k < e.length; k++) {
          if (!(Math.abs(g[k]! - e[k]!) <= tol * scale + 1e-5) && !(Number.isNaN(g[k]) && Number.isNaN(e[k]))) assert.fail(`${name} (${call}) output ${o}[${k}]: ${opts.backend} ${g[k]} vs eager ${e[k]}`);
        }
      });
    }
    assertCompiledRan(`${name} (${opts.backend ?? 'default'})`);
  });
}
