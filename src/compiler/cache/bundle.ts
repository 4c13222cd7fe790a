// `kilnjs cache save <file>` / `kilnjs cache load <file>`: a whole cache folder (compile entries
// and the native backend's libraries) as one file, to move between machines (e.g. build once
// in CI, ship with the image). Loading checks the kiln version and platform first and says
// what differs; entries already present are kept; every file is written under a temporary name
// and renamed. Entries are still verified one by one when they are read.
//
// A bundle is code (the entries' JS and wasm, the libraries), so it is sealed like an artifact
// (seal.ts): `save --sign KEY` signs it (Ed25519) for other machines, else it carries this
// user's HMAC; `load` accepts it only if signed by a key given with `--trust PUBKEY_FILE`,
// sealed by this user here, or with `--unsafe-unsigned`. Saving takes only entries and
// libraries that verify here (a tampered one is never signed); loading accepts only the names
// kiln gives its files (no folders, no `..`), writes them only inside the cache folder, and
// seals each with this user's secret, as if compiled here.

import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kernelBackendCodeFiles, type CodeFiles } from '../../backend/registry.js';
import { ContainerError, decodeContainer, encodeContainer, readHeader, type ContainerHeader } from './container.js';
import { cacheRoot } from './disk-store.js';
import { buildEnvironment, describeEnvironment, kilnVersion, type BuildEnvironment } from './environment.js';
import { entryName } from './entry-store.js';
import { ArtifactError } from './errors.js';
import { untrustedFolder } from '../../trust/provenance.js';
import { readRegularFile } from '../../trust/safe-fs.js';
import { checkShipped, macSealer, macValid, signSealer, type KeyInput, type TrustOptions } from './seal.js';
import type { EntryKind } from './store.js';

const ENTRY_NAME = /^(program|warm)-[0-9a-f]{40}\.kc$/;

/** The folders a bundle holds: compile entries, and the native backend's libraries (its CodeFiles, when it is registered). */
function folders(): Record<string, RegExp> {
  const native = nativeFiles();
  return native ? { compile: ENTRY_NAME, [native.folder]: native.name } : { compile: ENTRY_NAME };
}
const nativeFiles = (): CodeFiles | undefined => kernelBackendCodeFiles('native');

interface BundleMeta {
  files: { dir: string; name: string; blob: number }[];
}

const BUNDLE_HOW = {
  sign: 'save it with kilnjs cache save FILE --sign KEY_FILE (a key pair: kilnjs cache keygen NAME)',
  trust: "pass the signer's public key: kilnjs cache load FILE --trust PUBKEY_FILE (loadCache(file, root, { trust }))",
  unsafe: 'pass --unsafe-unsigned (its code then runs with your permissions)',
};

/** A cache entry's header, if the bytes are an entry this user's kiln wrote (else null). */
function verifiedEntry(bytes: Uint8Array, name: string): ContainerHeader | null {
  try {
    const { header } = decodeContainer(bytes);
    const ok = header.kiln === kilnVersion() && `${entryName(header.kind as EntryKind, header.key)}.kc` === name && macValid(header);
    return ok ? header : null;
  } catch {
    return null;
  }
}

export function saveCache(file: string, root = cacheRoot(), opts: { sign?: KeyInput } = {}): { files: number; bytes: number; skipped: string[] } {
  const why = untrustedFolder(root);
  if (why) throw new ArtifactError(`the cache folder is not trusted: ${why}`, 'kilnjs cache save', 'save a cache folder that you own and nobody else can write');
  const meta: BundleMeta = { files: [] };
  const blobs: Uint8Array[] = [];
  const skipped: string[] = [];
  const patterns = folders();
  for (const dir of Object.keys(patterns)) {
    let names: string[] = [];
    try {
      names = readdirSync(join(root, dir)).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      if (!patterns[dir]!.test(name)) continue; // temporaries, seals, sources, compilers.json
      const p = join(root, dir, name);
      const r = readRegularFile(p, { owned: true });
      const ok = 'bytes' in r && (dir === 'compile' ? verifiedEntry(r.bytes, name) !== null : nativeFiles()!.distrust(p) === null);
      if (!ok || !('bytes' in r)) {
        skipped.push(`${dir}/${name}`);
        continue;
      }
      meta.files.push({ dir, name, blob: blobs.length });
      blobs.push(r.bytes);
    }
  }
  const env = buildEnvironment(true);
  const seal = opts.sign !== undefined ? signSealer(opts.sign, 'kilnjs cache save') : macSealer;
  const buf = encodeContainer({ kind: 'bundle', kiln: env.kiln, key: `cache of ${describeEnvironment(env)}`, env }, { meta, blobs }, seal);
  writeFileSync(`${file}.tmp`, buf);
  renameSync(`${file}.tmp`, file);
  return { files: meta.files.length, bytes: buf.length, skipped };
}

