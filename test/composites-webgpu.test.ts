// Composite scalar ops (src/ir/composites.ts) expanded and rendered in WGSL, eager and compiled on
// the GPU, against a float64 reference on fresh random inputs and extreme values (the CPU
// backends: test/composites.test.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { COMPOSITE_OPS } from '../src/ir/composites.js';
import { webGpuForTests } from './helpers/webgpu-backend.js';
import { assertCompiledRan } from './helpers/compiled-ran.js';
import { API, EXTREMES, REFERENCE } from './helpers/composites.js';

const { cpu, gpu, skip } = await webGpuForTests();

test('composites: in WGSL (eager and compiled on the GPU) equal float64', { skip }, async () => {
  kiln.setDefaultBackend(cpu);
  kiln.manualSeed(34);
  const xs = Float32Array.from([...Array.from(kiln.randn([997]).mul(6).dataSync() as ArrayLike<number>), ...EXTREMES]);
  const x = kiln.toBackend(kiln.tensor(xs), gpu!);
  const all = (t: kiln.Tensor) => COMPOSITE_OPS.map((op) => API[op](t));
  kiln.setDefaultBackend(gpu!);
  try {
    kiln.compiler.reset();
    const compiled = kiln.compile(all, { backend: 'webgpu', fullgraph: true });
    for (const [what, run] of [['eager', () => all(x)], ['compiled', () => compiled(x)], ['compiled replay', () => compiled(x)]] as const) {
      const outs = run();
      for (const [i, op] of COMPOSITE_OPS.entries()) {
        const got = (await outs[i]!.data()) as Float32Array;
        xs.forEach((v, j) => {
          const want = REFERENCE[op](v), g = got[j]!;
          const ok = Number.isNaN(want) ? Number.isNaN(g) : !Number.isFinite(want) ? g === want : Math.abs(g - want) <= 2e-5 * (1 + Math.abs(want));
          if (!ok) assert.fail(`webgpu ${what}: ${op}(${v}) is ${g}, expected ${want}`);
        });
      }
    }
    assertCompiledRan('webgpu');
  } finally {
    kiln.setDefaultBackend(cpu);
  }
});
