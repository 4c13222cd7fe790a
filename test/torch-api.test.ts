// The torch API surface of docs/torch-api.md beyond the op table (which checks values and
// gradients of every op against float64 references): the nn modules of the activations and
// losses, typed errors for bad arguments (inputs untouched, nothing leaked), sampling
// statistics, data-dependent ops as reported graph breaks, and what compiles into how many
// kernels (pointwise and reductions fused; sort, scans, gather, cat as opaque steps), and that
// programs holding the new primitives are stored in the persistent compile cache.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import 'kilnjs/node';

const { nn } = kiln;
type Tensor = kiln.Tensor;
const vals = (t: Tensor): number[] => Array.from(t.dataSync() as ArrayLike<number>);
const close = (a: number[], b: number[], tol = 1e-6) => a.length === b.length && a.every((v, i) => Math.abs(v - b[i]!) <= tol * (1 + Math.abs(b[i]!)));

// ---- nn modules ----

test('activation modules equal their functions, print like torch, and PReLU trains its slopes', () => {
  kiln.scope(() => {
    kiln.manualSeed(1);
    const x = kiln.randn([2, 3, 4]);
    const pairs: [kiln.nn.Module, (t: Tensor) => Tensor, string][] = [
      [new nn.ELU(0.5), (t) => kiln.elu(t, 0.5), 'ELU(alpha=0.5)'],
      [new nn.SELU(), kiln.selu, 'SELU()'],
      [new nn.CELU(2), (t) => kiln.celu(t, 2), 'CELU(alpha=2.0)'],
      [new nn.Hardtanh(-2, 3), (t) => kiln.hardtanh(t, -2, 3), 'Hardtanh(min_val=-2.0, max_val=3.0)'],
      [new nn.ReLU6(), kiln.relu6, 'ReLU6()'],
      [new nn.Hardsigmoid(), kiln.hardsigmoid, 'Hardsigmoid()'],
      [new nn.Hardswish(), kiln.hardswish, 'Hardswish()'],
      [new nn.Mish(), kiln.mish, 'Mish()'],
      [new nn.LogSigmoid(), kiln.logsigmoid, 'LogSigmoid()'],
      [new nn.LeakyReLU(0.2), (t) => kiln.leakyRelu(t, 0.2), 'LeakyReLU(negative_slope=0.2)'],
      [new nn.GLU(-1), (t) => kiln.glu(t, -1), 'GLU(dim=-1)'],
    ];
    for (const [mod, f, repr] of pairs) {
      assert.deepEqual(vals(mod.call(x)), vals(f(x)), repr);
      assert.equal(mod.toString(), repr);
      assert.equal(mod.parameters().length, 0, `${repr} has no parameters`);
    }
    const p = new nn.PReLU(3);
    assert.equal(p.toString(), 'PReLU(num_parameters=3)');
    assert.deepEqual(Object.keys(p.stateDict()), ['weight']);
    assert.deepEqual(vals(p.weight), [0.25, 0.25, 0.25]);
    const before = vals(p.weight);
    const opt = new kiln.optim.SGD(p.parameters(), { lr: 0.1 });
    kiln.sum(p.call(x)).backward();
    opt.step();
    // d/dw of sum(prelu) = sum of the negative inputs of each channel
    const neg = [0, 1, 2].map((c) => vals(kiln.select(x, 1, c)).filter((v) => v <= 0).reduce((a, b) => a + b, 0));
    assert.ok(close(vals(p.weight), before.map((w, c) => w - 0.1 * neg[c]!), 1e-5), 'the slopes moved by -lr * grad');
    assert.throws(() => new nn.PReLU(0), kiln.ArgumentError);
  });
});

