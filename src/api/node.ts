// kiln's Node-only API (files, the native backend, the disk cache): what 'kilnjs/node' exports
// (src/node.ts) besides the server and the advisor's types. Importing it registers
// kiln.compile's backend 'native' and the compile cache's disk store.

import './eager.js';
import '../backend/native/register.js';
import '../compiler/cache/register.js';
import type { Tensor } from '../tensor/tensor.js';
import { readSafetensorsFile, writeSafetensorsFile } from '../io/safetensors-node.js';
import type { SafetensorsFileDType } from '../io/safetensors.js';
import { keptTensors, rawTensors } from '../checkpoint/records.js';

export interface SaveSafetensorsOptions {
  /** the file dtype of every tensor, or by name (default: float32 F32, float64 F64, int32 I32, bool BOOL); narrowing is range-checked */
  dtypes?: SafetensorsFileDType | Record<string, SafetensorsFileDType>;
}

/** Writes a state dict ({ name: Tensor }, e.g. model.stateDict()) as a .safetensors file. */
export async function saveSafetensors(path: string, stateDict: Record<string, Tensor>, metadata?: Record<string, string>, opts: SaveSafetensorsOptions = {}): Promise<void> {
  await writeSafetensorsFile(path, rawTensors(stateDict, opts.dtypes), metadata);
}

/** Reads a .safetensors file into kept tensors (load them with module.loadStateDict). */
export async function loadSafetensors(path: string): Promise<Record<string, Tensor>> {
  return (await loadSafetensorsWithMetadata(path)).tensors;
}

/** The tensors (kept), the file's string metadata, and each tensor's dtype in the file (save with { dtypes } to write them back alike). */
export async function loadSafetensorsWithMetadata(path: string): Promise<{ tensors: Record<string, Tensor>; metadata: Record<string, string>; dtypes: Record<string, SafetensorsFileDType> }> {
  return keptTensors(await readSafetensorsFile(path));
}

export { saveCheckpoint, loadCheckpoint } from '../checkpoint/files.js';
export type { CheckpointParts } from '../checkpoint/checkpoint.js';

export { NativeBackend, NativeCompileError, NativeUnavailableError, nativeStats, nativeBatch, clearNativeMemoryCache, nativeUnavailableReason, type NativeStats } from '../backend/native/index.js';
export { requestWebGpuBackend, type NodeWebGpuOptions } from '../backend/webgpu/node.js';

// the persistent compile cache and ahead-of-time artifacts (src/compiler/cache)
export { exportArtifact as export, exportArtifact, loadArtifact as load, loadArtifact, type ExportOptions, type LoadOptions, type LoadedArtifact } from '../compiler/cache/artifact.js';
export { saveCache, loadCache } from '../compiler/cache/bundle.js';
export { ArtifactError, UntrustedFileError } from '../compiler/cache/errors.js';
export type { KeyInput, TrustOptions } from '../compiler/cache/seal.js';

// a fleet's compile cache on Redis (src/compiler/cache/remote.ts)
export { useRemoteCache, type RemoteCache, type RemoteCacheOptions, type RemoteCacheStats } from '../compiler/cache/remote.js';
