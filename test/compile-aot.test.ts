// AOTAutograd (issue 17): a compiled module in an ordinary training loop, loss.backward() and
// optimizer.step() outside, on every CPU backend: W2's MLP, W6's DLRM and a GPT trained on
// next-token prediction equal the eager loop for 20 steps; plus the pieces around it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import { nativeUnavailableReason } from 'kilnjs/node';
import { Dlrm, W6_DENSE, W6_TABLES } from '../bench/workloads/w6.js';
import { GPT } from '../examples/gpt.js';
import { checkTorchHabit, type HabitCase } from './helpers/torch-habit.js';

process.env.KILN_CACHE_DIR ??= join(tmpdir(), 'kiln-test-cache');
const nativeSkip = nativeUnavailableReason();
const BACKENDS = ['js', 'wasm', 'native'] as const;
const STEPS = 20;

function batches(n: number, make: () => kiln.Tensor[]): kiln.Tensor[][] {
  return Array.from({ length: n }, () => make().map((t) => kiln.keep(t)));
}

kiln.manualSeed(11);
const MLP: HabitCase = {
  name: 'W2 MLP 784-1024-1024-10',
  build() {
    kiln.manualSeed(1);
    const model = new kiln.nn.Sequential(new kiln.nn.Linear(784, 1024), new kiln.nn.ReLU(), new kiln.nn.Linear(1024, 1024), new kiln.nn.ReLU(), new kiln.nn.Linear(1024, 10));
    return { model, opt: new kiln.optim.SGD(model.parameters(), { lr: 0.05, momentum: 0.9 }) };
  },
  batches: batches(3, () => [kiln.randn([32, 784]), kiln.randint(0, 10, [32])]),
  loss: (out, b) => kiln.crossEntropy(out, b[1]!),
};

const ROWS = 300;
const DLRM: HabitCase = {
  name: 'W6 DLRM',
  build() {
    kiln.manualSeed(2);
    const model = new Dlrm(ROWS);
    return { model, opt: new kiln.optim.Adam(model.parameters(), { lr: 1e-3 }) };
  },
  batches: batches(3, () => [kiln.randn([64, W6_DENSE]), ...Array.from({ length: W6_TABLES }, () => kiln.randint(0, ROWS, [64, 1])), kiln.randint(0, 2, [64, 1]).float()]),
  loss: (out, b) => kiln.binaryCrossEntropyWithLogits(out, b.at(-1)!),
};

const VOCAB = 40, SEQ = 16;
const TINY_GPT: HabitCase = {
  name: 'GPT (training variant of W7: d 64, 4 heads, 2 layers)',
  build() {
    kiln.manualSeed(3);
    const model = new GPT({ vocabSize: VOCAB, blockSize: SEQ, nEmbd: 64, nHead: 4, nLayer: 2 });
    return { model, opt: new kiln.optim.AdamW(model.parameters(), { lr: 3e-3 }) };
  },
  batches: batches(3, () => [kiln.randint(0, VOCAB, [2, SEQ]), kiln.randint(0, VOCAB, [2 * SEQ])]),
  loss: (out, b) => kiln.crossEntropy(out.reshape([2 * SEQ, VOCAB]), b[1]!),
};

for (const backend of BACKENDS) {
  const skip = backend === 'native' && nativeSkip ? `native backend unavailable: ${nativeSkip}` : false;
  for (const c of [MLP, DLRM, TINY_GPT]) {
    test(`torch-habit loop: ${c.name} on ${backend} equals eager for ${STEPS} steps`, { skip }, (t) => {
      const worst = checkTorchHabit(c, backend, STEPS);
      t.diagnostic(`largest relative differences: loss ${worst.loss.toExponential(2)}, grad ${worst.grad.toExponential(2)}`);
    });
  }
}

// ---- dynamic shapes, inference in grad mode, autograd semantics ----

const smallMlp = () => {
  kiln.manualSeed(4);
  return new kiln.nn.Sequential(new kiln.nn.Linear(24, 48), new kiln.nn.GELU({ approximate: 'tanh' }), new kiln.nn.Linear(48, 6));
};

function maxAbsDiff(a: kiln.Tensor, b: kiln.Tensor): number {
  const x = a.dataSync(), y = b.dataSync();
  assert.equal(x.length, y.length);
  let d = 0;
  for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i]! - y[i]!));
  return d;
}

