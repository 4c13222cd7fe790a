// `kilnjs cache ...` (src/cli.ts):
//   save FILE [--sign KEY_FILE]                         the cache folder as one bundle (bundle.ts), signed for other machines
//   load FILE [--trust PUBKEY_FILE]... [--unsafe-unsigned]   a bundle into the cache folder (signed by a trusted key, or made by this user here)
//   keygen NAME                                         an Ed25519 key pair: NAME.key (private, mode 0600) and NAME.pub
//   dir                                                 the cache folder

import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { cacheRoot } from './disk-store.js';
import { loadCache, saveCache } from './bundle.js';
import { newKeyPair } from './seal.js';

const USAGE = `usage: kilnjs cache save FILE [--sign KEY_FILE]
       kilnjs cache load FILE [--trust PUBKEY_FILE]... [--unsafe-unsigned]
       kilnjs cache keygen NAME      (writes NAME.key, mode 0600, and NAME.pub)
       kilnjs cache dir`;

function readKey(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new Error(`cannot read the ${what} ${path}: ${(e as Error).message}`);
  }
}

export function cacheCli(argv: readonly string[]): number {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: { sign: { type: 'string' }, trust: { type: 'string', multiple: true }, 'unsafe-unsigned': { type: 'boolean' } } });
  } catch (e) {
    console.error(`${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const { positionals: [cmd, file, ...extra], values: v } = parsed;
  const misplaced = (cmd !== 'save' && v.sign !== undefined) || (cmd !== 'load' && (v.trust !== undefined || v['unsafe-unsigned']));
  if (extra.length || misplaced) {
    console.error(USAGE);
    return 2;
  }
  try {
    if (cmd === 'save' && file) {
      const r = saveCache(file, cacheRoot(), v.sign !== undefined ? { sign: readKey(v.sign, 'private key') } : {});
      console.log(`saved ${r.files} files (${r.bytes} bytes) from ${cacheRoot()} to ${file}, ${v.sign !== undefined ? `signed with ${v.sign}` : 'sealed for this user on this machine only (sign it with --sign KEY_FILE to load it elsewhere)'}`);
      if (r.skipped.length) console.log(`skipped ${r.skipped.length} files that do not verify here: ${r.skipped.slice(0, 5).join(', ')}${r.skipped.length > 5 ? ', ...' : ''}`);
      return 0;
    }
    if (cmd === 'load' && file) {
      const trust = (v.trust ?? []).map((p) => readKey(p, 'public key'));
      const r = loadCache(file, cacheRoot(), { trust, unsafeUnsigned: !!v['unsafe-unsigned'] });
      console.log(`loaded ${file} (${r.env}; ${r.vouched}) into ${cacheRoot()}: ${r.added} files added, ${r.kept} already present`);
      return 0;
    }
    if (cmd === 'keygen' && file) {
      const k = newKeyPair();
      writeFileSync(`${file}.key`, k.privatePem, { mode: 0o600, flag: 'wx' });
      writeFileSync(`${file}.pub`, k.publicPem, { flag: 'wx' });
      console.log(`wrote ${file}.key (private: keep it secret, sign with it: kilnjs cache save FILE --sign ${file}.key) and ${file}.pub (give it to the machines that load: --trust ${file}.pub); fingerprint ${k.fingerprint}`);
      return 0;
    }
    if (cmd === 'dir' && !file) {
      console.log(cacheRoot());
      return 0;
    }
  } catch (e) {
    console.error(String((e as Error).message));
    return 1;
  }
  console.error(USAGE);
  return 2;
}
