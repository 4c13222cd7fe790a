// Eager ops on the wasm kernels (src/backend/wasm/eager): every path the drivers take (vector and
// broadcast leaves, the 1-D row split, outer loops, compact copies of strided / int / bool
// leaves, float64 scalars, bool results, row reductions contiguous and strided, matmul layouts,
// batches and short reductions) against float64 references on fresh random inputs, with the
// wasm launches counted so a silent fallback to the JS kernels fails; results bit for bit the
// same on 1, 2 and 3 threads; other dtypes on the JS kernels; buffers in the heap that compiled
// wasm programs use without copies; running out of heap memory falls back to the JS kernels.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { processHeap } from '../src/backend/wasm/heap.js';
import { WasmBackend } from '../src/backend/wasm/index.js';
import { threadCount } from '../src/backend/js/threads.js';
import type { LoopKernel } from '../src/ir/loop-ir.js';
import { EagerLauncher } from '../src/backend/wasm/eager/launcher.js';
import { assertCompiledRan } from './helpers/compiled-ran.js';

const wasmEager = kiln.eagerStats().backend === 'wasm';
const skip = wasmEager ? false : `eager runs on the JS kernels here: ${kiln.eagerStats().reason}`;

const f64 = (t: kiln.Tensor): Float64Array => Float64Array.from(t.dataSync() as ArrayLike<number>);

/** |got - want| <= atol + rtol |want| everywhere (NaN and infinities must match exactly). */
function close(got: kiln.Tensor, want: kiln.Tensor, what: string, rtol = 1e-5, atol = 1e-5): void {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  const g = f64(got), w = f64(want);
  for (let i = 0; i < g.length; i++) {
    const ok = Number.isFinite(w[i]!) ? Math.abs(g[i]! - w[i]!) <= atol + rtol * Math.abs(w[i]!) : Object.is(g[i], w[i]);
    if (!ok) assert.fail(`${what}: element ${i} is ${g[i]}, expected ${w[i]}`);
  }
}

/** Runs `f` and asserts it launched `n` wasm kernels and no JS kernel. */
function onWasm<T>(what: string, f: () => T, n = 1): T {
  const s0 = kiln.eagerStats();
  const r = f();
  const s1 = kiln.eagerStats();
  assert.equal(s1.jsLaunches - s0.jsLaunches, 0, `${what}: ran on the JS kernels`);
  assert.ok(s1.wasmLaunches - s0.wasmLaunches >= n, `${what}: ${s1.wasmLaunches - s0.wasmLaunches} wasm launches`);
  return r;
}

test('eager pointwise ops on wasm: every walk of their operands equals float64', { skip }, () => {
  kiln.manualSeed(21);
  kiln.scope(() => {
    const x = kiln.randn([37, 129]), y = kiln.randn([37, 129]), row = kiln.randn([129]), col = kiln.randn([37, 1]);
    const cases: [string, (a: kiln.Tensor, b: kiln.Tensor, r: kiln.Tensor, c: kiln.Tensor) => kiln.Tensor][] = [
      ['add', (a, b) => a.add(b)],
      ['sub row broadcast', (a, _b, r) => a.sub(r)],
      ['div column broadcast (splat)', (a, _b, _r, c) => a.div(c)],
      ['rsub by a number', (a) => kiln.sub(1, a)],
      ['mul by a number float32 holds', (a) => a.mul(0.5)],
      ['maximum', (a, b) => kiln.maximum(a, b)],
      ['pow by a number', (a) => a.abs().pow(1.5)],
      ['exp', (a) => a.exp()],
      ['tanh', (a) => a.tanh()],
      ['gelu (tanh)', (a) => kiln.gelu(a, 'tanh')],
      ['sigmoid', (a) => a.sigmoid()],
      ['log of |x|', (a) => a.abs().add(0.1).log()],
      ['rsqrt', (a) => a.abs().add(1).rsqrt()],
      ['where on a float32 mask', (a, b) => kiln.where(a.gt(0), a, b)],
      ['transposed operand (compact copy)', (a) => a.transpose(0, 1).contiguous().transpose(0, 1).add(a.transpose(0, 1).transpose(0, 1).mul(2))],
    ];
    for (const [what, f] of cases) {
      const got = onWasm(what, () => f(x, y, row, col));
      const want = f(x.double(), y.double(), row.double(), col.double());
      close(got, want, what, 2e-6, 2e-6);
    }
  });
});

