// RMSprop, Adagrad, the lr schedulers and gradient clipping: against PyTorch 1.13
// (scripts/torch-fixtures-layers.py's optim fixture), and compiled: a whole training step with
// scheduler.step() and clipping inside, over many steps, equals the eager run, compiles once,
// never retraces and never goes stale.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { haveFixture, loadFixtureFile, NO_FIXTURES, type FixtureFile } from './helpers/torch-cases.js';
import { assertClose } from './helpers/torch-compare.js';

const { nn, optim } = kiln;
type Tensor = kiln.Tensor;
type AnyOpt = kiln.optim.Optimizer<any>;

const fixture: Promise<FixtureFile> | null = haveFixture('optim') ? loadFixtureFile('optim') : null;
const skip = fixture ? false : NO_FIXTURES;

interface ScheduleSpec {
  adam?: boolean;
  make(o: AnyOpt): kiln.optim.Scheduler;
}

/** The fixture's schedules, built as kiln schedulers (torch's arguments, positional order). */
const SCHEDULES: Record<string, ScheduleSpec> = {
  StepLR: { make: (o) => new optim.StepLR(o, 3, 0.5) },
  MultiStepLR: { make: (o) => new optim.MultiStepLR(o, [2, 5, 5], 0.3) },
  ExponentialLR: { make: (o) => new optim.ExponentialLR(o, 0.9) },
  CosineAnnealingLR: { make: (o) => new optim.CosineAnnealingLR(o, 5, 0.01) },
  LinearLR: { make: (o) => new optim.LinearLR(o, 0.25, 0.9, 4) },
  ConstantLR: { make: (o) => new optim.ConstantLR(o, 0.5, 3) },
  LambdaLR: { make: (o) => new optim.LambdaLR(o, (e) => kiln.pow(0.95, e)) },
  MultiplicativeLR: { make: (o) => new optim.MultiplicativeLR(o, () => 0.9) },
  PolynomialLR: { make: (o) => new optim.PolynomialLR(o, 5, 2) },
  OneCycleLR_sgd: { make: (o) => new optim.OneCycleLR(o, [0.5, 0.2], { totalSteps: 12 }) },
  OneCycleLR_adam_linear3: { adam: true, make: (o) => new optim.OneCycleLR(o, 0.3, { totalSteps: 15, annealStrategy: 'linear', threePhase: true, pctStart: 0.25 }) },
  SequentialLR_warmup_cosine: { make: (o) => new optim.SequentialLR(o, [new optim.LinearLR(o, 0.1, 1, 3), new optim.CosineAnnealingLR(o, 6)], [3]) },
  SequentialLR_three: { make: (o) => new optim.SequentialLR(o, [new optim.ConstantLR(o, 0.1, 2), new optim.ExponentialLR(o, 0.9), new optim.StepLR(o, 2, 0.5)], [2, 5]) },
  ChainedScheduler: { make: (o) => new optim.ChainedScheduler([new optim.ConstantLR(o, 0.1, 2), new optim.ExponentialLR(o, 0.9)]) },
};

/** The fixture's optimizer: two groups (lr 0.1 and 0.05), SGD momentum 0.9 or Adam. */
function twoGroups(adam = false): AnyOpt {
  const p1 = nn.Parameter(kiln.zeros([2])), p2 = nn.Parameter(kiln.zeros([3]));
  const groups = [{ params: [p1] }, { params: [p2], lr: 0.05 }];
  return adam ? new optim.Adam(groups, { lr: 0.1 }) : new optim.SGD(groups, { lr: 0.1, momentum: 0.9 });
}

const momentumOf = (o: AnyOpt, adam: boolean) => o.paramGroups.map((g) => g.scheduled.get(adam ? 'beta1' : 'momentum')?.item() ?? (adam ? g.betas[0] : g.momentum));