test('loss modules equal their functions; class weights are state-dict buffers; a bad reduction fails at construction, naming the valid ones', () => {
  kiln.scope(() => {
    kiln.manualSeed(2);
    const x = kiln.randn([5, 4]), y = kiln.randn([5, 4]), cls = kiln.randint(0, 4, [5]);
    const p = kiln.softmax(kiln.randn([5, 4]), 1), q = kiln.sigmoid(x), t = kiln.rand([5, 4]), w = kiln.rand([4]).add(0.5);
    const cases: [kiln.nn.Module<[Tensor, Tensor]>, Tensor, Tensor, Tensor][] = [
      [new nn.L1Loss(), x, y, kiln.l1Loss(x, y)],
      [new nn.MSELoss({ reduction: 'sum' }), x, y, kiln.mseLoss(x, y, { reduction: 'sum' })],
      [new nn.SmoothL1Loss({ beta: 0.5 }), x, y, kiln.smoothL1Loss(x, y, { beta: 0.5 })],
      [new nn.HuberLoss({ delta: 2, reduction: 'none' }), x, y, kiln.huberLoss(x, y, { delta: 2, reduction: 'none' })],
      [new nn.KLDivLoss({ reduction: 'batchmean' }), kiln.logSoftmax(x, 1), p, kiln.klDiv(kiln.logSoftmax(x, 1), p, { reduction: 'batchmean' })],
      [new nn.NLLLoss({ weight: w }), kiln.logSoftmax(x, 1), cls, kiln.nllLoss(kiln.logSoftmax(x, 1), cls, { weight: w })],
      [new nn.CrossEntropyLoss({ labelSmoothing: 0.1 }), x, cls, kiln.crossEntropy(x, cls, { labelSmoothing: 0.1 })],
      [new nn.CrossEntropyLoss({ weight: w }), x, p, kiln.crossEntropy(x, p, { weight: w })],
      [new nn.BCELoss({ weight: w }), q, t, kiln.binaryCrossEntropy(q, t, { weight: w })],
      [new nn.BCEWithLogitsLoss({ posWeight: w }), x, t, kiln.binaryCrossEntropyWithLogits(x, t, { posWeight: w })],
    ];
    for (const [mod, a, b, expected] of cases) assert.deepEqual(vals(mod.call(a, b)), vals(expected), mod.toString());
    assert.deepEqual(Object.keys(new nn.CrossEntropyLoss({ weight: w }).stateDict()), ['weight']);
    assert.deepEqual(Object.keys(new nn.BCEWithLogitsLoss({ weight: w, posWeight: w }).stateDict()).sort(), ['pos_weight', 'weight']);
    assert.deepEqual(Object.keys(new nn.MSELoss().stateDict()), []);
    assert.throws(() => new nn.L1Loss({ reduction: 'avg' as never }), (e: Error) => e instanceof kiln.ArgumentError && /'mean', 'sum', 'none'/.test(e.message) && /L1Loss/.test(e.message));
    assert.throws(() => new nn.KLDivLoss({ reduction: 'avg' as never }), (e: Error) => /'batchmean'/.test(e.message));
    assert.throws(() => kiln.klDiv(x, p, { reduction: 'batch' as never }), (e: Error) => e instanceof kiln.ArgumentError && /klDiv/.test(e.message));
  });
});

test('a loss module trains a compiled step (fullgraph, no fallbacks)', () => {
  kiln.manualSeed(3);
  const model = new nn.Sequential(new nn.Linear(4, 8), new nn.Mish(), new nn.Linear(8, 3));
  const lossFn = new nn.CrossEntropyLoss({ labelSmoothing: 0.1 });
  const opt = new kiln.optim.SGD(model.parameters(), { lr: 0.5 });
  const x = kiln.keep(kiln.randn([16, 4])), y = kiln.keep(kiln.randint(0, 3, [16]));
  kiln.compiler.reset();
  const step = kiln.compile(() => {
    opt.zeroGrad();
    const loss = lossFn.call(model.call(x), y);
    loss.backward();
    opt.step();
    return loss;
  }, { fullgraph: true });
  const losses = Array.from({ length: 20 }, () => kiln.scope(() => step().item()));
  assert.ok(losses[19]! < losses[0]! * 0.8, `loss fell: ${losses[0]} -> ${losses[19]}`);
  const st = kiln.stats();
  assert.equal(st.fusionFallbacks, 0);
  assert.equal(st.eagerFallbacks, 0);
  assert.equal(st.graphBreaks.length, 0);
});

// ---- typed errors ----

