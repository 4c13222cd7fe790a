// Seals on kiln's files (Node; container.ts has the format): what makes a file's code trusted.
//
//   mac        HMAC-SHA256 under this user's secret (secret.ts): every cache entry, and every
//              artifact and bundle this user makes (so exporting and loading on one machine
//              needs no keys). Nobody without the secret can make one.
//   signature  Ed25519 (node:crypto) by a key pair the user makes: files for other machines
//              (`export(..., { sign })`, `kilnjs cache save --sign KEY`). A signed file is
//              loaded only where its public key is trusted (`load(path, { trust })`,
//              `kilnjs cache load FILE --trust PUBKEY_FILE`).
//
// A file with neither, or whose seal does not verify, is refused with an UntrustedFileError
// whose message says "unsigned" or "untrusted" and how to sign or trust it, unless the caller
// passes `unsafeUnsigned` / `--unsafe-unsigned` (then kiln warns what it is about to run).

import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { warnOnce } from '../../core/logs.js';
import { sealedText, type ContainerHeader, type Sealer } from './container.js';
import { UntrustedFileError } from './errors.js';
import { mac, macMatches } from '../../trust/secret.js';

const MAC_DOMAIN = 'kiln-seal';

/** A key as the API takes it: a KeyObject, or PEM text (a string or the bytes of a .pem file). */
export type KeyInput = KeyObject | string | Buffer;

export interface TrustOptions {
  /** public keys whose signatures are trusted (PEM or KeyObject) */
  readonly trust?: KeyInput | readonly KeyInput[];
  /** load a file that is not signed by a trusted key anyway (its code runs with this user's rights) */
  readonly unsafeUnsigned?: boolean;
}

/** Seals with this user's HMAC. */
export const macSealer: Sealer = (text) => ({ mac: mac(MAC_DOMAIN, text) });

/** Whether a header carries this user's valid HMAC. */
export function macValid(header: ContainerHeader): boolean {
  return macMatches(MAC_DOMAIN, sealedText(header), header.mac);
}

function asKey(k: KeyInput, kind: 'private' | 'public', op: string): KeyObject {
  let key: KeyObject;
  try {
    if (typeof k === 'string' || Buffer.isBuffer(k)) key = kind === 'private' ? createPrivateKey(k) : createPublicKey(k);
    else key = kind === 'public' && k.type === 'private' ? createPublicKey(k) : k;
  } catch (e) {
    throw new UntrustedFileError(`cannot read the ${kind} key (${(e as Error).message.split('\n')[0]})`, op, 'pass an Ed25519 key in PEM form (kilnjs cache keygen NAME makes NAME.key and NAME.pub)');
  }
  if (key.asymmetricKeyType !== 'ed25519' || key.type !== kind) throw new UntrustedFileError(`the ${kind} key is a ${key.asymmetricKeyType ?? 'symmetric'} ${key.type} key, not an Ed25519 ${kind} key`, op, 'make one with kilnjs cache keygen NAME (or openssl genpkey -algorithm ed25519)');
  return key;
}

/** sha256 (hex) of a public key's SPKI encoding: how signatures name their key. */
function keyFingerprint(k: KeyObject): string {
  const pub = k.type === 'private' ? createPublicKey(k) : k;
  return createHash('sha256').update(pub.export({ type: 'spki', format: 'der' })).digest('hex');
}

/** Seals with an Ed25519 signature by `privateKey`. */
export function signSealer(privateKey: KeyInput, op: string): Sealer {
  const key = asKey(privateKey, 'private', op);
  const fingerprint = keyFingerprint(key);
  return (text) => ({ signature: { alg: 'ed25519', key: fingerprint, sig: sign(null, Buffer.from(text, 'utf8'), key).toString('base64') } });
}

/** A new Ed25519 key pair as PEM (kilnjs cache keygen). */
export function newKeyPair(): { privatePem: string; publicPem: string; fingerprint: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, publicPem: publicKey.export({ type: 'spki', format: 'pem' }) as string, fingerprint: keyFingerprint(publicKey) };
}

interface Signature {
  alg: string;
  key: string;
  sig: string;
}

const short = (fp: string) => `${fp.slice(0, 16)}…`;

/**
 * Decides whether a shipped file (artifact, bundle) may be loaded, from its header (its payload's
 * sha256 is checked by the caller). Returns who vouches for it; throws UntrustedFileError.
 */
export function checkShipped(header: ContainerHeader, file: string, op: string, opts: TrustOptions, how: { sign: string; trust: string; unsafe: string }): string {
  const text = sealedText(header);
  const trusted = (opts.trust === undefined ? [] : Array.isArray(opts.trust) ? opts.trust : [opts.trust as KeyInput]).map((k) => asKey(k as KeyInput, 'public', op));
  const s = header.signature as Partial<Signature> | undefined;
  if (s !== undefined) {
    // one spelling per signature: base64 decoding ignores some bit changes, so only the canonical form is read
    if (!s || s.alg !== 'ed25519' || typeof s.key !== 'string' || typeof s.sig !== 'string' || Buffer.from(s.sig, 'base64').toString('base64') !== s.sig) throw new UntrustedFileError(`${file} is untrusted: its signature is malformed`, op, how.sign);
    const key = trusted.find((k) => keyFingerprint(k) === s.key);
    if (key) {
      if (verify(null, Buffer.from(text, 'utf8'), key, Buffer.from(s.sig, 'base64'))) return `signed by trusted key ${short(s.key)}`;
      throw new UntrustedFileError(`${file} is untrusted: its signature by key ${short(s.key)} does not verify (the file was changed after it was signed)`, op, `get an unaltered copy, or ${how.sign}`);
    }
    if (!opts.unsafeUnsigned) {
      throw new UntrustedFileError(`${file} is untrusted: it is signed by key ${short(s.key)}, which is not ${trusted.length ? `among the ${trusted.length} key(s) you trust` : 'a key you trust (none given)'}`, op, how.trust);
    }
  } else if (header.mac !== undefined && macValid(header)) return 'sealed by this user on this machine';
  if (!opts.unsafeUnsigned) {
    const seen = header.mac !== undefined ? ' (it carries a seal made with another user\'s or machine\'s secret, which proves nothing here)' : '';
    throw new UntrustedFileError(`${file} is unsigned${seen}: kiln runs the code it holds (JS kernels, wasm, native libraries) only from files signed by a key you trust`, op, `${how.sign}; or, to run it anyway, ${how.unsafe}`);
  }
  const what = s ? `signed by untrusted key ${short(s.key!)}` : 'unsigned';
  warnOnce(`unsafe ${file}`, `${op}: loading ${file}, ${what}, because unsafeUnsigned was given: the JavaScript, wasm and native code in it runs in this process with your permissions`);
  return `${what}, loaded with unsafeUnsigned`;
}
