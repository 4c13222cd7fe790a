// Prints the WebGPU adapter kiln gets through Dawn in Node, its features and the limits kiln
// cares about, then a one-kernel check (a pointwise add read back). Used by
// scripts/gpu-device-run.sh on a lent GPU machine (bundled into .device/ by
// scripts/gpu-device-prepare.sh); locally: npx tsx scripts/gpu-device-adapter.ts
// Exit status 0 when the adapter works; 1 when none was found or the check failed.

import * as kiln from 'kilnjs';
import { requestWebGpuBackend } from 'kilnjs/node';

const t0 = performance.now();
try {
  const gpu = await requestWebGpuBackend();
  const { limits, features } = gpu.device;
  console.log(`adapter: ${gpu.adapterInfo || '(no info)'}`);
  console.log(`features: ${[...features].sort().join(' ') || '(none)'}`);
  const names = ['maxStorageBuffersPerShaderStage', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'maxStorageBufferBindingSize', 'maxBufferSize'] as const;
  console.log(`limits: ${names.map((n) => `${n}=${limits[n]}`).join(' ')}`);
  kiln.setDefaultBackend(gpu);
  const x = kiln.tensor([1, 2, 3, 4]);
  const got = Array.from(await x.add(1).data());
  const ok = got.join(',') === '2,3,4,5';
  console.log(`check: [1,2,3,4] + 1 = [${got.join(',')}] ${ok ? 'ok' : 'WRONG'} (${(performance.now() - t0).toFixed(0)} ms with device start)`);
  kiln.setDefaultBackend(new kiln.JsBackend());
  await gpu.destroy();
  process.exitCode = ok ? 0 : 1;
} catch (e) {
  console.log(`no working WebGPU adapter: ${(e as Error).name}: ${(e as Error).message}`);
  process.exitCode = 1;
}