export function loadCache(file: string, root = cacheRoot(), opts: TrustOptions = {}): { added: number; kept: number; env: string; vouched: string } {
  const op = 'kilnjs cache load';
  const r = readRegularFile(file);
  if (!('bytes' in r)) throw new ArtifactError(`cannot read ${file}: ${r.error}`, op);
  const buf = r.bytes;
  const header = (() => {
    try {
      return readHeader(buf).header;
    } catch (e) {
      throw new ArtifactError(`${file} is not a kiln cache bundle (${(e as Error).message})`, op, 'make one with kilnjs cache save <file>');
    }
  })();
  const env = header.env as BuildEnvironment | undefined;
  const here = buildEnvironment(!!env?.native);
  if (header.kind !== 'bundle' || !env) throw new ArtifactError(`${file} is a ${String(header.kind)} file, not a cache bundle`, op);
  if (env.kiln !== here.kiln || env.platform !== here.platform) {
    throw new ArtifactError(`cache built by ${describeEnvironment(env)}, this is ${describeEnvironment(here)}`, op, 'save the cache on a machine with the same kiln version and platform');
  }
  let decoded: ReturnType<typeof decodeContainer>;
  try {
    decoded = decodeContainer(buf);
  } catch (e) {
    throw new ArtifactError(`${file} is corrupt (${(e as ContainerError).message})`, op, 'copy or save it again');
  }
  const vouched = checkShipped(decoded.header, file, op, opts, BUNDLE_HOW);
  const why = untrustedFolder(root);
  if (why) throw new ArtifactError(`the cache folder is not trusted: ${why}`, op, 'load into a cache folder that you own and nobody else can write (KILN_CACHE_DIR)');
  const files = checkFiles(decoded.payload.meta, decoded.payload.blobs.length, file);
  let added = 0, kept = 0;
  for (const f of files) {
    const dir = join(root, f.dir);
    const dst = join(dir, f.name);
    const bytes = decoded.payload.blobs[f.blob]!;
    const present = readRegularFile(dst, { owned: true });
    if ('bytes' in present && (f.dir === 'compile' ? verifiedEntry(present.bytes, f.name) !== null : nativeFiles()!.distrust(dst) === null)) {
      kept++;
      continue;
    }
    // entries are sealed again with this user's secret (their payload unchanged); libraries get their seal
    let out: Uint8Array = bytes;
    if (f.dir === 'compile') {
      try {
        const { header: h, payload } = decodeContainer(bytes);
        if (h.kiln !== kilnVersion() || `${entryName(h.kind as EntryKind, h.key)}.kc` !== f.name) throw new ContainerError('its header does not match its name');
        out = encodeContainer({ kind: h.kind, kiln: h.kiln, key: h.key }, payload, macSealer);
      } catch (e) {
        throw new ArtifactError(`${file}: entry ${f.name} is corrupt (${(e as Error).message})`, op, 'save the cache again');
      }
    }
    writeInto(dir, dst, out);
    if (f.dir !== 'compile') nativeFiles()!.seal(dst, bytes);
    added++;
  }
  return { added, kept, env: describeEnvironment(env), vouched };
}

/** The bundle's file table: only the names kiln gives its files, each with its bytes. */
function checkFiles(meta: unknown, nBlobs: number, file: string): BundleMeta['files'] {
  const files = (meta as BundleMeta | null)?.files;
  if (!Array.isArray(files)) throw new ArtifactError(`${file} has no file table`, 'kilnjs cache load');
  const patterns = folders();
  for (const f of files) {
    const pattern = f && typeof f.dir === 'string' && Object.hasOwn(patterns, f.dir) ? patterns[f.dir] : undefined;
    if (!pattern || typeof f.name !== 'string' || !pattern.test(f.name) || !Number.isSafeInteger(f.blob) || f.blob < 0 || f.blob >= nBlobs) {
      throw new ArtifactError(`${file} names a file kiln does not make: ${JSON.stringify(f?.dir)?.slice(0, 40)}/${JSON.stringify(f?.name)?.slice(0, 80)} (cache files are compile/<kind>-<hex>.kc and native/<hex>.so; no folders, no '..')`, 'kilnjs cache load', 'nothing was written; save the bundle again with kilnjs cache save');
    }
  }
  return files;
}

function writeInto(dir: string, dst: string, bytes: Uint8Array): void {
  const tmp = `${dst}.${process.pid}.tmp`;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(tmp, bytes, { mode: 0o600 });
    renameSync(tmp, dst);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new ArtifactError(`cannot write ${dst} (${(e as Error).message})`, 'kilnjs cache load', `make ${dir} writable, or set KILN_CACHE_DIR`);
  }
}
