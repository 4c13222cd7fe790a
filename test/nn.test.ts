import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import { loadSafetensors, loadSafetensorsWithMetadata, saveSafetensors } from 'kilnjs/node';

const { nn } = kiln;
type Tensor = kiln.Tensor;

// --- helpers -------------------------------------------------------------------------------

const vals = (t: Tensor): number[] => Array.from(t.dataSync());

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-5, what = 'value') {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!, e = expected[i]!;
    assert.ok(Math.abs(a - e) <= tol * (1 + Math.abs(e)), `${what}[${i}]: got ${a}, expected ${e}`);
  }
}

function stats(t: Tensor) {
  const v = vals(t);
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  const variance = v.reduce((a, b) => a + (b - mean) ** 2, 0) / v.length;
  return { mean, std: Math.sqrt(variance), min: Math.min(...v), max: Math.max(...v) };
}

const shapes = (sd: Record<string, Tensor>) => Object.fromEntries(Object.entries(sd).map(([k, t]) => [k, [...t.shape]]));

function assertStateDictError(fn: () => unknown, ...mustMention: string[]) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof kiln.StateDictError, `expected StateDictError, got ${String(e)}`);
    for (const s of mustMention) assert.ok(e.message.includes(s), `message ${JSON.stringify(e.message)} lacks ${JSON.stringify(s)}`);
    return true;
  });
}

class TwoLayer extends nn.Module {
  layers = new nn.ModuleList([new nn.Linear(3, 4), new nn.Linear(4, 2)]);
  norm = new nn.LayerNorm(2);
  forward(x: Tensor): Tensor {
    let y = x;
    for (const l of this.layers) y = l.call(y).relu();
    return this.norm.call(y);
  }
}

// --- Module --------------------------------------------------------------------------------

