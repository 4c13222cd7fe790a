// examples/char-gpt.ts (a character-level GPT on first names) and examples/gpt.ts (the model,
// and the W7 configuration): short training beats the unigram baseline, the compiled training
// step follows eager, sampling gives names, and the W7 decoder equals bench/workloads/w7.ts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import {
  BOUNDARY, IGNORE, buildCharData, charGptConfig, createCharGpt, loadNames, makeTrainStep, sampleNames, trainCharGpt, unigramEntropy,
  type CharData,
} from '../examples/char-gpt.js';
import { GPT, W7, createW7Model, runW7 } from '../examples/gpt.js';
import { Decoder } from '../bench/workloads/w7.js';
import { assertCompiledRan } from './helpers/compiled-ran.js';

let shared: CharData | undefined;
const data = () => (shared ??= buildCharData({ seed: 0 }));

test('loadNames: the @stdlib first names, lowercased and distinct; buildCharData encodes shifted targets', () => {
  const names = loadNames();
  assert.ok(names.length > 8000, `${names.length} names`);
  assert.equal(new Set(names).size, names.length);
  assert.ok(names.every((n) => /^[a-z-]+$/.test(n)), 'lowercase letters and hyphens only');
  assert.ok(names.includes('emma') && names.includes('john'));

  const d = data();
  assert.equal(d.vocab[0], BOUNDARY);
  assert.equal(d.vocab.length, 28); // boundary, '-', a-z
  assert.equal(d.trainNames.length + d.valNames.length, names.length);
  assert.equal(new Set([...d.trainNames, ...d.valNames]).size, names.length, 'train and validation names are disjoint');
  assert.ok(d.valNames.length > 500);
  assert.deepEqual(d.xTrain.shape, [d.trainNames.length, d.blockSize]);
  assert.equal(d.xTrain.dtype, 'int32');
  // row 0: x = [boundary, c1..cn, pad], y = [c1..cn, boundary, ignore...]
  const name = d.trainNames[0]!, T = d.blockSize;
  const x = Array.from(d.xTrain.narrow(0, 0, 1).dataSync()), y = Array.from(d.yTrain.narrow(0, 0, 1).dataSync());
  const ids = [...name].map((c) => d.stoi.get(c)!);
  assert.deepEqual(x, [0, ...ids, ...Array(T - ids.length - 1).fill(0)]);
  assert.deepEqual(y, [...ids, 0, ...Array(T - ids.length - 1).fill(IGNORE)]);

  assert.ok(Math.abs(unigramEntropy(['ab']) - Math.log(3)) < 1e-12); // a, b, end: uniform over 3
});

test('a short training run (a few seconds) beats the unigram baseline, and samples are names', () => {
  const r = trainCharGpt({ steps: 60, batchSize: 16, data: data(), model: { nEmbd: 32, nHead: 4, nLayer: 1 }, seed: 0 });
  assert.equal(r.losses.length, 60);
  assert.ok(r.losses.every(Number.isFinite));
  assert.ok(r.unigramLoss > 2.7 && r.unigramLoss < 3.1, `unigram entropy ${r.unigramLoss}`);
  assert.ok(r.valLoss < r.unigramLoss - 0.2, `validation loss ${r.valLoss} vs unigram ${r.unigramLoss}`);
  assert.ok(r.stepsPerSec > 0);

  const ok = (s: string) => /^[a-z-]+$/.test(s) && s.length < data().blockSize;
  assert.equal(r.samples.length, 10);
  assert.ok(r.samples.every(ok), `samples ${JSON.stringify(r.samples)}`);
  assert.ok(new Set(r.samples).size > 3, `varied samples ${JSON.stringify(r.samples)}`);

  // seeded sampling is reproducible; top-1 is greedy, so every row is the same name
  const a = sampleNames(r.model, data(), { count: 6, seed: 3 }), b = sampleNames(r.model, data(), { count: 6, seed: 3 });
  assert.deepEqual(a, b);
  const greedy = sampleNames(r.model, data(), { count: 4, topK: 1, seed: 1 });
  assert.ok(greedy.every((s) => s === greedy[0]) && ok(greedy[0]!), `greedy ${JSON.stringify(greedy)}`);
  // a tiny temperature behaves as greedy too
  assert.deepEqual(sampleNames(r.model, data(), { count: 2, temperature: 1e-3, topK: 28, seed: 2 }), greedy.slice(0, 2));
});

