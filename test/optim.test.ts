import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';

const { nn, optim } = kiln;
type Tensor = kiln.Tensor;

const P0 = [0.5, -1.25, 2, 0.1];
const G = [0.3, -0.2, 1.5, -0.05];

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number, what: string) {
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!, e = expected[i]!;
    assert.ok(Math.abs(a - e) <= tol * (1 + Math.abs(e)), `${what}[${i}]: got ${a}, expected ${e} (diff ${a - e})`);
  }
}

/** A parameter with a fixed gradient (set once; step() does not change it). */
function fixedParam(): Tensor {
  const p = nn.Parameter(kiln.tensor(P0));
  p.grad = kiln.keep(kiln.tensor(G));
  return p;
}

/** Runs `steps` optimizer steps; lrs[i] (if given) is set before step i. Returns p after each step. */
function run(make: (p: Tensor) => kiln.optim.Optimizer<object>, steps: number, lrs: (number | undefined)[] = []): number[][] {
  const p = fixedParam();
  const opt = make(p);
  const out: number[][] = [];
  for (let i = 0; i < steps; i++) {
    if (lrs[i] !== undefined) opt.paramGroups[0]!.lr = lrs[i]!;
    opt.step();
    out.push(Array.from(p.dataSync()));
  }
  return out;
}

// ---- float64 references: torch's update rules, written out ----

function sgdRef(o: { lr: number; momentum?: number; dampening?: number; nesterov?: boolean; weightDecay?: number }, steps: number, lrs: (number | undefined)[] = []): number[][] {
  const p = [...P0];
  const buf = P0.map(() => 0);
  let lr = o.lr;
  const out: number[][] = [];
  for (let t = 0; t < steps; t++) {
    lr = lrs[t] ?? lr;
    for (let i = 0; i < p.length; i++) {
      let d = G[i]! + (o.weightDecay ?? 0) * p[i]!;
      const mom = o.momentum ?? 0;
      if (mom !== 0) {
        buf[i] = t === 0 ? d : mom * buf[i]! + (1 - (o.dampening ?? 0)) * d;
        d = o.nesterov ? d + mom * buf[i]! : buf[i]!;
      }
      p[i] = p[i]! - lr * d;
    }
    out.push([...p]);
  }
  return out;
}

function adamRef(o: { lr: number; betas?: [number, number]; eps?: number; weightDecay?: number; decoupled: boolean; amsgrad?: boolean }, steps: number, lrs: (number | undefined)[] = []): number[][] {
  const [b1, b2] = o.betas ?? [0.9, 0.999];
  const eps = o.eps ?? 1e-8, wd = o.weightDecay ?? 0;
  const p = [...P0], m = P0.map(() => 0), v = P0.map(() => 0), vmax = P0.map(() => 0);
  let lr = o.lr;
  const out: number[][] = [];
  for (let t = 1; t <= steps; t++) {
    lr = lrs[t - 1] ?? lr;
    for (let i = 0; i < p.length; i++) {
      let g = G[i]!;
      if (wd !== 0) {
        if (o.decoupled) p[i] = p[i]! * (1 - lr * wd);
        else g += wd * p[i]!;
      }
      m[i] = b1 * m[i]! + (1 - b1) * g;
      v[i] = b2 * v[i]! + (1 - b2) * g * g;
      vmax[i] = Math.max(vmax[i]!, v[i]!);
      const bc1 = 1 - b1 ** t, bc2 = 1 - b2 ** t;
      const denom = Math.sqrt(o.amsgrad ? vmax[i]! : v[i]!) / Math.sqrt(bc2) + eps;
      p[i] = p[i]! - (lr / bc1) * (m[i]! / denom);
    }
    out.push([...p]);
  }
  return out;
}

function check(actual: number[][], expected: number[][], what: string, tol = 2e-6) {
  actual.forEach((a, t) => assertClose(a, expected[t]!, tol, `${what} step ${t + 1}`));
}

describe('SGD', () => {
  test('plain, momentum, nesterov, dampening, weight decay match torch over 3 steps', () => {
    const configs = [
      { lr: 0.1 },
      { lr: 0.1, momentum: 0.9 },
      { lr: 0.05, momentum: 0.9, nesterov: true, weightDecay: 0.1 },
      { lr: 0.1, momentum: 0.8, dampening: 0.5, weightDecay: 0.01 },
    ];
    for (const c of configs) check(run((p) => new optim.SGD([p], c), 3), sgdRef(c, 3), JSON.stringify(c));
  });

  test('changing group.lr between steps takes effect, through the kept lr tensor', () => {
    const c = { lr: 0.1, momentum: 0.9 };
    const lrs = [undefined, 0.01, 0.5];
    check(run((p) => new optim.SGD([p], c), 3, lrs), sgdRef(c, 3, lrs), 'lr schedule');
    const opt = new optim.SGD([fixedParam()], { lr: 0.1 });
    const g = opt.paramGroups[0]!;
    const lrTensor = g.lrTensor;
    g.lr = 0.25;
    assert.equal(g.lr, 0.25);
    assert.equal(g.lrTensor, lrTensor, 'the same tensor, written in place');
    assert.equal(lrTensor.item(), 0.25);
    assert.throws(() => (g.lr = -1), /learning rate/);
  });

  test('validation', () => {
    assert.throws(() => new optim.SGD([fixedParam()], { nesterov: true }), /nesterov/);
    assert.throws(() => new optim.SGD([], {}), /empty/);
    const p = fixedParam();
    assert.throws(() => new optim.SGD([p, p]), /more than one group/);
    assert.throws(() => new optim.SGD([p.mul(2)]), /non-leaf/);
  });
});