describe('Module', () => {
  test('Sequential(Linear, ReLU, Linear) has torch names, shapes and printout', () => {
    const net = new nn.Sequential(new nn.Linear(2, 8), new nn.ReLU(), new nn.Linear(8, 3));
    assert.deepEqual(shapes(net.stateDict()), { '0.weight': [8, 2], '0.bias': [8], '2.weight': [3, 8], '2.bias': [3] });
    assert.deepEqual(net.namedParameters().map(([n]) => n), ['0.weight', '0.bias', '2.weight', '2.bias']);
    assert.deepEqual(net.parameters().map((p) => p.name), ['0.weight', '0.bias', '2.weight', '2.bias']);
    assert.ok(net.parameters().every((p) => p.requiresGrad && p.isLeaf));
    assert.deepEqual(net.call(kiln.randn([5, 2])).shape, [5, 3]);
    assert.equal(net.length, 3);
    assert.ok(net.at(-1) instanceof nn.Linear);
    assert.equal(
      net.toString(),
      'Sequential(\n  (0): Linear(in_features=2, out_features=8, bias=True)\n  (1): ReLU()\n  (2): Linear(in_features=8, out_features=3, bias=True)\n)',
    );
  });

  test('fields holding modules and parameters are discovered, with dotted names', () => {
    const m = new TwoLayer();
    assert.deepEqual(m.namedParameters().map(([n]) => n), [
      'layers.0.weight', 'layers.0.bias', 'layers.1.weight', 'layers.1.bias', 'norm.weight', 'norm.bias',
    ]);
    assert.equal(m.layers.at(1).bias!.name, 'layers.1.bias');
    assert.deepEqual(m.namedChildren().map(([n]) => n), ['layers', 'norm']);
    assert.deepEqual(m.namedModules().map(([n]) => n), ['', 'layers', 'layers.0', 'layers.1', 'norm']);
    assert.equal(m.getSubmodule('layers.1'), m.layers.at(1));
    assert.deepEqual(m.call(kiln.randn([2, 3])).shape, [2, 2]);
  });

  test('explicit registration, null slots, non-persistent buffers, shared parameters', () => {
    class Custom extends nn.Module {
      scale: Tensor;
      constructor() {
        super();
        this.scale = this.registerParameter('scale', kiln.ones([2]));
        this.registerParameter('unused', null);
        this.registerBuffer('table', kiln.zeros([2]));
        this.registerBuffer('cache', kiln.zeros([3]), { persistent: false });
        this.registerModule('inner', new nn.Linear(2, 2, { bias: false }));
      }
      forward(x: Tensor) {
        return x.mul(this.scale);
      }
    }
    const c = new Custom();
    assert.deepEqual(Object.keys(c.stateDict()), ['scale', 'table', 'inner.weight']);
    assert.deepEqual(c.namedBuffers().map(([n]) => n), ['table', 'cache']);
    assert.ok(nn.isParameter(c.scale) && c.scale.requiresGrad);
    assert.throws(() => c.registerBuffer('scale', kiln.zeros([1])), /already a parameter/);
    assert.throws(() => c.registerParameter('forward', kiln.zeros([1])), /already a property/);
    assert.throws(() => c.registerParameter('a.b', kiln.zeros([1])), /without '\.'/);

    // weight tying: listed once by parameters(), under both names in the state dict (as torch)
    const tied = new nn.Sequential(new nn.Linear(3, 3), new nn.Linear(3, 3));
    (tied.at(1) as kiln.nn.Linear).weight = (tied.at(0) as kiln.nn.Linear).weight;
    assert.equal(tied.parameters().length, 3);
    assert.deepEqual(Object.keys(tied.stateDict()), ['0.weight', '0.bias', '1.weight', '1.bias']);

    // a parameter slot overwritten with a plain tensor is reported, not silently trained
    const lin = new nn.Linear(2, 2);
    lin.weight = kiln.zeros([2, 2]);
    assert.throws(() => lin.parameters(), /plain tensor/);

    // a plain array of modules would silently escape training: it is reported
    class Listed extends nn.Module {
      blocks = [new nn.Linear(2, 2)];
      forward(x: Tensor) {
        return x;
      }
    }
    assert.throws(() => new Listed().parameters(), /ModuleList/);
  });

  test('parameters and buffers survive kiln.scope', () => {
    const lin = kiln.scope(() => new nn.Linear(4, 4));
    const bn = kiln.scope(() => new nn.BatchNorm1d(4));
    assert.ok(!lin.weight.isDisposed && !lin.bias!.isDisposed);
    assert.ok(bn.buffers().every((b) => !b.isDisposed));
    assert.deepEqual(lin.call(kiln.ones([1, 4])).shape, [1, 4]);
  });

  test('train/eval recurse, zeroGrad drops gradients', () => {
    const m = new TwoLayer();
    m.eval();
    assert.ok(m.modules().every((x) => !x.training));
    m.train();
    assert.ok(m.modules().every((x) => x.training));
    m.call(kiln.randn([4, 3])).sum().backward();
    assert.ok(m.parameters().every((p) => p.grad !== null));
    m.zeroGrad(false);
    assert.ok(m.parameters().every((p) => p.grad !== null && vals(p.grad).every((v) => v === 0)));
    m.zeroGrad();
    assert.ok(m.parameters().every((p) => p.grad === null));
  });

  test('requiresGrad_ freezes, apply visits every module', () => {
    const m = new TwoLayer();
    m.requiresGrad_(false);
    assert.ok(m.parameters().every((p) => !p.requiresGrad));
    const seen: string[] = [];
    m.apply((x) => seen.push(x.typeName));
    assert.deepEqual(seen, ['Linear', 'Linear', 'ModuleList', 'LayerNorm', 'TwoLayer']);
  });
});

// --- state dicts ---------------------------------------------------------------------------

