// Authenticated bytes for a store other processes and machines write (Node): a fleet's remote
// cache. Entries hold code (JS kernel sources, wasm), and a byte that anyone with access to
// Redis could change would run in every instance, so each value carries a tag that only a
// holder of the fleet's key can make, checked before the entry is decoded:
//
//   KAU1 | scheme (1: HMAC-SHA256 with a shared secret, 2: Ed25519 signature) | tag | bytes
//
// The tag covers the entry's name and bytes (an entry cannot be moved to another key). A
// per-user secret does not work here (it differs between machines): the fleet shares one
// secret, or signs with one private key and verifies with its public key (instances given
// only the public key read and never write). A value whose tag does not verify is rejected,
// logged, counted and removed, and the graph compiles locally.

import { createHmac, createPrivateKey, createPublicKey, sign, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import { log } from '../../core/logs.js';
import type { ByteStore } from './byte-store.js';

/** How a fleet's entries are authenticated. */
export type FleetKey =
  | { readonly secret: Uint8Array }
  | { readonly publicKey: KeyObject; readonly privateKey?: KeyObject };

const MAGIC = Buffer.from('KAU1');
const HMAC = 1;
const ED25519 = 2;
/** the shortest shared secret accepted (256 bits, HMAC-SHA256's block strength) */
const MIN_SECRET_BYTES = 32;

/** A fleet key from PEM text (Ed25519) or secret bytes; throws a message saying what is wrong. */
export function fleetKey(opts: { secret?: Uint8Array | string; publicKey?: string | KeyObject; privateKey?: string | KeyObject }): FleetKey {
  if (opts.secret !== undefined) {
    const secret = typeof opts.secret === 'string' ? Buffer.from(opts.secret, 'utf8') : opts.secret;
    if (secret.byteLength < MIN_SECRET_BYTES) throw new Error(`the shared cache secret has ${secret.byteLength} bytes, at least ${MIN_SECRET_BYTES} are needed (e.g. \`openssl rand -hex 32 > fleet.key\`)`);
    return { secret };
  }
  const priv = opts.privateKey === undefined ? undefined : typeof opts.privateKey === 'string' ? createPrivateKey(opts.privateKey) : opts.privateKey;
  const pub = opts.publicKey === undefined ? (priv ? createPublicKey(priv) : undefined) : typeof opts.publicKey === 'string' ? createPublicKey(opts.publicKey) : opts.publicKey;
  if (!pub) throw new Error('a remote cache needs a shared secret or an Ed25519 public key');
  if (pub.asymmetricKeyType !== 'ed25519' || (priv && priv.asymmetricKeyType !== 'ed25519')) throw new Error(`the cache keys must be Ed25519 (got ${pub.asymmetricKeyType}${priv ? ` / ${priv.asymmetricKeyType}` : ''})`);
  return priv ? { publicKey: pub, privateKey: priv } : { publicKey: pub };
}

function signed(name: string, bytes: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${name}\0`, 'utf8'), bytes]);
}

function hmac(secret: Uint8Array, name: string, bytes: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(`${name}\0`, 'utf8').update(bytes).digest();
}

export class AuthenticatedBytes implements ByteStore {
  constructor(
    private readonly inner: ByteStore,
    private readonly key: FleetKey,
    /** called for each value whose tag does not verify */
    private readonly onReject: () => void = () => {},
  ) {}

  get location(): string {
    return this.inner.location;
  }

  read(name: string): Uint8Array | null {
    const v = this.inner.read(name);
    if (!v) return null;
    const buf = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    const reason = this.check(name, buf);
    if (reason === null) return buf.subarray(MAGIC.length + 1 + ('secret' in this.key ? 32 : 64));
    this.onReject();
    log('cache', `rejected ${name} in ${this.location}: ${reason}; not loading it (entries hold code), compiling locally`);
    this.inner.remove(name);
    return null;
  }

  /** null when the tag verifies, else why not */
  private check(name: string, buf: Buffer): string | null {
    if (buf.length < MAGIC.length + 1 || !buf.subarray(0, MAGIC.length).equals(MAGIC)) return 'not authenticated (no tag)';
    const scheme = buf[MAGIC.length];
    const at = MAGIC.length + 1;
    if ('secret' in this.key) {
      if (scheme !== HMAC) return `tagged with scheme ${scheme}, this store verifies HMAC-SHA256 with the shared secret`;
      if (buf.length < at + 32) return 'truncated tag';
      const body = buf.subarray(at + 32);
      return timingSafeEqual(buf.subarray(at, at + 32), hmac(this.key.secret, name, body)) ? null : 'HMAC mismatch (written with another secret, or altered)';
    }
    if (scheme !== ED25519) return `tagged with scheme ${scheme}, this store verifies Ed25519 signatures`;
    if (buf.length < at + 64) return 'truncated signature';
    const body = buf.subarray(at + 64);
    return verify(null, signed(name, body), this.key.publicKey, buf.subarray(at, at + 64)) ? null : 'signature does not verify with the trusted public key (signed by another key, or altered)';
  }

  write(name: string, bytes: Uint8Array): boolean {
    let tagged: Buffer;
    if ('secret' in this.key) tagged = Buffer.concat([MAGIC, Buffer.of(HMAC), hmac(this.key.secret, name, bytes), bytes]);
    else if (this.key.privateKey) tagged = Buffer.concat([MAGIC, Buffer.of(ED25519), sign(null, signed(name, bytes), this.key.privateKey), bytes]);
    else return false; // verify-only instance: only holders of the private key publish entries
    return this.inner.write(name, tagged);
  }

  remove(name: string): void {
    this.inner.remove(name);
  }
}