for (const backend of BACKENDS) {
  const skip = backend === 'native' && nativeSkip ? `native backend unavailable: ${nativeSkip}` : false;
  test(`20 batch sizes in grad mode compile at most twice, grads equal eager (${backend})`, { skip }, () => {
    kiln.compiler.reset();
    const eager = smallMlp(), model = smallMlp();
    const cm = kiln.compile(model, { backend });
    for (let i = 0; i < 20; i++) {
      const n = 3 + 5 * i;
      const x = kiln.randn([n, 24]), y = kiln.randint(0, 6, [n]);
      kiln.scope(() => {
        for (const m of [eager, model]) m.zeroGrad();
        kiln.crossEntropy(eager.call(x), y).backward();
        kiln.crossEntropy(cm(x), y).backward();
        eager.parameters().forEach((p, k) => assert.ok(maxAbsDiff(model.parameters()[k]!.grad!, p.grad!) < 1e-5, `batch ${n}: grad ${k}`));
      });
    }
    const s = kiln.stats();
    assert.ok(s.compiles <= 2, `${s.compiles} compiles: ${JSON.stringify(s.recompiles)}`);
    assert.equal(s.dynamicCompiles.length, 1, JSON.stringify(s.dynamicFailures));
    assert.equal(s.eagerFallbacks, 0);
    assert.equal(s.interpretedReplays, 0);
    assert.equal(s.fusionFallbacks, 0);
    assert.equal(s.cacheHits, 18);
  });
}

test('compiled inference in grad mode runs the compiled forward, saves what backward needs, and frees it when the result goes', () => {
  kiln.compiler.reset();
  const model = smallMlp();
  const cm = kiln.compile(model);
  const x = kiln.randn([16, 24]);
  const want = kiln.noGrad(() => model.call(x));
  kiln.scope(() => { cm(x); });
  const before = kiln.memory();
  for (let i = 0; i < 3; i++) {
    kiln.scope(() => {
      const out = cm(x);
      assert.ok(out.requiresGrad && out.gradFn?.name === 'compiled Sequential');
      assert.ok(maxAbsDiff(out, want) < 1e-6);
    });
  }
  const after = kiln.memory();
  assert.equal(after.tensors, before.tensors, 'no tensor left behind');
  assert.equal(after.bytes, before.bytes, 'saved buffers freed with the result');
  const s = kiln.stats();
  assert.equal(s.interpretedReplays, 0);
  assert.equal(s.aotCompiles, 1);
  assert.equal(s.cacheHits, 3);
});

test('retainGraph: backward twice through a compiled forward accumulates as eager; a third without it throws', () => {
  kiln.compiler.reset();
  const eager = smallMlp(), model = smallMlp();
  const cm = kiln.compile(model);
  const x = kiln.randn([5, 24]);
  kiln.scope(() => { cm(x); }); // trace
  kiln.scope(() => {
    const le = eager.call(x).square().sum(), lc = cm(x).square().sum();
    le.backward(undefined, { retainGraph: true });
    le.backward();
    lc.backward(undefined, { retainGraph: true });
    lc.backward();
    eager.parameters().forEach((p, k) => assert.ok(maxAbsDiff(model.parameters()[k]!.grad!, p.grad!) < 1e-5));
    assert.throws(() => lc.backward(), kiln.AutogradError);
  });
});

test('a value saved for a compiled backward that is then changed in place is an error, as in eager', () => {
  kiln.compiler.reset();
  const w = kiln.keep(kiln.randn([4]).requiresGrad_());
  const f = kiln.compile((x: kiln.Tensor) => x.mul(w).exp());
  const x = kiln.randn([4]);
  kiln.scope(() => {
    const y = f(x);
    kiln.noGrad(() => y.mul_(2)); // exp's output is what its backward reads
    assert.throws(() => y.sum().backward(), (e: Error) => e instanceof kiln.AutogradError && /modified by an in-place operation/.test(e.message));
  });
});

test('several results: a backward through one of them leaves the inputs only the others reach without a .grad', () => {
  kiln.compiler.reset();
  const a = kiln.keep(kiln.randn([3, 4]).requiresGrad_()), b = kiln.keep(kiln.randn([3, 4]).requiresGrad_());
  const f = kiln.compile((x: kiln.Tensor) => [x.mul(a).tanh(), x.add(b).sigmoid()] as const);
  const x = kiln.randn([3, 4]);
  for (let i = 0; i < 2; i++) {
    a.grad = null;
    b.grad = null;
    kiln.scope(() => {
      const [p, q] = f(x);
      // one compiled node serves both results (as torch's): keep it for the second backward
      p.sum().backward(undefined, { retainGraph: true });
      assert.ok(maxAbsDiff(a.grad!, kiln.noGrad(() => x.mul(kiln.sub(1, x.mul(a).tanh().square())))) < 1e-6);
      assert.equal(b.grad, null, 'no gradient reached b');
      q.mul(2).sum().backward();
      assert.ok(b.grad);
    });
  }
  assert.equal(kiln.stats().interpretedReplays, 0);
});

test('gradients flow through a compiled forward into eager history: a non-leaf argument and a captured non-leaf tensor', () => {
  kiln.compiler.reset();
  const w0 = kiln.keep(kiln.randn([4, 4]).requiresGrad_()), v0 = kiln.keep(kiln.randn([4]).requiresGrad_());
  const x = kiln.randn([2, 4]);
  const run = (compiled: boolean) => kiln.scope(() => {
    w0.grad = null;
    v0.grad = null;
    const v = v0.mul(3); // captured by the closure, made by eager code with grad
    const g = (h: kiln.Tensor) => h.add(v).relu().sum(1);
    const h = x.matmul(w0); // a non-leaf argument
    const f = compiled ? kiln.compile(g) : g;
    f(h).sum().backward(undefined, { retainGraph: compiled });
    if (compiled) f(h).sum().backward(); // the replay too, through the same eager history
    return [kiln.keep(w0.grad!.clone()), kiln.keep(v0.grad!.clone())];
  });
  const [we, ve] = run(false);
  const [wc, vc] = run(true);
  assert.ok(maxAbsDiff(wc!, we!.mul(2)) < 1e-5);
  assert.ok(maxAbsDiff(vc!, ve!.mul(2)) < 1e-5);
  assert.equal(kiln.stats().interpretedReplays, 0);
});

