// kiln: PyTorch-style tensors for TypeScript. The browser-safe entry point ('kilnjs'): the API of
// src/api/kiln.ts; Node-only features (files, native backends) live in 'kilnjs/node'.
/// <reference path="./core/ambient-types.ts" preserve="true" />

export * from './api/kiln.js';
// what a workload module for `kilnjs advise` exports (types only: the advisor itself is Node-only)
export type { Workload, WorkloadInstance, WorkloadKind, WorkloadSetupOptions } from './advisor/workload.js';
