// The file format of cache entries, artifacts and cache bundles (Node):
//
//   KILN\n                                     magic
//   {"format":1,"kind":...,"kiln":...,"key":...,"sha256":...,"bytes":N,...,"mac"|"signature":...}\n   header (one JSON line)
//   payload (N bytes): u32 LE length of the JSON part, the JSON ({ meta, blobs: sizes }), the blobs
//
// The sha256 covers the payload; a short, truncated, altered or foreign file is rejected with
// the reason (ContainerError), never half-read. The sha256 only catches accidents: anyone who
// can edit the file can recompute it. What is trusted is the seal at the end of the header
// (seal.ts): an HMAC under this user's secret (`mac`: cache entries, and what this user
// exported or saved here) or an Ed25519 signature (`signature`: files for other machines).
// A seal covers the header without its seal fields (`sealedText`), which names the payload's
// sha256, so it covers every byte. The header line must be exactly JSON.stringify of what it
// parses to: no other spelling of the same header (spaces, escapes) is accepted.

import { createHash } from 'node:crypto';
import type { CachePayload } from './store.js';

const CONTAINER_FORMAT = 1;
const MAGIC = 'KILN\n';

export interface ContainerHeader {
  readonly format: number;
  readonly kind: string;
  /** kiln version that wrote it */
  readonly kiln: string;
  /** the entry's key (cache entries), or a description */
  readonly key: string;
  readonly sha256: string;
  readonly bytes: number;
  /** anything else the kind needs (artifacts: the build environment); the seal (`mac`, `signature`) last */
  readonly [extra: string]: unknown;
}

/** Header fields that hold seals: not part of what a seal covers. */
const SEAL_FIELDS = new Set(['mac', 'signature']);

/** What a seal of this header covers: the header without its seal fields (it names the payload's sha256). */
export function sealedText(header: ContainerHeader): string {
  return `kiln-seal-1\n${JSON.stringify(Object.fromEntries(Object.entries(header).filter(([k]) => !SEAL_FIELDS.has(k))))}`;
}

/** Makes the seal fields of a header from the text they cover (seal.ts). */
export type Sealer = (text: string) => Record<string, unknown>;

export class ContainerError extends Error {}

export function sha256(parts: readonly (string | Uint8Array)[]): string {
  const h = createHash('sha256');
  for (const p of parts) {
    h.update(typeof p === 'string' ? `s${p.length}:${p}` : `b${p.byteLength}:`);
    if (typeof p !== 'string') h.update(p);
  }
  return h.digest('hex');
}

export function encodeContainer(head: Omit<ContainerHeader, 'format' | 'sha256' | 'bytes'>, payload: CachePayload, seal?: Sealer): Buffer {
  const json = Buffer.from(JSON.stringify({ meta: payload.meta, blobs: payload.blobs.map((b) => b.byteLength) }), 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32LE(json.length, 0);
  const body = Buffer.concat([len, json, ...payload.blobs.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength))]);
  const plain = { ...head, format: CONTAINER_FORMAT, sha256: createHash('sha256').update(body).digest('hex'), bytes: body.length } as ContainerHeader;
  const header = seal ? { ...plain, ...seal(sealedText(plain)) } : plain;
  return Buffer.concat([Buffer.from(MAGIC + JSON.stringify(header) + '\n', 'utf8'), body]);
}

/** Reads only the header (no checksum): what an artifact says about where it was built. */
export function readHeader(buf: Uint8Array): { header: ContainerHeader; bodyStart: number } {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  if (b.length < MAGIC.length || b.toString('utf8', 0, MAGIC.length) !== MAGIC) throw new ContainerError('not a kiln file (bad magic)');
  const nl = b.indexOf(10, MAGIC.length);
  if (nl < 0 || nl - MAGIC.length > 1 << 20) throw new ContainerError('truncated header');
  let header: ContainerHeader;
  try {
    header = JSON.parse(b.toString('utf8', MAGIC.length, nl)) as ContainerHeader;
  } catch {
    throw new ContainerError('unreadable header');
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header) || typeof header.sha256 !== 'string' || typeof header.bytes !== 'number') throw new ContainerError('malformed header');
  // one spelling per header: what a seal covers is exactly what was read
  if (!Buffer.from(JSON.stringify(header), 'utf8').equals(b.subarray(MAGIC.length, nl))) throw new ContainerError('header is not in its canonical form (edited by hand?)');
  return { header, bodyStart: nl + 1 };
}

/** Header and verified payload (throws ContainerError saying what is wrong). */
export function decodeContainer(buf: Uint8Array): { header: ContainerHeader; payload: CachePayload } {
  const { header, bodyStart } = readHeader(buf);
  if (header.format !== CONTAINER_FORMAT) throw new ContainerError(`file format ${String(header.format)}, this kiln reads ${CONTAINER_FORMAT}`);
  const body = Buffer.from(buf.buffer, buf.byteOffset + bodyStart, buf.byteLength - bodyStart);
  if (body.length !== header.bytes) throw new ContainerError(`truncated or padded: ${body.length} payload bytes, header says ${header.bytes}`);
  if (createHash('sha256').update(body).digest('hex') !== header.sha256) throw new ContainerError('checksum mismatch (sha256 of the payload)');
  const jsonLen = body.length >= 4 ? body.readUInt32LE(0) : -1;
  if (jsonLen < 0 || 4 + jsonLen > body.length) throw new ContainerError('payload shorter than its JSON part');
  let parsed: { meta: unknown; blobs: unknown };
  try {
    parsed = JSON.parse(body.toString('utf8', 4, 4 + jsonLen)) as typeof parsed;
  } catch {
    throw new ContainerError('unreadable payload');
  }
  if (!parsed || !Array.isArray(parsed.blobs)) throw new ContainerError('payload has no blob table');
  const blobs: Uint8Array[] = [];
  let at = 4 + jsonLen;
  for (const n of parsed.blobs as unknown[]) {
    if (!Number.isSafeInteger(n) || (n as number) < 0 || at + (n as number) > body.length) throw new ContainerError('blob table does not match the payload');
    blobs.push(new Uint8Array(body.buffer, body.byteOffset + at, n as number));
    at += n as number;
  }
  if (at !== body.length) throw new ContainerError('blob table does not match the payload');
  return { header, payload: { meta: parsed.meta, blobs } };
}