test('eager pointwise on wasm: large 1-D ops split into rows, rank-3 broadcasts, numbers float32 cannot hold, bool results', { skip }, () => {
  kiln.manualSeed(22);
  kiln.scope(() => {
    const big = kiln.randn([(1 << 17) + 4099]);
    close(onWasm('1-D split + rest', () => big.mul(big).add(1)), big.double().mul(big.double()).add(1), '1-D split + rest');
    const a = kiln.randn([3, 1, 45]), b = kiln.randn([1, 7, 45]);
    close(onWasm('rank-3 broadcast', () => a.mul(b)), a.double().mul(b.double()), 'rank-3 broadcast');
    // 1 - 0.999^t in float32 loses digits if 0.999 is rounded first: the JS kernels' result, exactly
    const t = kiln.tensor([1, 2, 3, 50], { dtype: 'float32' });
    const js = new kiln.JsBackend();
    const bc = onWasm('pow of a number', () => kiln.sub(1, kiln.pow(0.999, t)));
    const tJs = kiln.toBackend(t, js);
    assert.deepEqual(Array.from(bc.dataSync()), Array.from(kiln.sub(1, kiln.pow(0.999, tJs)).dataSync()), 'same float32 as the JS kernels');
    // every binary op but max/min/logical with such a number: the JS kernels' float32, bit for bit
    const u = kiln.randn([40, 33]).mul(3), uJs = kiln.toBackend(u, js);
    for (const [what, f] of [['fmod', (z: kiln.Tensor) => kiln.fmod(z, 0.1)], ['atan2', (z: kiln.Tensor) => kiln.atan2(z, 0.3)], ['hypot', (z: kiln.Tensor) => kiln.hypot(0.7, z)], ['mul', (z: kiln.Tensor) => z.mul(0.1)], ['sub', (z: kiln.Tensor) => kiln.sub(0.3, z)]] as const) {
      assert.deepEqual(Array.from(onWasm(what, () => f(u)).dataSync()), Array.from(f(uJs).dataSync()), `${what} with a number float32 cannot hold`);
    }
    // a comparison with 0.1 (not a float32): fround(0.1) itself is above 0.1
    const edge = kiln.tensor([Math.fround(0.1), 0.05, 0.2]);
    assert.deepEqual(Array.from(onWasm('lt', () => edge.lt(0.1)).dataSync()), [0, 1, 0]);
    const x = kiln.randn([50, 70]);
    const m = onWasm('gt to bool', () => x.gt(0.25));
    assert.equal(m.dtype, 'bool');
    assert.deepEqual(Array.from(m.dataSync()), Array.from(f64(x)).map((v) => (v > 0.25 ? 1 : 0)));
  });
});

test('eager copies and casts on wasm: contiguous(), every dtype pair, operands of other dtypes', { skip }, () => {
  kiln.manualSeed(23);
  kiln.scope(() => {
    const x = kiln.randn([33, 65]).mul(50);
    const tr = onWasm('contiguous of a transpose', () => x.transpose(0, 1).contiguous());
    assert.deepEqual(Array.from(tr.dataSync()), Array.from(kiln.toBackend(x, new kiln.JsBackend()).transpose(0, 1).contiguous().dataSync()));
    const js = new kiln.JsBackend();
    const xJs = kiln.toBackend(x, js);
    for (const from of ['float32', 'float64', 'int32', 'bool'] as const) {
      for (const to of ['float32', 'float64', 'int32', 'bool'] as const) {
        const src = kiln.cast(x, from), srcJs = kiln.cast(xJs, from);
        const got = onWasm(`cast ${from} -> ${to}`, () => kiln.cast(src.transpose(0, 1), to));
        assert.deepEqual(Array.from(got.dataSync()), Array.from(kiln.cast(srcJs.transpose(0, 1), to).dataSync()), `cast ${from} -> ${to} equals the JS kernels`);
      }
    }
    // float32 ops on int32 and bool operands: copied to float32 first
    const i = kiln.randint(-5, 5, [33, 65]);
    close(onWasm('f32 * int32', () => x.mul(i.float()).add(x.gt(0))), x.double().mul(i.double()).add(x.gt(0).double()), 'mixed dtypes');
  });
});