test('the compiled training step (fullgraph) follows the eager loss curve within 1e-4 per step, with 0 graph breaks', () => {
  kiln.compiler.reset();
  const d = data();
  const cfg = charGptConfig(d, { nEmbd: 32, nHead: 4, nLayer: 2 });
  const build = () => {
    const model = createCharGpt(cfg, 5); // identical weights: same seed
    const opt = new kiln.optim.AdamW(model.parameters(), { lr: 1e-2, betas: [0.9, 0.99], weightDecay: 0.01 });
    return { model, opt, step: makeTrainStep(model, opt) };
  };
  const e = build(), c = build();
  const compiled = kiln.compile(c.step, { fullgraph: true, backend: 'js' });
  kiln.manualSeed(9);
  const batches = Array.from({ length: 50 }, () => kiln.keep(kiln.randint(0, d.xTrain.shape[0]!, [16])));
  const run = (step: (x: kiln.Tensor, y: kiln.Tensor) => kiln.Tensor, opt: kiln.optim.AdamW) =>
    batches.map((idx, i) => kiln.scope(() => {
      opt.paramGroups[0]!.lr = 1e-2 * (1 - i / 100); // a schedule: lr lives in a tensor, no retrace
      return step(d.xTrain.indexSelect(0, idx), d.yTrain.indexSelect(0, idx)).item();
    }));
  const le = run(e.step, e.opt), lc = run(compiled, c.opt);
  le.forEach((l, i) => assert.ok(Math.abs(l - lc[i]!) <= 1e-4 * Math.abs(l), `step ${i}: eager ${l}, compiled ${lc[i]}`));
  assert.ok(le[9]! < le[0]!, `the loss falls: ${le[0]} -> ${le[9]}`);
  const s = kiln.stats();
  assert.equal(s.graphBreaks.length, 0, 'graph breaks');
  assert.equal(s.recompiles.length, 0, `recompiles: ${JSON.stringify(s.recompiles)}`);
  assert.ok(s.cacheHits >= 8, `replayed ${s.cacheHits} of 10 steps`);
  assertCompiledRan('char-gpt training');
  for (const t of batches) t.dispose();
});

test('GPT state-dict keys follow torch_fixtures.py; the W7 decoder equals bench/workloads/w7.ts with the same weights', () => {
  kiln.manualSeed(0);
  const gpt = new GPT({ vocabSize: 32, blockSize: 32, nEmbd: 64, nHead: 4, nLayer: 2 });
  const keys = Object.keys(gpt.stateDict());
  const block = (i: number) => ['ln_1', 'attn_qkv', 'attn_proj', 'ln_2', 'mlp_fc', 'mlp_proj'].flatMap((m) => [`h.${i}.${m}.weight`, `h.${i}.${m}.bias`]);
  assert.deepEqual(keys, ['wte.weight', 'wpe.weight', ...block(0), ...block(1), 'ln_f.weight', 'ln_f.bias', 'lm_head.weight']);
  assert.deepEqual(gpt.stateDict()['h.1.attn_qkv.weight']!.shape, [192, 64]);
  assert.deepEqual(gpt.call(kiln.randint(0, 32, [2, 5])).shape, [2, 5, 32]);

  const w7 = createW7Model({ layers: 1, seed: 1 });
  assert.deepEqual(Object.keys(w7.stateDict()).filter((k) => !k.startsWith('h.0.')), ['ln_f.weight', 'ln_f.bias']);
  assert.equal(w7.config.nEmbd, W7.dim);
  assert.equal(w7.config.nHead, W7.heads);
  // the benchmark's module, loaded with the same weights under its own names
  const ref = new Decoder(1);
  const rename: Record<string, string> = { ln_1: 'ln1', attn_qkv: 'attn.qkv', attn_proj: 'attn.proj', ln_2: 'ln2', mlp_fc: 'fc1', mlp_proj: 'fc2' };
  const sd: Record<string, kiln.Tensor> = {};
  for (const [k, t] of Object.entries(w7.stateDict())) {
    sd[k === 'ln_f.weight' || k === 'ln_f.bias' ? k.replace('ln_f', 'lnF') : k.replace(/^h\.(\d+)\.(\w+)\./, (_, i: string, m: string) => `blocks.${i}.${rename[m]}.`)] = t;
  }
  ref.loadStateDict(sd);
  const x = kiln.randn([1, 8, W7.dim]);
  const y = runW7(w7, x);
  const yRef = kiln.noGrad(() => ref.call(x));
  assert.deepEqual(y.shape, [1, 8, W7.dim]);
  const a = y.dataSync(), b = yRef.dataSync();
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i]! - b[i]!) <= 1e-5, `element ${i}: ${a[i]} vs ${b[i]}`);
  // compiled W7 inference (the model's forward is the decoder stack when it has no embeddings)
  const compiled = kiln.compile(w7);
  const yc = runW7((t) => compiled(t), x);
  const c = yc.dataSync();
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i]! - c[i]!) <= 1e-4, `compiled element ${i}: ${c[i]} vs ${a[i]}`);
});

test("trainCharGpt's compiled paths (backend js and eager) follow its eager run", () => {
  const opts = { steps: 8, batchSize: 8, data: data(), model: { nEmbd: 16, nHead: 2, nLayer: 1 }, samples: 2, seed: 4 };
  const e = trainCharGpt(opts);
  for (const backend of ['js', 'eager'] as const) {
    kiln.compiler.reset();
    const c = trainCharGpt({ ...opts, compile: true, backend });
    e.losses.forEach((l, i) => assert.ok(Math.abs(l - c.losses[i]!) <= 1e-4 * l, `${backend} step ${i}: eager ${l}, compiled ${c.losses[i]}`));
    assert.ok(Math.abs(e.valLoss - c.valLoss) <= 1e-4 * e.valLoss, `${backend}: validation ${e.valLoss} vs ${c.valLoss}`);
    const s = kiln.stats();
    assert.equal(s.graphBreaks.length, 0);
    assert.equal(s.compiles, 1);
    assert.ok(s.cacheHits >= 6, `${backend}: ${s.cacheHits} replays`);
  }
});
