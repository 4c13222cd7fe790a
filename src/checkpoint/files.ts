// Node: a checkpoint (checkpoint.ts) as a folder. Saving writes a fresh folder beside the
// target and renames it into place, so a reader (or a crash) sees the old checkpoint or the
// complete new one, never a mix.

import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { StateDictError } from '../core/errors.js';
import { readFileFor } from '../io/safetensors-node.js';
import { CHECKPOINT_FILES, decodeCheckpoint, encodeCheckpoint, type CheckpointParts } from './checkpoint.js';

/** Writes `parts` (and your JSON-able `extra`) as a checkpoint folder at `dir`, replacing one there. */
export async function saveCheckpoint(dir: string, parts: CheckpointParts, extra?: unknown): Promise<void> {
  const files = encodeCheckpoint(parts, extra); // encode first: a bad part never touches disk
  const tag = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  const tmp = join(dirname(dir), `.${basename(dir)}.tmp-${tag}`);
  const old = join(dirname(dir), `.${basename(dir)}.old-${tag}`);
  try {
    await mkdir(tmp, { recursive: true });
    for (const [name, bytes] of Object.entries(files)) await writeFile(join(tmp, name), bytes);
    const existing = await stat(dir).catch(() => null);
    if (existing && !existing.isDirectory()) throw new StateDictError(`'${dir}' exists and is not a folder`, 'saveCheckpoint', 'choose a folder path for the checkpoint');
    if (existing) {
      const unknown = (await readdir(dir)).filter((f) => !(Object.values(CHECKPOINT_FILES) as string[]).includes(f));
      if (unknown.length > 0) throw new StateDictError(`'${dir}' holds other files (${unknown.slice(0, 3).join(', ')}), not only a checkpoint`, 'saveCheckpoint', 'save the checkpoint into a folder of its own');
      await rename(dir, old);
    }
    await rename(tmp, dir);
    if (existing) await rm(old, { recursive: true, force: true });
  } catch (e) {
    await rm(tmp, { recursive: true, force: true }).catch(() => {});
    throw e;
  }
}

/** Restores `parts` from the checkpoint folder at `dir` (see decodeCheckpoint) and returns its extra JSON. */
export async function loadCheckpoint(dir: string, parts: CheckpointParts): Promise<{ extra: unknown }> {
  const info = await stat(dir).catch(() => null);
  if (!info) throw new StateDictError(`cannot read '${dir}': no such checkpoint folder`, 'loadCheckpoint');
  if (!info.isDirectory()) throw new StateDictError(`'${dir}' is not a checkpoint folder`, 'loadCheckpoint', 'pass the folder saveCheckpoint wrote (a .safetensors file loads with loadSafetensors)');
  const files: Record<string, Uint8Array> = {};
  for (const name of Object.values(CHECKPOINT_FILES)) {
    const path = join(dir, name);
    if (await stat(path).catch(() => null)) files[name] = await readFileFor(path, 'loadCheckpoint');
  }
  return decodeCheckpoint(files, parts);
}