test('eager reductions on wasm: contiguous and strided rows, two reduced dims, argmax/argmin', { skip }, () => {
  kiln.manualSeed(24);
  kiln.scope(() => {
    const x = kiln.randn([23, 300, 5]);
    const x64 = x.double();
    for (const op of ['sum', 'amax', 'amin', 'prod'] as const) {
      for (const dims of [[1], [2], [0], [0, 1], [1, 2]]) {
        const scale = op === 'prod' ? x.mul(0.02).add(1) : x;
        const reduce = (t: kiln.Tensor) => (op === 'prod' ? kiln.prod(t, dims, false) : kiln[op](t, dims, false));
        const got = onWasm(`${op} ${dims}`, () => reduce(scale));
        const want = reduce(op === 'prod' ? x64.mul(0.02).add(1) : x64);
        close(got, want, `${op} over ${dims}`, 1e-5, 1e-5);
      }
    }
    for (const op of ['argmax', 'argmin'] as const) {
      for (const d of [0, 1, 2]) {
        const got = onWasm(`${op} ${d}`, () => kiln[op](x, d));
        assert.deepEqual(Array.from(got.dataSync()), Array.from(kiln[op](x64, d).dataSync()), `${op} over ${d}`);
      }
    }
    close(onWasm('softmax', () => kiln.softmax(x, -1), 3), kiln.softmax(x64, -1), 'softmax', 1e-5, 1e-6);
    close(onWasm('layer norm', () => kiln.layerNorm(x, [5]), 5), kiln.layerNorm(x64, [5]), 'layer norm', 1e-4, 1e-5);
  });
});

test('eager matmul on wasm: every layout of A and B, batches (broadcast too), short reductions, edge tiles', { skip }, () => {
  kiln.manualSeed(25);
  kiln.scope(() => {
    const shapes: [number, number, number][] = [[67, 45, 130], [128, 300, 784], [5, 1000, 9], [300, 7, 64], [4, 4, 4], [1, 33, 70]];
    for (const [m, n, k] of shapes) {
      const a = kiln.randn([m, k]), b = kiln.randn([k, n]), at = kiln.randn([k, m]).transpose(0, 1), bt = kiln.randn([n, k]).transpose(0, 1);
      const strided = kiln.randn([m, 2 * k]).narrow(1, 0, k);
      for (const [what, A, B] of [['rr', a, b], ['rc', a, bt], ['cr', at, b], ['cc', at, bt], ['strided', strided, b]] as const) {
        const got = onWasm(`matmul ${what} ${m}x${n}x${k}`, () => kiln.matmul(A, B));
        close(got, kiln.matmul(A.double(), B.double()), `matmul ${what} ${m}x${n}x${k}`, 1e-4, 1e-4 * Math.sqrt(k));
      }
    }
    const q = kiln.randn([2, 3, 40, 64]), kk = kiln.randn([2, 3, 50, 64]);
    close(onWasm('batched q k^T', () => kiln.matmul(q, kk.transpose(-1, -2))), kiln.matmul(q.double(), kk.double().transpose(-1, -2)), 'batched', 1e-4, 1e-3);
    const w = kiln.randn([64, 30]);
    close(onWasm('broadcast batch', () => kiln.matmul(q, w.expand([2, 3, 64, 30]))), kiln.matmul(q.double(), w.double()), 'broadcast batch', 1e-4, 1e-3);
  });
});

