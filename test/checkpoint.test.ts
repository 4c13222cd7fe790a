// Checkpoints (src/checkpoint): the parts round-trip exactly and a resumed run continues as the
// original; a checkpoint that does not fit changes nothing; the folder is replaced atomically.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import { loadCheckpoint, saveCheckpoint } from 'kilnjs/node';

const { nn, optim, data } = kiln;
type Tensor = kiln.Tensor;
type AnyOpt = kiln.optim.Optimizer<any>;

const bits = (ts: Tensor[]) => ts.map((t) => Buffer.from((t.dataSync() as Float32Array).buffer).toString('hex'));

/** A small run: model, optimizer, scheduler, loader, all from `seed`. */
function setup(makeOpt: (ps: Tensor[]) => AnyOpt, makeSched: (o: AnyOpt) => kiln.optim.Scheduler, seed = 0, hidden = 8) {
  kiln.manualSeed(seed);
  const x = kiln.keep(kiln.randn([40, 3])), y = kiln.keep(kiln.randn([40, 2]));
  const model = new nn.Sequential(new nn.Linear(3, hidden), new nn.Tanh(), new nn.Linear(hidden, 2));
  const opt = makeOpt(model.parameters());
  const sched = makeSched(opt);
  const loader = new data.DataLoader(new data.TensorDataset(x, y), { batchSize: 6, shuffle: true, generator: new kiln.Generator().manualSeed(seed + 10) });
  let it = loader[Symbol.iterator]();
  const step = () => {
    let n = it.next();
    if (n.done) {
      it = loader[Symbol.iterator]();
      n = it.next();
    }
    const [bx, by] = n.value as Tensor[];
    const loss = kiln.scope(() => {
      opt.zeroGrad();
      const l = kiln.mseLoss(model.call(bx!), by!);
      l.backward();
      nn.utils.clipGradValue_(model.parameters(), 0.5);
      opt.step();
      sched.step();
      return l.item();
    });
    bx!.dispose();
    by!.dispose();
    return loss;
  };
  return { model, opt, sched, loader, step, parts: { model, optimizer: opt, scheduler: sched, dataLoader: loader } };
}

const RUNS: [string, (ps: Tensor[]) => AnyOpt, (o: AnyOpt) => kiln.optim.Scheduler][] = [
  ['SGD (nesterov) + OneCycleLR (cycled momentum)', (ps) => new optim.SGD(ps, { lr: 0.1, momentum: 0.9, nesterov: true }), (o) => new optim.OneCycleLR(o, 0.2, { totalSteps: 40 })],
  ['Adam + OneCycleLR (cycled beta1)', (ps) => new optim.Adam(ps, { lr: 0.01, amsgrad: true }), (o) => new optim.OneCycleLR(o, 0.05, { totalSteps: 40, threePhase: true })],
  ['RMSprop centered + ChainedScheduler', (ps) => new optim.RMSprop(ps, { lr: 0.01, centered: true, momentum: 0.5 }), (o) => new optim.ChainedScheduler([new optim.ConstantLR(o, 0.5, 4), new optim.ExponentialLR(o, 0.97)])],
  ['Adagrad + MultiStepLR', (ps) => new optim.Adagrad(ps, { lr: 0.1, lrDecay: 0.01 }), (o) => new optim.MultiStepLR(o, [5, 11], 0.5)],
];

