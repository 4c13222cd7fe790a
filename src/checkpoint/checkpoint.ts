// Training checkpoints: a model, its optimizer, an lr scheduler, a DataLoader's place in its
// epoch, the global random generator and your own JSON, as three files (browser-safe bytes
// here; src/checkpoint/files.ts writes them to a folder in Node):
//   model.safetensors      the model's state dict under torch's keys (loadable by any safetensors reader)
//   optimizer.safetensors  the optimizer's state tensors as 'state.<param index>.<name>'
//   checkpoint.json        everything else: optimizer parameter groups, scheduler, data loader, rng, extra
// Every number is stored exactly (float32 tensors as F32, JSON numbers round-trip doubles), so a
// run resumed from a checkpoint continues bit for bit as the uninterrupted run would.
//
// Loading checks every part before it changes anything: a checkpoint that does not fit leaves
// the model, optimizer, scheduler and loader as they were.

import { StateDictError } from '../core/errors.js';
import { Generator, type GeneratorState } from '../core/random.js';
import type { Tensor } from '../tensor/tensor.js';
import { getRngState, setRngState } from '../ops/creation.js';
import { decodeSafetensors, encodeSafetensors, setOwn } from '../io/safetensors.js';
import type { AnyModule } from '../nn/module.js';
import type { Optimizer, OptimizerStateDict } from '../optim/optimizer.js';
import type { CompositeStateDict, Scheduler, SchedulerStateDict } from '../optim/lr-scheduler.js';
import type { DataLoader, DataLoaderState } from '../data/dataloader.js';
import { keptTensors, rawTensors } from './records.js';

export const CHECKPOINT_FILES = { model: 'model.safetensors', optimizer: 'optimizer.safetensors', json: 'checkpoint.json' } as const;
const FORMAT = 'kiln-checkpoint';
const VERSION = 1;
const OP_SAVE = 'saveCheckpoint';
const OP_LOAD = 'loadCheckpoint';

type AnyOptimizer = Optimizer<any>;
type AnyLoader = DataLoader<any, any>;

/** What a checkpoint holds; each part is optional. */
export interface CheckpointParts {
  model?: AnyModule;
  optimizer?: AnyOptimizer;
  scheduler?: Scheduler;
  dataLoader?: AnyLoader;
  /** save / restore the global random generator (kiln.getRngState; default true) */
  rng?: boolean;
}

/** checkpoint.json */
interface CheckpointJson {
  format: typeof FORMAT;
  version: number;
  optimizer?: { type: string; paramGroups: OptimizerStateDict<object>['paramGroups'] };
  scheduler?: SchedulerStateDict | CompositeStateDict;
  dataLoader?: DataLoaderState;
  rng?: GeneratorState;
  extra?: unknown;
}

/** The checkpoint's files (name to bytes) for `parts` and your JSON-able `extra` (step counts, metrics). */
export function encodeCheckpoint(parts: CheckpointParts, extra?: unknown): Record<string, Uint8Array> {
  const json: CheckpointJson = { format: FORMAT, version: VERSION };
  const files: Record<string, Uint8Array> = {};
  if (parts.model) files[CHECKPOINT_FILES.model] = encodeSafetensors(rawTensors(parts.model.stateDict()), { format: 'pt' });
  if (parts.optimizer) {
    const sd = parts.optimizer.stateDict();
    const state: Record<string, Tensor> = {};
    for (const [id, entries] of Object.entries(sd.state)) for (const [k, t] of Object.entries(entries)) setOwn(state, `state.${id}.${k}`, t);
    files[CHECKPOINT_FILES.optimizer] = encodeSafetensors(rawTensors(state));
    json.optimizer = { type: parts.optimizer.constructor.name, paramGroups: sd.paramGroups };
  }
  if (parts.scheduler) json.scheduler = parts.scheduler.stateDict();
  if (parts.dataLoader) json.dataLoader = parts.dataLoader.stateDict();
  if (parts.rng !== false) json.rng = getRngState();
  if (extra !== undefined) json.extra = extra;
  const text = JSON.stringify(json, (_k, v) => {
    if (typeof v === 'number' && !Number.isFinite(v)) throw new StateDictError(`checkpoint.json cannot hold the number ${v}`, OP_SAVE, 'keep extra values finite (JSON has no NaN or Infinity)');
    return v;
  }, 1);
  files[CHECKPOINT_FILES.json] = new TextEncoder().encode(text);
  return files;
}