describe('lr schedulers against torch', { skip }, () => {
  for (const [name, spec] of Object.entries(SCHEDULES)) {
    test(`${name}: every group's lr (and cycled momentum) at every step`, async () => {
      const f = await fixture!;
      const want = (f.meta.schedules as Record<string, { lrs: number[][]; momentum: (number | null)[][] }>)[name]!;
      const o = twoGroups(spec.adam);
      const s = spec.make(o);
      want.lrs.forEach((lrs, i) => {
        const got = o.paramGroups.map((g) => g.lr);
        lrs.forEach((w, j) => assert.ok(Math.abs(got[j]! - w) <= 1e-13 * Math.abs(w), `step ${i} group ${j}: lr ${got[j]} vs torch ${w}`));
        assert.deepEqual(s.getLastLr(), got);
        if (i < want.momentum.length) {
          momentumOf(o, !!spec.adam).forEach((m, j) => {
            const w = want.momentum[i]![j]!;
            assert.ok(Math.abs(m - w) <= 1e-7 * Math.abs(w), `step ${i} group ${j}: momentum ${m} vs torch ${w}`);
          });
          o.step();
          s.step();
        }
      });
    });
  }
});

describe('RMSprop, Adagrad and clipping against torch', { skip }, () => {
  const opts: Record<string, (ps: Tensor[]) => AnyOpt> = {
    rmsprop: (ps) => new optim.RMSprop(ps, { lr: 1e-2 }),
    rmsprop_full: (ps) => new optim.RMSprop(ps, { lr: 5e-3, alpha: 0.9, eps: 1e-6, weightDecay: 0.1, momentum: 0.8, centered: true }),
    adagrad: (ps) => new optim.Adagrad(ps, { lr: 0.1 }),
    adagrad_full: (ps) => new optim.Adagrad(ps, { lr: 0.1, lrDecay: 0.05, weightDecay: 0.01, initialAccumulatorValue: 0.3, eps: 1e-8 }),
  };
  for (const [name, make] of Object.entries(opts)) {
    test(`${name}: 6 steps of a Linear(6, 4) MSE fit, eager and compiled`, async () => {
      const f = await fixture!;
      const meta = (f.meta.trajectories as Record<string, { losses: number[] }>)[name]!;
      const start = Object.fromEntries(Object.entries(f.tensors).filter(([k]) => k.startsWith('start.')).map(([k, t]) => [k.slice(6), t]));
      const after = Object.fromEntries(Object.entries(f.tensors).filter(([k]) => k.startsWith(`${name}.after.`)).map(([k, t]) => [k.slice(name.length + 7), t]));
      const x = f.tensors['data.x']!, y = f.tensors['data.y']!;
      for (const compiled of [false, true]) {
        kiln.compiler.reset();
        const model = new nn.Linear(6, 4);
        model.loadStateDict(start);
        const o = make(model.parameters());
        const step = () => {
          o.zeroGrad();
          const loss = kiln.mseLoss(model.call(x), y);
          loss.backward();
          o.step();
          return loss;
        };
        const run = compiled ? kiln.compile(step, { fullgraph: true }) : step;
        const losses = meta.losses.map(() => kiln.scope(() => (run() as Tensor).item()));
        assertClose(losses, meta.losses, 1e-5, `${name} (${compiled ? 'compiled' : 'eager'}) losses`);
        for (const [k, t] of Object.entries(after)) assertClose(model.stateDict()[k]!, t, 1e-5, `${name} (${compiled ? 'compiled' : 'eager'}) ${k}`);
        if (compiled) {
          const s = kiln.stats();
          assert.equal(s.graphBreaks.length, 0);
          assert.equal(s.fusionFallbacks, 0);
          assert.equal(s.eagerFallbacks, 0);
          assert.ok(s.cacheHits >= 4, `replayed ${s.cacheHits} of 6 steps`);
        }
      }
    });
  }

  test('clipGradNorm_ (norm types 2, 1, inf, 3) and clipGradValue_ on two gradients', async () => {
    const f = await fixture!;
    const norms = f.meta.clip as Record<string, number>;
    const fresh = () => {
      const a = nn.Parameter(kiln.zeros([5, 3])), b = nn.Parameter(kiln.zeros([7]));
      a.grad = kiln.keep(f.tensors['clip.grad.a']!.clone());
      b.grad = kiln.keep(f.tensors['clip.grad.b']!.clone());
      return [a, b];
    };
    for (const [name, p] of [['2', 2], ['1', 1], ['inf', Infinity], ['3', 3]] as const) {
      const [a, b] = fresh();
      const total = nn.utils.clipGradNorm_([a!, b!], 1.5, p);
      assert.ok(Math.abs(total.item() - norms[name]!) <= 1e-5 * norms[name]!, `norm ${name}: ${total.item()} vs torch ${norms[name]}`);
      assertClose(a!.grad!, f.tensors[`clip.norm${name}.a`]!, 1e-5, `norm ${name} grad a`);
      assertClose(b!.grad!, f.tensors[`clip.norm${name}.b`]!, 1e-5, `norm ${name} grad b`);
    }
    const [a, b] = fresh();
    nn.utils.clipGradValue_([a!, b!], 0.8);
    assertClose(a!.grad!, f.tensors['clip.value.a']!, 0, 'value grad a');
    assertClose(b!.grad!, f.tensors['clip.value.b']!, 0, 'value grad b');
  });
});