describe('encodeCheckpoint / decodeCheckpoint', () => {
  for (const [name, makeOpt, makeSched] of RUNS) {
    test(`${name}: resumed from step 13 (mid-epoch) equals the uninterrupted run bit for bit`, () => {
      const a = setup(makeOpt, makeSched);
      const want = Array.from({ length: 30 }, a.step);
      const b = setup(makeOpt, makeSched);
      for (let i = 0; i < 13; i++) b.step();
      const files = kiln.encodeCheckpoint(b.parts, { step: 13, note: 'mid-epoch' });
      kiln.manualSeed(999); // another process: other random state, fresh objects
      const c = setup(makeOpt, makeSched, 0);
      const { extra } = kiln.decodeCheckpoint(files, c.parts);
      assert.deepEqual(extra, { step: 13, note: 'mid-epoch' });
      assert.deepEqual(c.opt.paramGroups.map((g) => g.lr), b.opt.paramGroups.map((g) => g.lr));
      const got = Array.from({ length: 17 }, c.step);
      assert.deepEqual(got, want.slice(13));
      assert.deepEqual(bits(c.model.parameters()), bits(a.model.parameters()));
    });
  }

  test('a checkpoint that does not fit changes nothing, and says why', () => {
    const make = (hidden: number) => setup((ps) => new optim.Adam(ps, { lr: 0.01 }), (o) => new optim.StepLR(o, 3), 1, hidden);
    const saved = make(8);
    for (let i = 0; i < 5; i++) saved.step();
    const files = kiln.encodeCheckpoint(saved.parts);
    const other = make(16); // other layer sizes
    for (let i = 0; i < 2; i++) other.step();
    const before = { params: bits(other.model.parameters()), lr: other.opt.paramGroups[0]!.lr, epoch: (other.sched as kiln.optim.StepLR).lastEpoch, state: JSON.stringify(other.loader.stateDict()), rng: kiln.getRngState() };
    const unchanged = () => {
      assert.deepEqual(bits(other.model.parameters()), before.params);
      assert.equal(other.opt.paramGroups[0]!.lr, before.lr);
      assert.equal((other.sched as kiln.optim.StepLR).lastEpoch, before.epoch);
      assert.equal(JSON.stringify(other.loader.stateDict()), before.state);
      assert.deepEqual(kiln.getRngState(), before.rng);
    };
    assert.throws(() => kiln.decodeCheckpoint(files, other.parts), (e: unknown) => e instanceof kiln.StateDictError && /is \[8, 3\], the parameter \[16, 3\]/.test((e as Error).message));
    unchanged();
    const sgd = setup((ps) => new optim.SGD(ps, { lr: 0.1 }), (o) => new optim.StepLR(o, 3), 1, 8);
    assert.throws(() => kiln.decodeCheckpoint(files, sgd.parts), /optimizer is Adam, this one SGD/);
    const cos = setup((ps) => new optim.Adam(ps, { lr: 0.01 }), (o) => new optim.CosineAnnealingLR(o, 5), 1, 8);
    const p = bits(cos.model.parameters());
    assert.throws(() => kiln.decodeCheckpoint(files, cos.parts), /the state dict is for StepLR, not CosineAnnealingLR/);
    assert.deepEqual(bits(cos.model.parameters()), p, 'the model was not loaded either');
    assert.throws(() => kiln.decodeCheckpoint({ ...files, 'optimizer.safetensors': undefined }, saved.parts), /no optimizer.safetensors/);
    assert.throws(() => kiln.decodeCheckpoint({ ...files, 'checkpoint.json': new TextEncoder().encode('{"format": "kiln-checkpoint", ') }, saved.parts), /not valid JSON/);
    assert.throws(() => kiln.decodeCheckpoint({ ...files, 'checkpoint.json': new TextEncoder().encode('{"format": "other"}') }, saved.parts), /not a kiln checkpoint/);
    assert.throws(() => kiln.encodeCheckpoint(saved.parts, { loss: NaN }), /cannot hold the number NaN/);
    // a tampered checkpoint.json: values from a file are checked before they reach the optimizer or the loader
    const tamper = (edit: (j: Record<string, any>) => void) => {
      const j = JSON.parse(new TextDecoder().decode(files['checkpoint.json']!));
      edit(j);
      return { ...files, 'checkpoint.json': new TextEncoder().encode(JSON.stringify(j)) };
    };
    const target = make(8);
    const p0 = bits(target.model.parameters()), lr0 = target.opt.paramGroups[0]!.lr;
    assert.throws(() => kiln.decodeCheckpoint(tamper((j) => (j.optimizer.paramGroups[0].lrTensor = 5)), target.parts), /'lrTensor' is not a hyperparameter of Adam/);
    assert.throws(() => kiln.decodeCheckpoint(tamper((j) => (j.optimizer.paramGroups[0].eps = '1e-8')), target.parts), /'eps' is "1e-8", expected a number/);
    assert.throws(() => kiln.decodeCheckpoint(tamper((j) => (j.optimizer.paramGroups[0].betas = [0.9])), target.parts), /expected a list of 2 numbers/);
    assert.throws(() => kiln.decodeCheckpoint(tamper((j) => (j.dataLoader.sampler.epochStart = { seed: -1, offset: 0 })), target.parts), /generator state/);
    assert.throws(() => kiln.decodeCheckpoint(tamper((j) => (j.scheduler.lastEpoch = 1.5)), target.parts), /lastEpoch must be an integer/);
    assert.deepEqual(bits(target.model.parameters()), p0);
    assert.equal(target.opt.paramGroups[0]!.lr, lr0);
  });
});

describe('saveCheckpoint / loadCheckpoint (folders)', () => {
  test('replaces a checkpoint atomically, refuses folders with other files, typed errors for bad paths', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kiln-ckpt-'));
    try {
      const run = setup((ps) => new optim.SGD(ps, { lr: 0.1, momentum: 0.9 }), (o) => new optim.LinearLR(o, 0.5, 1, 4));
      const path = join(dir, 'ckpt');
      run.step();
      await saveCheckpoint(path, run.parts, { step: 1 });
      run.step();
      await saveCheckpoint(path, run.parts, { step: 2 });
      assert.deepEqual(readdirSync(dir), ['ckpt'], 'no temporary folders left');
      assert.deepEqual(readdirSync(path).sort(), ['checkpoint.json', 'model.safetensors', 'optimizer.safetensors']);
      const fresh = setup((ps) => new optim.SGD(ps, { lr: 0.1, momentum: 0.9 }), (o) => new optim.LinearLR(o, 0.5, 1, 4));
      assert.deepEqual((await loadCheckpoint(path, fresh.parts)).extra, { step: 2 });
      assert.deepEqual(bits(fresh.model.parameters()), bits(run.model.parameters()));
      const { extra } = await loadCheckpoint(path, { model: fresh.model, rng: false });
      assert.deepEqual(extra, { step: 2 }, 'a part of a checkpoint loads alone');

      mkdirSync(join(dir, 'busy'));
      writeFileSync(join(dir, 'busy', 'notes.txt'), 'mine');
      await assert.rejects(saveCheckpoint(join(dir, 'busy'), run.parts), /holds other files \(notes.txt\)/);
      writeFileSync(join(dir, 'file'), 'x');
      await assert.rejects(saveCheckpoint(join(dir, 'file'), run.parts), /not a folder/);
      await assert.rejects(loadCheckpoint(join(dir, 'missing'), run.parts), (e: unknown) => e instanceof kiln.StateDictError && /no such checkpoint folder/.test((e as Error).message));
      await assert.rejects(loadCheckpoint(join(dir, 'file'), run.parts), /not a checkpoint folder/);
      assert.deepEqual(readdirSync(dir).sort(), ['busy', 'ckpt', 'file']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