test('bad arguments raise typed errors naming the op, with the inputs intact and nothing leaked', () => {
  kiln.scope(() => {
    const x = kiln.tensor([[1, -2, 3], [4, 5, -6]]);
    const before = vals(x);
    const cases: [() => unknown, new (...a: never[]) => Error, RegExp][] = [
      [() => kiln.glu(x, 1), kiln.ShapeError, /glu: dim 1 of \[2, 3\] has odd size 3/],
      [() => kiln.prelu(x.reshape([1, 2, 3]), kiln.ones([3])), kiln.ShapeError, /prelu: weight \[3\] must hold 1 or 2 slopes/],
      [() => kiln.celu(x, 0), kiln.ArgumentError, /celu: alpha cannot be 0/],
      [() => kiln.hardtanh(x, 1, -1), kiln.ArgumentError, /hardtanh: minVal 1 is greater than maxVal -1/],
      [() => kiln.topk(x, 4), kiln.IndexError, /topk: k = 4 is out of range for dim 1 of size 3/],
      [() => kiln.kthvalue(x, 0), kiln.IndexError, /kthvalue: k = 0/],
      [() => kiln.sort(x, 1, 'yes' as never), kiln.ArgumentError, /sort: descending must be true or false/],
      [() => kiln.max(x, [0, 1] as never), kiln.ArgumentError, /max: dim must be one number[\s\S]*kiln\.amax/],
      [() => kiln.einsum('ij,jk->ik', x), kiln.ArgumentError, /einsum: 'ij,jk->ik' has 2 operand terms, got 1 operands/],
      [() => kiln.einsum('ij,jk', x, x), kiln.ShapeError, /einsum: subscript j has size 2/],
      [() => kiln.einsum('i$', x), kiln.ArgumentError, /invalid subscript '\$'/],
      [() => kiln.einsum('ij->ik', x), kiln.ArgumentError, /output subscript k does not appear/],
      [() => kiln.norm(x, 'nuc' as never), kiln.ArgumentError, /norm: p must be a number or 'fro'[\s\S]*nuclear/],
      [() => kiln.meshgrid([x.flatten()], { indexing: 'yx' as never }), kiln.ArgumentError, /meshgrid: indexing must be one of 'ij', 'xy'/],
      [() => kiln.meshgrid(x), kiln.ShapeError, /meshgrid: tensors\[0\] must be 0-d or 1-D/],
      [() => kiln.multinomial(kiln.tensor([0.5, 0.5]), 3), kiln.ArgumentError, /multinomial: cannot draw 3 samples from 2 categories without replacement/],
      [() => kiln.multinomial(kiln.tensor([0.5, -1]), 1), kiln.ArgumentError, /multinomial: weights must be finite and non-negative, got -1/],
      [() => kiln.multinomial(kiln.tensor([[0, 0], [1, 1]]), 1), kiln.ArgumentError, /multinomial: row 0 of the weights sums to 0/],
      [() => kiln.multinomial(kiln.tensor([0, 1, 0]), 2), kiln.ArgumentError, /row 0 has 1 categories of positive weight/],
      [() => kiln.repeat(x, [2]), kiln.ShapeError, /repeat: 1 repeat sizes for a tensor of 2 dims/],
      [() => kiln.roll(x, [1, 2], [0]), kiln.ArgumentError, /roll: shifts \[1,2\] and dims \[0\] must have the same length/],
      [() => kiln.flip(x, [0, 0]), kiln.ArgumentError, /flip: dims \[0,0\] repeat a dim/],
      [() => kiln.repeatInterleave(x, [1, 2], 1), kiln.ShapeError, /repeatInterleave: 2 repeat counts for dim 1 of size 3/],
      [() => kiln.bucketize(x, x), kiln.ArgumentError, /bucketize: boundaries must be 1-D/],
      [() => kiln.cdist(x, kiln.ones([2, 4])), kiln.ShapeError, /cdist: x1 \[2, 3\] and x2 \[2, 4\]/],
      [() => kiln.diag(kiln.ones([2, 2, 2])), kiln.ShapeError, /diag: expects a 1-D or 2-D tensor/],
      [() => kiln.trace(x.flatten()), kiln.ShapeError, /trace: expects a 2-D tensor/],
      [() => kiln.crossEntropy(x, kiln.softmax(x, 1), { ignoreIndex: 0 }), kiln.ArgumentError, /crossEntropy: ignoreIndex is not supported for probability/],
      [() => kiln.crossEntropy(x, kiln.ones([2, 4])), kiln.DTypeError, /crossEntropy: a float32 target \[2, 4\] is neither int32 class indices nor probabilities of the logits' shape \[2, 3\]/],
      [() => kiln.binaryCrossEntropy(x, kiln.ones([3])), kiln.ShapeError, /binaryCrossEntropy: input \[2, 3\] and target \[3\]/],
      [() => kiln.smoothL1Loss(x, x, { beta: -1 }), kiln.ArgumentError, /smoothL1Loss: beta must be a non-negative number/],
      [() => kiln.huberLoss(x, x, { delta: 0 }), kiln.ArgumentError, /huberLoss: delta must be a positive number/],
      [() => kiln.l1Loss(x, x, { reduction: 'max' as never }), kiln.ArgumentError, /l1Loss: reduction must be one of 'mean', 'sum', 'none', got 'max'/],
      [() => kiln.unique(x, { returnCounts: 1 as never }), kiln.ArgumentError, /unique: returnCounts must be true or false/],
    ];
    const mem = kiln.memory();
    for (const [f, type, msg] of cases) {
      assert.throws(() => kiln.scope(f), (e: Error) => {
        assert.ok(e instanceof type, `${msg}: got ${e.name}: ${e.message}`);
        assert.match(e.message, msg);
        return true;
      });
    }
    assert.deepEqual(vals(x), before, 'the input is unchanged');
    assert.equal(kiln.memory().tensors, mem.tensors, 'no tensor leaked by the failing calls');
  });
});

// ---- sampling ----

test('multinomial draws in proportion to the weights (with replacement), distinct categories without, reproducibly from manualSeed', () => {
  kiln.scope(() => {
    const w = kiln.tensor([[1, 0, 3, 6], [0, 0, 0, 2]]);
    kiln.manualSeed(7);
    const a = kiln.multinomial(w, 4000, true);
    kiln.manualSeed(7);
    assert.deepEqual(vals(kiln.multinomial(w, 4000, true)), vals(a), 'the same seed draws the same samples');
    const rows = [vals(a.select(0, 0)), vals(a.select(0, 1))];
    const freq = (r: number[], c: number) => r.filter((v) => v === c).length / r.length;
    // row 0: p = 0.1, 0, 0.3, 0.6; 4000 draws: a standard deviation of at most 0.008
    [0.1, 0, 0.3, 0.6].forEach((p, c) => assert.ok(Math.abs(freq(rows[0]!, c) - p) < 0.03, `category ${c}: ${freq(rows[0]!, c)} vs ${p}`));
    assert.ok(rows[1]!.every((v) => v === 3), 'a single positive category is always drawn');
    // without replacement: 3 distinct categories among the 3 positive ones; the first draw follows p
    kiln.manualSeed(8);
    const draws = kiln.multinomial(kiln.tensor([1, 0, 3, 6]).reshape([1, 4]).expand([2000, 4]), 3);
    const d = vals(draws);
    for (let i = 0; i < 2000; i++) assert.deepEqual(d.slice(3 * i, 3 * i + 3).sort(), [0, 2, 3]);
    const first = d.filter((_, i) => i % 3 === 0);
    [0.1, 0, 0.3, 0.6].forEach((p, c) => assert.ok(Math.abs(freq(first, c) - p) < 0.04, `first draw ${c}: ${freq(first, c)} vs ${p}`));
  });
});

test('randperm is a uniform permutation; compiled sampling draws fresh numbers on every replay', () => {
  kiln.scope(() => {
    kiln.manualSeed(9);
    const n = 6, trials = 3000;
    const counts = Array.from({ length: n }, () => new Array<number>(n).fill(0));
    for (let t = 0; t < trials; t++) {
      const p = kiln.scope(() => vals(kiln.randperm(n)));
      assert.deepEqual([...p].sort(), [0, 1, 2, 3, 4, 5]);
      p.forEach((v, pos) => counts[v]![pos]!++);
    }
    // each value at each position with probability 1/6 (sd 0.0068 over 3000 trials)
    for (const row of counts) for (const c of row) assert.ok(Math.abs(c / trials - 1 / n) < 0.035, `${c / trials}`);

    kiln.compiler.reset();
    const sample = kiln.compile((w: Tensor) => [kiln.multinomial(w, 64, true), kiln.randperm(32)], { fullgraph: true });
    const w = kiln.tensor([1, 1, 1, 1]);
    const [m1, p1] = sample(w) as Tensor[];
    const [m2, p2] = sample(w) as Tensor[];
    assert.notDeepEqual(vals(m1!), vals(m2!), 'a replay draws new samples');
    assert.notDeepEqual(vals(p1!), vals(p2!), 'a replay draws a new permutation');
    assert.deepEqual([...vals(p2!)].sort((a, b) => a - b), Array.from({ length: 32 }, (_, i) => i));
    assert.equal(kiln.stats().graphBreaks.length, 0);
    assert.equal(kiln.stats().fusionFallbacks, 0);
  });
});

// ---- data-dependent ops ----

test('unique and repeatInterleave with a counts tensor are reported graph breaks inside compile (fullgraph raises), with eager results', () => {
  kiln.scope(() => {
    const x = kiln.tensor([3, 1, 3, 2, 1, 3]);
    const f = (t: Tensor) => {
      const u = kiln.unique(t, { returnCounts: true });
      return [u.values.mul(2), kiln.repeatInterleave(u.values, u.counts!)];
    };
    kiln.compiler.reset();
    const ex = kiln.explain(f, { print: false })(x);
    assert.equal(ex.graphBreakCount, 2);
    assert.match(ex.breaks[0]!.reason, /unique/);
    assert.match(ex.breaks[1]!.reason, /repeatInterleave/);
    assert.ok(ex.breaks.every((b) => /torch-api\.test\.ts:\d+:\d+/.test(b.location)), 'breaks point at the caller');
    kiln.compiler.reset();
    const c = kiln.compile(f);
    for (let i = 0; i < 2; i++) {
      const [twice, rep] = c(x) as Tensor[];
      assert.deepEqual(vals(twice!), [2, 4, 6]);
      assert.deepEqual(vals(rep!), [1, 1, 2, 3, 3, 3]);
    }
    assert.throws(() => kiln.compile(f, { fullgraph: true })(x), kiln.GraphBreakError);
  });
});

// ---- what compiles into what ----

function compiledGraph(fn: (...a: Tensor[]) => unknown, ...args: Tensor[]) {
  kiln.compiler.reset();
  const c = kiln.compile(fn, { fullgraph: true });
  c(...args);
  const g = c.compiled.report!.graphs[0]!;
  return { kernels: g.kernels!, opaque: (g.program!.match(/^opaque \S+/gm) ?? []).map((l) => l.slice(7)), fallbacks: kiln.stats().fusionFallbacks };
}

test('compiled: activations, math, losses and norms fuse into single kernels; sort, scans, gather and cat run as opaque steps', () => {
  kiln.scope(() => {
    kiln.manualSeed(4);
    const x = kiln.randn([8, 16]), y = kiln.randn([8, 16]);
    const one = (what: string, fn: (...a: Tensor[]) => unknown, ...args: Tensor[]) => {
      const g = compiledGraph(fn, ...args);
      assert.deepEqual([g.kernels, g.opaque, g.fallbacks], [1, [], 0], `${what}: one fused kernel`);
    };
    one('activation chain', (x) => kiln.logsigmoid(kiln.hardswish(kiln.mish(kiln.elu(x)))).add(kiln.selu(x)).add(kiln.relu6(x)), x);
    one('math', (x, y) => kiln.tan(x).add(kiln.atan2(x, y)).add(kiln.remainder(x, y)).add(kiln.lerp(x, y, 0.3)).add(kiln.hypot(x, y)).add(kiln.log10(x.abs())), x, y);
    one('smoothL1Loss mean (pointwise and the full reduction)', (x, y) => kiln.smoothL1Loss(x, y), x, y);
    one('cosineSimilarity (three sibling reductions and the division)', (x, y) => kiln.cosineSimilarity(x, y), x, y);
    one('cdist (the difference is never materialized)', (x, y) => kiln.cdist(x, y), x, y);
    one('normalize', (x) => kiln.normalize(x), x);
    one('bucketize', (x) => kiln.bucketize(x, kiln.tensor([-1, 0, 1])), x);
    one('flip, then scaled', (x) => kiln.flip(x, [0, 1]).mul(2), x);
    one('repeat, then exp', (x) => kiln.repeat(x, [2, 3]).exp(), x);
    one('einsum as a matmul', (x, y) => kiln.einsum('ij,kj->ik', x, y), x, y);
    assert.deepEqual(compiledGraph((x) => kiln.max(x, 1).values, x).opaque, ['gather']);
    assert.deepEqual(compiledGraph((x) => kiln.sort(x, 1).values, x).opaque, ['argsort', 'gather']);
    assert.deepEqual(compiledGraph((x) => kiln.cumprod(x, 1), x).opaque, ['cumprod']);
    assert.deepEqual(compiledGraph((x) => kiln.cummax(x, 0).values, x).opaque, ['cumIndex', 'gather']);
    assert.deepEqual(compiledGraph((x) => kiln.roll(x, 3, 1), x).opaque, ['cat']);
  });
});

test('programs with the sort and scan primitives are stored in the persistent cache and hit there', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-torch-api-cache-'));
  const saved = process.env.KILN_CACHE_DIR;
  process.env.KILN_CACHE_DIR = dir;
  try {
    kiln.scope(() => {
      kiln.manualSeed(5);
      const x = kiln.randn([4, 5]);
      const f = (t: Tensor) => [kiln.sort(t, 1).values, kiln.cumprod(t, 1), kiln.cummax(t, 0).indices, kiln.topk(t, 2).indices];
      const runs = [0, 1].map(() => {
        kiln.compiler.reset();
        const outs = (kiln.compile(f, { fullgraph: true })(x) as Tensor[]).map(vals);
        return { outs, cache: { ...kiln.stats().cache } };
      });
      assert.equal(runs[0]!.cache.writes, 1, 'the program was written');
      assert.equal(runs[1]!.cache.hits, 1, 'and read back');
      assert.deepEqual(runs[1]!.outs, runs[0]!.outs);
    });
  } finally {
    if (saved === undefined) delete process.env.KILN_CACHE_DIR;
    else process.env.KILN_CACHE_DIR = saved;
    rmSync(dir, { recursive: true, force: true });
  }
});

