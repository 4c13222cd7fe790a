// bench/cpu.ts's ONNX path (numerics, not timing): the protobuf encoder and the W1 graph
// built by bench/onnx/graphs.ts from a W1 instance's weights, run by onnxruntime-node,
// must give kiln eager's output on the same input. Skipped (with the reason) where
// onnxruntime-node cannot load.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { buildOnnxModel } from '../bench/onnx/graphs.js';
import { Writer } from '../bench/onnx/proto.js';
import { peerCase } from '../bench/lib/peer-case.js';
import { runInference } from '../bench/workloads/index.js';
import { w1 } from '../bench/workloads/w1.js';

type Ort = typeof import('onnxruntime-node');
let ort: Ort | null = null;
let why = '';
try {
  ort = await import('onnxruntime-node');
} catch (e) {
  why = `onnxruntime-node cannot load: ${(e as Error).message.split('\n')[0]}`;
  console.log(`# bench-cpu ONNX tests skipped: ${why}`);
}

test('protobuf varints: small, multi-byte and negative int64 (10 bytes, two\'s complement)', () => {
  assert.deepEqual([...new Writer().int(1, 1).finish()], [0x08, 0x01]);
  assert.deepEqual([...new Writer().int(1, 300).finish()], [0x08, 0xac, 0x02]);
  assert.deepEqual([...new Writer().int(1, -1).finish()], [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
  assert.deepEqual([...new Writer().string(2, 'ab').finish()], [0x12, 0x02, 0x61, 0x62]);
});

test('W1 ONNX graph on onnxruntime-node equals kiln eager', { skip: ort ? false : why }, async () => {
  const inst = w1.setup();
  try {
    const c = peerCase(w1, inst);
    const bytes = buildOnnxModel(c);
    assert.ok(bytes, 'W1 has an ONNX graph');
    const session = await ort!.InferenceSession.create(bytes, { intraOpNumThreads: 1, executionMode: 'sequential' });
    const x = c.inputs[0]!;
    const out = await session.run({ x: new ort!.Tensor('float32', x.data as Float32Array, x.shape) });
    const y = out['y']!;
    assert.deepEqual([...y.dims], [128, 10]);
    const ref = runInference(() => inst.step()).dataSync() as Float32Array;
    const got = y.data as Float32Array;
    let d = 0, m = 0;
    for (let i = 0; i < ref.length; i++) {
      d = Math.max(d, Math.abs(ref[i]! - got[i]!));
      m = Math.max(m, Math.abs(ref[i]!));
    }
    assert.ok(m > 0, 'the output is not all zeros');
    assert.ok(d <= 1e-4 * m, `max |ort - kiln| = ${d} (max |kiln| ${m})`);
    await session.release();
  } finally {
    inst.dispose();
  }
});
