// Every enum-like string argument of the public API is checked: a misspelt or misplaced value
// is a typed ArgumentError that names the op and lists the valid values (it used to mean the
// default silently: gelu(x, { approximate: 'tanh' }) computed exact GELU).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { assertCompiledRan } from './helpers/compiled-ran.js';

/** Asserts fn throws an ArgumentError naming `op` and listing every value of `valid`. */
function rejects(fn: () => unknown, op: string, valid: readonly string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof kiln.ArgumentError, `${op}: ${String(e)}`);
    assert.equal(e.op, op);
    for (const v of valid) assert.ok(e.message.includes(`'${v}'`), `${op}: the message lists '${v}': ${e.message}`);
    return true;
  });
}

const x = kiln.randn([4, 3]);
const target = kiln.tensor([0, 2, 1, 1], { dtype: 'int32' });

test('gelu approximate: function, method and module', () => {
  rejects(() => kiln.gelu(x, { approximate: 'tanh' } as never), 'gelu', ['none', 'tanh']);
  rejects(() => kiln.gelu(x, 'tanhh' as never), 'gelu', ['none', 'tanh']);
  rejects(() => x.gelu('exact' as never), 'gelu', ['none', 'tanh']);
  rejects(() => new kiln.nn.GELU({ approximate: 'fast' as never }), 'GELU', ['none', 'tanh']);
  // the valid values still work and differ
  assert.notDeepEqual(Array.from(kiln.gelu(x, 'tanh').dataSync()), Array.from(kiln.gelu(x).dataSync()));
});

test('loss reductions (checked before anything is computed)', () => {
  const r = { reduction: 'avg' as never };
  rejects(() => kiln.crossEntropy(x, target, r), 'crossEntropy', ['mean', 'sum', 'none']);
  rejects(() => kiln.nllLoss(x.logSoftmax(1), target, r), 'nllLoss', ['mean', 'sum', 'none']);
  rejects(() => kiln.mseLoss(x, x, r), 'mseLoss', ['mean', 'sum', 'none']);
  rejects(() => kiln.binaryCrossEntropyWithLogits(x, x, r), 'binaryCrossEntropyWithLogits', ['mean', 'sum', 'none']);
  rejects(() => kiln.nn.functional.crossEntropy(x, target, { reduction: 'Mean' as never }), 'crossEntropy', ['mean', 'sum', 'none']);
});

test('module modes: EmbeddingBag mode, Conv2d padding', () => {
  rejects(() => new kiln.nn.EmbeddingBag(5, 2, { mode: 'max' as never }), 'EmbeddingBag', ['sum', 'mean']);
  rejects(() => new kiln.nn.Conv2d(1, 1, 3, { padding: 'full' as never }), 'Conv2d', ['valid', 'same']);
});

test('convolution padding, interpolate and Upsample mode, RNN nonlinearity, OneCycleLR annealStrategy', () => {
  const x3 = kiln.randn([1, 2, 6]), x4 = kiln.randn([1, 2, 5, 5]);
  rejects(() => kiln.conv1d(x3, kiln.randn([3, 2, 3]), null, { padding: 'full' as never }), 'conv1d', ['same', 'valid']);
  rejects(() => kiln.conv2d(x4, kiln.randn([3, 2, 3, 3]), null, { padding: 'Same' as never }), 'conv2d', ['same', 'valid']);
  rejects(() => new kiln.nn.Conv1d(2, 3, 3, { padding: 'full' as never }), 'Conv1d', ['same', 'valid']);
  const modes = ['nearest', 'nearest-exact', 'linear', 'bilinear', 'area'];
  rejects(() => kiln.interpolate(x4, { size: 3, mode: 'bicubic' as never }), 'interpolate', modes);
  rejects(() => new kiln.nn.Upsample({ scaleFactor: 2, mode: 'cubic' as never }), 'Upsample', modes);
  rejects(() => new kiln.nn.RNN(2, 3, { nonlinearity: 'sigmoid' as never }), 'RNN', ['tanh', 'relu']);
  const opt = new kiln.optim.SGD([kiln.nn.Parameter(kiln.zeros([1]))], { lr: 0.1, momentum: 0.9 });
  rejects(() => new kiln.optim.OneCycleLR(opt, 0.1, { totalSteps: 10, annealStrategy: 'cosine' as never }), 'OneCycleLR', ['cos', 'linear']);
});

test('init: nonlinearity names and kaiming mode', () => {
  const w = kiln.zeros([3, 4]);
  rejects(() => kiln.nn.init.calculateGain('gelu' as never), 'calculateGain', ['linear', 'relu', 'leaky_relu', 'selu']);
  rejects(() => kiln.nn.init.kaimingUniform_(w, { mode: 'fan_avg' as never }), 'kaimingUniform_', ['fan_in', 'fan_out']);
  rejects(() => kiln.nn.init.kaimingNormal_(w, { mode: 'fanin' as never }), 'kaimingNormal_', ['fan_in', 'fan_out']);
  rejects(() => kiln.nn.init.kaimingNormal_(w, { nonlinearity: 'Relu' as never }), 'calculateGain', ['relu']);
});

test('compiler: compile mode and stance', () => {
  rejects(() => kiln.compile((t: kiln.Tensor) => t.add(1), { mode: 'fast' as never }), 'compile', ['default', 'reduce-overhead', 'max-autotune']);
  // the valid modes still compile and run compiled
  kiln.compiler.reset();
  for (const mode of ['default', 'reduce-overhead'] as const) {
    const f = kiln.compile((t: kiln.Tensor) => t.add(1), { mode });
    for (let i = 0; i < 3; i++) assert.deepEqual(Array.from((f(kiln.tensor([1, 2], { dtype: 'float32' })) as kiln.Tensor).dataSync()), [2, 3]);
  }
  assert.ok(kiln.stats().cacheHits >= 2, 'replayed');
  assertCompiledRan('compile modes');
  rejects(() => kiln.compiler.setStance('eager' as never), 'setStance', ['default', 'forceEager', 'eagerOnRecompile', 'failOnRecompile']);
  assert.equal(kiln.compiler.getStance(), 'default');
});

test('webgpu: adapter options are checked before asking for an adapter', async () => {
  const gpu = { requestAdapter: () => assert.fail('asked for an adapter') } as unknown as GPU;
  await assert.rejects(kiln.requestWebGpuBackend({ gpu, powerPreference: 'fast' as never }), (e: unknown) => e instanceof kiln.ArgumentError && /'low-power', 'high-performance'/.test((e as Error).message));
  await assert.rejects(kiln.requestWebGpuBackend({ gpu, featureLevel: 'full' as never }), (e: unknown) => e instanceof kiln.ArgumentError && /'core', 'compatibility'/.test((e as Error).message));
});
