// kiln's browser-safe public API: what 'kilnjs' exports (src/index.ts), and what the advisor's
// workloads and the server are written against (they sit below the entry points, which also
// export the advisor's and the server's types).

import './eager.js';
import '../ops/tensor-methods-api.js';
import { isTensor, Tensor } from '../tensor/tensor.js';
import { keep, scope as scopeImpl } from '../core/scope.js';
import { memoryStats } from '../tensor/storage.js';
import { runtime } from '../ops/dispatch.js';
import { eagerStats as eagerStatsOf, type EagerStats } from '../backend/wasm/eager/index.js';

export { Tensor, isTensor, keep };
export type { DType, TypedArray } from '../core/dtype.js';
export * from '../core/errors.js';
export { broadcastShapes } from '../core/shape.js';
export { Generator, type GeneratorState } from '../core/random.js';
export * from '../ops/creation.js';
export * from '../ops/math.js';
export { sum, prod, mean, max, min, argmax, argmin, variance as var, variance, std, logsumexp, softmax, logSoftmax } from '../ops/reduce.js';
export { reshape, viewAs, flatten, squeeze, unsqueeze, permute, transpose, expand, slice, narrow, select, pad, cat, stack, split, chunk, contiguous } from '../ops/movement.js';
export { matmul, bmm } from '../ops/linalg.js';
export { gather, scatterAdd, indexSelect, indexAdd, cumsum, oneHot, nonzero, maskedSelect } from '../ops/indexing.js';
export { conv1d, conv2d, convTranspose2d, maxPool2d, avgPool2d, type ConvPadding } from '../ops/window.js';
export { interpolate, adaptiveAvgPool1d, adaptiveAvgPool2d, adaptiveMaxPool2d, type InterpolateMode, type InterpolateOptions } from '../ops/resize.js';
export { groupNorm, rmsNorm } from '../ops/normalization.js';
export { linear, triu, tril, dropout, layerNorm, batchNorm, embedding, scaledDotProductAttention } from '../ops/functional.js';
// the torch API surface of docs/torch-api.md: activations, tensor ops, losses (math is in ops/math.js above)
export { amax, amin, type ValuesIndices } from '../ops/reduce.js';
export { flip, roll, repeat, tile, repeatInterleave } from '../ops/reorder.js';
export { sort, argsort, topk, kthvalue, bucketize, unique, type UniqueOptions, type UniqueResult } from '../ops/sorting.js';
export { cumprod, cummax, cummin } from '../ops/scan.js';
export { norm, normalize, cosineSimilarity, cdist, type NormOrder } from '../ops/norms.js';
export { diag, trace, meshgrid, type MeshgridOptions } from '../ops/matrix.js';
export { einsum } from '../ops/einsum.js';
export { multinomial, randperm } from '../ops/sampling.js';
export { elu, selu, celu, hardtanh, relu6, hardsigmoid, hardswish, mish, logsigmoid, leakyRelu, prelu, glu } from '../ops/activations.js';
export {
  nllLoss, crossEntropy, mseLoss, l1Loss, smoothL1Loss, huberLoss, klDiv, binaryCrossEntropy, binaryCrossEntropyWithLogits,
  type Reduction, type KlDivReduction, type CrossEntropyOptions,
} from '../ops/losses.js';
export { cast, copy as clone } from '../ops/pointwise.js';
export { assign } from '../ops/inplace.js';
export { setCheckNumerics, setDefaultBackend } from '../ops/dispatch.js';
export { WasmEagerBackend, type EagerStats } from '../backend/wasm/eager/index.js';
export { noGrad, enableGrad, isGradEnabled } from '../autograd/grad-mode.js';
export { backward } from '../ops/backward.js';
export type { Backend, BackendBuffer } from '../backend/backend.js';
export { JsBackend } from '../backend/js/index.js';
export { WebGpuBackend, type WebGpuStats } from '../backend/webgpu/index.js';
export { requestWebGpuBackend, type WebGpuOptions } from '../backend/webgpu/device.js';
export { WebGpuUnavailableError, WebGpuSyncReadError, WebGpuDeviceLostError, WebGpuOutOfMemoryError, WebGpuShaderError, WebGpuValidationError, WebGpuUnsupportedError } from '../backend/webgpu/errors.js';
export { toBackend, toBackendAsync } from '../tensor/transfer.js';
export type { AutotuneOptions, AutotuneReport } from '../backend/webgpu/autotune.js';
export type { GpuProfile, ProfiledDispatch } from '../backend/webgpu/profile.js';
export { MATMUL_CONFIGS, parseConfig as parseMatmulConfig, type MatmulConfig } from '../backend/webgpu/render-matmul.js';
import '../backend/webgpu/register.js';
import '../backend/wasm/register.js';
export { WasmBackend, wasmStats, setWasmThreads, wasmUnavailableReason, WasmCompileError, WasmUnavailableError, type WasmStats } from '../backend/wasm/index.js';
export { encodeSafetensors, decodeSafetensors, type RawTensor, type SafetensorsFileDType } from '../io/safetensors.js';
export { compile, explain, profile, stats, customOp, read, GraphBreakError, InvalidProgramError, RecompileError } from '../compiler/index.js';
export type { ProfileOptions, ProfileReport, KernelProfile, EagerOpProfile, ChromeTrace, ChromeTraceEvent, ProfileFloors } from '../compiler/index.js';
export { markDynamic, markStatic } from '../compiler/index.js';
export type { CompileOptions, Compiled, CompiledModule, CompiledGenerator, CompiledInfo, CompileReport, CompilerStats, ExplainResult } from '../compiler/index.js';
export * as compiler from '../compiler/public.js';
export * as nn from '../nn/index.js';
export * as optim from '../optim/index.js';
export * as data from '../data/index.js';
export { encodeCheckpoint, decodeCheckpoint, CHECKPOINT_FILES, type CheckpointParts } from '../checkpoint/checkpoint.js';

/** Runs fn and disposes every tensor it made, except those it returns (or keep()s). */
export function scope<T>(fn: () => T): T {
  return scopeImpl(fn, isTensor);
}

/** Live tensors and bytes, for leak checks. */
export function memory(): { tensors: number; storages: number; bytes: number; peakBytes: number } {
  return { tensors: memoryStats.liveTensors, storages: memoryStats.liveStorages, bytes: memoryStats.liveBytes, peakBytes: memoryStats.peakBytes };
}

/** Which kernels eager ops run on (wasm or JS), what they launched, what building the wasm kernels cost. */
export function eagerStats(): EagerStats {
  return eagerStatsOf(runtime.backend);
}

/** Resets the peak-bytes counter (for measuring one workload). */
export function resetPeakMemory(): void {
  memoryStats.peakBytes = memoryStats.liveBytes;
}
