// The scheduler pass by pass (src/compiler/schedule): each pass driven on small graphs traced
// from real kiln ops, its decisions and their reasons asserted, and its printer checked.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import type { Graph } from '../src/compiler/capture/graph.js';
import { compiledFunctionOf } from '../src/compiler/compiled-info.js';
import { allocateBuffers, printBufferPlan } from '../src/compiler/schedule/allocate-buffers.js';
import { chooseBuffers, printBufferChoice } from '../src/compiler/schedule/choose-buffers.js';
import { dropDeadStores, printDeadStores } from '../src/compiler/schedule/dead-stores.js';
import { groupHorizontally } from '../src/compiler/schedule/horizontal.js';
import { lower } from '../src/compiler/schedule/lower.js';
import type { Lowered } from '../src/compiler/schedule/lowered.js';
import { newLowerState, type LowerState } from '../src/compiler/schedule/lower-state.js';
import { sharedMatmulSums } from '../src/compiler/schedule/materialize-shared.js';
import { EPILOGUE_SEARCH_WINDOW } from '../src/compiler/schedule/pointwise-rules.js';
import { printDecisions, printSchedule } from '../src/compiler/schedule/print.js';
import { scheduleKernels } from '../src/compiler/schedule/schedule-kernels.js';
import { writeMutations } from '../src/compiler/schedule/write-mutations.js';

/** The graph kiln.compile lowers for fn on these arguments. */
function traced(fn: (...a: kiln.Tensor[]) => unknown, ...args: kiln.Tensor[]): Graph {
  kiln.compiler.reset();
  const c = kiln.compile(fn, { fullgraph: true, backend: 'js', cache: false });
  (c as (...a: kiln.Tensor[]) => unknown)(...args);
  return compiledFunctionOf(c).compiledEntries.at(-1)!.graph;
}

/** The state after the buffer passes, ready for scheduling. */
function stateFor(g: Graph): LowerState {
  const choice = chooseBuffers(g, new Set());
  return newLowerState(g, choice.mat, allocateBuffers(g.nodes, choice.mat), [...choice.decisions]);
}

const idOf = (g: Graph, op: string, nth = 0): number => g.nodes.filter((n) => n.op === op)[nth]!.id;
const reasons = (ds: readonly { reason: string }[]): string[] => ds.map((d) => d.reason);

test('chooseBuffers: a matmul operand and an opaque input get buffers, with their reasons; cheap pointwise values are inlined', () => {
  const x = kiln.randn([4, 8]), w = kiln.randn([8, 3]);
  const g = traced((x, w) => kiln.cumsum(kiln.matmul(kiln.relu(x), w), 1), x, w);
  const c = chooseBuffers(g, new Set());
  const relu = idOf(g, 'relu'), mm = idOf(g, 'matmul'), cs = idOf(g, 'cumsum');
  assert.deepEqual(c.decisions, [
    { decision: 'materialized', nodes: [relu], reason: `operand of matmul %${mm}` },
  ]);
  assert.ok(c.mat.has(mm) && c.mat.has(cs));
  assert.match(printBufferChoice(c), new RegExp(`^buffers for .*%${relu}.*\\n  materialized %${relu}: operand of matmul %${mm}$`));

  const y = traced((x) => kiln.add(kiln.cumsum(kiln.mul(x, 2), 1), 1), x);
  const c2 = chooseBuffers(y, new Set());
  assert.deepEqual(reasons(c2.decisions), [`input of opaque cumsum (%${idOf(y, 'cumsum')})`]);
});

test('chooseBuffers: the cost rule computes an expensive value read by two kernels once', () => {
  const x = kiln.randn([8, 10]);
  const g = traced((x) => kiln.softmax(x, -1), x);
  const c = chooseBuffers(g, new Set());
  const exp = idOf(g, 'exp');
  assert.deepEqual(c.decisions, [{ decision: 'materialized', nodes: [exp], reason: `2 consumers (%${idOf(g, 'sum')}, %${idOf(g, 'div')}) and recomputing exp would repeat transcendental work` }]);
  // a node an earlier attempt asked for is materialized without a decision of its own
  const forced = chooseBuffers(g, new Set([exp]));
  assert.deepEqual(forced.decisions, []);
  assert.ok(forced.mat.has(exp));
});

test('allocateBuffers: inputs keep their layout, materialized nodes get contiguous scratch buffers', () => {
  const x = kiln.randn([6, 4]);
  const g = traced((x) => kiln.sum(kiln.exp(kiln.transpose(x, 0, 1)), 1), x);
  const c = chooseBuffers(g, new Set());
  const plan = allocateBuffers(g.nodes, c.mat);
  assert.equal(plan.inputBuffers.length, 1);
  assert.equal(plan.buffers[plan.inputBuffers[0]!]!.kind, 'input');
  const sum = idOf(g, 'sum');
  assert.deepEqual(plan.layoutOf.get(sum), { strides: [1], offset: 0 });
  assert.equal(printBufferPlan(plan), `buf0: %0 input float32[24]\nbuf1: %${sum} scratch float32[4]`);
});

