// kiln/node: the Node-only entry point (files, the native backend). Everything browser-safe
// is in 'kilnjs'. Importing it registers kiln.compile's backend 'native'.

import './tensor/methods.js';
import './backend/native/register.js';
import './compiler/cache/register.js';
import { DTypeError, StateDictError } from './core/errors.js';
import type { Tensor } from './tensor/tensor.js';
import { keep } from './tensor/scope.js';
import { tensor } from './ops/creation.js';
import { readSafetensorsFile, writeSafetensorsFile } from './io/safetensors-node.js';
import type { RawTensor } from './io/safetensors.js';

/** Writes a state dict ({ name: Tensor }, e.g. model.stateDict()) as a .safetensors file. */
export async function saveSafetensors(path: string, stateDict: Record<string, Tensor>, metadata?: Record<string, string>): Promise<void> {
  const raw: Record<string, RawTensor> = {};
  for (const [name, t] of Object.entries(stateDict)) {
    if (!t || typeof t !== 'object' || typeof (t as Tensor).dataSync !== 'function') {
      throw new StateDictError(`'${name}' is not a tensor`, 'saveSafetensors');
    }
    t.assertAlive('saveSafetensors');
    if (t.dtype !== 'float32' && t.dtype !== 'float64' && t.dtype !== 'int32' && t.dtype !== 'bool') {
      throw new DTypeError(`'${name}' has dtype ${String(t.dtype)}, which safetensors files here cannot hold`, 'saveSafetensors');
    }
    raw[name] = { dtype: t.dtype, shape: [...t.shape], data: t.dataSync() }; // dataSync: a row-major copy
  }
  await writeSafetensorsFile(path, raw, metadata);
}

/** Reads a .safetensors file into kept tensors (load them with module.loadStateDict). */
export async function loadSafetensors(path: string): Promise<Record<string, Tensor>> {
  return (await loadSafetensorsWithMetadata(path)).tensors;
}

/** The tensors (kept) and the file's string metadata. */
export async function loadSafetensorsWithMetadata(path: string): Promise<{ tensors: Record<string, Tensor>; metadata: Record<string, string> }> {
  const file = await readSafetensorsFile(path);
  const tensors: Record<string, Tensor> = {};
  for (const [name, r] of Object.entries(file.tensors)) {
    const t = keep(tensor(r.data, r.shape, { dtype: r.dtype }));
    t.name = name;
    tensors[name] = t;
  }
  return { tensors, metadata: file.metadata };
}

export { NativeBackend, NativeCompileError, NativeUnavailableError, nativeStats, nativeBatch, clearNativeMemoryCache, nativeUnavailableReason, type NativeStats } from './backend/native/index.js';
export { requestWebGpuBackend, type NodeWebGpuOptions } from './backend/webgpu/node.js';

// the persistent compile cache and ahead-of-time artifacts (src/compiler/cache)
export { exportArtifact as export, exportArtifact, loadArtifact as load, loadArtifact, type ExportOptions, type LoadOptions, type LoadedArtifact } from './compiler/cache/artifact.js';
export { saveCache, loadCache } from './compiler/cache/bundle.js';
export { ArtifactError } from './compiler/cache/errors.js';

// serving (src/serve): Fastify and prom-client load only when a server starts
export type { ServeOptions, KilnServer } from './serve/server.js';
export type { Engine, EngineOutput, Mode as ServeMode, WarmupEntry } from './serve/engine.js';
export type { ServableModule } from './serve/model-file.js';

/** Starts `kilnjs serve` in this process (src/serve/server.ts); resolves once it listens (await `.ready` for warm-up). */
export async function serve(opts: import('./serve/server.js').ServeOptions): Promise<import('./serve/server.js').KilnServer> {
  return (await import('./serve/server.js')).serve(opts);
}

// a fleet's compile cache on Redis (src/compiler/cache/remote.ts)
export { useRemoteCache, type RemoteCache, type RemoteCacheOptions, type RemoteCacheStats } from './compiler/cache/remote.js';
