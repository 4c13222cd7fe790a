// randint on the WebGPU backend: one op drawing integers (WGSL has no float64, so the old
// composite of float64 uniforms, scale, floor and cast could not run there). Same seed, same
// integers as the CPU backend; compiled, fresh integers on every call.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { webGpuForTests } from './helpers/webgpu-backend.js';

const { cpu, gpu, skip } = await webGpuForTests();

const seed = Math.floor(Math.random() * 2 ** 31);

test(`randint on webgpu draws the CPU's integers for the same seed (seed ${seed})`, { skip }, async () => {
  const shapes: [number, number, number[]][] = [[0, 10, [257]], [-7, 100_000, [33, 5]], [3, 4, [16]]];
  for (const [low, high, shape] of shapes) {
    kiln.setDefaultBackend(cpu);
    kiln.manualSeed(seed);
    const want = Array.from(kiln.randint(low, high, shape).dataSync());
    kiln.setDefaultBackend(gpu!);
    kiln.manualSeed(seed);
    const t = kiln.randint(low, high, shape);
    assert.equal(t.dtype, 'int32');
    assert.deepEqual(t.shape, shape);
    const got = Array.from(await t.data());
    assert.deepEqual(got, want, `randint(${low}, ${high}, [${shape}])`);
    assert.ok(got.every((v) => v >= low && v < high));
    const f = kiln.randint(low, high, shape, { dtype: 'float32' });
    assert.equal(f.dtype, 'float32');
  }
  kiln.setDefaultBackend(cpu);
});

test('a compiled function calling randint on webgpu draws fresh integers each call', { skip }, async () => {
  kiln.setDefaultBackend(gpu!);
  try {
    const x = kiln.keep(kiln.zeros([64], { dtype: 'int32' }));
    const f = kiln.compile((x: kiln.Tensor) => kiln.add(x, kiln.randint(0, 1000, [64])), { backend: 'webgpu', fullgraph: true });
    const a = Array.from(await kiln.scope(() => kiln.keep(f(x) as kiln.Tensor)).data());
    const b = Array.from(await kiln.scope(() => kiln.keep(f(x) as kiln.Tensor)).data());
    assert.notDeepEqual(a, b);
    assert.ok([...a, ...b].every((v) => Number.isInteger(v) && v >= 0 && v < 1000));
  } finally {
    kiln.setDefaultBackend(cpu);
  }
});
