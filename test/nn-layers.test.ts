// The layers of issue 22 beyond their numerics (torch-layers.test.ts and the op table check
// those): forward hooks eager and compiled, ModuleDict, Unflatten, torch's state-dict keys and
// initializations, printing, and typed errors for bad arguments.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';

const { nn } = kiln;
type Tensor = kiln.Tensor;

const vals = (t: Tensor): number[] => Array.from(t.dataSync());

function assertKilnError(fn: () => unknown, type: new (...a: never[]) => Error, ...mustMention: string[]) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof type, `expected ${type.name}, got ${String(e)}`);
    for (const s of mustMention) assert.ok((e as Error).message.includes(s), `message ${JSON.stringify((e as Error).message)} lacks ${JSON.stringify(s)}`);
    return true;
  });
}

function bound(t: Tensor): { min: number; max: number } {
  const v = vals(t);
  return { min: Math.min(...v), max: Math.max(...v) };
}

describe('forward hooks', () => {
  test('pre-hooks replace the arguments, hooks the output, in registration order; remove() unregisters', () => {
    const lin = new nn.Linear(3, 2);
    const seen: string[] = [];
    const h1 = lin.registerForwardPreHook((_m, args) => {
      seen.push('pre');
      return [kiln.mul(args[0] as Tensor, 2)];
    });
    const h2 = lin.registerForwardHook((m, args, out) => {
      seen.push(`post ${m === lin} ${(args[0] as Tensor).shape}`);
      return kiln.add(out as Tensor, 1);
    });
    const h3 = lin.registerForwardHook(() => void seen.push('observer'));
    const x = kiln.randn([4, 3]);
    const y = lin.call(x);
    assert.deepEqual(seen, ['pre', 'post true 4,3', 'observer']);
    assert.deepEqual(vals(y), vals(kiln.add(lin.forward(kiln.mul(x, 2)), 1)));
    assert.equal(lin.hooksVersion, 3);
    h1.remove();
    h2.remove();
    h3.remove();
    h3.remove(); // a second remove does nothing
    assert.equal(lin.hooksVersion, 6);
    assert.deepEqual(vals(lin.call(x)), vals(lin.forward(x)));
    assertKilnError(() => lin.registerForwardHook(42 as never), kiln.ArgumentError, 'hook must be a function');
  });

  test('hooks on submodules run inside Sequential; a compiled module runs them while tracing and retraces when one is added', () => {
    kiln.compiler.reset();
    const net = new nn.Sequential(new nn.Linear(3, 4), new nn.ReLU(), new nn.Linear(4, 2));
    const x = kiln.keep(kiln.randn([5, 3]));
    const compiled = kiln.compile(net, { fullgraph: true, backend: 'js' }); // exact comparisons: the JS renderer computes as eager does
    const plain = kiln.noGrad(() => vals(compiled(x) as Tensor));
    // a hook that doubles the first layer's output changes the result: the guard must see it
    const handle = net.at(0).registerForwardHook((_m, _a, out) => kiln.mul(out as Tensor, 2));
    const eager = kiln.noGrad(() => vals(net.call(x)));
    const hooked = kiln.noGrad(() => vals(compiled(x) as Tensor));
    assert.deepEqual(hooked, eager, 'compiled call after adding a hook equals eager with the hook');
    assert.notDeepEqual(hooked, plain);
    const s = kiln.stats();
    assert.ok(s.recompiles.some((r) => r.reason.includes('forward hooks changed')), `recompile reasons: ${JSON.stringify(s.recompiles)}`);
    handle.remove();
    assert.deepEqual(kiln.noGrad(() => vals(compiled(x) as Tensor)), plain, 'removing the hook restores the plain result');
    // a hook on the compiled module itself runs too (compile(module) calls module.call)
    net.registerForwardHook((_m, _a, out) => kiln.neg(out as Tensor));
    assert.deepEqual(kiln.noGrad(() => vals(compiled(x) as Tensor)), plain.map((v) => -v));
    assert.equal(kiln.stats().eagerFallbacks, 0);
    assert.equal(kiln.stats().fusionFallbacks, 0);
  });
});

