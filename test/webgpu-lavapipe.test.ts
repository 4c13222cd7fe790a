// The WebGPU op table, matmul configurations, autotune and profiling again on a Vulkan software
// adapter with the features real GPUs have and Dawn's OpenGL path lacks: Mesa 25's lavapipe,
// unpacked by scripts/lavapipe.sh (core WebGPU, 'subgroups' of 8 lanes, 'timestamp-query',
// 'shader-f16'). The other webgpu test files run on Dawn's default adapter (OpenGL over Mesa
// llvmpipe here: no subgroups, no timestamps). Each test file runs in its own process, so the
// switches below reach only these imports. Skipped, with the reason, where lavapipe is absent.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

const icd = resolve(process.env.KILN_LAVAPIPE_ICD ?? '.lavapipe/lvp_icd.json');
if (!existsSync(icd)) {
  test('webgpu on lavapipe (Vulkan)', { skip: `no ${icd}: run scripts/lavapipe.sh (CI does)` }, () => {});
} else {
  process.env.VK_ICD_FILENAMES = icd; // read by Vulkan's loader when Dawn creates its instance
  process.env.KILN_WEBGPU_DAWN = 'backend=vulkan'; // no silent fallback to OpenGL
  test('lavapipe offers what these tests are here for: Vulkan, subgroups, timestamps, f16', async () => {
    const { requestWebGpuBackend } = await import('kiln/node');
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
  await import('./webgpu.test.js');
  await import('./webgpu-matmul.test.js');
}
