// Serving an exported artifact (kiln.export): its program runs as built (no tracing, no code
// generation when the backend matches), eager = the same graph node by node with eager
// kernels (LoadedArtifact.eager). An artifact holds one input shape: its batch dim is the one
// bucket, and smaller batches are padded up to it when rows stay separate (checked on its graph).

import { ArgumentError } from '../core/errors.js';
import type { RawTensor } from '../io/safetensors.js';
import { noGrad } from '../autograd/grad-mode.js';
import { zeros } from '../ops/creation.js';
import { isTensor } from '../tensor/tensor.js';
import { scope } from '../core/scope.js';
import { artifactRows, loadArtifact } from '../compiler/cache/artifact.js';
import type { TrustOptions } from '../compiler/cache/seal.js';
import { yieldToLoop, type Engine, type EngineOutput, type Mode, type WarmupEntry } from './engine.js';
import { engineOutputs, toTensor } from './kiln-tensors.js';
import type { InputSpec } from './signature.js';

export interface ArtifactEngineOptions {
  readonly path: string;
  /** which stored backend (default: the first that runs here) */
  readonly backend?: string;
  readonly mode?: Mode;
  /** who may have signed it (kiln.load's TrustOptions; default: only artifacts made by this user here) */
  readonly trust?: TrustOptions;
}

export function artifactEngine(o: ArtifactEngineOptions): Engine {
  const t0 = performance.now();
  const loaded = loadArtifact(o.path, { ...(o.backend ? { backend: o.backend } : {}), ...o.trust });
  const loadMs = performance.now() - t0;
  const where = `kilnjs serve ${o.path}`;
  const args = loaded.artifact.inputs;
  if (args.length === 0) throw new ArgumentError('the artifact takes no tensor arguments', where);
  const batch = args[0]!.shape[0];
  if (batch === undefined || args.some((a) => a.shape[0] !== batch)) throw new ArgumentError(`the artifact's inputs (${args.map((a) => `${a.path} [${a.shape.join(', ')}]`).join(', ')}) do not share a first (batch) dim`, where, 'serve a module file instead, or export with inputs batched along dim 0');
  const inputs: InputSpec[] = args.map((a) => ({ name: a.path, dtype: a.dtype, row: a.shape.slice(1) }));
  const verdict = batch === 1 ? { ok: true as const, leaves: null } : artifactRows(loaded, new Set(args.map((a) => a.path)), 0);
  const leaves = verdict.ok ? (verdict.leaves ?? 'whole') : null;
  return {
    name: `${o.path} (kiln artifact, ${loaded.artifact.backend})`,
    inputs,
    modes: o.mode === 'eager' ? ['eager', 'compiled'] : ['compiled', 'eager'],
    buckets: [batch],
    rows: verdict.ok ? { ok: true } : { ok: false, reason: verdict.reason },
    async warmup(progress?: (e: WarmupEntry) => void): Promise<WarmupEntry[]> {
      const entries: WarmupEntry[] = [{ bucket: batch, source: loaded.artifact.codegen ? 'artifact (code generated here)' : 'artifact', ms: loadMs }];
      progress?.(entries[0]!);
      for (const mode of ['compiled', 'eager'] as const) {
        await yieldToLoop();
        const t1 = performance.now();
        noGrad(() => scope(() => void (mode === 'compiled' ? loaded : loaded.eager)(...args.map((a) => zeros(a.shape, { dtype: a.dtype }))), isTensor));
        entries.push({ bucket: batch, source: mode === 'compiled' ? 'artifact (first run)' : 'eager', ms: performance.now() - t1 });
        progress?.(entries.at(-1)!);
      }
      return entries;
    },
    run(mode: Mode, a: readonly RawTensor[]): EngineOutput[] {
      return noGrad(() => scope(() => engineOutputs((mode === 'compiled' ? loaded : loaded.eager)(...a.map(toTensor)), leaves), isTensor));
    },
  };
}