describe('containers and reshaping layers', () => {
  test('ModuleDict: torch names, insertion order, get/set/delete/has, typed errors', () => {
    const d = new nn.ModuleDict<kiln.nn.AnyModule>({ enc: new nn.Linear(3, 4), dec: new nn.Linear(4, 3) });
    assert.deepEqual(d.keys(), ['enc', 'dec']);
    assert.deepEqual(Object.keys(d.stateDict()), ['enc.weight', 'enc.bias', 'dec.weight', 'dec.bias']);
    d.set('head', new nn.Linear(3, 1));
    assert.equal(d.size, 3);
    assert.ok(d.has('head') && !d.has('nope'));
    const removed = d.delete('enc');
    assert.ok(removed instanceof nn.Linear);
    assert.deepEqual(d.keys(), ['dec', 'head']);
    assert.deepEqual(Object.keys(d.stateDict()), ['dec.weight', 'dec.bias', 'head.weight', 'head.bias']);
    assert.equal(d.parameters().length, 4);
    assert.deepEqual([...d].map(([k]) => k), ['dec', 'head']);
    assertKilnError(() => d.get('enc'), kiln.IndexError, 'no module named "enc"', 'dec, head');
    assertKilnError(() => d.set('a.b', new nn.ReLU()), kiln.ArgumentError, "without '.'");
    assertKilnError(() => d.set('keys', new nn.ReLU()), kiln.ArgumentError, 'already a property');
    assertKilnError(() => d.set('x', 3 as never), kiln.ArgumentError, 'not a Module');
    assertKilnError(() => (d as unknown as { forward(): void }).forward(), kiln.ArgumentError, 'no forward');
  });

  test('Unflatten splits a dim (negative dims, -1 sizes); Identity passes through', () => {
    const x = kiln.randn([2, 12, 5]);
    assert.deepEqual(new nn.Unflatten(1, [3, 4]).call(x).shape, [2, 3, 4, 5]);
    assert.deepEqual(new nn.Unflatten(-2, [2, -1]).call(x).shape, [2, 2, 6, 5]);
    assert.equal(new nn.Unflatten(1, [3, 4]).toString(), 'Unflatten(dim=1, unflattened_size=(3, 4))');
    assertKilnError(() => new nn.Unflatten(1, [-1, -1]), kiln.ArgumentError, 'at most one -1');
    assert.throws(() => new nn.Unflatten(1, [5, 2]).call(x), kiln.ShapeError);
    assert.equal(new nn.Identity().call(x), x);
  });
});

describe('state-dict keys and initializations (torch)', () => {
  test('conv layers: weight layouts and U(±1/sqrt(fan_in)) with fan_in from weight dim 1', () => {
    kiln.manualSeed(1);
    const c1 = new nn.Conv1d(4, 6, 5, { groups: 2 });
    assert.deepEqual(c1.weight.shape, [6, 2, 5]);
    const b1 = 1 / Math.sqrt(2 * 5);
    assert.ok(bound(c1.weight).min >= -b1 && bound(c1.weight).max <= b1 && bound(c1.weight).max > 0.8 * b1);
    const ct = new nn.ConvTranspose2d(8, 6, 3, { groups: 2 });
    assert.deepEqual(ct.weight.shape, [8, 3, 3, 3], '[in, out/groups, kh, kw]');
    const bt = 1 / Math.sqrt(3 * 9);
    assert.ok(bound(ct.weight).max <= bt && bound(ct.weight).max > 0.8 * bt && bound(ct.bias!).max <= bt);
    assert.equal(c1.toString(), 'Conv1d(4, 6, kernel_size=(5,), stride=(1,), groups=2)');
    assert.equal(new nn.Conv2d(3, 4, 2, { padding: 'same' }).toString(), 'Conv2d(3, 4, kernel_size=(2, 2), stride=(1, 1), padding=same)');
    assert.equal(ct.toString(), 'ConvTranspose2d(8, 6, kernel_size=(3, 3), stride=(1, 1), groups=2)');
    assert.equal(new nn.ConvTranspose2d(2, 2, 3, { stride: 2, outputPadding: 1 }).toString(), 'ConvTranspose2d(2, 2, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))');
  });

  test('recurrent layers: torch keys in torch order, every parameter U(±1/sqrt(hidden))', () => {
    kiln.manualSeed(2);
    const lstm = new nn.LSTM(3, 16, { numLayers: 2, bidirectional: true, projSize: 5 });
    const keys = Object.keys(lstm.stateDict());
    assert.deepEqual(keys.slice(0, 10), [
      'weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0', 'weight_hr_l0',
      'weight_ih_l0_reverse', 'weight_hh_l0_reverse', 'bias_ih_l0_reverse', 'bias_hh_l0_reverse', 'weight_hr_l0_reverse',
    ]);
    assert.deepEqual(lstm.stateDict().weight_ih_l1!.shape, [64, 10], 'layer 1 reads both directions of projected h');
    assert.deepEqual(lstm.stateDict().weight_hh_l0!.shape, [64, 5]);
    for (const p of lstm.parameters()) assert.ok(bound(p).max <= 0.25 && bound(p).min >= -0.25);
    assert.ok(Math.max(...lstm.parameters().map((p) => bound(p).max)) > 0.24);
    const gru = new nn.GRU(3, 4, { bias: false });
    assert.deepEqual(Object.keys(gru.stateDict()), ['weight_ih_l0', 'weight_hh_l0']);
    assert.equal(lstm.toString(), 'LSTM(3, 16, proj_size=5, num_layers=2, bidirectional=True)');
    assert.equal(new nn.RNN(2, 3, { nonlinearity: 'relu', batchFirst: true }).toString(), "RNN(2, 3, batch_first=True, nonlinearity='relu')");
  });

  test('transformer layers: torch submodule names; TransformerEncoder copies the layer (same weights), as deepcopy does', () => {
    const layer = new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16 });
    assert.deepEqual(Object.keys(layer.stateDict()), [
      'self_attn.in_proj_weight', 'self_attn.in_proj_bias', 'self_attn.out_proj.weight', 'self_attn.out_proj.bias',
      'linear1.weight', 'linear1.bias', 'linear2.weight', 'linear2.bias', 'norm1.weight', 'norm1.bias', 'norm2.weight', 'norm2.bias',
    ]);
    const dec = new nn.TransformerDecoderLayer(8, 2, { dimFeedforward: 16 });
    assert.ok(Object.keys(dec.stateDict()).includes('multihead_attn.in_proj_weight') && Object.keys(dec.stateDict()).includes('norm3.bias'));
    const stack = new nn.TransformerEncoder(layer, 2);
    const sd = stack.stateDict();
    assert.deepEqual(vals(sd['layers.0.linear1.weight']!), vals(layer.linear1.weight));
    assert.deepEqual(vals(sd['layers.1.linear1.weight']!), vals(layer.linear1.weight));
    assert.notEqual(sd['layers.0.linear1.weight'], sd['layers.1.linear1.weight'], 'copies, not shared');
    assert.equal(stack.parameters().length, 24);
  });

  test('GroupNorm / RMSNorm: ones and zeros, torch reprs, eps default of RMSNorm from the dtype', () => {
    const gn = new nn.GroupNorm(2, 6);
    assert.deepEqual(vals(gn.weight!), [1, 1, 1, 1, 1, 1]);
    assert.deepEqual(vals(gn.bias!), [0, 0, 0, 0, 0, 0]);
    assert.equal(gn.toString(), 'GroupNorm(2, 6, eps=1e-05, affine=True)');
    const rms = new nn.RMSNorm([4]);
    assert.deepEqual(Object.keys(rms.stateDict()), ['weight']);
    assert.equal(rms.toString(), 'RMSNorm((4,), eps=None, elementwise_affine=True)');
    // eps None: float32 epsilon 2^-23; an all-zero row gives 0 / sqrt(eps) = 0, a tiny row is scaled by 1 / sqrt(x^2 + eps)
    const x = kiln.tensor([[1e-4, 0, 0, 0]]);
    const got = vals(rms.call(x))[0]!;
    const want = 1e-4 / Math.sqrt(1e-8 / 4 + 2 ** -23);
    assert.ok(Math.abs(got - want) <= 1e-5 * want, `${got} vs ${want}`);
  });
});

