// Node-only file helpers for the safetensors codec in ./safetensors.ts.

import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { StateDictError } from '../core/errors.js';
import { LOAD } from './safetensors-dtypes.js';
import { decodeSafetensors, encodeSafetensors, type RawTensor } from './safetensors.js';

/** Reads a file for `op`, turning what the file system says into a StateDictError naming the path. */
export async function readFileFor(path: string, op: string): Promise<Buffer> {
  let info;
  try {
    info = await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const what = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'ENOTDIR' ? 'a part of the path is not a folder' : (e as Error).message;
    throw new StateDictError(`cannot read '${path}': ${what}`, op, code === 'ENOENT' ? 'check the path (relative paths start at the current working directory)' : undefined);
  }
  if (info.isDirectory()) throw new StateDictError(`'${path}' is a folder, not a file`, op, 'name the .safetensors file inside it');
  if (!info.isFile()) throw new StateDictError(`'${path}' is not a regular file`, op, 'a pipe or device cannot be read as a checkpoint');
  try {
    return await readFile(path);
  } catch (e) {
    throw new StateDictError(`cannot read '${path}': ${(e as Error).message}`, op);
  }
}

export async function readSafetensorsFile(path: string): Promise<{ tensors: Record<string, RawTensor>; metadata: Record<string, string> }> {
  // decodeSafetensors copies every tensor out, so nothing keeps the file's Buffer alive.
  return decodeSafetensors(await readFileFor(path, LOAD));
}

/** Writes bytes beside the target, then renames: readers see the old file or the complete new one. */
export async function writeFileAtomic(path: string, bytes: Uint8Array): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    await writeFile(tmp, bytes);
    await rename(tmp, path); // atomic within a filesystem
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => {});
    throw e;
  }
}

export async function writeSafetensorsFile(path: string, tensors: Record<string, RawTensor>, metadata?: Record<string, string>): Promise<void> {
  await writeFileAtomic(path, encodeSafetensors(tensors, metadata)); // encode first: a bad tensor never touches disk
}