// ---- compiled steps with schedulers ------------------------------------------------------------

interface Run { losses: number[]; lrs: number[][]; params: number[][] }

/** N training steps of a small MLP with `makeOpt` + `makeSched`, both clippings, and scheduler.step() inside the step. */
function train(seed: number, steps: number, makeOpt: (ps: Tensor[]) => AnyOpt, makeSched: (o: AnyOpt) => kiln.optim.Scheduler, compiled: boolean): Run {
  kiln.manualSeed(seed);
  const model = new nn.Sequential(new nn.Linear(4, 8), new nn.Tanh(), new nn.Linear(8, 2));
  const o = makeOpt(model.parameters());
  const s = makeSched(o);
  const x = kiln.keep(kiln.randn([16, 4])), y = kiln.keep(kiln.randn([16, 2]));
  const step = () => {
    o.zeroGrad();
    const loss = kiln.mseLoss(model.call(x), y);
    loss.backward();
    nn.utils.clipGradValue_(model.parameters(), 0.3);
    nn.utils.clipGradNorm_(model.parameters(), 0.5);
    o.step();
    s.step();
    return loss;
  };
  // lrs compared exactly: the JS renderer computes float64 as eager does (native's fast math may not)
  const run = compiled ? kiln.compile(step, { fullgraph: true, backend: 'js' }) : step;
  const out: Run = { losses: [], lrs: [], params: [] };
  for (let i = 0; i < steps; i++) {
    out.losses.push(kiln.scope(() => (run() as Tensor).item()));
    out.lrs.push(s.getLastLr());
  }
  out.params = model.parameters().map((p) => Array.from(p.dataSync()));
  return out;
}

const COMPILED: [string, (ps: Tensor[]) => AnyOpt, (o: AnyOpt) => kiln.optim.Scheduler][] = [
  ['SGD + SequentialLR(LinearLR warm-up, CosineAnnealingLR)', (ps) => new optim.SGD(ps, { lr: 0.2, momentum: 0.9 }), (o) => new optim.SequentialLR(o, [new optim.LinearLR(o, 0.1, 1, 5), new optim.CosineAnnealingLR(o, 10, 0.001)], [5])],
  ['Adam + OneCycleLR (cycled beta1)', (ps) => new optim.Adam(ps, { lr: 1e-2 }), (o) => new optim.OneCycleLR(o, 0.05, { totalSteps: 30 })],
  ['SGD + OneCycleLR (cycled momentum, linear, three phases)', (ps) => new optim.SGD(ps, { lr: 0.1 }), (o) => new optim.OneCycleLR(o, 0.3, { totalSteps: 30, annealStrategy: 'linear', threePhase: true })],
  ['RMSprop + StepLR', (ps) => new optim.RMSprop(ps, { lr: 1e-2, momentum: 0.5 }), (o) => new optim.StepLR(o, 4, 0.5)],
  ['Adagrad + ChainedScheduler(ConstantLR, ExponentialLR)', (ps) => new optim.Adagrad(ps, { lr: 0.1 }), (o) => new optim.ChainedScheduler([new optim.ConstantLR(o, 0.5, 6), new optim.ExponentialLR(o, 0.95)])],
  ['AdamW + MultiStepLR + LambdaLR with tensor math', (ps) => new optim.AdamW(ps, { lr: 1e-2 }), (o) => new optim.ChainedScheduler([new optim.MultiStepLR(o, [3, 9, 9], 0.5), new optim.LambdaLR(o, (e) => kiln.minimum(1, kiln.div(kiln.add(e, 1), 8)))])],
];