/**
 * Restores `parts` from a checkpoint's files (as encodeCheckpoint made them) and returns its
 * extra JSON. Every part given must be in the checkpoint, and fit: checked before anything changes.
 */
export function decodeCheckpoint(files: Record<string, Uint8Array | undefined>, parts: CheckpointParts): { extra: unknown } {
  const need = (name: string) => {
    const f = files[name];
    if (!f) throw new StateDictError(`the checkpoint has no ${name}`, OP_LOAD, 'save the part with saveCheckpoint, or leave it out of loadCheckpoint');
    return f;
  };
  let json: CheckpointJson;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(need(CHECKPOINT_FILES.json))) as CheckpointJson;
  } catch (e) {
    if (e instanceof StateDictError) throw e;
    throw new StateDictError(`${CHECKPOINT_FILES.json} is not valid JSON (${(e as Error).message})`, OP_LOAD, 'the checkpoint is corrupt');
  }
  if (!json || json.format !== FORMAT) throw new StateDictError(`${CHECKPOINT_FILES.json} is not a kiln checkpoint (format ${JSON.stringify(json?.format)})`, OP_LOAD);
  if (json.version !== VERSION) throw new StateDictError(`checkpoint version ${json.version} is not ${VERSION}, the one this kiln reads`, OP_LOAD);

  // 1. read and check every part
  const model = parts.model ? keptTensors(decodeSafetensors(need(CHECKPOINT_FILES.model))).tensors : null;
  let optimizerSd: OptimizerStateDict<object> | null = null;
  const owned: Tensor[] = [...Object.values(model ?? {})];
  try {
    if (parts.optimizer) {
      if (!json.optimizer) throw new StateDictError('the checkpoint has no optimizer state', OP_LOAD);
      if (json.optimizer.type !== parts.optimizer.constructor.name) {
        throw new StateDictError(`the checkpoint's optimizer is ${json.optimizer.type}, this one ${parts.optimizer.constructor.name}`, OP_LOAD, 'build the same optimizer before loading its state');
      }
      const flat = keptTensors(decodeSafetensors(need(CHECKPOINT_FILES.optimizer))).tensors;
      owned.push(...Object.values(flat));
      const state: Record<number, Record<string, Tensor>> = {};
      for (const [key, t] of Object.entries(flat)) {
        const m = /^state\.(\d+)\.(.+)$/.exec(key);
        if (!m) throw new StateDictError(`unexpected tensor '${key}' in ${CHECKPOINT_FILES.optimizer}`, OP_LOAD);
        setOwn(state[Number(m[1])] ??= {}, m[2]!, t);
      }
      optimizerSd = { state, paramGroups: json.optimizer.paramGroups };
      parts.optimizer.checkStateDict(optimizerSd);
    }
    if (parts.scheduler) {
      if (!json.scheduler) throw new StateDictError('the checkpoint has no scheduler state', OP_LOAD);
      parts.scheduler.checkStateDict(json.scheduler);
    }
    if (parts.dataLoader) {
      if (!json.dataLoader) throw new StateDictError('the checkpoint has no data loader state', OP_LOAD);
      parts.dataLoader.checkStateDict(json.dataLoader);
    }
    if (parts.rng !== false) {
      if (!json.rng) throw new StateDictError('the checkpoint has no random generator state', OP_LOAD, 'pass rng: false to keep the current one');
      new Generator().setState(json.rng);
    }

    // 2. write: the model first (its loadStateDict checks before writing, so a mismatch changes nothing)
    if (parts.model) parts.model.loadStateDict(model!);
    if (parts.optimizer) parts.optimizer.loadStateDict(optimizerSd!);
    if (parts.scheduler) parts.scheduler.loadStateDict(json.scheduler!);
    if (parts.dataLoader) parts.dataLoader.loadStateDict(json.dataLoader!);
    if (parts.rng !== false) setRngState(json.rng!);
  } finally {
    for (const t of owned) t.dispose(); // loaded by copy: the files' tensors are not kept
  }
  return { extra: json.extra };
}
