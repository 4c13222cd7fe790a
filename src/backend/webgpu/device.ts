// Acquiring a WebGPU device. Browser-safe: it uses `navigator.gpu`, or the GPU object the
// caller passes (kiln/node passes Dawn's, from the `webgpu` package). The adapter's own
// limits are requested (compatibility-mode defaults bind only 4 storage buffers per shader),
// and the optional features kiln uses where the adapter has them ('timestamp-query',
// 'subgroups', 'shader-f16'; the backend turns subgroup reductions on when the device has the feature).

import { WebGpuBackend } from './index.js';
import { WebGpuUnavailableError } from './errors.js';
import { checkEnum } from '../../core/enum-arg.js';

export interface WebGpuOptions {
  /** the GPU object (default: navigator.gpu) */
  readonly gpu?: GPU;
  readonly powerPreference?: 'low-power' | 'high-performance';
  /** 'compatibility' for OpenGL-class adapters (Dawn on Mesa llvmpipe, the software path) */
  readonly featureLevel?: 'core' | 'compatibility';
}

const LIMITS = ['maxStorageBuffersPerShaderStage', 'maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY'] as const;

/** A WebGPU backend on the first adapter found; throws WebGpuUnavailableError with the reason. */
export async function requestWebGpuBackend(opts: WebGpuOptions = {}): Promise<WebGpuBackend> {
  const gpu = opts.gpu ?? (typeof navigator !== 'undefined' ? (navigator as Navigator & { gpu?: GPU }).gpu : undefined);
  if (!gpu) {
    throw new WebGpuUnavailableError('no WebGPU here (navigator.gpu is undefined)', 'requestWebGpuBackend', "in a browser, use one with WebGPU enabled; in Node, import { requestWebGpuBackend } from 'kilnjs/node' (the `webgpu` package)");
  }
  if (opts.powerPreference !== undefined) checkEnum('requestWebGpuBackend', 'powerPreference', opts.powerPreference, ['low-power', 'high-performance']);
  if (opts.featureLevel !== undefined) checkEnum('requestWebGpuBackend', 'featureLevel', opts.featureLevel, ['core', 'compatibility']);
  const adapter = await gpu.requestAdapter({ powerPreference: opts.powerPreference, ...(opts.featureLevel ? { featureLevel: opts.featureLevel } : {}) } as GPURequestAdapterOptions);
  if (!adapter) throw new WebGpuUnavailableError('no WebGPU adapter was found', 'requestWebGpuBackend', 'check the GPU driver, or use a software adapter (see src/backend/webgpu/README.md)');
  const requiredLimits: Record<string, number> = {};
  for (const l of LIMITS) requiredLimits[l] = adapter.limits[l];
  let device: GPUDevice;
  try {
    // where offered: timestamp queries (gpu.profile(), max-autotune's timing: profile.ts,
    // autotune.ts), subgroups (row reductions combine on registers first: render-row.ts) and
    // shader-f16 (gpu.matmulPrecision = 'f16': render-matmul.ts)
    const requiredFeatures = (['timestamp-query', 'subgroups', 'shader-f16'] as GPUFeatureName[]).filter((f) => adapter.features.has(f));
    device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
  } catch (e) {
    throw new WebGpuUnavailableError(`the adapter refused a device: ${(e as Error).message}`, 'requestWebGpuBackend');
  }
  const info = adapter.info ? `${adapter.info.vendor} ${adapter.info.architecture} ${adapter.info.description}`.trim() : '';
  return new WebGpuBackend(device, info);
}
