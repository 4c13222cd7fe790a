// WebGPU on a Vulkan software adapter with the features real GPUs have and Dawn's OpenGL path
// lacks: Mesa 25's lavapipe, unpacked by scripts/lavapipe.sh (core WebGPU, 'subgroups' of 8
// lanes, 'timestamp-query', 'shader-f16'). Here: subgroup row reductions (every reduction op,
// eager and compiled, on and off, against float64, deterministic, and gpu.profile on timestamp
// queries: test/helpers/subgroup-checks.ts, as in Chromium with 4 lanes), then the matmul tests
// (f16 tiles, autotune timed by timestamps) on three configurations (Mesa 25 compiles a large
// matmul shader for about a second: all thirteen run on the OpenGL path). The other webgpu test
// files run on Dawn's default adapter (OpenGL over Mesa llvmpipe here: no subgroups, no
// timestamps). Each test file runs in its own process, so the switches below reach only this
// one. Skipped, with the reason, where lavapipe is absent.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { runSubgroupPage } from './helpers/webgpu-reductions.js';
import { checkReferencesOnCpu, checkSubgroupResult, makeCases, reference } from './helpers/subgroup-checks.js';

const icd = resolve(process.env.KILN_LAVAPIPE_ICD ?? '.lavapipe/lvp_icd.json');
if (!existsSync(icd)) {
  test('webgpu on lavapipe (Vulkan)', { skip: `no ${icd}: run scripts/lavapipe.sh (CI does)` }, () => {});
} else {
  process.env.VK_ICD_FILENAMES = icd; // read by Vulkan's loader when Dawn creates its instance
  process.env.KILN_WEBGPU_DAWN = 'backend=vulkan'; // no silent fallback to OpenGL
  test('lavapipe offers what these tests are here for: Vulkan, subgroups, timestamps, f16', async () => {
    const { requestWebGpuBackend } = await import('kilnjs/node');
    const gpu = await requestWebGpuBackend({ dawn: ['backend=vulkan'] });
    try {
      assert.match(gpu.adapterInfo, /llvmpipe/);
      assert.equal(gpu.hasSubgroups, true);
      assert.equal(gpu.subgroups, true, 'row reductions take the subgroup path');
      assert.equal(gpu.hasShaderF16, true, "gpu.matmulPrecision = 'f16' can run");
      for (const f of ['timestamp-query', 'subgroups']) assert.ok(gpu.device.features.has(f as GPUFeatureName), `device feature ${f}`);
    } finally {
      await gpu.destroy();
    }
  });
  test('subgroup row reductions on lavapipe (8 lanes): float64 references, determinism, the path taken, gpu.profile', async () => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    console.log(`# lavapipe subgroups: seed ${seed}`);
    // one row length per workgroup size (32, 64, 128, 256) and a long row: each length is its own
    // set of kernels, and Mesa 25 compiles each for a while (all ten lengths run in Chromium)
    const cases = makeCases(seed, [[2, 3], [5, 33], [3, 100], [6, 200], [2, 5000]]);
    const refs = cases.map(reference);
    checkReferencesOnCpu(cases, refs);
    const { requestWebGpuBackend } = await import('kilnjs/node');
    const gpu = await requestWebGpuBackend({ dawn: ['backend=vulkan'] });
    try {
      assert.ok(checkSubgroupResult(await runSubgroupPage(gpu, cases, cases[1]!), cases, refs, 'lavapipe'), 'lavapipe has subgroups');
    } finally {
      await gpu.destroy();
    }
  });
  process.env.KILN_MATMUL_CONFIGS = '64x64x16/4x4,128x128x16/8x8+pf,32x32x16/4x4';
  await import('./webgpu-matmul.test.js');
}
