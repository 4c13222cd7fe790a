// The advisor's Workload interface, and the adapters that find one: a user module, or one of
// kiln's examples (`--example NAME`).
//
// A workload is what `kilnjs advise` measures: one function, called over and over in
// production, with the model and data it needs. Write a module like this and run
// `npx kilnjs advise ./my-workload.mjs` (a .ts module: `npx tsx node_modules/.bin/kilnjs advise`):
//
//   import * as kiln from 'kilnjs';
//
//   /** @type {import('kilnjs').Workload} */       // in TypeScript: `export const workload: kiln.Workload = {`
//   export const workload = {
//     name: 'ranker',
//     kind: 'inference',
//     shapes: ['x[32,256]', 'x[64,256]'],          // optional: input shapes seen in production
//                                                  // (inputs in order; unlisted ones follow: see shapes.ts)
//     setup({ seed }) {
//       kiln.manualSeed(seed);                       // same seed -> same weights and data
//       const model = new Ranker();
//       model.requiresGrad_(false); model.eval();
//       const x = kiln.randn([32, 256]);
//       return { inputs: [x], fn: (x) => model.call(x), params: model.parameters(),
//                captures: model.stateDict() };     // optional: lets a warm restart skip tracing
//     },
//   };
//
// Rules (the same as bench/workloads/types.ts, whose workloads load as they are):
// - setup() builds everything from `seed`: the advisor calls it twice, once for eager and
//   once for the compiled variant, and compares them, so both must start identical.
// - fn(...inputs) is one call, written with kiln ops: what eager mode runs and what
//   kiln.compile wraps. Data comes in as `inputs`; parameters and optimizer state are
//   captured from the closure. A training fn is the whole step (zeroGrad, forward, backward,
//   optimizer step) and returns the loss; an inference fn returns its output(s).
// - setup() runs outside any kiln.scope, so what it makes survives; the advisor runs every
//   call inside kiln.scope (inference also under kiln.noGrad) and calls dispose() at the end.
// - The restart measurement (cache-check.ts) loads the workload again in fresh processes, by
//   example name or module path: a workload object that lives only in memory skips it.
// - A training instance may add `trainLoop: { module, step(forward, ...inputs) }`, the same step
//   written against `forward` (the model's call): the advisor then also times
//   `kiln.compile(module)` in that ordinary loop and says which form to use (train-forms.ts).
// - With several `shapes`, the inputs at each shape are the setup's inputs tiled (shapes.ts),
//   so fn must accept any of the declared shapes.

