// Registers kiln.compile's backend 'webgpu': compiled programs run their loop kernels as WGSL
// over GPU buffers, so the default backend must be a WebGpuBackend (its buffers are the
// program's inputs and outputs). Browser-safe: imported by 'kilnjs'.

import { registerKernelBackend } from '../registry.js';
import { ArgumentError } from '../../core/errors.js';
import { WebGpuBackend } from './index.js';

registerKernelBackend('webgpu', (eager) => {
  if (eager instanceof WebGpuBackend) return eager;
  throw new ArgumentError(`backend 'webgpu' runs over GPU buffers, but the default backend is '${eager.name}'`, 'kiln.compile', 'kiln.setDefaultBackend(await kiln.requestWebGpuBackend()) first (kilnjs/node in Node), and create or move the tensors there');
}, {
  // first for 'auto' whenever the default backend is WebGPU (the other kernel backends need CPU buffers)
  rank: 40,
  summary: 'webgpu: WGSL kernels from the loop IR on the default WebGPU device',
});
