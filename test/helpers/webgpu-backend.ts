// The WebGPU backend for a test file: the CPU backend stays the default, the GPU is acquired
// once (Dawn: Vulkan over Mesa lavapipe where installed, else OpenGL over llvmpipe; skipped with
// the reason when no adapter answers), and both are put back and released after the file's
// tests. KILN_WEBGPU_DAWN (Dawn toggles, comma-separated, e.g. 'backend=opengl') picks the path:
// test/webgpu-on-opengl.test.ts runs the op tests again on OpenGL's compatibility mode.

import { after } from 'node:test';
import * as kiln from 'kilnjs';
import { requestWebGpuBackend } from 'kilnjs/node';

export interface WebGpuTestContext {
  readonly cpu: kiln.JsBackend;
  readonly gpu: kiln.WebGpuBackend | null;
  /** node:test's `skip` option: false, or why there is no adapter */
  readonly skip: false | string;
}

/** `cleanup` runs after the file's tests, before the device is destroyed (undo global switches). */
export async function webGpuForTests(cleanup?: (gpu: kiln.WebGpuBackend | null) => void): Promise<WebGpuTestContext> {
  const cpu = new kiln.JsBackend();
  kiln.setDefaultBackend(cpu);
  let gpu: kiln.WebGpuBackend | null = null;
  let why = '';
  try {
    const dawn = process.env.KILN_WEBGPU_DAWN?.split(',').filter(Boolean);
    gpu = await requestWebGpuBackend(dawn?.length ? { dawn } : {});
    console.log(`# webgpu adapter: ${gpu.adapterInfo}`);
  } catch (e) {
    why = (e as Error).message.split('\n')[0]!;
    console.log(`# webgpu tests skipped: ${why}`);
  }
  after(async () => {
    kiln.setDefaultBackend(cpu);
    cleanup?.(gpu);
    await gpu?.destroy();
  });
  return { cpu, gpu, skip: gpu ? false : `no WebGPU adapter: ${why}` };
}
