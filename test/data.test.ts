// kiln.data: TensorDataset, DataLoader (batch size, shuffle with a seeded generator, dropLast,
// collate functions, resuming mid-epoch), randomSplit, and torch's semantics where they are
// defined (lengths, remainders, errors).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';

const { data } = kiln;
type Tensor = kiln.Tensor;

const rows = (t: Tensor): number[] => Array.from(t.dataSync());

function dataset(n = 10) {
  const x = kiln.keep(kiln.arange(n * 2).reshape([n, 2]).float());
  const y = kiln.keep(kiln.arange(n));
  return new data.TensorDataset(x, y);
}

/** The y values (sample ids) of every batch of one epoch. */
function epoch(loader: kiln.data.DataLoader<Tensor[], Tensor[]>): number[][] {
  const out: number[][] = [];
  for (const [, y] of loader) out.push(rows(y!));
  return out;
}

describe('TensorDataset and defaultCollate', () => {
  test('samples are rows of every tensor; sizes must agree', () => {
    const d = dataset(4);
    assert.equal(d.length, 4);
    const [x, y] = d.getItem(2);
    assert.deepEqual(rows(x!), [4, 5]);
    assert.equal(y!.item(), 2);
    assert.deepEqual(rows(d.getItem(-1)[1]!), [3]);
    assert.throws(() => d.getItem(4), kiln.IndexError);
    assert.throws(() => new data.TensorDataset(kiln.zeros([3, 2]), kiln.zeros([4])), (e: unknown) => e instanceof kiln.ShapeError && /\[3, 2\], \[4\]/.test((e as Error).message));
    assert.throws(() => new data.TensorDataset(), kiln.ArgumentError);
  });

  test('defaultCollate stacks tensors, makes tensors of numbers and booleans, and recurses into arrays and objects', () => {
    const b = data.defaultCollate([
      { img: kiln.ones([2]), label: 1, w: 0.5, ok: true, name: 'a', pair: [kiln.zeros([1]), 3] },
      { img: kiln.zeros([2]), label: 2, w: 1.5, ok: false, name: 'b', pair: [kiln.ones([1]), 4] },
    ]) as Record<string, unknown>;
    assert.deepEqual((b.img as Tensor).shape, [2, 2]);
    assert.equal((b.label as Tensor).dtype, 'int32');
    assert.equal((b.w as Tensor).dtype, 'float32');
    assert.equal((b.ok as Tensor).dtype, 'bool');
    assert.deepEqual(b.name, ['a', 'b']);
    const [p0, p1] = b.pair as [Tensor, Tensor];
    assert.deepEqual(p0.shape, [2, 1]);
    assert.deepEqual(rows(p1), [3, 4]);
    assert.throws(() => data.defaultCollate([kiln.zeros([2]), kiln.zeros([3])]), (e: unknown) => e instanceof kiln.ShapeError && /collateFn/.test((e as Error).message));
  });
});