test('eager results are bit for bit the same on 1, 2 and 3 threads', { skip }, () => {
  kiln.manualSeed(26);
  const run = () => kiln.scope(() => {
    const a = kiln.randn([700, 300]), b = kiln.randn([300, 600]), w = kiln.randn([900, 300]);
    const x = kiln.randn([1 << 19]);
    return [
      kiln.matmul(a, b), kiln.linear(a, w), kiln.matmul(a.transpose(0, 1), a), kiln.matmul(kiln.randn([96, 64, 40]), kiln.randn([96, 40, 64])),
      kiln.sum(kiln.matmul(a, b), 1), kiln.sum(kiln.matmul(a, b), 0), x.mul(x).add(1).tanh(),
    ].map((t) => kiln.keep(t));
  });
  try {
    const runs = [1, 2, 3].map((n) => {
      kiln.manualSeed(26);
      kiln.setWasmThreads(n);
      return run();
    });
    assert.ok(kiln.wasmStats().parallelLaunches > 0, 'the 3-thread run split kernels across threads');
    runs[0]!.forEach((t, i) => {
      for (const r of runs.slice(1)) assert.deepEqual(Buffer.from(r[i]!.dataSync().buffer), Buffer.from(t.dataSync().buffer), `result ${i}`);
    });
    for (const r of runs) for (const t of r) t.dispose();
  } finally {
    kiln.setWasmThreads(threadCount());
  }
});

test('other dtypes and ops run on the JS kernels over the same buffers', { skip }, () => {
  kiln.scope(() => {
    const i = kiln.arange(0, 12).reshape([3, 4]);
    const s0 = kiln.eagerStats();
    const r = i.mul(3).add(i).sum(1);
    assert.ok(kiln.eagerStats().jsLaunches > s0.jsLaunches, 'int32 arithmetic ran on the JS kernels');
    assert.deepEqual(Array.from(r.dataSync()), [24, 88, 152]);
    const d = kiln.randn([30, 40], { dtype: 'float64' });
    close(kiln.matmul(d, d.transpose(0, 1)), kiln.matmul(d.float(), d.float().transpose(0, 1)).double(), 'float64 matmul', 1e-5, 1e-4);
  });
});

test('eagerStats counts every JS-kernel launch by kind: ops without wasm kernels are visible', { skip }, () => {
  kiln.manualSeed(5);
  kiln.scope(() => {
    const x = kiln.randn([2, 3, 9, 9]), w = kiln.randn([4, 3, 3, 3]);
    const table = kiln.randn([10, 6]), ids = kiln.tensor([1, 7, 7, 0], { dtype: 'int32' });
    const kinds = (before: Record<string, number>) => {
      const now = kiln.eagerStats().jsByKind;
      return Object.fromEntries(Object.entries(now).filter(([k, n]) => n !== (before[k] ?? 0)).map(([k, n]) => [k, n - (before[k] ?? 0)]));
    };
    let b = kiln.eagerStats().jsByKind;
    const y = kiln.conv2d(x, w);
    assert.deepEqual(kinds(b), { im2col: 1 }, 'conv2d: im2col on JS, its matmul on wasm');
    b = kiln.eagerStats().jsByKind;
    const e = kiln.embedding(ids, table);
    assert.deepEqual(Object.keys(kinds(b)), ['indexSelect'], 'embedding: an index op on JS');
    b = kiln.eagerStats().jsByKind;
    const s0 = kiln.eagerStats();
    kiln.randn([5]);
    assert.deepEqual(kinds(b), { random: 1 });
    assert.equal(kiln.eagerStats().jsLaunches, s0.jsLaunches + 1, 'jsLaunches is the sum over kinds');
    close(y, kiln.conv2d(x.double(), w.double()), 'conv2d', 1e-4, 1e-4);
    close(e, kiln.embedding(ids, table.double()), 'embedding');
  });
});

