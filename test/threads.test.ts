// Compiled kernels split across worker threads give the single-thread results.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kiln';
import { getThreadPool } from '../src/backend/js/threads.js';

function close(a: kiln.Tensor, b: kiln.Tensor, tol = 1e-5): void {
  const x = a.dataSync(), y = b.dataSync();
  let m = 0, s = 1e-6;
  for (let i = 0; i < y.length; i++) (m = Math.max(m, Math.abs(x[i]! - y[i]!))), (s = Math.max(s, Math.abs(y[i]!)));
  assert.ok(m / s < tol, `max diff ${m} (scale ${s})`);
}

test('large pointwise, row and matmul kernels run on the pool and equal eager', { skip: getThreadPool() ? false : 'no worker threads here (single core or no SharedArrayBuffer)' }, () => {
  kiln.compiler.reset();
  const pool = getThreadPool()!;
  const before = pool.launches;
  kiln.manualSeed(1);
  const x = kiln.randn([512, 384]), w = kiln.randn([384, 300]), b = kiln.randn([300]);
  const fns = [
    (x: kiln.Tensor) => x.mul(1.5).add(0.3).tanh().mul(x.sigmoid()),
    (x: kiln.Tensor) => kiln.softmax(x, -1).mul(x).sum(-1),
    (x: kiln.Tensor) => x.matmul(w).add(b).gelu('tanh'),
    (x: kiln.Tensor) => x.reshape([4, 128, 384]).matmul(w).relu(),
  ];
  for (const fn of fns) {
    const c = kiln.compile(fn);
    for (let i = 0; i < 2; i++) kiln.scope(() => close(c(x) as kiln.Tensor, fn(x)));
  }
  assert.ok(pool.launches - before >= 8, `pool ran ${pool.launches - before} kernels`);
});

test('a compiled training step with large layers matches eager with threads', { skip: getThreadPool() ? false : 'no worker threads here' }, () => {
  kiln.compiler.reset();
  const build = () => {
    kiln.manualSeed(4);
    return new kiln.nn.Sequential(new kiln.nn.Linear(256, 512), new kiln.nn.ReLU(), new kiln.nn.Linear(512, 10));
  };
  const me = build(), mc = build();
  const oe = new kiln.optim.SGD(me.parameters(), { lr: 0.05, momentum: 0.9 }), oc = new kiln.optim.SGD(mc.parameters(), { lr: 0.05, momentum: 0.9 });
  const x = kiln.keep(kiln.randn([256, 256])), y = kiln.keep(kiln.randint(0, 10, [256]));
  const step = (m: kiln.nn.Sequential, o: kiln.optim.SGD, x: kiln.Tensor, y: kiln.Tensor) => {
    o.zeroGrad();
    const l = kiln.crossEntropy(m.forward(x) as kiln.Tensor, y);
    l.backward();
    o.step();
    return l;
  };
  const c = kiln.compile((x: kiln.Tensor, y: kiln.Tensor) => step(mc, oc, x, y));
  for (let i = 0; i < 5; i++) {
    kiln.scope(() => {
      const le = step(me, oe, x, y).item(), lc = (c(x, y) as kiln.Tensor).item();
      assert.ok(Math.abs(le - lc) <= 1e-5 * Math.abs(le), `step ${i}: ${le} vs ${lc}`);
    });
  }
  // five momentum steps: float32 rounding differences (fast exp, fused rounding) compound a little
  me.parameters().forEach((p, i) => close(mc.parameters()[i]!, p, 1e-4));
});
