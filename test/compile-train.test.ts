// A whole training step (forward, loss.backward(), optimizer.step(), zeroGrad) compiled as
// one graph with nn modules and each optimizer, against the same steps run eagerly.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { crossEntropyStep } from './helpers/train-step.js';
import { assertCompiledRan } from './helpers/compiled-ran.js';

function build(seed: number) {
  kiln.manualSeed(seed);
  return new kiln.nn.Sequential(new kiln.nn.Linear(8, 32), new kiln.nn.ReLU(), new kiln.nn.Linear(32, 4));
}

const optimizers: [string, (ps: kiln.Tensor[]) => kiln.optim.Optimizer<never>][] = [
  ['SGD momentum nesterov', (ps) => new kiln.optim.SGD(ps, { lr: 0.05, momentum: 0.9, nesterov: true, weightDecay: 1e-4 }) as never],
  ['Adam', (ps) => new kiln.optim.Adam(ps, { lr: 1e-2 }) as never],
  ['AdamW', (ps) => new kiln.optim.AdamW(ps, { lr: 1e-2, weightDecay: 0.01 }) as never],
];

for (const [name, makeOpt] of optimizers) {
  test(`compiled training step with ${name}: zero graph breaks, 20 steps equal eager within 1e-5`, () => {
    kiln.compiler.reset();
    const me = build(3), mc = build(3);
    const oe = makeOpt(me.parameters()), oc = makeOpt(mc.parameters());
    const x = kiln.keep(kiln.randn([64, 8]));
    const y = kiln.keep(kiln.randint(0, 4, [64]));
    const step = (m: kiln.nn.Sequential, o: kiln.optim.Optimizer<never>, x: kiln.Tensor, y: kiln.Tensor) => {
      o.zeroGrad();
      const loss = kiln.crossEntropy(m.forward(x) as kiln.Tensor, y);
      loss.backward();
      o.step();
      return loss;
    };
    const compiled = kiln.compile((x: kiln.Tensor, y: kiln.Tensor) => step(mc, oc, x, y), { fullgraph: true });
    for (let i = 0; i < 20; i++) {
      kiln.scope(() => {
        if (i === 10) { oe.paramGroups[0]!.lr *= 0.5; oc.paramGroups[0]!.lr *= 0.5; } // a schedule: no retrace
        const le = step(me, oe, x, y).item();
        const lc = (compiled(x, y) as kiln.Tensor).item();
        assert.ok(Math.abs(le - lc) <= 1e-5 * Math.abs(le), `step ${i}: eager ${le}, compiled ${lc}`);
      });
    }
    const pe = me.parameters(), pc = mc.parameters();
    pe.forEach((p, i) => {
      const a = p.dataSync(), b = pc[i]!.dataSync();
      for (let j = 0; j < a.length; j++) assert.ok(Math.abs(a[j]! - b[j]!) <= 1e-5 * Math.max(1, Math.abs(a[j]!)), `param ${i}[${j}]`);
    });
    const s = kiln.stats();
    assert.equal(s.graphBreaks.length, 0, 'no graph breaks');
    assert.ok(s.compiles <= 1, `compiled once (state made on the first step is a one-shot trace); got ${s.compiles}`);
    assert.ok(s.cacheHits >= 18, `replayed ${s.cacheHits} of 20 steps`);
    assertCompiledRan(name);
  });
}

test('1000 compiled SGD steps compile once and keep memory flat', () => {
  kiln.compiler.reset();
  const m = build(5);
  const opt = new kiln.optim.SGD(m.parameters(), { lr: 0.01 });
  const x = kiln.keep(kiln.randn([16, 8]));
  const y = kiln.keep(kiln.randint(0, 4, [16]));
  const step = kiln.compile(crossEntropyStep(m, opt));
  for (let i = 0; i < 10; i++) kiln.scope(() => { step(x, y); });
  const before = kiln.memory();
  for (let i = 0; i < 1000; i++) kiln.scope(() => { step(x, y); });
  const after = kiln.memory();
  assert.equal(after.tensors, before.tensors);
  assert.equal(after.bytes, before.bytes);
  assert.equal(kiln.stats().compiles, 1);
  assert.equal(kiln.stats().recompiles.length, 0);
  assertCompiledRan('1000 SGD steps');
});

