// Serving an nn.Module (a module file with its weights): compiled with kiln.compile, one static
// program per bucket (dynamic: false; every bucket compiled by warmup() before the first
// request, from the persistent cache when it has them), eager = the module's own forward.
// Whether rows stay separate is proved on the traced graph (bucket.ts rowAxes), not assumed.

import type { DType } from '../core/dtype.js';
import type { RawTensor } from '../io/safetensors.js';
import { noGrad } from '../autograd/grad-mode.js';
import { zeros } from '../ops/creation.js';
import { isTensor, Tensor } from '../tensor/tensor.js';
import { scope } from '../core/scope.js';
import { compile, type CompiledModule } from '../compiler/index.js';
import type { CompileOptions } from '../compiler/compile.js';
import { probeGraph } from '../compiler/dynamic/dynamic.js';
import { rowAxes, type Pad } from '../compiler/dynamic/bucket.js';
import type { AnyModule } from '../nn/module.js';
import { yieldToLoop, type Engine, type EngineOutput, type Mode, type WarmupEntry } from './engine.js';
import { engineOutputs, toTensor } from './kiln-tensors.js';
import type { InputSpec } from './signature.js';

export interface ModuleEngineOptions {
  readonly name: string;
  readonly model: AnyModule;
  readonly inputs: readonly InputSpec[];
  readonly buckets: readonly number[];
  /** kiln.compile's backend (default: kiln.compile's, 'auto': the fastest that runs here) */
  readonly backend?: string;
  /** where it starts (default 'compiled') */
  readonly mode?: Mode;
  /** other compile options (mode: 'max-autotune', ...) */
  readonly compile?: Omit<CompileOptions, 'backend' | 'dynamic' | 'buckets' | 'name'>;
}

export function moduleEngine(o: ModuleEngineOptions): Engine {
  const model = o.model as unknown as { forward(...a: Tensor[]): unknown; eval(): unknown };
  model.eval();
  const compiled = compile(o.model as never, { ...o.compile, ...(o.backend !== undefined ? { backend: o.backend } : {}), name: o.name, dynamic: false, recompileLimit: o.buckets.length + 2 }) as unknown as CompiledModule<{ training: boolean; forward(...a: unknown[]): unknown }>;
  const rowsAt = (n: number) => o.inputs.map((s) => [n, ...s.row]);
  const dtypes: DType[] = o.inputs.map((s) => s.dtype);
  const largest = o.buckets[o.buckets.length - 1]!;
  const verdict = largest === 1 ? { ok: true as const, leaves: null } : analyseRows(model, o.inputs, rowsAt(largest));
  const rows: Engine['rows'] = verdict.ok ? { ok: true } : { ok: false, reason: verdict.reason };
  const leaves = verdict.ok ? (verdict.leaves ?? 'whole') : null;
  const modes: Mode[] = o.mode === 'eager' ? ['eager', 'compiled'] : ['compiled', 'eager'];
  return {
    name: `${o.name} (kiln, ${o.backend ?? 'auto'})`,
    inputs: o.inputs,
    modes,
    buckets: o.buckets,
    rows,
    async warmup(progress?: (e: WarmupEntry) => void): Promise<WarmupEntry[]> {
      const entries: WarmupEntry[] = [];
      for (const b of o.buckets) {
        await yieldToLoop();
        const report = await noGrad(() => compiled.warmup({ shapes: [rowsAt(b)], dtype: dtypes }));
        const e = report.entries[0]!;
        entries.push({ bucket: b, source: e.source, ms: e.ms });
        progress?.(entries.at(-1)!);
      }
      // the eager path (the canary's reference, the rollback) runs once too: its kernels are generated on first use
      await yieldToLoop();
      const t0 = performance.now();
      noGrad(() => scope(() => void model.forward(...rowsAt(o.buckets[0]!).map((s, i) => zeros(s, { dtype: dtypes[i]! }))), isTensor));
      entries.push({ bucket: o.buckets[0]!, source: 'eager', ms: performance.now() - t0 });
      progress?.(entries.at(-1)!);
      return entries;
    },
    run(mode: Mode, inputs: readonly RawTensor[]): EngineOutput[] {
      return noGrad(() => scope(() => {
        const args = inputs.map(toTensor);
        return engineOutputs(mode === 'compiled' ? compiled(...args) : model.forward(...args), leaves);
      }, isTensor));
    },
  };
}

/** Traces forward on proxies at `shapes` and checks that rows along dim 0 never mix (bucket.ts). */
function analyseRows(model: { forward(...a: Tensor[]): unknown }, inputs: readonly InputSpec[], shapes: number[][]): { ok: true; leaves: (Pad | null)[] } | { ok: false; reason: string } {
  const args = shapes.map((s, i) => zeros(s, { dtype: inputs[i]!.dtype }));
  try {
    const names = inputs.map((s) => s.name);
    const { graph, leaves } = noGrad(() => probeGraph({ fn: (...a: unknown[]) => model.forward(...(a as Tensor[])), args, names, name: 'serve rows' }, new Map()));
    return rowAxes(graph, leaves, new Set(names), 0);
  } catch (e) {
    return { ok: false, reason: `tracing the model failed: ${(e as Error).message}` };
  } finally {
    for (const a of args) a.dispose();
  }
}