test('scheduleKernels: softmax is one row kernel; the sum joins it in the same pass (online softmax)', () => {
  const g = traced((x) => kiln.softmax(x, -1), kiln.randn([8, 10]));
  const st = stateFor(g);
  assert.equal(scheduleKernels(st), null);
  const [exp, sum, div] = [idOf(g, 'exp'), idOf(g, 'sum'), idOf(g, 'div')];
  assert.deepEqual(reasons(st.decisions.slice(1)), [
    'epilogue of row kernel k0_max',
    'sum joins row kernel k0_max (same input shape and dims), in the same pass as the reduction before it (online softmax formulation)',
    'epilogue of row kernel k0_max',
  ]);
  assert.deepEqual(st.decisions.slice(1).map((d) => d.nodes[0]), [exp, sum, div]);
  assert.equal(printSchedule(st.steps), `0: k0_max row [8] x [10], reduces %${idOf(g, 'max')} (max), %${sum} (sum, softmax), stores %${idOf(g, 'max')}, %${sum}, %${exp}, %${div}`);
});

test('scheduleKernels: layer norm finds the Welford formulation', () => {
  const g = traced((x, w, b) => kiln.layerNorm(x, [16], w, b), kiln.randn([4, 16]), kiln.randn([16]), kiln.randn([16]));
  const st = stateFor(g);
  assert.equal(scheduleKernels(st), null);
  assert.ok(reasons(st.decisions).some((r) => /joins row kernel k0_sum .*\(Welford formulation\)/.test(r)), printDecisions(st.decisions));
  assert.equal(st.steps.length, 1);
});

test('scheduleKernels: bias add and GELU are the matmul epilogue', () => {
  const g = traced((x, w, b) => kiln.gelu(kiln.add(kiln.matmul(x, w), b)), kiln.randn([4, 8]), kiln.randn([8, 6]), kiln.randn([6]));
  const st = stateFor(g);
  assert.equal(scheduleKernels(st), null);
  assert.equal(st.steps.length, 1);
  assert.deepEqual(reasons(st.decisions), [`epilogue of matmul k0_matmul`]);
  assert.match(printSchedule(st.steps), /^0: k0_matmul matmul \[4, 8\] @ \[8, 6\], stores %\d+, %\d+$/);
});

test('scheduleKernels: a value the latest kernel cannot read yet is refused with its reason and gets a kernel of its own', () => {
  const g = traced((x) => {
    const s = kiln.sum(x, 1, true);
    return kiln.add(kiln.sub(kiln.cumsum(x, 1), s), 1);
  }, kiln.randn([3, 5]));
  const st = stateFor(g);
  assert.equal(scheduleKernels(st), null);
  const cs = idOf(g, 'cumsum'), add = idOf(g, 'add');
  assert.deepEqual(st.decisions.filter((d) => d.decision !== 'materialized' || d.nodes[0] === add).slice(-2), [
    { decision: 'opaque', nodes: [cs], reason: 'cumsum runs its eager kernel (no loop IR lowering)' },
    { decision: 'materialized', nodes: [add], reason: `not fused into k0_sum: %${cs} is not computed before this kernel` },
  ]);
  assert.equal(printSchedule(st.steps).split('\n').map((l) => l.replace(/, stores.*/, '')).join('\n'),
    `0: k0_sum row [3] x [5], reduces %${idOf(g, 'sum')} (sum)\n1: opaque cumsum %${cs}\n2: k1_add pointwise [3, 5]`);
});

test('scheduleKernels: a reshape that merges the dims of an inlined value asks for it to be materialized; lower() does and starts over', () => {
  const g = traced((x) => kiln.sum(kiln.reshape(kiln.transpose(kiln.mul(x, 2), 0, 1), [-1]), 0), kiln.randn([3, 4]));
  const r = scheduleKernels(stateFor(g));
  const mul = idOf(g, 'mul');
  assert.ok(r && r.kind === 'materialize', 'a refusal, not an exception');
  assert.equal(r.why, 'reshape [4,3] -> [12] merges dims of a value that is not in a buffer');
  assert.equal(g.nodes[r.node]!.op, 'identity'); // the contiguous copy transpose().reshape() records
  const l = lower(g);
  assert.ok(l.steps.length >= 2);
  assert.ok(l.steps.some((s) => s.kind === 'kernel' && s.kernel.kind === 'pointwise' && s.kernel.stores.some((x) => x.node === r.node)), printSchedule(l.steps));
  assert.ok(!l.decisions.some((d) => d.nodes.includes(mul) && d.decision === 'materialized'));
});

