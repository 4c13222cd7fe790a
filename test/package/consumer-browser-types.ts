// A strict TypeScript consumer of the browser entry alone (tsconfig.consumer-browser.json: no
// @types/node, the default lib): 'kilnjs' must type-check without Node's types or @webgpu/types.

import * as kiln from 'kilnjs';
import type { Workload } from 'kilnjs';

const t: kiln.Tensor = kiln.ones([2, 3]).mul(2);
const values: kiln.TypedArray = t.dataSync();
const gpu: Promise<kiln.WebGpuBackend> = kiln.requestWebGpuBackend();
const kind: Workload['kind'] = 'inference';
console.log(values[0], gpu, kind);