import { existsSync, readdirSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as kiln from '../api/kiln.js';
import { loaderHint } from '../io/loader-hint.js';

export type WorkloadKind = 'training' | 'inference';

export interface WorkloadSetupOptions {
  /** seed for kiln.manualSeed: two setups with one seed must build identical weights and data */
  seed: number;
  /**
   * one of the workload's `configs` (`kilnjs advise --config NAME`); undefined means the
   * workload's default (the first of `configs`)
   */
  config?: string;
}

export interface WorkloadInstance {
  /** the explicit tensor arguments of fn (data, labels) */
  readonly inputs: readonly kiln.Tensor[];
  /** one call: a training step returning the loss, or an inference call returning its output(s) */
  readonly fn: (...inputs: kiln.Tensor[]) => kiln.Tensor | readonly kiln.Tensor[];
  /** trainable parameters: compared between eager and compiled after the last step (training) */
  readonly params?: readonly kiln.Tensor[];
  /**
   * the tensors fn reads, by stable name (e.g. model.stateDict()): passed to kiln.compile as
   * `captures`, so that a restarted process with a warm persistent cache can skip tracing
   * (a warm start; inference only: training steps write gradients and always trace)
   */
  readonly captures?: Readonly<Record<string, kiln.Tensor>>;
  /**
   * training, optional: the same step as a PyTorch user writes it, against the model's call.
   * With it the advisor also measures `kiln.compile(module)` in an unchanged loop (forward and
   * backward compiled; loss, backward() and the optimizer step outside) beside the whole-step
   * compile, and says which form to use (train-forms.ts).
   */
  readonly trainLoop?: TrainLoop;
  /** frees parameters, optimizer state and inputs (optional) */
  dispose?(): void;
}

/** A training step written against `forward`: what `fn` does, with `forward` standing for `module.call`. */
export interface TrainLoop {
  readonly module: kiln.nn.AnyModule;
  /** zeroGrad, forward, loss, backward(), optimizer step; returns the loss */
  step(forward: (...xs: kiln.Tensor[]) => kiln.Tensor, ...inputs: kiln.Tensor[]): kiln.Tensor;
}

export interface Workload {
  /** short name for reports */
  readonly name: string;
  readonly kind: WorkloadKind;
  /** one line: model, batch, what a call does */
  readonly description?: string;
  /**
   * input shapes seen in production, one string per distinct signature (e.g. 'x[32,784]'):
   * more than one means each compiles its own entry (see the 'dynamic shapes' verdict)
   */
  readonly shapes?: readonly string[];
  /**
   * named sizes the workload can be built at (e.g. ['small', 'w6']), the first being the
   * default: `--config NAME` passes one to setup(); absent when there is only one size
   */
  readonly configs?: readonly string[];
  setup(opts: WorkloadSetupOptions): WorkloadInstance | Promise<WorkloadInstance>;
}

/** A workload and where it came from ('example:mlp', a module path). */
export interface LoadedWorkload {
  workload: Workload;
  source: string;
}

export class WorkloadError extends Error {
  override name = 'WorkloadError';
}

/**
 * Checks that `x` is a usable workload and normalizes it. Accepts kiln's benchmark workloads
 * too (bench/workloads: `id` and `title` instead of `name`/`description`).
 */
export function asWorkload(x: unknown, where: string): Workload {
  if (typeof x !== 'object' || x === null) throw new WorkloadError(`${where}: expected a workload object, got ${x === null ? 'null' : typeof x}`);
  const o = x as Record<string, unknown>;
  const name = typeof o.name === 'string' ? o.name : typeof o.id === 'string' ? o.id : typeof o.title === 'string' ? o.title : null;
  if (name === null) throw new WorkloadError(`${where}: the workload needs a string 'name'`);
  if (o.kind !== 'training' && o.kind !== 'inference') throw new WorkloadError(`${where}: 'kind' must be 'training' or 'inference', got ${JSON.stringify(o.kind)}`);
  if (typeof o.setup !== 'function') throw new WorkloadError(`${where}: the workload needs a setup({ seed }) function`);
  if (o.shapes !== undefined && !(Array.isArray(o.shapes) && o.shapes.every((s) => typeof s === 'string'))) {
    throw new WorkloadError(`${where}: 'shapes' must be an array of strings (one per input signature, e.g. 'x[32,784]')`);
  }
  if (o.configs !== undefined && !(Array.isArray(o.configs) && o.configs.length > 0 && o.configs.every((s) => typeof s === 'string'))) {
    throw new WorkloadError(`${where}: 'configs' must be a non-empty array of config names (the first is the default)`);
  }
  const description = typeof o.description === 'string' ? o.description : typeof o.title === 'string' && o.title !== name ? o.title : undefined;
  const setup = o.setup as Workload['setup'];
  return {
    name,
    kind: o.kind,
    ...(description !== undefined ? { description } : {}),
    ...(o.shapes !== undefined ? { shapes: o.shapes as string[] } : {}),
    ...(o.configs !== undefined ? { configs: o.configs as string[] } : {}),
    setup: (opts) => setup.call(x, opts),
  };
}

/** Checks what setup() returned. */
export function checkInstance(x: unknown, name: string): WorkloadInstance {
  const where = `workload '${name}': setup()`;
  if (typeof x !== 'object' || x === null) throw new WorkloadError(`${where} must return { inputs, fn }, got ${x === null ? 'null' : typeof x}`);
  const o = x as Record<string, unknown>;
  if (!Array.isArray(o.inputs) || !o.inputs.every((t) => kiln.isTensor(t))) throw new WorkloadError(`${where}: 'inputs' must be an array of tensors`);
  if (typeof o.fn !== 'function') throw new WorkloadError(`${where}: 'fn' must be a function of the inputs`);
  if (o.params !== undefined && !(Array.isArray(o.params) && o.params.every((t) => kiln.isTensor(t)))) throw new WorkloadError(`${where}: 'params' must be an array of tensors`);
  if (o.captures !== undefined && !(typeof o.captures === 'object' && o.captures !== null && Object.values(o.captures).every((t) => kiln.isTensor(t)))) {
    throw new WorkloadError(`${where}: 'captures' must be an object of named tensors (e.g. model.stateDict())`);
  }
  if (o.trainLoop !== undefined) {
    const l = o.trainLoop as Record<string, unknown> | null;
    if (typeof l !== 'object' || l === null || !(l.module instanceof kiln.nn.Module) || typeof l.step !== 'function') {
      throw new WorkloadError(`${where}: 'trainLoop' must be { module: an nn.Module, step(forward, ...inputs) } (the step written against the model's call)`);
    }
  }
  return x as WorkloadInstance;
}

// ---------------------------------------------------------------- user modules

/** Imports a module and takes its default export or `workload`. */
export async function loadWorkloadModule(path: string): Promise<LoadedWorkload> {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new WorkloadError(`workload module not found: ${path}`);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(abs).href)) as Record<string, unknown>;
  } catch (e) {
    throw new WorkloadError(`could not import ${path}: ${(e as Error).message}${loaderHint(e, 'advise', path)}`);
  }
  const w = mod.default ?? mod.workload;
  if (w === undefined) throw new WorkloadError(`${path} exports no workload: export one as default or as 'workload' (the Workload type of 'kilnjs')`);
  return { workload: asWorkload(w, path), source: path };
}