describe('stateDict / loadStateDict', () => {
  test('torch key names and layouts for each layer', () => {
    assert.deepEqual(shapes(new nn.Conv2d(3, 8, 3).stateDict()), { weight: [8, 3, 3, 3], bias: [8] });
    assert.deepEqual(shapes(new nn.Conv2d(4, 8, [3, 5], { groups: 2, bias: false }).stateDict()), { weight: [8, 2, 3, 5] });
    const bn = new nn.BatchNorm2d(5).stateDict();
    assert.deepEqual(shapes(bn), { weight: [5], bias: [5], running_mean: [5], running_var: [5], num_batches_tracked: [] });
    assert.equal(bn.num_batches_tracked!.dtype, 'int32');
    assert.equal(bn.num_batches_tracked!.item(), 0);
    assert.deepEqual(shapes(new nn.LayerNorm(6).stateDict()), { weight: [6], bias: [6] });
    assert.deepEqual(shapes(new nn.Embedding(10, 4).stateDict()), { weight: [10, 4] });
    assert.deepEqual(shapes(new nn.MultiheadAttention(8, 2).stateDict()), {
      in_proj_weight: [24, 8], in_proj_bias: [24], 'out_proj.weight': [8, 8], 'out_proj.bias': [8],
    });
  });

  test('round trip copies values in place', () => {
    kiln.manualSeed(1);
    const a = new TwoLayer();
    kiln.manualSeed(2);
    const b = new TwoLayer();
    const x = kiln.randn([3, 3]);
    const before = b.parameters();
    assert.notDeepEqual(vals(a.call(x)), vals(b.call(x)));
    const r = b.loadStateDict(a.stateDict());
    assert.deepEqual(r, { missingKeys: [], unexpectedKeys: [] });
    assert.deepEqual(vals(a.call(x)), vals(b.call(x)));
    assert.ok(b.parameters().every((p, i) => p === before[i]), 'the same tensors, written in place');
    assert.ok(b.parameters().every((p) => p.requiresGrad));
  });

  test('errors list missing, unexpected and mis-shaped keys, and change nothing', () => {
    const net = new nn.Sequential(new nn.Linear(2, 4), new nn.ReLU(), new nn.Linear(4, 3));
    const snapshot = vals((net.at(0) as kiln.nn.Linear).weight);
    const full = () => ({ ...new nn.Sequential(new nn.Linear(2, 4), new nn.ReLU(), new nn.Linear(4, 3)).stateDict() });

    const missing = full();
    delete missing['2.bias'];
    assertStateDictError(() => net.loadStateDict(missing), 'missing keys (1): 2.bias', 'strict: false');

    const extra = { ...full(), 'head.weight': kiln.zeros([1]) };
    assertStateDictError(() => net.loadStateDict(extra), 'unexpected keys (1): head.weight');

    const wrong = { ...full(), '0.weight': kiln.zeros([2, 4]), '2.bias': kiln.zeros([5]) };
    assertStateDictError(() => net.loadStateDict(wrong), 'mis-shaped keys (2)', '0.weight: expected [4, 2], got [2, 4]', '2.bias: expected [3], got [5]', 'transposed');
    assertStateDictError(() => net.loadStateDict(wrong, { strict: false }), 'mis-shaped');

    const prefixed = Object.fromEntries(Object.entries(full()).map(([k, v]) => [`module.${k}`, v]));
    assertStateDictError(() => net.loadStateDict(prefixed), "extra prefix 'module.'");

    assert.deepEqual(vals((net.at(0) as kiln.nn.Linear).weight), snapshot, 'a failed load writes nothing');

    const r = net.loadStateDict({ ...missing, 'head.weight': kiln.zeros([1]) }, { strict: false });
    assert.deepEqual(r, { missingKeys: ['2.bias'], unexpectedKeys: ['head.weight'] });
    assert.deepEqual(vals((net.at(0) as kiln.nn.Linear).weight), vals(missing['0.weight']!));
  });

  test('safetensors file round trip through kiln/node', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kiln-nn-'));
    try {
      kiln.manualSeed(3);
      const a = new nn.Sequential(new nn.Conv2d(2, 3, 3), new nn.BatchNorm2d(3), new nn.Flatten(), new nn.Linear(12, 2));
      a.call(kiln.randn([2, 2, 4, 4])); // moves the running stats and the counter
      const file = join(dir, 'model.safetensors');
      await saveSafetensors(file, a.stateDict(), { format: 'pt' });
      const loaded = await loadSafetensors(file);
      assert.deepEqual(Object.keys(loaded).sort(), Object.keys(a.stateDict()).sort());
      assert.equal(loaded['1.num_batches_tracked']!.dtype, 'int32');
      assert.equal(loaded['1.num_batches_tracked']!.item(), 1);
      kiln.manualSeed(4);
      const b = new nn.Sequential(new nn.Conv2d(2, 3, 3), new nn.BatchNorm2d(3), new nn.Flatten(), new nn.Linear(12, 2));
      b.loadStateDict(loaded);
      for (const [k, t] of Object.entries(a.stateDict())) assert.deepEqual(vals(b.stateDict()[k]!), vals(t), k);
      a.eval();
      b.eval();
      const x = kiln.randn([1, 2, 4, 4]);
      assert.deepEqual(vals(b.call(x)), vals(a.call(x)));
      assert.deepEqual((await loadSafetensorsWithMetadata(file)).metadata, { format: 'pt' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// --- layers --------------------------------------------------------------------------------

describe('layers', () => {
  test('Linear init: U(±1/sqrt(in)) for weight and bias', () => {
    kiln.manualSeed(0);
    const lin = new nn.Linear(256, 128);
    const b = 1 / 16;
    const w = stats(lin.weight);
    assert.ok(w.min >= -b && w.max <= b, `weight in [-${b}, ${b}]`);
    assert.ok(Math.abs(w.mean) < 0.002, `weight mean ${w.mean}`);
    assert.ok(Math.abs(w.std - b / Math.sqrt(3)) < 0.002, `weight std ${w.std}`);
    const bias = stats(lin.bias!);
    assert.ok(bias.min >= -b && bias.max <= b && bias.max - bias.min > b);
    // reproducible under manualSeed
    kiln.manualSeed(0);
    assert.deepEqual(vals(new nn.Linear(256, 128).weight), vals(lin.weight));
    assert.equal(new nn.Linear(3, 2, { bias: false }).bias, null);
  });

  test('Conv2d: init bound over in/groups * kh * kw, options, output matches kiln.conv2d', () => {
    kiln.manualSeed(0);
    const conv = new nn.Conv2d(4, 6, 3, { stride: 2, padding: 1, dilation: 1, groups: 2 });
    const b = 1 / Math.sqrt(2 * 9);
    const w = stats(conv.weight);
    assert.ok(w.min >= -b && w.max <= b && w.max > 0.8 * b);
    const x = kiln.randn([2, 4, 7, 7]);
    const y = conv.call(x);
    assert.deepEqual(y.shape, [2, 6, 4, 4]);
    assert.deepEqual(vals(y), vals(kiln.conv2d(x, conv.weight, conv.bias, { stride: 2, padding: 1, groups: 2 })));
    assert.deepEqual(new nn.Conv2d(3, 5, 3, { padding: 'same', dilation: 2 }).call(kiln.randn([1, 3, 6, 6])).shape, [1, 5, 6, 6]);
    assert.deepEqual(new nn.Conv2d(3, 5, 3).call(kiln.randn([3, 6, 6])).shape, [5, 4, 4], 'unbatched');
    assert.equal(conv.toString(), 'Conv2d(4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), groups=2)');
    assert.throws(() => new nn.Conv2d(3, 6, 3, { groups: 2 }), /groups/);
  });

  test('Embedding: N(0, 1) init, lookup, padding row stays zero with no gradient', () => {
    kiln.manualSeed(0);
    const e = new nn.Embedding(1000, 32);
    const s = stats(e.weight);
    assert.ok(Math.abs(s.mean) < 0.02 && Math.abs(s.std - 1) < 0.02, `mean ${s.mean} std ${s.std}`);
    const idx = kiln.tensor([[3, 1], [0, 3]], { dtype: 'int32' });
    const out = e.call(idx);
    assert.deepEqual(out.shape, [2, 2, 32]);
    assert.deepEqual(vals(out.select(0, 0).select(0, 0)), vals(e.weight.select(0, 3)));

    const p = new nn.Embedding(5, 3, { paddingIdx: 0 });
    assert.deepEqual(vals(p.weight.select(0, 0)), [0, 0, 0]);
    p.call(kiln.tensor([0, 2, 0], { dtype: 'int32' })).sum().backward();
    const g = p.weight.grad!;
    assert.deepEqual(vals(g.select(0, 0)), [0, 0, 0]);
    assert.deepEqual(vals(g.select(0, 2)), [1, 1, 1]);
  });

  test('EmbeddingBag sum and mean, 2-D bags and 1-D + offsets, vs hand-computed', () => {
    kiln.manualSeed(5);
    for (const mode of ['sum', 'mean'] as const) {
      const bag = new nn.EmbeddingBag(6, 3, { mode });
      const w = bag.weight.toArray() as number[][];
      const reduce = (ids: number[]) => [0, 1, 2].map((d) => {
        if (ids.length === 0) return 0;
        const s = ids.reduce((a, i) => a + w[i]![d]!, 0);
        return mode === 'sum' ? s : s / ids.length;
      });

      const fixed = bag.call(kiln.tensor([[1, 2, 4], [5, 5, 0]], { dtype: 'int32' }));
      assert.deepEqual(fixed.shape, [2, 3]);
      assertClose(vals(fixed), [...reduce([1, 2, 4]), ...reduce([5, 5, 0])], 1e-6, `${mode} 2-D`);

      // bags [1, 2] | [] | [3, 4, 5, 0] | []  (empty bags, including a trailing one)
      const input = kiln.tensor([1, 2, 3, 4, 5, 0], { dtype: 'int32' });
      const offsets = kiln.tensor([0, 2, 2, 6], { dtype: 'int32' });
      const ragged = bag.call(input, offsets);
      assert.deepEqual(ragged.shape, [4, 3]);
      assertClose(vals(ragged), [...reduce([1, 2]), ...reduce([]), ...reduce([3, 4, 5, 0]), ...reduce([])], 1e-6, `${mode} offsets`);

      const last = new nn.EmbeddingBag(6, 3, { mode, includeLastOffset: true });
      last.loadStateDict(bag.stateDict());
      assertClose(vals(last.call(input, kiln.tensor([0, 2, 2, 6, 6], { dtype: 'int32' }))), vals(ragged), 1e-6, 'includeLastOffset');

      // gradient reaches each used row once per use (scaled by 1/bag size for mean)
      ragged.sum().backward();
      const g = bag.weight.grad!.toArray() as number[][];
      assertClose(g.map((r) => r[0]!), mode === 'sum' ? [1, 1, 1, 1, 1, 1] : [0.25, 0.5, 0.5, 0.25, 0.25, 0.25], 1e-6, `${mode} grad`);
    }
    const bag = new nn.EmbeddingBag(4, 2, { mode: 'sum' });
    const w = bag.weight.toArray() as number[][];
    const weighted = bag.call(kiln.tensor([1, 3], { dtype: 'int32' }), kiln.tensor([0], { dtype: 'int32' }), kiln.tensor([2, -1]));
    assertClose(vals(weighted), [2 * w[1]![0]! - w[3]![0]!, 2 * w[1]![1]! - w[3]![1]!], 1e-6, 'perSampleWeights');
    assert.throws(() => bag.call(kiln.tensor([1, 2], { dtype: 'int32' })), /needs offsets/);
  });

  test('LayerNorm: ones/zeros init, normalizes the trailing dims', () => {
    const ln = new nn.LayerNorm([2, 3]);
    assert.deepEqual(vals(ln.weight!), [1, 1, 1, 1, 1, 1]);
    assert.deepEqual(vals(ln.bias!), [0, 0, 0, 0, 0, 0]);
    const y = ln.call(kiln.randn([4, 2, 3]).mul(5).add(3));
    const rows = y.reshape(4, 6).toArray() as number[][];
    for (const r of rows) {
      const m = r.reduce((a, b) => a + b, 0) / 6;
      const v = r.reduce((a, b) => a + (b - m) ** 2, 0) / 6;
      assert.ok(Math.abs(m) < 1e-5 && Math.abs(v - 1) < 1e-3);
    }
    assert.equal(ln.toString(), 'LayerNorm((2, 3), eps=1e-05, elementwise_affine=True)');
  });

  test('BatchNorm updates running stats in place in training, uses them in eval', () => {
    const bn = new nn.BatchNorm1d(2, { momentum: 0.1 });
    const rm = bn.running_mean!, rv = bn.running_var!;
    const x = kiln.tensor([[1, 10], [2, 20], [3, 30], [6, 40]]);
    const y = bn.call(x);
    // batch mean [3, 25]; unbiased variance [14/3, 500/3]; biased for normalizing
    assertClose(vals(rm), [0.3, 2.5], 1e-6, 'running_mean');
    assertClose(vals(rv), [0.9 + 0.1 * (14 / 3), 0.9 + 0.1 * (500 / 3)], 1e-5, 'running_var');
    assert.equal(bn.num_batches_tracked!.item(), 1);
    assert.equal(bn.running_mean, rm, 'updated in place');
    assertClose(vals(y.select(1, 0)), [1, 2, 3, 6].map((v) => (v - 3) / Math.sqrt(3.5 + 1e-5)), 1e-5, 'train output');
    bn.call(x);
    assert.equal(bn.num_batches_tracked!.item(), 2);

    bn.eval();
    const m = vals(rm), v = vals(rv);
    const before = vals(rm);
    const ye = bn.call(x);
    assertClose(vals(ye.select(1, 1)), [10, 20, 30, 40].map((t) => (t - m[1]!) / Math.sqrt(v[1]! + 1e-5)), 1e-5, 'eval output');
    assert.deepEqual(vals(rm), before, 'eval leaves the stats alone');
    assert.equal(bn.num_batches_tracked!.item(), 2);

    const bn2 = new nn.BatchNorm2d(3);
    assert.deepEqual(bn2.call(kiln.randn([2, 3, 4, 4])).shape, [2, 3, 4, 4]);
    assert.throws(() => bn2.call(kiln.randn([2, 4, 4, 4])), /channels/);
    assert.throws(() => new nn.BatchNorm1d(3).call(kiln.randn([1, 3])), /more than 1 value/);
    assert.equal(new nn.BatchNorm2d(3, { trackRunningStats: false }).stateDict().running_mean, undefined);
  });

  test('Dropout: identity in eval, masks and rescales in training', () => {
    const d = new nn.Dropout(0.25);
    const x = kiln.ones([4000]);
    d.eval();
    assert.deepEqual(vals(d.call(x)), vals(x));
    d.train();
    const v = vals(d.call(x));
    const kept = v.filter((e) => e !== 0);
    assert.ok(kept.every((e) => Math.abs(e - 1 / 0.75) < 1e-6));
    assert.ok(Math.abs(kept.length / v.length - 0.75) < 0.03, `kept ${kept.length}`);
  });

  test('activations, Flatten', () => {
    const x = kiln.tensor([-2, -0.5, 0, 1.5]);
    const ref: [kiln.nn.Module, (v: number) => number][] = [
      [new nn.ReLU(), (v) => Math.max(v, 0)],
      [new nn.SiLU(), (v) => v / (1 + Math.exp(-v))],
      [new nn.Sigmoid(), (v) => 1 / (1 + Math.exp(-v))],
      [new nn.Tanh(), Math.tanh],
      [new nn.Softplus(), (v) => Math.log1p(Math.exp(v))],
      [new nn.GELU({ approximate: 'tanh' }), (v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)))],
      [new nn.LeakyReLU(0.1), (v) => (v >= 0 ? v : 0.1 * v)],
      [new nn.Identity(), (v) => v],
    ];
    for (const [m, f] of ref) assertClose(vals(m.call(x)), vals(x).map(f), 1e-5, m.typeName);
    assert.equal(new nn.GELU().toString(), "GELU(approximate='none')");
    assert.deepEqual(new nn.Flatten().call(kiln.zeros([2, 3, 4])).shape, [2, 12]);
    assert.deepEqual(new nn.Flatten(0, 1).call(kiln.zeros([2, 3, 4])).shape, [6, 4]);
  });

  test('MultiheadAttention: layouts, masks, causal, weights, init', () => {
    kiln.manualSeed(7);
    const e = 8, h = 2;
    const mha = new nn.MultiheadAttention(e, h);
    assert.deepEqual(vals(mha.in_proj_bias!), new Array(3 * e).fill(0));
    assert.deepEqual(vals(mha.out_proj.bias!), new Array(e).fill(0));
    const bound = Math.sqrt(6 / (e + 3 * e));
    assert.ok(stats(mha.in_proj_weight).max <= bound && stats(mha.in_proj_weight).min >= -bound);

    const x = kiln.randn([5, 3, e]); // [L, B, E]
    const y = mha.call(x);
    assert.deepEqual(y.shape, [5, 3, e]);

    const bf = new nn.MultiheadAttention(e, h, { batchFirst: true });
    bf.loadStateDict(mha.stateDict());
    assertClose(vals(bf.call(x.transpose(0, 1)).transpose(0, 1).contiguous()), vals(y), 1e-5, 'batchFirst');

    // the weights path (manual softmax) agrees with the scaledDotProductAttention path
    const { output, weights } = mha.forwardWithWeights(x);
    assertClose(vals(output), vals(y), 1e-5, 'forwardWithWeights');
    assert.deepEqual(weights.shape, [3, 5, 5]);
    assertClose(vals(weights.sum(-1)), new Array(15).fill(1), 1e-5, 'rows sum to 1');

    // cross-attention with separate key/value
    const kv = kiln.randn([7, 3, e]);
    assert.deepEqual(mha.call(x, kv, kv).shape, [5, 3, e]);

    // causal: output at position t ignores tokens after t; attnMask (bool, true = blocked) is the same thing
    const causal = mha.call(x, null, null, { isCausal: true });
    const x2 = kiln.cat([x.narrow(0, 0, 2), kiln.randn([3, 3, e])], 0);
    const causal2 = mha.call(x2, null, null, { isCausal: true });
    assertClose(vals(causal.narrow(0, 0, 2).contiguous()), vals(causal2.narrow(0, 0, 2).contiguous()), 1e-5, 'causal prefix');
    const blocked = kiln.ones([5, 5]).triu(1).bool();
    assertClose(vals(mha.call(x, null, null, { attnMask: blocked })), vals(causal), 1e-5, 'bool attnMask');
    const w = mha.forwardWithWeights(x, null, null, { isCausal: true }).weights.toArray() as number[][][];
    assert.ok(w.every((b) => b.every((row, i) => row.every((p, j) => j <= i || p === 0))));

    // key padding: a padded key gets zero weight
    const pad = kiln.tensor([[false, false, false, false, true], [false, false, false, false, false], [true, false, false, false, false]]);
    const wp = mha.forwardWithWeights(x, null, null, { keyPaddingMask: pad }).weights.toArray() as number[][][];
    assert.ok(wp[0]!.every((row) => row[4] === 0) && wp[2]!.every((row) => row[0] === 0) && wp[1]!.every((row) => row[4]! > 0));

    // unbatched [L, E] and gradients reach every parameter
    assert.deepEqual(mha.call(kiln.randn([4, e])).shape, [4, e]);
    mha.call(x).sum().backward();
    assert.ok(mha.parameters().every((p) => p.grad !== null));
    assert.equal(mha.toString(), 'MultiheadAttention(\n  (out_proj): Linear(in_features=8, out_features=8, bias=True)\n)');
  });
});