describe('a compiled step with scheduler.step() inside', () => {
  for (const [name, makeOpt, makeSched] of COMPILED) {
    test(`${name}: 30 compiled steps equal eager (lrs exactly), one compile, no retrace`, () => {
      const eager = train(7, 30, makeOpt, makeSched, false);
      kiln.compiler.reset();
      const comp = train(7, 30, makeOpt, makeSched, true);
      const s = kiln.stats();
      assert.deepEqual(comp.lrs, eager.lrs, 'the lr after every step');
      assert.ok(new Set(eager.lrs.map((l) => l[0])).size > 5, 'the schedule changes the lr');
      eager.losses.forEach((l, i) => assert.ok(Math.abs(l - comp.losses[i]!) <= 1e-5 * Math.abs(l), `step ${i}: eager loss ${l}, compiled ${comp.losses[i]}`));
      eager.params.forEach((p, i) => p.forEach((v, j) => assert.ok(Math.abs(v - comp.params[i]![j]!) <= 1e-5 * Math.max(1, Math.abs(v)), `param ${i}[${j}]`)));
      assert.ok(s.compiles <= 1, `compiled once (optimizer state made on the first step is a one-shot trace); got ${s.compiles}`);
      assert.equal(s.recompiles.length, 0, `recompiles: ${JSON.stringify(s.recompiles)}`);
      assert.equal(s.graphBreaks.length, 0);
      assert.equal(s.fusionFallbacks, 0);
      assert.equal(s.eagerFallbacks, 0);
      assert.ok(s.cacheHits >= 28, `replayed ${s.cacheHits} of 30 steps`);
    });
  }

  test('a lambda with JS arithmetic reads the epoch: correct eagerly and with graph breaks, refused under fullgraph', () => {
    const make = (o: AnyOpt) => new optim.LambdaLR(o, (e) => 0.9 ** Number(e));
    const eager = train(3, 6, (ps) => new optim.SGD(ps, { lr: 0.1 }), make, false);
    assert.deepEqual(eager.lrs.map((l) => l[0]), [1, 2, 3, 4, 5, 6].map((e) => 0.1 * 0.9 ** e));
    kiln.manualSeed(3);
    const lin = new nn.Linear(2, 1);
    const o = new optim.SGD(lin.parameters(), { lr: 0.1 });
    const s = make(o);
    const x = kiln.randn([4, 2]);
    const full = kiln.compile(() => { o.zeroGrad(); lin.call(x).sum().backward(); o.step(); s.step(); }, { fullgraph: true });
    assert.throws(() => full(), kiln.GraphBreakError);
    kiln.compiler.reset();
    const broken = kiln.compile(() => { o.zeroGrad(); lin.call(x).sum().backward(); o.step(); s.step(); });
    const before = s.lastEpoch;
    for (let i = 0; i < 3; i++) broken();
    assert.equal(s.lastEpoch, before + 3);
    assert.ok(Math.abs(o.paramGroups[0]!.lr - 0.1 * 0.9 ** s.lastEpoch) < 1e-12, 'each call re-ran the lambda');
    assert.ok(kiln.stats().graphBreaks.length > 0, 'reported as a graph break');
  });
});

