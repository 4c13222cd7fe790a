// `kilnjs cache save <file>` / `kilnjs cache load <file>`: a whole cache folder (compile entries
// and the native backend's libraries) as one checksummed file, to move between machines
// (e.g. build once in CI, ship with the image). Loading checks the kiln version and platform
// first and says what differs; entries already present are kept; every file is written under a
// temporary name and renamed. Entries are still verified one by one when they are read.

import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { decodeContainer, encodeContainer, readHeader } from './container.js';
import { cacheRoot } from './disk-store.js';
import { buildEnvironment, describeEnvironment, type BuildEnvironment } from './environment.js';
import { ArtifactError } from './errors.js';

const DIRS = ['compile', 'native'];

interface BundleMeta {
  files: { dir: string; name: string; blob: number }[];
}

export function saveCache(file: string, root = cacheRoot()): { files: number; bytes: number } {
  const meta: BundleMeta = { files: [] };
  const blobs: Uint8Array[] = [];
  for (const dir of DIRS) {
    let names: string[] = [];
    try {
      names = readdirSync(join(root, dir)).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      if (name.endsWith('.tmp') || name.endsWith('.o')) continue;
      const p = join(root, dir, name);
      if (!statSync(p).isFile()) continue;
      meta.files.push({ dir, name, blob: blobs.length });
      blobs.push(readFileSync(p));
    }
  }
  const env = buildEnvironment(true);
  const buf = encodeContainer({ kind: 'bundle', kiln: env.kiln, key: `cache of ${describeEnvironment(env)}`, env }, { meta, blobs });
  writeFileSync(`${file}.tmp`, buf);
  renameSync(`${file}.tmp`, file);
  return { files: meta.files.length, bytes: buf.length };
}

export function loadCache(file: string, root = cacheRoot()): { added: number; kept: number; env: string } {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    throw new ArtifactError(`cannot read ${file}: ${(e as Error).message}`, 'kilnjs cache load');
  }
  const header = (() => {
    try {
      return readHeader(buf).header;
    } catch (e) {
      throw new ArtifactError(`${file} is not a kiln cache bundle (${(e as Error).message})`, 'kilnjs cache load', 'make one with kilnjs cache save <file>');
    }
  })();
  const env = header.env as BuildEnvironment | undefined;
  const here = buildEnvironment(!!env?.native);
  if (header.kind !== 'bundle' || !env) throw new ArtifactError(`${file} is a ${String(header.kind)} file, not a cache bundle`, 'kilnjs cache load');
  if (env.kiln !== here.kiln || env.platform !== here.platform) {
    throw new ArtifactError(`cache built by ${describeEnvironment(env)}, this is ${describeEnvironment(here)}`, 'kilnjs cache load', 'save the cache on a machine with the same kiln version and platform');
  }
  let decoded: ReturnType<typeof decodeContainer>;
  try {
    decoded = decodeContainer(buf);
  } catch (e) {
    throw new ArtifactError(`${file} is corrupt (${(e as Error).message})`, 'kilnjs cache load', 'copy or save it again');
  }
  const meta = decoded.payload.meta as BundleMeta;
  let added = 0, kept = 0;
  for (const f of meta.files) {
    if (!DIRS.includes(f.dir) || /[/\\]/.test(f.name) || f.name.startsWith('.')) continue;
    const dir = join(root, f.dir);
    mkdirSync(dir, { recursive: true });
    const dst = join(dir, f.name);
    if (existsSync(dst)) {
      kept++;
      continue;
    }
    const tmp = `${dst}.${process.pid}.tmp`;
    writeFileSync(tmp, decoded.payload.blobs[f.blob]!);
    renameSync(tmp, dst);
    added++;
  }
  return { added, kept, env: describeEnvironment(env) };
}

/** `kilnjs cache save|load|dir|clear` (src/cli.ts). */
export function cacheCli(argv: readonly string[]): number {
  const [cmd, file] = argv;
  const usage = 'usage: kilnjs cache save <file> | kilnjs cache load <file> | kilnjs cache dir';
  try {
    if (cmd === 'save' && file) {
      const r = saveCache(file);
      console.log(`saved ${r.files} files (${r.bytes} bytes) from ${cacheRoot()} to ${file}`);
      return 0;
    }
    if (cmd === 'load' && file) {
      const r = loadCache(file);
      console.log(`loaded ${file} (${r.env}) into ${cacheRoot()}: ${r.added} files added, ${r.kept} already present`);
      return 0;
    }
    if (cmd === 'dir') {
      console.log(cacheRoot());
      return 0;
    }
  } catch (e) {
    console.error(String((e as Error).message));
    return 1;
  }
  console.error(usage);
  return 2;
}
