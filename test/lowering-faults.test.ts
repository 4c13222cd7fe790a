// A failure in lowering is never silent (issue 18): a bug rethrows, a kernel backend's failure
// rethrows, and only a typed refusal of the JS renderer falls back to the recorded eager kernels,
// counted in stats().fusionFallbacks, warned once per function, and a GraphBreakError under
// fullgraph. The failures are injected (src/compiler/testing.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { injectLoweringFault } from '../src/compiler/testing.js';

const f = (x: kiln.Tensor) => x.mul(1.5).add(0.25).tanh();

function withFault<T>(fault: 'bug' | 'refusal', body: () => T): T {
  kiln.compiler.reset();
  injectLoweringFault(fault);
  try {
    return body();
  } finally {
    injectLoweringFault(null);
  }
}

test('a bug in lowering (not a KilnError) rethrows: nothing runs the recorded kernels instead', () => {
  withFault('bug', () => {
    assert.throws(() => kiln.scope(() => kiln.compile(f, { backend: 'js', cache: false })(kiln.randn([3, 4]))), /injected bug in lowering/);
    assert.equal(kiln.stats().fusionFallbacks, 0);
  });
});

test("the JS renderer's typed refusal falls back counted and warned once per function; results equal eager", () => {
  const warnings: string[] = [];
  const warn = console.warn;
  console.warn = (m: string) => void warnings.push(m);
  try {
    withFault('refusal', () => {
      const g = kiln.compile(f, { backend: 'js', cache: false, name: 'refused_fn', dynamic: false });
      for (const shape of [[3, 4], [5, 2]]) {
        const x = kiln.randn(shape);
        const got = kiln.scope(() => Array.from((g(x) as kiln.Tensor).dataSync()));
        assert.deepEqual(got, Array.from(f(x).dataSync()));
      }
      assert.equal(kiln.stats().fusionFallbacks, 2, 'each lowering that fell back is counted');
    });
  } finally {
    console.warn = warn;
  }
  const fusion = warnings.filter((w) => /refused_fn: a graph could not be fused/.test(w));
  assert.equal(fusion.length, 1, `warned once: ${warnings.join(' | ')}`);
  assert.match(fusion[0]!, /kiln\.stats\(\)\.fusionFallbacks/);
});

test('under fullgraph the refusal is a GraphBreakError; on a kernel backend it rethrows', () => {
  withFault('refusal', () => {
    assert.throws(() => kiln.scope(() => kiln.compile(f, { backend: 'js', cache: false, fullgraph: true })(kiln.randn([3, 4]))), (e: unknown) => e instanceof kiln.GraphBreakError && /could not be fused.*injected refusal/s.test((e as Error).message));
    assert.throws(() => kiln.scope(() => kiln.compile(f, { backend: 'wasm', cache: false })(kiln.randn([3, 4]))), /injected refusal/);
    assert.equal(kiln.stats().fusionFallbacks, 0);
  });
});