describe('scheduler state, errors and semantics', () => {
  test('stateDict / loadStateDict resume a schedule where it stopped (with the optimizer state)', () => {
    const build = () => {
      const o = twoGroups();
      return { o, s: new optim.SequentialLR(o, [new optim.LinearLR(o, 0.2, 1, 3), new optim.ExponentialLR(o, 0.8)], [3]) };
    };
    const a = build();
    for (let i = 0; i < 5; i++) a.s.step();
    const osd = a.o.stateDict(), ssd = JSON.parse(JSON.stringify(a.s.stateDict()));
    const b = build();
    b.o.loadStateDict(osd);
    b.s.loadStateDict(ssd);
    for (let i = 0; i < 4; i++) {
      a.s.step();
      b.s.step();
      assert.deepEqual(b.s.getLastLr(), a.s.getLastLr(), `step ${i} after resume`);
    }
    assert.throws(() => b.s.loadStateDict({ type: 'StepLR', lastEpoch: 1, baseLrs: [] }), kiln.StateDictError);
  });

  test('OneCycleLR sets the JS momentum too (SGD turns momentum on), and refuses steps past the cycle', () => {
    const o = new optim.SGD([nn.Parameter(kiln.zeros([2]))], { lr: 0.1 });
    const s = new optim.OneCycleLR(o, 1, { totalSteps: 10 });
    assert.equal(o.paramGroups[0]!.momentum, 0.95);
    s.step();
    const m = o.paramGroups[0]!.scheduled.get('momentum')!.item();
    assert.ok(m < 0.95 && m > 0.85, `cycled momentum ${m}`);
    assert.equal(o.stateDict().paramGroups[0]!.momentum, m, 'the state dict reads the scheduled momentum');
    for (let i = 0; i < 9; i++) s.step(); // torch allows step number totalSteps (one past the last phase)
    assert.equal(s.lastEpoch, 10);
    assert.throws(() => s.step(), (e: unknown) => e instanceof kiln.ArgumentError && /totalSteps 10/.test((e as Error).message));
  });

  test('typed errors with the valid values', () => {
    const o = twoGroups();
    assert.throws(() => new optim.StepLR(o, 0), kiln.ArgumentError);
    assert.throws(() => new optim.LinearLR(o, 1.5), /startFactor must be in \[0, 1\]/);
    assert.throws(() => new optim.OneCycleLR(o, 0.1, { totalSteps: 10, annealStrategy: 'cosine' as never }), /'cos', 'linear'/);
    assert.throws(() => new optim.OneCycleLR(o, 0.1), /totalSteps/);
    assert.throws(() => new optim.OneCycleLR(o, [0.1], { totalSteps: 5 }), /2 values for maxLr/);
    const ada = new optim.Adagrad([nn.Parameter(kiln.zeros([1]))]);
    assert.throws(() => new optim.OneCycleLR(ada, 0.1, { totalSteps: 5 }), /no momentum or betas/);
    assert.throws(() => new optim.SequentialLR(o, [new optim.StepLR(o, 2)], [3]), /milestones/);
    assert.throws(() => new optim.SequentialLR(o, [new optim.StepLR(twoGroups(), 2), new optim.StepLR(o, 2)], [3]), /another optimizer/);
    assert.throws(() => new optim.LambdaLR(o, [() => 1]), /one per parameter group/);
    assert.throws(() => new optim.StepLR({} as never, 2), /not an Optimizer/);
    assert.throws(() => new optim.RMSprop([nn.Parameter(kiln.zeros([1]))], { alpha: -1 }), /alpha must be >= 0/);
    assert.throws(() => nn.utils.clipGradNorm_([nn.Parameter(kiln.zeros([1]))], 1, -1), /normType/);
  });

  test('RMSprop and Adagrad keep torch\'s state names; Adagrad makes its state up front', () => {
    const p = nn.Parameter(kiln.ones([3]));
    const ada = new optim.Adagrad([p], { initialAccumulatorValue: 0.5 });
    assert.deepEqual(Object.keys(ada.stateDict().state[0]!), ['step', 'sum'], 'before any step, as torch');
    assert.deepEqual(Array.from(ada.stateDict().state[0]!.sum!.dataSync()), [0.5, 0.5, 0.5]);
    const q = nn.Parameter(kiln.ones([3]));
    const rms = new optim.RMSprop([q], { momentum: 0.9, centered: true });
    q.grad = kiln.keep(kiln.ones([3]));
    rms.step();
    assert.deepEqual(Object.keys(rms.stateDict().state[0]!), ['step', 'square_avg', 'momentum_buffer', 'grad_avg']);
  });

  test('clipGradNorm_: no gradients give 0, errorIfNonfinite raises a NumericsError, a single tensor is accepted', () => {
    const p = nn.Parameter(kiln.zeros([2]));
    assert.equal(nn.utils.clipGradNorm_([p], 1).item(), 0);
    p.grad = kiln.keep(kiln.tensor([Infinity, 1]));
    assert.throws(() => nn.utils.clipGradNorm_(p, 1, 2, true), kiln.NumericsError);
    p.grad = kiln.keep(kiln.tensor([3, 4], { dtype: 'float32' }));
    assert.equal(nn.utils.clipGradNorm_(p, 1).item(), 5);
    assert.ok(Math.abs(Math.hypot(...p.grad.dataSync()) - 1) < 1e-6);
  });
});