test('the MLP example: compiled module forward and 20 compiled Adam steps equal eager (fullgraph)', async () => {
  const { MlpClassifier, buildMlpData } = await import('../examples/mlp.js');
  kiln.compiler.reset();
  const data = buildMlpData({ perClass: 50, seed: 2 });
  kiln.manualSeed(9);
  const me = new MlpClassifier(2, 64, data.classes);
  kiln.manualSeed(9);
  const mc = new MlpClassifier(2, 64, data.classes);
  const compiledModel = kiln.compile(mc, { fullgraph: true });
  kiln.noGrad(() => kiln.scope(() => {
    const a = me.call(data.xTest).dataSync(), b = (compiledModel(data.xTest) as kiln.Tensor).dataSync();
    for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i]! - b[i]!) <= 1e-5 * Math.max(1, Math.abs(a[i]!)));
  }));
  const oe = new kiln.optim.Adam(me.parameters(), { lr: 0.01 }), oc = new kiln.optim.Adam(mc.parameters(), { lr: 0.01 });
  const step = (m: InstanceType<typeof MlpClassifier>, o: kiln.optim.Adam, x: kiln.Tensor, y: kiln.Tensor) => {
    o.zeroGrad();
    const loss = kiln.crossEntropy(m.call(x), y);
    loss.backward();
    o.step();
    return loss;
  };
  const cstep = kiln.compile((x: kiln.Tensor, y: kiln.Tensor) => step(mc, oc, x, y), { fullgraph: true });
  for (let i = 0; i < 20; i++) {
    kiln.scope(() => {
      const le = step(me, oe, data.xTrain, data.yTrain).item();
      const lc = (cstep(data.xTrain, data.yTrain) as kiln.Tensor).item();
      assert.ok(Math.abs(le - lc) <= 1e-5 * Math.abs(le), `step ${i}: eager ${le}, compiled ${lc}`);
    });
  }
  me.parameters().forEach((p, i) => {
    const a = p.dataSync(), b = mc.parameters()[i]!.dataSync();
    for (let j = 0; j < a.length; j++) assert.ok(Math.abs(a[j]! - b[j]!) <= 1e-5 * Math.max(1, Math.abs(a[j]!)));
  });
  assert.equal(kiln.stats().graphBreaks.length, 0);
  assertCompiledRan('MLP example');
});

test('optimizer state created while tracing stays per parameter (CSE-merged values get their own memory), in every backend', () => {
  for (const backend of ['js', 'wasm', 'eager']) {
    kiln.compiler.reset();
    const m = build(11);
    const opt = new kiln.optim.AdamW(m.parameters(), { lr: 1e-2 });
    const x = kiln.keep(kiln.randn([8, 8])), y = kiln.keep(kiln.randint(0, 4, [8]));
    const step = kiln.compile(crossEntropyStep(m, opt), { fullgraph: true, backend });
    for (let i = 0; i < 3; i++) kiln.scope(() => { step(x, y); });
    const states = m.parameters().map((p) => (opt as unknown as { state: Map<kiln.Tensor, Record<string, kiln.Tensor>> }).state.get(p)!);
    const steps = states.map((s) => Object.values(s).find((t) => t.ndim === 0)!);
    assert.equal(new Set(steps.map((t) => t.storage)).size, steps.length, `${backend}: every parameter has its own step counter`);
    for (const t of steps) assert.equal(t.item(), 3, `${backend}: three steps counted`);
    // backend 'eager' replays the trace node by node by design: the first trace makes the
    // optimizer state (one-shot), the second is the entry, the third call replays it
    if (backend === 'eager') assert.deepEqual([kiln.stats().compiles, kiln.stats().cacheHits], [1, 1], 'eager: one entry, one replay');
    else assertCompiledRan(backend);
  }
});

test('a compiled step frees the grads its zeroGrad replaces before it runs: the wasm heap holds one set of grads at its peak', async (t) => {
  const { wasmUnavailableReason } = await import('../src/backend/wasm/index.js');
  const why = wasmUnavailableReason();
  if (why) return t.skip(why);
  const { resolveKernelBackend } = await import('../src/backend/registry.js');
  const { runtime } = await import('../src/ops/dispatch.js');
  const heap = (resolveKernelBackend('wasm', runtime.backend).backend as unknown as { heap: { stats(): { peakBytes: number; bytesInUse: number } } }).heap;
  kiln.compiler.reset();
  kiln.manualSeed(2);
  const m = new kiln.nn.Sequential(new kiln.nn.Linear(256, 512), new kiln.nn.ReLU(), new kiln.nn.Linear(512, 4));
  const opt = new kiln.optim.SGD(m.parameters(), { lr: 0.01 });
  const x = kiln.keep(kiln.randn([32, 256]));
  const y = kiln.keep(kiln.randint(0, 4, [32]));
  const held: kiln.Tensor[] = [];
  const step = kiln.compile(crossEntropyStep(m, opt), { backend: 'wasm', fullgraph: true });
  // the trace, then the first replay's check trace (a trace: old and new grads live together once)
  for (let i = 0; i < 2; i++) kiln.scope(() => { step(x, y); });
  const afterFirst = heap.stats().peakBytes;
  for (let i = 0; i < 3; i++) {
    held.push(m.parameters()[0]!.grad!);
    kiln.scope(() => { step(x, y); });
  }
  assert.equal(heap.stats().peakBytes, afterFirst, 'no second set of grads at the peak');
  // as in eager, a grad zeroGrad replaced is disposed, even when the caller still refers to it
  for (const g of held) assert.ok(g.isDisposed);
  assert.ok(!m.parameters()[0]!.grad!.isDisposed);
  assertCompiledRan('wasm step');
});