test('scheduleKernels: a pointwise node looks for its host among the latest EPILOGUE_SEARCH_WINDOW kernels only', () => {
  // a matmul, then k unrelated row kernels, then a pointwise consumer of the matmul
  const withKernelsBetween = (k: number) => {
    const ys = Array.from({ length: k }, (_, i) => kiln.randn([3, i + 2]));
    const g = traced((x, w, ...ys) => {
      const m = kiln.matmul(x, w);
      const sums = ys.map((y) => kiln.sum(y, 1));
      return [kiln.add(kiln.relu(m), 1), ...sums];
    }, kiln.randn([4, 8]), kiln.randn([8, 6]), ...ys);
    const st = stateFor(g);
    assert.equal(scheduleKernels(st), null);
    return { st, add: idOf(g, 'add') };
  };
  const inside = withKernelsBetween(EPILOGUE_SEARCH_WINDOW - 1);
  assert.deepEqual(inside.st.decisions.filter((d) => d.nodes[0] === inside.add), [{ decision: 'fused', nodes: [inside.add], reason: 'epilogue of matmul k0_matmul' }]);
  const beyond = withKernelsBetween(EPILOGUE_SEARCH_WINDOW);
  assert.deepEqual(beyond.st.decisions.filter((d) => d.nodes[0] === beyond.add), []);
  assert.match(printSchedule(beyond.st.steps).split('\n').at(-1)!, new RegExp(`^${EPILOGUE_SEARCH_WINDOW + 1}: k${EPILOGUE_SEARCH_WINDOW + 1}_add pointwise \\[4, 6\\], stores %${beyond.add}$`));
});

test('writeMutations: an optimizer update is written straight into the parameter', () => {
  const p = kiln.randn([5]);
  const g = traced((grad) => {
    p.sub_(kiln.mul(grad, 0.1));
    return kiln.sum(grad, 0);
  }, kiln.randn([5]));
  const st = stateFor(g);
  assert.equal(scheduleKernels(st), null);
  const before = st.decisions.length;
  assert.equal(writeMutations(st), null);
  const m = g.mutations[0]!;
  assert.deepEqual(st.decisions.slice(before), [{ decision: 'fused', nodes: [m.value, m.target], reason: `in-place update: %${m.value} is written straight into %${m.target}'s buffer` }]);
});

test('dropDeadStores: a reduction read only in registers loses its store', () => {
  const g = traced((x) => kiln.softmax(x, -1), kiln.randn([8, 10]));
  const l: Lowered = lower(g);
  const r = dropDeadStores(l, new Set(l.outputs.map((o) => o.buf)));
  assert.deepEqual(r.kernels, []);
  assert.equal(printDeadStores(r), `k0_max: dropped the stores of %${idOf(g, 'max')}, %${idOf(g, 'sum')}, %${idOf(g, 'exp')}`);
});

test('groupHorizontally: consecutive pointwise kernels launch as one, with the decision', () => {
  const g = traced((x, y) => [kiln.mul(x, 2), kiln.add(y, 1)], kiln.randn([4]), kiln.randn([3, 2]));
  const l = lower(g);
  const added = groupHorizontally(l);
  assert.deepEqual(reasons(added), ['horizontal: k0_mul, k1_add launched as one kernel k0_mul_group2']);
  assert.equal(l.decisions.at(-1), added[0]);
  assert.equal(printSchedule(l.steps), `0: k0_mul_group2 group of k0_mul, k1_add, stores %${idOf(g, 'mul')}, %${idOf(g, 'add')}`);
});

test('sharedMatmulSums: a residual stream is computed once in the matmul epilogue', () => {
  const g = traced((x, w) => {
    const h = kiln.add(x, kiln.matmul(x, w));
    return [kiln.sum(h, 1), kiln.mul(h, 2)];
  }, kiln.randn([4, 4]), kiln.randn([4, 4]));
  const r = sharedMatmulSums(g);
  const add = idOf(g, 'add');
  assert.deepEqual(r.forced, [add]);
  assert.match(r.decisions[0]!.reason, new RegExp(`^add %${add} reads 2 full-size buffers .* computed once in matmul %${idOf(g, 'matmul')}'s epilogue instead of in each consumer$`));
});

test('lower: the passes in order give the decisions the fusion log prints', () => {
  const g = traced((x, w, b) => kiln.gelu(kiln.add(kiln.matmul(x, w), b)), kiln.randn([4, 8]), kiln.randn([8, 6]), kiln.randn([6]));
  assert.equal(printDecisions(lower(g).decisions), `  fused        %${idOf(g, 'gelu')}: epilogue of matmul k0_matmul`);
});
