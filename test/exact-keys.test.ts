import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';

test('graph-break segments are found by exact constants: 1e-7 then 2e-7 gives each call its own answer', () => {
  kiln.compiler.reset();
  let eps = 1e-7;
  const f = kiln.compile((x: kiln.Tensor) => {
    const y = x.add(kiln.tensor([eps], { dtype: 'float32' }));
    if (y.sum().item() > -1) return y.mul(1); // a graph break: the JavaScript reruns every call
    return y;
  });
  const x = kiln.zeros([1]);
  assert.equal((f(x) as kiln.Tensor).item(), Math.fround(1e-7));
  eps = 2e-7;
  assert.equal((f(x) as kiln.Tensor).item(), Math.fround(2e-7));
  eps = -0;
  assert.ok(Object.is((f(kiln.tensor([-0], { dtype: 'float32' })) as kiln.Tensor).item(), -0), 'a -0 constant is not a 0 constant');
  assert.equal(kiln.stats().eagerFallbacks, 0);
});

test('common subexpression elimination tells -0 from 0 (constants and scalar operands)', () => {
  kiln.compiler.reset();
  const f = kiln.compile((x: kiln.Tensor) => [
    x.mul(kiln.tensor([0], { dtype: 'float32' })), x.mul(kiln.tensor([-0], { dtype: 'float32' })),
    x.mul(0), x.mul(-0),
  ], { fullgraph: true });
  const x = kiln.tensor([1], { dtype: 'float32' });
  const signs = (f(x) as kiln.Tensor[]).map((t) => (Object.is(t.item(), -0) ? '-0' : String(t.item())));
  assert.deepEqual(signs, ['0', '-0', '0', '-0']);
  assert.equal(kiln.stats().fusionFallbacks, 0);
});