describe('typed errors for bad arguments', () => {
  test('padding strings, interpolate modes, activation and nonlinearity names list the valid values', () => {
    const x4 = kiln.randn([1, 2, 5, 5]);
    assertKilnError(() => kiln.conv2d(x4, kiln.randn([3, 2, 3, 3]), null, { padding: 'full' as never }), kiln.ArgumentError, "'same', 'valid'");
    assertKilnError(() => new nn.Conv2d(2, 3, 3, { padding: 'samee' as never }), kiln.ArgumentError, "'same', 'valid'");
    assertKilnError(() => new nn.Conv1d(2, 3, 2, { padding: 'same', stride: 2 }), kiln.ArgumentError, 'strided');
    assertKilnError(() => kiln.conv2d(x4, kiln.randn([3, 2, 2, 2]), null, { padding: 'same', stride: 2 }), kiln.ArgumentError, 'strided');
    assertKilnError(() => kiln.interpolate(x4, { size: 3, mode: 'bicubic' as never }), kiln.ArgumentError, "'nearest'", "'bilinear'");
    assertKilnError(() => new nn.Upsample({ scaleFactor: 2, mode: 'cubic' as never }), kiln.ArgumentError, "'nearest'", "'area'");
    assertKilnError(() => kiln.interpolate(x4, { size: 3, mode: 'linear' }), kiln.ShapeError, "use 'bilinear'");
    assertKilnError(() => kiln.interpolate(x4, { size: 3, scaleFactor: 2 }), kiln.ArgumentError, 'exactly one');
    assertKilnError(() => kiln.interpolate(x4, { size: 3, alignCorners: true }), kiln.ArgumentError, 'alignCorners');
    assertKilnError(() => new nn.TransformerEncoderLayer(8, 2, { activation: 'swish' as never }), kiln.ArgumentError, "'relu', 'gelu'");
    assertKilnError(() => new nn.RNN(2, 3, { nonlinearity: 'sigmoid' as never }), kiln.ArgumentError, "'tanh', 'relu'");
    assertKilnError(() => new nn.MaxPool2d(2, { returnIndices: true }), kiln.ArgumentError, 'returnIndices');
  });

  test('shapes and sizes', () => {
    assertKilnError(() => kiln.groupNorm(kiln.randn([2, 6, 3]), 4), kiln.ArgumentError, 'numGroups=4');
    assertKilnError(() => new nn.GroupNorm(4, 6), kiln.ArgumentError, 'divisible');
    assertKilnError(() => kiln.rmsNorm(kiln.randn([2, 3]), [4]), kiln.ShapeError, 'trailing shape');
    assertKilnError(() => kiln.convTranspose2d(kiln.randn([1, 3, 4, 4]), kiln.randn([2, 2, 3, 3])), kiln.ShapeError, '3 channels');
    assertKilnError(() => kiln.convTranspose2d(kiln.randn([1, 2, 4, 4]), kiln.randn([2, 2, 3, 3]), null, { stride: 2, outputPadding: 2 }), kiln.ArgumentError, 'outputPadding');
    assertKilnError(() => kiln.adaptiveAvgPool2d(kiln.randn([1, 2, 4, 4]), [2, 0]), kiln.ArgumentError, 'positive');
    assertKilnError(() => new nn.LSTM(3, 4).call(kiln.randn([5, 2, 4])), kiln.ShapeError, 'inputSize 3');
    assertKilnError(() => new nn.LSTM(3, 4).call(kiln.randn([5, 2, 3]), [kiln.randn([1, 2, 5]), kiln.randn([1, 2, 4])]), kiln.ShapeError, 'h0');
    assertKilnError(() => new nn.LSTM(3, 4, { projSize: 4 }), kiln.ArgumentError, 'smaller than hiddenSize');
    assertKilnError(() => kiln.maxPool2d(kiln.randn([1, 1, 4, 4]), 2, { padding: 2 }), kiln.ArgumentError, 'half the kernel');
  });
});