// ---------------------------------------------------------------- examples

/** `.ts` when the advisor runs from its sources (tsx), `.js` when it runs from the built package. */
const MODULE_EXT = extname(fileURLToPath(import.meta.url));

/** The advisor's example workloads (./examples: one module per example, helpers in lib/). */
export const EXAMPLES_DIR = join(dirname(fileURLToPath(import.meta.url)), 'examples');

/**
 * The example `kilnjs advise` measures when given no workload: the recommender (a DLRM
 * training step, examples/recommender.ts), at its small config so a bare `npx kilnjs advise`
 * finishes in well under 3 minutes on a 2-core machine; `--config w6` measures W6's shapes.
 */
export const DEFAULT_EXAMPLE = 'recommender';

/**
 * The config setup() gets: `requested` when the workload offers it, the first of `configs`
 * when none is requested, undefined when the workload has no configs.
 */
export function resolveConfig(w: Workload, requested: string | undefined): string | undefined {
  if (requested === undefined) return w.configs?.[0];
  if (!w.configs) throw new WorkloadError(`--config ${requested}: workload '${w.name}' has no configs`);
  if (!w.configs.includes(requested)) throw new WorkloadError(`--config ${requested}: workload '${w.name}' offers ${w.configs.join(', ')}`);
  return requested;
}

/** Example names (the modules in `dir`, without their extension). */
export function exampleNames(dir: string = EXAMPLES_DIR): string[] {
  try {
    return readdirSync(dir).filter((f) => f.endsWith(MODULE_EXT) && !f.endsWith('.d.ts')).map((f) => f.slice(0, -MODULE_EXT.length)).sort();
  } catch {
    return [];
  }
}

/** `--example NAME`: imports the example module NAME and takes its exported `workload` (or default export). */
export async function loadExample(name: string, dir: string = EXAMPLES_DIR): Promise<LoadedWorkload> {
  if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new WorkloadError(`--example: not an example name: '${name}'`);
  const file = `${name}${MODULE_EXT}`;
  if (!existsSync(join(dir, file))) {
    throw new WorkloadError(`--example ${name}: there is no example '${name}' (examples: ${exampleNames(dir).join(', ') || 'none'})`);
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(join(dir, file)).href)) as Record<string, unknown>;
  } catch (e) {
    throw new WorkloadError(`--example ${name}: could not import ${file}: ${(e as Error).message}`);
  }
  const w = mod.workload ?? mod.default;
  if (w !== undefined) return { workload: asWorkload(w, `example ${name}`), source: `example:${name}` };
  throw new WorkloadError(
    `--example ${name}: ${file} does not export a 'workload' (yet). ` +
      `An example becomes measurable by exporting \`export const workload: Workload = { name, kind, setup({ seed }) { ... return { inputs, fn } } }\` (the Workload type of 'kilnjs').`,
  );
}
