// The workloads' size option (bench/workloads, `setup({ size })`): the GPU column of
// ../shared/WORKLOADS.md builds the intended shapes, and the CPU defaults are unchanged.
// Nothing here runs a step. W6 at the GPU size is built once (26 tables x 100,000 x 16
// float32 = 166 MB); W4 (64M elements) and W7 (12 layers, ~85M parameters) at the GPU size are
// checked through the functions their setup uses, without allocating them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Instance, Workload } from '../bench/workloads/index.js';
import { WORKLOADS } from '../bench/workloads/index.js';
import { w1 } from '../bench/workloads/w1.js';
import { w2 } from '../bench/workloads/w2.js';
import { w3 } from '../bench/workloads/w3.js';
import { w4, w4Elements, w4Shapes, W4_SIZE } from '../bench/workloads/w4.js';
import { Dlrm, dlrmTrainStepFlops, w6, w6Config, w6Shapes, W6_TABLES } from '../bench/workloads/w6.js';
import { decoderFlops, w7, w7Config, w7Shapes, W7_DIM, W7_HEADS } from '../bench/workloads/w7.js';

function withInstance<T>(w: Workload, opts: Parameters<Workload['setup']>[0], f: (i: Instance) => T): T {
  const inst = w.setup(opts);
  try {
    return f(inst);
  } finally {
    inst.dispose();
  }
}

test('CPU defaults are unchanged (no size, and size cpu)', () => {
  for (const opts of [{}, { size: 'cpu' as const }]) {
    withInstance(w4, opts, (i) => {
      assert.equal(i.shapes, 'x[4194304]');
      assert.equal(i.bytes, 8 * W4_SIZE);
      assert.deepEqual(i.inputs[0]!.shape, [4 * 1024 * 1024]);
    });
    withInstance(w6, opts, (i) => {
      assert.equal(i.shapes, 'dense[512,13] labels[512,1] 26x ids[512,1] int32, tables 26x[10000,16]');
      assert.equal(i.flops, dlrmTrainStepFlops(512));
      assert.deepEqual(i.inputs[0]!.shape, [512, 13]);
    });
    withInstance(w7, opts, (i) => {
      assert.equal(i.shapes, 'x[1,128,768]');
      assert.equal(i.flops, decoderFlops(1, 128, 768, 12, 2));
      assert.deepEqual(i.inputs[0]!.shape, [1, 128, 768]);
      assert.equal(i.params.length, 2 * 12 + 2); // 2 blocks of 12 tensors + the final LayerNorm
    });
  }
  assert.deepEqual(w6Config(), { batch: 512, rows: 10_000 });
  assert.deepEqual(w7Config(), { layers: 2, batch: 1, seq: 128 });
  assert.equal(w4Elements(), 4 << 20);
  const dlrm = new Dlrm();
  assert.equal(dlrm.tables.at(0).weight.shape[0], 10_000);
  for (const p of dlrm.parameters()) p.dispose();
});

test('W1, W2, W3 are the same at both sizes', () => {
  for (const [w, opts] of [[w1, {}], [w2, {}], [w3, { quick: true }]] as const) {
    const cpu = withInstance(w, opts, (i) => ({ shapes: i.shapes, flops: i.flops, inputs: i.inputs.map((t) => t.shape) }));
    const gpu = withInstance(w, { ...opts, size: 'gpu' }, (i) => ({ shapes: i.shapes, flops: i.flops, inputs: i.inputs.map((t) => t.shape) }));
    assert.deepEqual(gpu, cpu, w.id);
  }
});

test('W4 gpu: 64M elements', () => {
  const n = w4Elements('gpu');
  assert.equal(n, 64 * 1024 * 1024);
  assert.equal(w4Shapes(n), 'x[67108864]');
});

test('W6 gpu: 100,000-row tables, batch 2048, the same structure (built, not run)', () => {
  assert.deepEqual(w6Config('gpu'), { batch: 2048, rows: 100_000 });
  withInstance(w6, { size: 'gpu' }, (i) => {
    assert.equal(i.shapes, 'dense[2048,13] labels[2048,1] 26x ids[2048,1] int32, tables 26x[100000,16]');
    assert.equal(i.shapes, w6Shapes(w6Config('gpu')));
    assert.equal(i.flops, dlrmTrainStepFlops(2048));
    assert.equal(i.inputs.length, 2 + W6_TABLES);
    assert.deepEqual(i.inputs[0]!.shape, [2048, 13]);
    assert.deepEqual(i.inputs[1]!.shape, [2048, 1]);
    for (const ids of i.inputs.slice(2)) {
      assert.deepEqual(ids.shape, [2048, 1]);
      assert.equal(ids.dtype, 'int32');
    }
    // ids are drawn over all 100,000 rows (not the CPU size's 10,000)
    const all = i.inputs.slice(2).flatMap((t) => Array.from(t.dataSync() as Int32Array));
    assert.ok(Math.max(...all) >= 10_000 && Math.max(...all) < 100_000);
    assert.ok(Math.min(...all) >= 0);
    const tables = i.params.filter((p) => p.shape.length === 2 && p.shape[1] === 16 && p.shape[0] === 100_000);
    assert.equal(tables.length, W6_TABLES);
    const mlpShapes = i.params.filter((p) => p.shape[0] !== 100_000).map((p) => p.shape.join('x'));
    assert.deepEqual(mlpShapes, ['512x13', '512', '256x512', '256', '16x256', '16', '512x367', '512', '256x512', '256', '1x256', '1']);
  });
});

test('W7 gpu: 12 layers, batch 8, sequence 256', () => {
  const cfg = w7Config('gpu');
  assert.deepEqual(cfg, { layers: 12, batch: 8, seq: 256 });
  assert.equal(w7Shapes(cfg), 'x[8,256,768], 12 layers');
  assert.equal(decoderFlops(cfg.batch, cfg.seq, W7_DIM, W7_HEADS, cfg.layers), 12 * decoderFlops(8, 256, 768, 12, 1));
});

test('the workloads covered here are all of bench/workloads (a new one needs its sizes checked)', () => {
  assert.deepEqual(WORKLOADS.map((w) => w.id), ['W1', 'W2', 'W3', 'W4', 'W6', 'W7']);
});
