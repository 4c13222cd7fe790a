// A model to serve, as a module file: it builds the nn.Module and declares its inputs; the
// weights come from a safetensors file (PyTorch's state-dict keys). Write one like this and run
// `npx kilnjs serve ./model.ts --weights model.safetensors`:
//
//   import * as kiln from 'kilnjs';
//
//   export default {                       // or `export const servable = { ... }`
//     name: 'classifier',
//     inputs: { x: { dtype: 'float32', shape: [784] } },  // forward's arguments in order: the shape
//                                                         // of one row (the batch dim comes first)
//     create: () => new kiln.nn.Sequential(new kiln.nn.Linear(784, 128), new kiln.nn.ReLU(), new kiln.nn.Linear(128, 10)),
//     weights: './classifier.safetensors',  // optional, relative to this file (--weights overrides)
//     buckets: [1, 8, 32, 64],              // optional: batch sizes compiled ahead (default: powers of two up to --max-batch)
//   };
//
// forward must work row by row along dim 0 to be batched and padded (checked when it starts:
// module-engine.ts); the result is a tensor, an array or a record of tensors.

import { existsSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DType } from '../core/dtype.js';
import { ArgumentError } from '../core/errors.js';
import type { AnyModule } from '../nn/module.js';
import { loaderHint } from '../io/loader-hint.js';
import { loadSafetensors } from '../api/node.js';
import { checkSignature, type InputSpec } from './signature.js';

export interface ServableModule {
  readonly name: string;
  /** forward's tensor arguments in order: dtype (default float32) and the shape of one row */
  readonly inputs: Readonly<Record<string, { readonly dtype?: DType; readonly shape: readonly number[] }>>;
  /** builds the module (its weights are then loaded from `weights`) */
  create(): AnyModule | Promise<AnyModule>;
  /** a safetensors file, relative to the module file */
  readonly weights?: string;
  /** batch sizes compiled ahead, ascending */
  readonly buckets?: readonly number[];
}

export interface LoadedModel {
  readonly name: string;
  readonly model: AnyModule;
  readonly inputs: InputSpec[];
  readonly buckets?: readonly number[];
  /** the weights file loaded, or null (the module's own initialization is served) */
  readonly weights: string | null;
}

/** Imports a module file, builds its model and loads its weights (`weights` overrides the file's own). */
export async function loadModelFile(path: string, weights?: string): Promise<LoadedModel> {
  const where = `kilnjs serve ${path}`;
  const abs = isAbsolute(path) ? path : resolve(process.cwd(), path);
  if (!existsSync(abs)) throw new ArgumentError(`${abs} does not exist`, where, 'pass an artifact (kiln.export) or a module file that exports a servable model (src/serve/model-file.ts)');
  let mod: { default?: unknown; servable?: unknown };
  try {
    mod = (await import(pathToFileURL(abs).href)) as typeof mod;
  } catch (e) {
    const hint = loaderHint(e, 'serve', path);
    if (!hint) throw e;
    throw new ArgumentError(`could not import ${path}: ${(e as Error).message}${hint}`, where);
  }
  const s = (mod.servable ?? mod.default) as Partial<ServableModule> | undefined;
  if (!s || typeof s !== 'object' || typeof s.create !== 'function' || typeof s.name !== 'string' || !s.inputs || typeof s.inputs !== 'object') {
    throw new ArgumentError(`${path} exports no servable model`, where, "export default { name, inputs: { x: { dtype: 'float32', shape: [784] } }, create: () => model } (see src/serve/model-file.ts)");
  }
  const inputs = checkSignature(Object.entries(s.inputs).map(([name, v]) => ({ name, dtype: v?.dtype ?? 'float32', row: v?.shape as number[] })), where);
  const model = await s.create();
  if (!model || typeof (model as { forward?: unknown }).forward !== 'function') throw new ArgumentError(`${s.name}: create() returned ${model === null ? 'null' : typeof model}, not an nn.Module`, where);
  const file = weights ?? (s.weights ? resolve(dirname(abs), s.weights) : null);
  if (file) {
    if (!existsSync(file)) throw new ArgumentError(`weights file ${file} does not exist`, where, 'pass --weights FILE.safetensors');
    model.loadStateDict(await loadSafetensors(file));
  }
  return { name: s.name, model, inputs, ...(s.buckets ? { buckets: s.buckets } : {}), weights: file };
}