describe('RMSprop and Adagrad against float64 references of torch\'s update rules', () => {
  /** Plain-JS float64 RMSprop / Adagrad over flat arrays, written from torch 1.13's _single_tensor_* functions. */
  const rmspropRef = (o: { lr: number; alpha: number; eps: number; weightDecay: number; momentum: number; centered: boolean }) => {
    let v: number[] | null = null, a: number[] | null = null, buf: number[] | null = null;
    return (p: number[], g0: number[]) => {
      const g = g0.map((x, i) => x + o.weightDecay * p[i]!);
      v ??= g.map(() => 0);
      v = v.map((x, i) => o.alpha * x + (1 - o.alpha) * g[i]! * g[i]!);
      let avg: number[];
      if (o.centered) {
        a ??= g.map(() => 0);
        a = a.map((x, i) => o.alpha * x + (1 - o.alpha) * g[i]!);
        avg = v.map((x, i) => Math.sqrt(x - a![i]! * a![i]!) + o.eps);
      } else avg = v.map((x) => Math.sqrt(x) + o.eps);
      if (o.momentum > 0) {
        buf ??= g.map(() => 0);
        buf = buf.map((b, i) => o.momentum * b + g[i]! / avg[i]!);
        return p.map((x, i) => x - o.lr * buf![i]!);
      }
      return p.map((x, i) => x - (o.lr * g[i]!) / avg[i]!);
    };
  };
  const adagradRef = (o: { lr: number; lrDecay: number; weightDecay: number; init: number; eps: number }) => {
    let sum: number[] | null = null, step = 0;
    return (p: number[], g0: number[]) => {
      step++;
      const g = g0.map((x, i) => x + o.weightDecay * p[i]!);
      const clr = o.lr / (1 + (step - 1) * o.lrDecay);
      sum ??= g.map(() => o.init);
      sum = sum.map((s, i) => s + g[i]! * g[i]!);
      return p.map((x, i) => x - (clr * g[i]!) / (Math.sqrt(sum![i]!) + o.eps));
    };
  };
  const cases: [string, (ps: Tensor[]) => AnyOpt, (p: number[], g: number[]) => number[]][] = [
    ['RMSprop centered, momentum, weight decay', (ps) => new optim.RMSprop(ps, { lr: 0.01, alpha: 0.9, eps: 1e-6, weightDecay: 0.1, momentum: 0.7, centered: true }), rmspropRef({ lr: 0.01, alpha: 0.9, eps: 1e-6, weightDecay: 0.1, momentum: 0.7, centered: true })],
    ['RMSprop defaults', (ps) => new optim.RMSprop(ps), rmspropRef({ lr: 0.01, alpha: 0.99, eps: 1e-8, weightDecay: 0, momentum: 0, centered: false })],
    ['Adagrad lrDecay, weight decay, initial accumulator', (ps) => new optim.Adagrad(ps, { lr: 0.1, lrDecay: 0.05, weightDecay: 0.01, initialAccumulatorValue: 0.3, eps: 1e-8 }), adagradRef({ lr: 0.1, lrDecay: 0.05, weightDecay: 0.01, init: 0.3, eps: 1e-8 })],
  ];
  for (const [name, make, ref] of cases) {
    test(`${name}: 8 steps of random gradients in float64`, () => {
      kiln.manualSeed(11);
      const p = nn.Parameter(kiln.randn([7], { dtype: 'float64' }));
      const o = make([p]);
      let want = Array.from(p.dataSync());
      for (let s = 0; s < 8; s++) {
        const g = kiln.keep(kiln.randn([7], { dtype: 'float64' }));
        want = ref(want, Array.from(g.dataSync()));
        p.grad = g;
        o.step();
        Array.from(p.dataSync()).forEach((v, i) => assert.ok(Math.abs(v - want[i]!) <= 1e-12 * Math.max(1, Math.abs(want[i]!)), `step ${s} [${i}]: ${v} vs ${want[i]}`));
      }
    });
  }
});
