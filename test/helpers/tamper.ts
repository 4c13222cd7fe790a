// What an attacker who can write a kiln file does: decode it, edit what it holds, and write it
// back with a correct sha256 (anyone can compute that one); the seal is dropped or left as it was.

import { readFileSync, writeFileSync } from 'node:fs';
import { decodeContainer, encodeContainer, type Sealer } from '../../src/compiler/cache/container.js';

export interface Contents { meta: any; blobs: Uint8Array[]; header: Record<string, unknown> }

/**
 * Rewrites the kiln file at `path` after `edit` changes its contents. `seal`: 'drop' (no seal),
 * 'keep' (the old mac/signature fields copied over: they no longer match), or a sealer.
 */
export function tamper(path: string, edit: (c: Contents) => void, seal: 'drop' | 'keep' | Sealer = 'keep'): void {
  const { header, payload } = decodeContainer(readFileSync(path));
  const c: Contents = { meta: structuredClone(payload.meta), blobs: [...payload.blobs], header: { ...header } };
  edit(c);
  const { format: _f, sha256: _s, bytes: _b, mac, signature, ...head } = c.header;
  const old: Record<string, unknown> = { ...(mac !== undefined ? { mac } : {}), ...(signature !== undefined ? { signature } : {}) };
  const sealer: Sealer | undefined = seal === 'drop' ? undefined : seal === 'keep' ? () => old : seal;
  writeFileSync(path, encodeContainer(head as never, { meta: c.meta, blobs: c.blobs }, sealer));
}

/** A payload that leaves evidence: JavaScript that writes `marker` when it is evaluated. */
export const jsPayload = (marker: string): string => `process.getBuiltinModule('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`;

/** C source of a shared library whose constructor writes `marker` when it is loaded. */
export const cPayload = (marker: string): string => `#include <stdio.h>
__attribute__((constructor)) static void kiln_attack(void) { FILE *f = fopen(${JSON.stringify(marker)}, "w"); if (f) { fputs("ran", f); fclose(f); } }
void kiln_k0(void) {}
`;