test('dynamic shapes: flip, roll, repeat, sort, topk, max, cumprod, norm and cdist compile once for every batch size (js)', () => {
  kiln.scope(() => {
    kiln.manualSeed(6);
    const fns: [string, (x: Tensor) => Tensor][] = [
      ['flip', (x) => kiln.flip(x, [0, 1]).mul(2)], ['roll', (x) => kiln.roll(x, 1, 0)], ['repeat', (x) => kiln.repeat(x, [2, 1])],
      ['sort', (x) => kiln.sort(x, 1).values], ['topk', (x) => kiln.topk(x, 2, 1).values], ['max', (x) => kiln.max(x, 0).values],
      ['cumprod', (x) => kiln.cumprod(x, 0)], ['norm', (x) => kiln.norm(x, 2, 1)], ['cdist', (x) => kiln.cdist(x, x)],
    ];
    for (const [name, f] of fns) {
      kiln.compiler.reset();
      const c = kiln.compile(f, { dynamic: true });
      for (const rows of [3, 5, 8, 4]) {
        const x = kiln.randn([rows, 6]);
        assert.ok(close(vals(c(x) as Tensor), vals(f(x)), 1e-6), `${name} at ${rows} rows`);
      }
      assert.equal(kiln.stats().compiles, 1, `${name}: one compile for every size`);
      assert.equal(kiln.stats().dynamicCompiles.length, 1, `${name}: the program is dynamic`);
    }
  });
});