describe('DataLoader', () => {
  test('batches in order; the last partial batch unless dropLast; length as torch', () => {
    const d = dataset(10);
    const a = new data.DataLoader(d, { batchSize: 4 });
    assert.equal(a.length, 3);
    assert.deepEqual(epoch(a), [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]);
    const b = new data.DataLoader(d, { batchSize: 4, dropLast: true });
    assert.equal(b.length, 2);
    assert.deepEqual(epoch(b), [[0, 1, 2, 3], [4, 5, 6, 7]]);
    const [[x]] = [...new data.DataLoader(d, { batchSize: 3 })];
    assert.deepEqual(x!.shape, [3, 2]);
    assert.equal(new data.DataLoader(d).length, 10, 'batchSize 1 by default');
  });

  test('shuffle with a seeded generator: a permutation per epoch, new each epoch, the same for the same seed', () => {
    const d = dataset(10);
    const run = (seed: number) => {
      const loader = new data.DataLoader(d, { batchSize: 3, shuffle: true, generator: new kiln.Generator().manualSeed(seed) });
      return [epoch(loader), epoch(loader)];
    };
    const [e1, e2] = run(42);
    for (const e of [e1!, e2!]) assert.deepEqual(e.flat().sort((p, q) => p - q), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.notDeepEqual(e1, e2, 'each epoch draws a new order');
    assert.notDeepEqual(e1!.flat(), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.deepEqual(run(42), [e1, e2], 'reproducible from the seed');
    assert.notDeepEqual(run(43)[0], e1);
    // without a generator, each epoch seeds one from the global stream: kiln.manualSeed reproduces it
    kiln.manualSeed(5);
    const g1 = epoch(new data.DataLoader(d, { batchSize: 5, shuffle: true }));
    kiln.manualSeed(5);
    assert.deepEqual(epoch(new data.DataLoader(d, { batchSize: 5, shuffle: true })), g1);
  });

  test('a collate function gets the samples; without one, getBatch equals defaultCollate of the samples', () => {
    const d = dataset(6);
    const loader = new data.DataLoader(d, { batchSize: 4, collateFn: (samples: Tensor[][]) => samples.map(([, y]) => y!.item()) });
    assert.deepEqual([...loader], [[0, 1, 2, 3], [4, 5]]);
    const idx = [5, 0, 3];
    const fast = d.getBatch(idx);
    const slow = data.defaultCollate(idx.map((i) => d.getItem(i))) as Tensor[];
    fast.forEach((t, i) => assert.deepEqual([t.shape, rows(t)], [slow[i]!.shape, rows(slow[i]!)]));
    assert.throws(() => new data.DataLoader(d, { batchSize: 0 }), kiln.ArgumentError);
    assert.throws(() => new data.DataLoader(d, { shuffle: true, sampler: new data.SequentialSampler(6) }), /exclusive/);
    assert.throws(() => new data.DataLoader({} as never), /length and getItem/);
  });

  test('iterating frees everything but the batches', () => {
    const d = dataset(64);
    const loader = new data.DataLoader(d, { batchSize: 8, shuffle: true, generator: new kiln.Generator().manualSeed(1) });
    for (const b of loader) b.forEach((t) => t.dispose());
    const before = kiln.memory();
    for (const b of loader) b.forEach((t) => t.dispose());
    const after = kiln.memory();
    assert.equal(after.tensors, before.tensors);
    assert.equal(after.bytes, before.bytes);
  });

  for (const withGenerator of [true, false]) {
    test(`stateDict / loadStateDict resume mid-epoch and across epochs (${withGenerator ? 'a seeded generator' : 'the global generator'})`, () => {
      const d = dataset(11);
      const make = () => new data.DataLoader(d, { batchSize: 3, shuffle: true, generator: withGenerator ? new kiln.Generator().manualSeed(9) : undefined });
      kiln.manualSeed(3);
      const full = make();
      const want = [epoch(full), epoch(full), epoch(full)].flat();
      for (const stopAfter of [2, 4, 8]) {
        kiln.manualSeed(3);
        const first = make();
        const seen: number[][] = [];
        let state: kiln.data.DataLoaderState | null = null;
        let rng: kiln.GeneratorState | null = null;
        outer: for (let e = 0; e < 3; e++) {
          for (const [, y] of first) {
            seen.push(rows(y!));
            if (seen.length === stopAfter) {
              state = JSON.parse(JSON.stringify(first.stateDict()));
              rng = kiln.getRngState();
              break outer;
            }
          }
        }
        kiln.manualSeed(77); // a fresh process: other random state
        const resumed = make();
        resumed.loadStateDict(state!);
        kiln.setRngState(rng!);
        while (seen.length < want.length) seen.push(...epoch(resumed));
        assert.deepEqual(seen, want, `stopped after ${stopAfter} batches`);
      }
    });
  }
});

describe('randomSplit', () => {
  test('counts or fractions (torch\'s remainder rule), disjoint and covering, reproducible from a generator', () => {
    const d = dataset(10);
    const [a, b, c] = data.randomSplit(d, [0.33, 0.33, 0.34], new kiln.Generator().manualSeed(0));
    assert.deepEqual([a!.length, b!.length, c!.length], [4, 3, 3], 'floor(10 * f) each, the remainder to the first');
    const all = [a!, b!, c!].flatMap((s) => s.indices).sort((p, q) => p - q);
    assert.deepEqual(all, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const [a2] = data.randomSplit(d, [0.33, 0.33, 0.34], new kiln.Generator().manualSeed(0));
    assert.deepEqual(a2!.indices, a!.indices);
    const [p, q] = data.randomSplit(d, [7, 3]);
    assert.deepEqual([p!.length, q!.length], [7, 3]);
    assert.equal(q!.getItem(0)[1]!.item(), q!.indices[0]);
    const loader = new data.DataLoader(p!, { batchSize: 4 });
    assert.deepEqual(epoch(loader).flat(), p!.indices, 'a Subset batches through getBatch');
    assert.throws(() => data.randomSplit(d, [5, 4]), /sum to the dataset's length 10/);
    assert.throws(() => data.randomSplit(d, []), kiln.ArgumentError);
  });
});