test('a graph break inside a compiled forward: each segment gets its compiled pair, grads equal eager', () => {
  kiln.compiler.reset();
  const eager = smallMlp(), model = smallMlp();
  const forward = (m: kiln.nn.Module) => (x: kiln.Tensor) => {
    const h = (m as kiln.nn.Sequential).call(x);
    const scale = h.abs().max().item() > 0 ? 2 : 1; // a read: a graph break
    return h.mul(scale).tanh();
  };
  const f = kiln.compile(forward(model));
  const x = kiln.randn([7, 24]);
  for (let i = 0; i < 3; i++) {
    kiln.scope(() => {
      eager.zeroGrad();
      model.zeroGrad();
      forward(eager)(x).sum().backward();
      f(x).sum().backward();
      eager.parameters().forEach((p, k) => assert.ok(maxAbsDiff(model.parameters()[k]!.grad!, p.grad!) < 1e-5, `call ${i}: grad ${k}`));
    });
  }
  const s = kiln.stats();
  assert.ok(s.graphBreaks.length >= 1);
  assert.equal(s.aotCompiles, 2, 'one pair per segment');
  assert.ok(s.segmentHits >= 4, 'later calls find both pairs by structure');
  assert.equal(s.interpretedReplays, 0);
});

test('a whole training step with a read between forward and backward runs the earlier segment\'s compiled backward inside the trace', () => {
  kiln.compiler.reset();
  const eager = smallMlp(), model = smallMlp();
  const oe = new kiln.optim.SGD(eager.parameters(), { lr: 0.1 }), oc = new kiln.optim.SGD(model.parameters(), { lr: 0.1 });
  const step = (m: kiln.nn.Module, o: kiln.optim.SGD) => (x: kiln.Tensor, y: kiln.Tensor) => {
    o.zeroGrad();
    const loss = kiln.crossEntropy((m as kiln.nn.Sequential).call(x), y);
    if (loss.item() > 0) { loss.backward(); o.step(); }
    return loss;
  };
  const f = kiln.compile(step(model, oc));
  const x = kiln.randn([9, 24]), y = kiln.randint(0, 6, [9]);
  for (let i = 0; i < 4; i++) {
    const le = kiln.scope(() => step(eager, oe)(x, y).item());
    const lc = kiln.scope(() => f(x, y).item());
    assert.ok(Math.abs(le - lc) <= 1e-5 * Math.abs(le), `step ${i}: ${le} vs ${lc}`);
  }
  eager.parameters().forEach((p, k) => assert.ok(maxAbsDiff(model.parameters()[k]!, p) < 1e-5));
  assert.equal(kiln.stats().interpretedReplays, 0);
});

test('a compiled step that runs backward through a stepped slice works from its first call', () => {
  kiln.compiler.reset();
  const w = kiln.keep(kiln.randn([4, 6]).requiresGrad_());
  const f = kiln.compile(() => { w.grad = null; const l = kiln.slice(w, 1, 0, undefined, 2).square().sum(); l.backward(); return l; });
  for (let i = 0; i < 2; i++) kiln.scope(() => { f(); });
  const want = kiln.noGrad(() => w.mul(2).mul(kiln.tensor([1, 0, 1, 0, 1, 0])));
  assert.ok(maxAbsDiff(w.grad!, want) < 1e-6);
});

test('.grad of arguments that require grad, with backward inside the compiled function, accumulates as eager', () => {
  kiln.compiler.reset();
  const z = kiln.keep(kiln.randn([5]).requiresGrad_());
  const f = kiln.compile((z: kiln.Tensor) => { const l = z.mul(z).sum(); l.backward(); return l; });
  for (let i = 0; i < 3; i++) kiln.scope(() => { f(z); });
  assert.ok(maxAbsDiff(z.grad!, kiln.noGrad(() => z.mul(6))) < 1e-5, 'three calls leave 6z, as eager');
  const s = kiln.stats();
  assert.equal(s.compiles, 2, 'a null .grad, then one to accumulate into');
  assert.equal(s.cacheHits, 1);
  const other = kiln.randn([5]).requiresGrad_();
  kiln.scope(() => { f(other); });
  assert.ok(maxAbsDiff(other.grad!, kiln.noGrad(() => other.mul(2))) < 1e-5, 'another argument gets its own .grad');
  assert.ok(maxAbsDiff(z.grad!, kiln.noGrad(() => z.mul(6))) < 1e-5, 'and z is untouched');
});
