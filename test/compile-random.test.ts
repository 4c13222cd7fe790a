// A compiled function draws the same random numbers as eager after the same manualSeed, on
// its first (tracing) call as on replays, and moves the global stream as eager does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';

const draws = (x: kiln.Tensor) => [kiln.randn([5]).add(x), kiln.dropout(kiln.ones([64]), 0.5), kiln.randint(0, 100, [7]), kiln.rand([3]).mul(x)];
const withBreak = (x: kiln.Tensor) => {
  const a = kiln.randn([5]).add(x);
  if (a.sum().item() > 1e9) return [a]; // a graph break
  return [a, kiln.rand([4])];
};
const values = (ts: kiln.Tensor[] | kiln.Tensor) => (Array.isArray(ts) ? ts : [ts]).map((t) => Array.from(t.dataSync()));

for (const [label, fn] of [['one graph', draws], ['a graph break', withBreak]] as const) {
  for (const opts of [{}, { backend: 'eager' }, { fuse: false }, { backend: 'wasm' }] as kiln.CompileOptions[]) {
    test(`compiled random draws equal eager's from the first call, and advance the stream alike (${label}, ${JSON.stringify(opts)})`, () => {
      kiln.compiler.reset();
      const x = kiln.zeros([1]);
      kiln.manualSeed(42);
      const eager = [values(fn(x)), values(fn(x)), values(fn(x))];
      const after = kiln.rand([2]).dataSync();
      kiln.manualSeed(42);
      const f = kiln.compile(fn, opts);
      const compiled = [values(f(x) as kiln.Tensor[]), values(f(x) as kiln.Tensor[]), values(f(x) as kiln.Tensor[])];
      assert.deepEqual(compiled[0], eager[0], 'first (tracing) call');
      assert.deepEqual(compiled.slice(1), eager.slice(1), 'replays');
      assert.deepEqual(kiln.rand([2]).dataSync(), after, 'the global stream after three calls');
      assert.equal(kiln.stats().fusionFallbacks, 0);
      if (label === 'a graph break' && opts.backend !== 'eager') assert.ok(kiln.stats().segmentHits >= 2, 'segments with random nodes are found again (stable keys)');
    });
  }
}
