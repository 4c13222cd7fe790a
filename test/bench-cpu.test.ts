// bench/cpu.ts's ONNX path: the protobuf encoder of the graphs it hands onnxruntime-node.
// The graphs' numerics are checked by bench/cpu.ts itself, against kiln eager, before it
// times anything (`npm run bench -- --quick --only W1`): onnxruntime-node is a benchmark peer
// (bench/package.json), which the tests do not install.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writer } from '../bench/onnx/proto.js';

test('protobuf varints: small, multi-byte and negative int64 (10 bytes, two\'s complement)', () => {
  assert.deepEqual([...new Writer().int(1, 1).finish()], [0x08, 0x01]);
  assert.deepEqual([...new Writer().int(1, 300).finish()], [0x08, 0xac, 0x02]);
  assert.deepEqual([...new Writer().int(1, -1).finish()], [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
  assert.deepEqual([...new Writer().string(2, 'ab').finish()], [0x12, 0x02, 0x61, 0x62]);
});
