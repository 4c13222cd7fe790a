// What the server runs: an engine takes one batch (every input padded to one of its bucket
// sizes along dim 0) and returns the outputs by name, each with the axis its rows are on.
// kiln's engines (module-engine.ts, artifact-engine.ts) run compiled or eager; another runtime
// (bench/serve.ts serves onnxruntime-node) implements the same interface behind the same server.

import type { RawTensor } from '../io/safetensors.js';
import type { InputSpec } from './signature.js';

/** 'compiled': kiln's generated code; 'eager': the model's own ops (the canary's reference and the rollback). */
export type Mode = 'compiled' | 'eager';

export interface EngineOutput {
  readonly name: string;
  readonly tensor: RawTensor;
  /** where this output's rows are (row i of the batch is [i * factor, (i + 1) * factor) along `axis`); null: not per row */
  readonly rows: { readonly axis: number; readonly factor: number } | null;
}

export interface WarmupEntry {
  /** the batch size warmed up */
  readonly bucket: number;
  /** where its program came from: 'compiled', 'cache (program)', 'cache (trace skipped)', 'memory', 'artifact', ... */
  readonly source: string;
  readonly ms: number;
}

export interface Engine {
  /** for logs and metrics: the model and what runs it */
  readonly name: string;
  readonly inputs: readonly InputSpec[];
  /** the modes it runs; the first is where it starts */
  readonly modes: readonly Mode[];
  /** batch sizes a batch is padded to, ascending; the last is the most rows one batch holds */
  readonly buckets: readonly number[];
  /** whether rows stay separate through the model (batching and padding are then exact), else why not */
  readonly rows: { readonly ok: true } | { readonly ok: false; readonly reason: string };
  /** compiles (or loads) every bucket ahead of the first request, yielding to the event loop between them; `progress` gets each entry */
  warmup(progress?: (e: WarmupEntry) => void): Promise<WarmupEntry[]>;
  /** one batch: inputs in declared order, `bucket` rows each */
  run(mode: Mode, inputs: readonly RawTensor[]): readonly EngineOutput[] | Promise<readonly EngineOutput[]>;
  close?(): void | Promise<void>;
}

/** Output leaves of a model's result (a tensor, an array or a record of them), named 'output', 'output.0', 'logits', ... */
export function flattenOutputs<T>(result: unknown, isLeaf: (v: unknown) => v is T, prefix = ''): [string, T][] {
  if (isLeaf(result)) return [[prefix || 'output', result]];
  const out: [string, T][] = [];
  const name = (k: string | number) => (prefix ? `${prefix}.${k}` : typeof k === 'number' ? `output.${k}` : k);
  if (Array.isArray(result)) result.forEach((v, i) => out.push(...flattenOutputs(v, isLeaf, name(i))));
  else if (result !== null && typeof result === 'object') for (const [k, v] of Object.entries(result)) out.push(...flattenOutputs(v, isLeaf, name(k)));
  return out;
}

/** Yields to the event loop (so /healthz and /readyz answer between warm-up steps). */
export const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));