describe('layer behavior', () => {
  test('unbatched inputs match the batched result for conv, pooling and recurrent layers', () => {
    kiln.manualSeed(3);
    const x = kiln.randn([3, 6, 7]);
    const batched = (m: kiln.nn.Module, t: Tensor) => vals((m.call(t.unsqueeze(0)) as Tensor).squeeze(0));
    for (const m of [new nn.Conv2d(3, 2, 3, { padding: 'same' }), new nn.ConvTranspose2d(3, 2, 2, { stride: 2 }), new nn.MaxPool2d(2), new nn.AvgPool2d(3, { ceilMode: true })]) {
      assert.deepEqual(vals(m.call(x)), batched(m, x), m.typeName);
    }
    const seq = kiln.randn([5, 4]);
    const gru = new nn.GRU(4, 3);
    const [out, h] = gru.call(seq);
    const [outB, hB] = gru.call(seq.unsqueeze(1));
    assert.deepEqual(out.shape, [5, 3]);
    assert.deepEqual(h.shape, [1, 3]);
    assert.deepEqual(vals(out), vals(outB));
    assert.deepEqual(vals(h), vals(hB));
  });

  test('LSTM dropout between layers only in training; batchFirst transposes input and output', () => {
    kiln.manualSeed(4);
    const lstm = new nn.LSTM(3, 4, { numLayers: 2, dropout: 0.5, batchFirst: true });
    const x = kiln.randn([2, 5, 3]);
    lstm.eval();
    const [a] = lstm.call(x);
    const [b] = lstm.call(x);
    assert.deepEqual(vals(a), vals(b), 'eval: deterministic');
    assert.deepEqual(a.shape, [2, 5, 4]);
    lstm.train();
    const [c] = lstm.call(x);
    assert.notDeepEqual(vals(c), vals(a), 'training: dropout between the layers');
  });

  test('Upsample module equals interpolate; nearest with scale factor 2 repeats each pixel', () => {
    const x = kiln.tensor([[[[1, 2], [3, 4]]]], { dtype: 'float32' });
    const up = new nn.Upsample({ scaleFactor: 2 });
    assert.deepEqual(vals(up.call(x)), [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]);
    assert.equal(up.toString(), "Upsample(scale_factor=2.0, mode='nearest')");
    const bl = new nn.Upsample({ size: [3, 3], mode: 'bilinear', alignCorners: true });
    assert.deepEqual(vals(bl.call(x)), [1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4]);
    assertKilnError(() => bl.call(kiln.tensor([[[[1, 2], [3, 4]]]])), kiln.DTypeError, 'float input');
    assert.deepEqual(vals(up.call(kiln.tensor([[[[1, 2]]]]))), [1, 1, 2, 2, 1, 1, 2, 2], 'nearest copies integers');
  });
});