test('eager buffers live in the wasm heap: a compiled wasm program copies none of them', { skip }, () => {
  kiln.compiler.reset();
  kiln.scope(() => {
    const x = kiln.randn([64, 128]), w = kiln.randn([32, 128]);
    const f = kiln.compile((a: kiln.Tensor, b: kiln.Tensor) => kiln.linear(a, b).relu(), { backend: 'wasm', fullgraph: true });
    const adopted = kiln.wasmStats().heap.adopted;
    const y = f(x, w) as kiln.Tensor;
    f(x, w);
    assert.equal(kiln.wasmStats().heap.adopted, adopted, 'nothing was copied into the heap');
    close(y, kiln.linear(x.double(), w.double()).relu(), 'compiled on eager buffers', 1e-4, 1e-4);
    assert.ok(processHeap().owns((y as unknown as { storage: { buf: never } }).storage.buf), 'the output is in the heap');
  });
  assertCompiledRan('compiled on eager buffers');
});

test('out of heap memory: buffers become plain typed arrays and their ops run on the JS kernels', { skip }, () => {
  const heap = processHeap();
  const alloc = heap.alloc.bind(heap);
  kiln.scope(() => {
    const a = kiln.randn([40, 50]);
    heap.alloc = () => {
      throw new RangeError('kiln wasm heap: out of memory (test)');
    };
    try {
      const b = kiln.randn([40, 50]);
      assert.ok(!heap.owns((b as unknown as { storage: { buf: never } }).storage.buf), 'a plain typed array');
      const s0 = kiln.eagerStats();
      const c = a.mul(b).add(1);
      const m = kiln.matmul(b, a.transpose(0, 1));
      assert.ok(kiln.eagerStats().jsLaunches >= s0.jsLaunches + 2, 'the JS kernels ran them');
      heap.alloc = alloc;
      close(c, a.double().mul(b.double()).add(1), 'pointwise after the fallback');
      close(m, kiln.matmul(b.double(), a.double().transpose(0, 1)), 'matmul after the fallback', 1e-5, 1e-4);
    } finally {
      heap.alloc = alloc;
    }
  });
});

test('a kernel the wasm renderer cannot emit is left out of its module; the others still build', { skip }, () => {
  const w = new WasmBackend(undefined, { threads: 1, heap: processHeap() });
  const good: LoopKernel = { kind: 'pointwise', name: 'ok', shape: [4], body: [], stores: [{ buf: 0, at: { c: [1], o: 0 }, value: { k: 'load', buf: 1, at: { c: [1], o: 0 }, dtype: 'float32' }, dtype: 'float32', node: 0 }] };
  const bad: LoopKernel = { ...good, name: 'bad', stores: [{ ...good.stores[0]!, value: { k: 'op', op: 'noSuchOp' as never, a: [], dtype: 'float32' } }] };
  const why: string[] = [];
  const [a, b] = w.prepareModule([good, bad], (k, e) => why.push(`${k.name}: ${e.message}`));
  assert.ok(a, 'the renderable kernel is prepared');
  assert.equal(b, null);
  assert.match(why.join(), /bad: .*noSuchOp/);
});

test('a module the engine refuses leaves its ops to the JS kernels (reported), not failing them', { skip }, () => {
  const l = new EagerLauncher(new WasmBackend(undefined, { threads: 1, heap: processHeap() }));
  const Module = WebAssembly.Module;
  (WebAssembly as { Module: unknown }).Module = function refuse() {
    throw new WebAssembly.CompileError('refused (test)');
  };
  try {
    // an op no other test here builds, so its module is not compiled already (modules are kept by their bytes)
    assert.equal(l.kernel('pointwise', 'logicalXor|bool|sv'), null);
  } finally {
    (WebAssembly as { Module: unknown }).Module = Module;
  }
  assert.ok(kiln.eagerStats().skipped.some((s) => s.includes('logicalXor') && s.includes('refused (test)')), kiln.eagerStats().skipped.join('; '));
});
