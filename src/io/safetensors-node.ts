// Node-only file helpers for the safetensors codec in ./safetensors.ts.

import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { decodeSafetensors, encodeSafetensors, type RawTensor } from './safetensors.js';

export async function readSafetensorsFile(
  path: string,
): Promise<{ tensors: Record<string, RawTensor>; metadata: Record<string, string> }> {
  // decodeSafetensors copies every tensor out, so nothing keeps the file's Buffer alive.
  return decodeSafetensors(await readFile(path));
}

export async function writeSafetensorsFile(
  path: string,
  tensors: Record<string, RawTensor>,
  metadata?: Record<string, string>,
): Promise<void> {
  const bytes = encodeSafetensors(tensors, metadata); // encode first: a bad tensor never touches disk
  // Write beside the target, then rename: readers see the old file or the complete new one,
  // never a half-written one (rename is atomic within a filesystem).
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    await writeFile(tmp, bytes);
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => {});
    throw e;
  }
}