describe('Adam / AdamW', () => {
  test('Adam matches torch over 3 steps (with and without weight decay, amsgrad)', () => {
    const configs = [
      { lr: 0.1 },
      { lr: 0.01, betas: [0.8, 0.99] as [number, number], eps: 1e-6, weightDecay: 0.1 },
      { lr: 0.05, weightDecay: 0.05, amsgrad: true },
    ];
    for (const c of configs) check(run((p) => new optim.Adam([p], c), 3), adamRef({ ...c, decoupled: false }, 3), `Adam ${JSON.stringify(c)}`);
  });

  test('AdamW: decoupled decay, torch default weightDecay 1e-2', () => {
    for (const c of [{ lr: 0.1 }, { lr: 0.02, weightDecay: 0.3 }]) {
      check(run((p) => new optim.AdamW([p], c), 3), adamRef({ weightDecay: 1e-2, ...c, decoupled: true }, 3), `AdamW ${JSON.stringify(c)}`);
    }
  });

  test('changing group.lr between steps takes effect', () => {
    const lrs = [undefined, 0.3, 0.001];
    check(run((p) => new optim.AdamW([p], { lr: 0.1 }), 3, lrs), adamRef({ lr: 0.1, weightDecay: 1e-2, decoupled: true }, 3, lrs), 'AdamW lr schedule');
  });

  test('state: kept tensors with torch names, a float32 step counter advanced in place', () => {
    const p = fixedParam();
    const opt = new optim.Adam([p], { lr: 0.1 });
    assert.equal(opt.state.size, 0, 'created lazily');
    kiln.scope(() => opt.step());
    const s = opt.state.get(p)!;
    assert.deepEqual(Object.keys(s), ['step', 'exp_avg', 'exp_avg_sq']);
    const step = s.step!;
    assert.equal(step.dtype, 'float32');
    assert.deepEqual(step.shape, []);
    kiln.scope(() => opt.step());
    kiln.scope(() => opt.step());
    assert.ok(Object.values(s).every((t) => !t.isDisposed));
    assert.equal(opt.state.get(p)!.step, step);
    assert.equal(step.item(), 3);
  });
});

describe('step() contract', () => {
  test('reads no tensor value into JS, allocates nothing that outlives it', () => {
    const P = kiln.Tensor.prototype as unknown as Record<string, unknown>;
    for (const make of [
      (ps: Tensor[]) => new optim.SGD(ps, { lr: 0.1, momentum: 0.9, dampening: 0.1, weightDecay: 0.01 }),
      (ps: Tensor[]) => new optim.SGD(ps, { lr: 0.1, momentum: 0.9, nesterov: true }),
      (ps: Tensor[]) => new optim.Adam(ps, { lr: 0.1, weightDecay: 0.1, amsgrad: true }),
      (ps: Tensor[]) => new optim.AdamW(ps, { lr: 0.1 }),
    ]) {
      const model = new nn.Sequential(new nn.Linear(3, 4), new nn.ReLU(), new nn.Linear(4, 1));
      const opt = make(model.parameters());
      const lossStep = () => kiln.scope(() => {
        opt.zeroGrad();
        model.call(kiln.randn([8, 3])).square().mean().backward();
      });
      lossStep();
      opt.step(); // creates the state
      lossStep();
      const before = kiln.memory();
      const saved = ['item', 'dataSync', 'toArray', 'data'].map((k) => [k, P[k]] as const);
      for (const [k] of saved) P[k] = () => { throw new Error(`step() read a tensor with ${k}()`); };
      try {
        opt.step();
      } finally {
        for (const [k, f] of saved) P[k] = f;
      }
      const after = kiln.memory();
      assert.equal(after.tensors, before.tensors);
      assert.equal(after.bytes, before.bytes);
    }
  });

  test('updates write into the same parameter tensors', () => {
    const lin = new nn.Linear(2, 2);
    const w = lin.weight, before = Array.from(w.dataSync());
    const opt = new optim.SGD(lin.parameters(), { lr: 0.5 });
    lin.call(kiln.ones([1, 2])).sum().backward();
    opt.step();
    assert.equal(lin.weight, w);
    assert.notDeepEqual(Array.from(w.dataSync()), before);
    assert.ok(w.requiresGrad && w.isLeaf);
    opt.zeroGrad();
    assert.equal(w.grad, null);
  });
});

describe('param groups and optimizer state dicts', () => {
  test('per-group options', () => {
    const a = fixedParam(), b = fixedParam();
    const opt = new optim.SGD([{ params: [a] }, { params: [b], lr: 0.5, momentum: 0.9 }], { lr: 0.1 });
    assert.equal(opt.paramGroups[0]!.lr, 0.1);
    assert.equal(opt.paramGroups[1]!.momentum, 0.9);
    opt.step();
    assertClose(Array.from(a.dataSync()), sgdRef({ lr: 0.1 }, 1)[0]!, 1e-6, 'group 0');
    assertClose(Array.from(b.dataSync()), sgdRef({ lr: 0.5, momentum: 0.9 }, 1)[0]!, 1e-6, 'group 1');
  });

  test('stateDict / loadStateDict resume exactly', () => {
    const p1 = fixedParam();
    const opt1 = new optim.Adam([p1], { lr: 0.1 });
    opt1.step();
    opt1.step();
    const p2 = fixedParam();
    kiln.noGrad(() => p2.copy_(p1));
    const opt2 = new optim.Adam([p2], { lr: 0.5 });
    opt2.loadStateDict(opt1.stateDict());
    assert.equal(opt2.paramGroups[0]!.lr, 0.1);
    opt1.step();
    opt2.step();
    assert.deepEqual(Array.from(p2.dataSync()), Array.from(p1.dataSync()));
    assert.throws(() => opt2.loadStateDict({ ...opt1.stateDict(), paramGroups: [] }), kiln.StateDictError);
  });
});
