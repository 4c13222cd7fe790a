// Code loaded from disk is code (issue 19): each attack on kiln's files, as an attacker who can
// write them would make it (test/helpers/tamper.ts: edit, recompute the sha256, drop or keep the
// old seal), is rejected with a typed error or a logged, counted rejection; the marker file its
// payload would write is never written; and what runs still equals eager. Where a test relies on
// a payload, a control shows that payload does run when the file is accepted, so the test can fail.
// Cross-process cases run fresh children over temporary cache folders; a "machine" is an
// XDG_CONFIG_HOME (where the per-user secret lives). Native cases skip without gcc/koffi.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import * as kilnNode from 'kilnjs/node';
import { buildModel, input } from './fixtures/cache-child.js';
import { assertCompiled, assertMatchesEager, CHILD, entries, runChild, runCli } from './helpers/cache-children.js';
import { cPayload, jsPayload, tamper } from './helpers/tamper.js';
import { decodeContainer, encodeContainer } from '../src/compiler/cache/container.js';
import { macSealer } from '../src/compiler/cache/seal.js';
import { renderKernelSource } from '../src/backend/js/render-loop.js';
import { renderKernelC } from '../src/backend/native/render-c.js';
import { renderModule } from '../src/backend/wasm/render.js';
import { renderWgsl } from '../src/backend/webgpu/render-wgsl.js';
import type { LoopKernel } from '../src/ir/loop-ir.js';
import type { Lowered } from '../src/compiler/schedule/lowered.js';
import { validateLowered } from '../src/compiler/cache/validate.js';
import { assertCompiledRan } from './helpers/compiled-ran.js';
import { compiledFunctionOf } from '../src/compiler/compiled-info.js';

const ROOT = mkdtempSync(join(tmpdir(), 'kiln-trust-test-'));
const MACHINE_A = join(ROOT, 'machine-a');
const MACHINE_B = join(ROOT, 'machine-b');
// this process is machine A: its seals are the children's unless a test says otherwise
process.env.XDG_CONFIG_HOME = MACHINE_A;
process.env.KILN_CACHE_DIR = join(ROOT, 'parent');
process.env.KILN_CACHE_SOURCES = 'off';
process.on('exit', () => rmSync(ROOT, { recursive: true, force: true }));

const nativeWhy = kilnNode.nativeUnavailableReason();
const skipNative = nativeWhy ? `native backend unavailable: ${nativeWhy}` : false;
const fresh = (name: string) => join(ROOT, name);
const on = (machine: string) => ({ XDG_CONFIG_HOME: machine });
const marker = (name: string) => join(ROOT, `marker-${name}`);

/** Runs the fixture and returns its exit status and output (for children that must fail). */
function runRaw(dir: string, opts: object, env: Record<string, string> = {}): { status: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(opts)], { encoding: 'utf8', env: { ...process.env, KILN_CACHE_DIR: dir, KILN_LOGS: 'cache', ...env }, timeout: 240_000 });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

/** The entries and libraries in a cache folder (what a bundle could have written). */
const cacheFiles = (dir: string): string[] => ['compile', 'native'].flatMap((d) => (existsSync(join(dir, d)) ? readdirSync(join(dir, d)).filter((n) => /\.(kc|so)$/.test(n)) : []));

/** Program entries of a cache folder (warm-start entries hold no code). */
const programEntries = (dir: string) => entries(dir).filter((p) => /program-/.test(p));

/** A key pair made by the CLI (`kilnjs cache keygen`). */
function keyPair(name: string): { key: string; pub: string } {
  const prefix = join(ROOT, name);
  if (!existsSync(`${prefix}.key`)) {
    const r = runCli(['cache', 'keygen', prefix], {});
    assert.equal(r.status, 0, r.stderr);
    assert.equal(statSync(`${prefix}.key`).mode & 0o777, 0o600, 'private key is mode 0600');
  }
  return { key: `${prefix}.key`, pub: `${prefix}.pub` };
}

/** Prepends a JS payload to every stored JS kernel source of a program entry or artifact program. */
const poisonSources = (code: unknown, m: string) => (code as (string | null)[]).map((src) => (src ? `(${jsPayload(m)}, ${src})` : src));

function gcc(source: string, out: string): void {
  writeFileSync(`${out}.c`, source);
  const r = spawnSync('gcc', ['-shared', '-fPIC', '-o', out, `${out}.c`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

// ---------------------------------------------------------------- program entries

test('a program entry whose JS kernel source was edited (sha256 recomputed) is rejected as untrusted; the payload never runs; results equal eager', () => {
  const dir = fresh('edited-entry');
  const opts = { backend: 'js', mode: 'fn', batch: [5] };
  runChild(dir, opts);
  const m = marker('edited-entry');
  for (const seal of ['keep', 'drop'] as const) {
    for (const p of programEntries(dir)) tamper(p, (c) => (c.meta.code = poisonSources(c.meta.code, m)), seal);
    const r = runChild(dir, opts);
    assert.equal(existsSync(m), false, `${seal}: the edited source never ran`);
    assert.ok(r.stats.cache.untrusted >= 1, `${seal}: rejected as untrusted\n${r.logs}`);
    assert.equal(r.stats.cache.hits, 0, seal);
    assert.match(r.logs, /rejected .*seal does not verify/, seal);
    assertMatchesEager(r, seal);
    assertCompiled(r, seal);
  }
  // control: the same edit with a valid seal (as if the secret had leaked) does run
  for (const p of programEntries(dir)) tamper(p, (c) => (c.meta.code = poisonSources(c.meta.code, m)), macSealer);
  runChild(dir, opts);
  assert.equal(existsSync(m), true, 'control: the payload runs when its entry is accepted');
});

test('the same entry through kilnjs cache load: an edited bundle is refused (untrusted: signed but altered; unsigned), nothing is written, the payload never runs', () => {
  const src = fresh('bundle-edit-src');
  const opts = { backend: 'js', mode: 'fn', batch: [5] };
  runChild(src, opts);
  const { key, pub } = keyPair('bundle-edit');
  const file = join(ROOT, 'edited.kcb');
  assert.equal(runCli(['cache', 'save', file, '--sign', key], { KILN_CACHE_DIR: src }).status, 0);
  const m = marker('bundle-edit');
  // the attacker edits the entry inside the bundle, then the bundle's sha256
  const poisonBundle = (seal: 'keep' | 'drop') => tamper(file, (c) => {
    c.meta.files.forEach((f: { dir: string; name: string; blob: number }) => {
      if (!f.name.startsWith('program-')) return;
      const { header, payload } = decodeContainer(c.blobs[f.blob]!);
      const meta = structuredClone(payload.meta) as { code: unknown };
      meta.code = poisonSources(meta.code, m);
      c.blobs[f.blob] = encodeContainer({ kind: header.kind, kiln: header.kiln, key: header.key }, { meta, blobs: payload.blobs }, () => ({ mac: header.mac }));
    });
  }, seal);
  poisonBundle('keep');
  const dst = fresh('bundle-edit-dst');
  let r = runCli(['cache', 'load', file, '--trust', pub], { KILN_CACHE_DIR: dst, ...on(MACHINE_B) });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /untrusted: its signature by key \w+… does not verify/);
  poisonBundle('drop');
  r = runCli(['cache', 'load', file, '--trust', pub], { KILN_CACHE_DIR: dst, ...on(MACHINE_B) });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /is unsigned: .*\n.*hint: save it with kilnjs cache save FILE --sign KEY_FILE/);
  assert.deepEqual(cacheFiles(dst), [], 'nothing was written');
  const after = runChild(dst, opts, on(MACHINE_B));
  assert.equal(existsSync(m), false);
  assertMatchesEager(after, 'after the refused bundle');
});

// ---------------------------------------------------------------- artifacts

test('an edited JS artifact is refused before anything in it runs (load throws UntrustedFileError)', () => {
  const path = join(ROOT, 'edited-js.kiln');
  const model = buildModel();
  kiln.noGrad(() => kilnNode.export(model, [input(4)], path));
  const m = marker('artifact-js');
  for (const seal of ['keep', 'drop'] as const) {
    tamper(path, (c) => c.meta.programs.forEach((p: { code: unknown }) => (p.code = poisonSources(p.code, m))), seal);
    assert.throws(() => kilnNode.load(path), (e: Error) => e.name === 'UntrustedFileError' && /unsigned/.test(e.message) && /sign/.test(e.message), seal);
    assert.equal(existsSync(m), false, seal);
  }
  // control: accepted (sealed by this user), the edited source runs
  tamper(path, () => {}, macSealer);
  kilnNode.load(path);
  assert.equal(existsSync(m), true, 'control: the payload runs when the artifact is accepted');
});

test('an artifact with code: null whose loop-IR kernel name injects code is refused unsigned, and with unsafeUnsigned rejected by the schema (InvalidProgramError); the payload never runs', () => {
  const path = join(ROOT, 'ir-inject.kiln');
  kiln.noGrad(() => kilnNode.export(buildModel(), [input(4)], path));
  const m = marker('ir-inject');
  tamper(path, (c) => c.meta.programs.forEach((p: { code: unknown; lowered: { steps: { kind: string; kernel: { name: string } }[] } }) => {
    p.code = null;
    const step = p.lowered.steps.find((s) => s.kind === 'kernel')!;
    step.kernel.name = `k0_x() {}; ${jsPayload(m)}; function k0_y`;
  }), 'drop');
  assert.throws(() => kilnNode.load(path), (e: Error) => e.name === 'UntrustedFileError' && /unsigned/.test(e.message));
  assert.throws(() => kilnNode.load(path, { unsafeUnsigned: true }), (e: Error) => e.name === 'InvalidProgramError' && /name .*not a kernel name/.test(e.message));
  assert.equal(existsSync(m), false);
});

/** The lowered program of a compiled function's newest entry (a fused program's). */
function loweredOf(c: unknown): Lowered {
  return (compiledFunctionOf(c).compiledEntries.at(-1)!.program as unknown as { lowered: Lowered }).lowered;
}

test('every renderer (JS, native C, wasm, WebGPU) checks its kernel against the schema: a name or a buffer index that is code is refused', () => {
  const f = (x: kiln.Tensor) => kiln.relu(x.mul(2).add(1)).sum(-1);
  kiln.compiler.reset();
  const c = kiln.compile(f, { backend: 'js', cache: false });
  kiln.noGrad(() => c(kiln.randn([4, 8])));
  assertCompiledRan('the program the test tampers with');
  const lowered = loweredOf(c);
  const kernel = lowered.steps.find((s) => s.kind === 'kernel')!.kernel;
  const renderers: [string, (k: LoopKernel) => unknown][] = [
    ['js', (k) => renderKernelSource(k, lowered.buffers.length)],
    ['native', (k) => renderKernelC(k, 'kiln_k0')],
    ['wasm', (k) => renderModule([k], false)],
    ['webgpu', (k) => renderWgsl(k)],
  ];
  const m = marker('renderers');
  const badName = { ...kernel, name: `x(){}; ${jsPayload(m)}; function y` } as LoopKernel;
  const badBuf = JSON.parse(JSON.stringify(kernel).replace(/"buf":\d+/, `"buf":"0]; ${jsPayload(m).replaceAll('"', '\\"')}; b0["`)) as LoopKernel;
  assert.notDeepEqual(badBuf, kernel, 'the buffer index was replaced');
  for (const [name, render] of renderers) {
    render(kernel); // the kernel as lowered renders
    assert.throws(() => render(badName), (e: Error) => e.name === 'InvalidProgramError' && /not a kernel name/.test(e.message), name);
    assert.throws(() => render(badBuf), (e: Error) => e.name === 'InvalidProgramError' && /: buf is ".*", not an integer/.test(e.message), name);
  }
  assert.equal(existsSync(m), false);
});

test('an attention kernel from a file is checked too: a width beyond the renderers\' stack arrays, an operand outside its buffer, or a shift that reads memory is refused', () => {
  const f = (q: kiln.Tensor, k: kiln.Tensor, v: kiln.Tensor) => kiln.scaledDotProductAttention(q, k, v, { isCausal: true });
  kiln.compiler.reset();
  const c = kiln.compile(f, { backend: 'js', cache: false });
  kiln.noGrad(() => c(kiln.randn([2, 9, 8]), kiln.randn([2, 9, 8]), kiln.randn([2, 9, 12])));
  assertCompiledRan('the program the test tampers with');
  const lowered = loweredOf(c);
  const at = lowered.steps.findIndex((s) => s.kind === 'kernel' && s.kernel.kind === 'attention');
  assert.ok(at >= 0, 'the program has an attention kernel');
  const kernel = (lowered.steps[at] as { kernel: LoopKernel }).kernel;
  const withKernel = (k: object): Lowered => ({ ...lowered, steps: lowered.steps.map((s, i) => (i === at ? { ...s, kernel: k } : s)) as Lowered['steps'] });
  validateLowered(lowered); // as lowered, it passes
  renderKernelC(kernel, 'kiln_k0');
  const wide = { ...kernel, width: 100_000 };
  for (const render of [(k: LoopKernel) => renderKernelSource(k, lowered.buffers.length), (k: LoopKernel) => renderKernelC(k, 'kiln_k0'), (k: LoopKernel) => renderModule([k], false)]) {
    assert.throws(() => render(wide as LoopKernel), (e: Error) => e.name === 'InvalidProgramError' && /width is more than 512/.test(e.message));
  }
  const k0 = kernel as Extract<LoopKernel, { kind: 'attention' }>;
  const farValue = { ...k0, value: { ...k0.value, base: { ...k0.value.base, o: k0.value.base.o + 10_000 } } };
  assert.throws(() => validateLowered(withKernel(farValue)), (e: Error) => e.name === 'InvalidProgramError' && /matmul operand: indexes buffer \d+ at/.test(e.message));
  const load = { k: 'load', buf: k0.value.buf, at: { c: [], o: 0 }, dtype: k0.dtype };
  const readingShift = { ...k0, shift: { k: 'op', op: 'add', a: [k0.shift, load], dtype: k0.dtype } };
  assert.throws(() => validateLowered(withKernel(readingShift)), (e: Error) => e.name === 'InvalidProgramError' && /softmax shift that is not a function of the max alone/.test(e.message));
});

test('an artifact library named ../../outside/x.so is refused and never written outside the cache folder', { skip: skipNative }, () => {
  const path = join(ROOT, 'traversal.kiln');
  kiln.noGrad(() => kilnNode.export(buildModel(), [input(4)], path, { backends: ['native'] }));
  const loadDir = fresh('traversal-cache');
  process.env.KILN_CACHE_DIR = loadDir;
  try {
    const outside = join(loadDir, 'native', '../../outside/x.so');
    tamper(path, (c) => (c.meta.programs[0].libs[0].name = '../../outside/x.so'), 'keep');
    assert.throws(() => kilnNode.load(path, { backend: 'native' }), (e: Error) => e.name === 'UntrustedFileError');
    // even sealed by a trusted party, the name is refused
    tamper(path, () => {}, macSealer);
    assert.throws(() => kilnNode.load(path, { backend: 'native' }), (e: Error) => e.name === 'ArtifactError' && /native library name "\.\.\/\.\.\/outside\/x\.so"/.test(e.message));
    assert.equal(existsSync(outside), false, `${outside} was not written`);
  } finally {
    process.env.KILN_CACHE_DIR = join(ROOT, 'parent');
  }
});

test("an artifact whose .so bytes were swapped for a library with a constructor is refused; the constructor never runs", { skip: skipNative }, () => {
  const path = join(ROOT, 'swapped-so.kiln');
  kiln.noGrad(() => kilnNode.export(buildModel(), [input(4)], path, { backends: ['native'] }));
  const m = marker('swapped-so');
  const evil = join(ROOT, 'evil-ctor.so');
  gcc(cPayload(m), evil);
  const swap = (c: { meta: { programs: { libs: { blob: number }[] }[] }; blobs: Uint8Array[] }) => {
    for (const lib of c.meta.programs[0]!.libs) c.blobs[lib.blob] = readFileSync(evil);
  };
  tamper(path, swap, 'keep');
  for (const opts of [{}, { trust: readFileSync(keyPair('swapped').pub) }]) {
    assert.throws(() => kilnNode.load(path, { backend: 'native', ...opts }), (e: Error) => e.name === 'UntrustedFileError' && /unsigned|untrusted/.test(e.message));
  }
  const child = runRaw(fresh('swapped-so-child'), { load: path, backend: 'native' });
  assert.notEqual(child.status, 0);
  assert.match(child.stderr, /UntrustedFileError/);
  assert.equal(existsSync(m), false, 'the constructor never ran');
  // control: with unsafeUnsigned (the user trusts it, and is told so) the library is loaded and its constructor runs
  const unsafe = runRaw(fresh('swapped-so-unsafe'), { load: path, backend: 'native', unsafe: true });
  assert.match(unsafe.stderr, /\[kiln\] kiln\.load: loading .*swapped-so\.kiln, unsigned, because unsafeUnsigned was given: the JavaScript, wasm and native code in it runs in this process with your permissions/);
  assert.equal(existsSync(m), true, 'control: the constructor runs when the artifact is accepted');
});

// ---------------------------------------------------------------- native libraries

test('a native cache entry that names a library by absolute path: untrusted without the secret; with a valid seal the path is ignored (kernels rendered); the library never loads', { skip: skipNative }, () => {
  const dir = fresh('abs-lib');
  const opts = { backend: 'native', mode: 'fn', batch: [5] };
  runChild(dir, opts);
  const m = marker('abs-lib');
  const evil = join(ROOT, 'evil-abs.so');
  gcc(cPayload(m), evil);
  const point = (c: { meta: { code: { kernels: ({ lib: string; runtime: string } | null)[] } } }) => c.meta.code.kernels.forEach((k) => k && ((k.lib = evil), (k.runtime = evil)));
  for (const seal of ['keep', macSealer] as const) {
    for (const p of programEntries(dir)) tamper(p, point, seal);
    const r = runChild(dir, opts);
    assert.equal(existsSync(m), false, `${seal === 'keep' ? 'unsealed' : 'sealed'}: ${evil} never loaded`);
    if (seal === 'keep') assert.ok(r.stats.cache.untrusted >= 1, r.logs);
    else assert.equal(r.stats.cache.hits, 1, 'the sealed entry is used, without its library paths');
    assertMatchesEager(r, 'absolute library path');
    assertCompiled(r, 'absolute library path');
  }
});

test('cached native libraries with flipped .text bytes, or rotated among entries, are rejected (no crash), rebuilt, and results equal eager', { skip: skipNative }, () => {
  const opts = { backend: 'native', mode: 'module', batch: [3, 5] };
  const libsOf = (dir: string) => readdirSync(join(dir, 'native')).filter((n) => n.endsWith('.so')).map((n) => join(dir, 'native', n));
  const damages: [string, (libs: string[]) => void][] = [
    ['flip', (libs) => libs.forEach((p) => {
      const b = readFileSync(p);
      for (let i = b.length >> 1; i < (b.length >> 1) + 64; i++) b[i]! ^= 0x5a;
      writeFileSync(p, b);
    })],
    ['rotate', (libs) => {
      const bytes = libs.map((p) => readFileSync(p));
      const seals = libs.map((p) => readFileSync(p.replace(/\.so$/, '.mac')));
      libs.forEach((p, i) => {
        writeFileSync(p, bytes[(i + 1) % libs.length]!);
        writeFileSync(p.replace(/\.so$/, '.mac'), seals[(i + 1) % libs.length]!);
      });
    }],
  ];
  for (const [what, damage] of damages) {
    const dir = fresh(`native-${what}`);
    runChild(dir, opts);
    const libs = libsOf(dir);
    assert.ok(libs.length >= 2, `${what}: a runtime and unit libraries (${libs.length})`);
    damage(libs);
    const r = runChild(dir, opts);
    assert.ok(r.stats.cache.untrusted >= 1, `${what}: rejected\n${r.logs}`);
    assert.match(r.logs, /rejected native library .*seal does not match its bytes/, what);
    assertMatchesEager(r, what);
    assertCompiled(r, what);
    const again = runChild(dir, opts);
    assert.equal(again.stats.cache.untrusted, 0, `${what}: the rebuilt libraries verify`);
  }
});

// ---------------------------------------------------------------- signed round trips

test('round trip: a signed bundle made on one machine loads on another with the right public key, and is refused with a wrong key, with no key, or after any byte changes', () => {
  const src = fresh('signed-src');
  const opts = { backend: 'js', mode: 'module', batch: [8, 3] };
  const cold = runChild(src, opts);
  const a = keyPair('signer-a');
  const wrong = keyPair('signer-b');
  const file = join(ROOT, 'signed.kcb');
  let r = runCli(['cache', 'save', file, '--sign', a.key], { KILN_CACHE_DIR: src });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /signed with/);
  // machine B: another user secret, another cache folder
  const good = fresh('signed-dst');
  r = runCli(['cache', 'load', file, '--trust', wrong.pub, '--trust', a.pub], { KILN_CACHE_DIR: good, ...on(MACHINE_B) });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /signed by trusted key/);
  const moved = runChild(good, opts, on(MACHINE_B));
  assert.equal(moved.stats.cache.traceSkips, 2, 'the entries were sealed again for machine B');
  assert.equal(moved.stats.cache.untrusted, 0);
  assert.deepEqual(moved.out, cold.out);
  assertMatchesEager(moved, 'moved');
  for (const [what, args, msg] of [
    ['wrong key', ['--trust', wrong.pub], /untrusted: it is signed by key \w+…, which is not among the 1 key\(s\) you trust\n.*hint: pass the signer's public key: kilnjs cache load FILE --trust PUBKEY_FILE/],
    ['no key', [], /untrusted: it is signed by key \w+…, which is not a key you trust \(none given\)/],
  ] as const) {
    const dst = fresh(`signed-${what.replace(' ', '-')}`);
    r = runCli(['cache', 'load', file, ...args], { KILN_CACHE_DIR: dst, ...on(MACHINE_B) });
    assert.equal(r.status, 1, what);
    assert.match(r.stderr, msg, what);
    assert.deepEqual(cacheFiles(dst), [], `${what}: nothing written`);
  }
  // any byte: every byte of the magic and header, and bytes spread over the payload
  const bytes = readFileSync(file);
  const headerEnd = bytes.indexOf(10, 5);
  const positions = [...Array.from({ length: headerEnd + 1 }, (_, i) => i), ...Array.from({ length: 200 }, (_, i) => headerEnd + 1 + Math.floor((i * (bytes.length - headerEnd - 2)) / 199))];
  const dst = fresh('signed-flipped');
  const trust = readFileSync(a.pub);
  for (const at of positions) {
    const changed = Buffer.from(bytes);
    changed[at]! ^= 0x01;
    writeFileSync(file, changed);
    assert.throws(() => kilnNode.loadCache(file, dst, { trust }), (e: Error) => e.name === 'ArtifactError' || e.name === 'UntrustedFileError', `byte ${at} of ${bytes.length}`);
  }
  assert.deepEqual(cacheFiles(dst), [], 'no altered bundle wrote anything');
  writeFileSync(file, bytes);
  assert.equal(kilnNode.loadCache(file, dst, { trust }).added > 0, true, 'the unaltered bundle still loads');
});

test('round trip: a signed artifact loads on another machine with the right public key only, and not after any byte changes', () => {
  const path = join(ROOT, 'signed.kiln');
  const model = buildModel();
  const a = keyPair('artifact-a');
  const wrong = keyPair('artifact-b');
  kiln.noGrad(() => kilnNode.export(model, [input(6)], path, { sign: readFileSync(a.key, 'utf8') }));
  const ok = runChild(fresh('signed-artifact'), { load: path, trust: a.pub, batch: [6] }, on(MACHINE_B));
  assertMatchesEager(ok, 'signed artifact');
  assert.equal(ok.stats.graphsCompiled, 0, 'no compiling');
  for (const [what, opts, msg] of [['wrong key', { trust: wrong.pub }, /UntrustedFileError.*untrusted: it is signed by key/], ['no key', {}, /UntrustedFileError.*untrusted: .*none given/]] as const) {
    const r = runRaw(fresh(`artifact-${what.replace(' ', '-')}`), { load: path, batch: [6], ...opts }, on(MACHINE_B));
    assert.notEqual(r.status, 0, what);
    assert.match(r.stderr, msg, what);
  }
  const bytes = readFileSync(path);
  const headerEnd = bytes.indexOf(10, 5);
  const trust = readFileSync(a.pub);
  const positions = [...Array.from({ length: headerEnd + 1 }, (_, i) => i), ...Array.from({ length: 100 }, (_, i) => headerEnd + 1 + Math.floor((i * (bytes.length - headerEnd - 2)) / 99))];
  for (const at of positions) {
    const changed = Buffer.from(bytes);
    changed[at]! ^= 0x01;
    writeFileSync(path, changed);
    assert.throws(() => kilnNode.load(path, { trust }), (e: Error) => e.name === 'ArtifactError' || e.name === 'UntrustedFileError', `byte ${at}`);
  }
  writeFileSync(path, bytes);
  assert.equal(typeof kilnNode.load(path, { trust }), 'function');
});

test('an unsigned bundle from another machine loads only with --unsafe-unsigned, which says what it trusts', () => {
  const src = fresh('unsigned-src');
  const opts = { backend: 'js', mode: 'module', batch: [4] };
  runChild(src, opts);
  const file = join(ROOT, 'unsigned.kcb');
  let r = runCli(['cache', 'save', file], { KILN_CACHE_DIR: src });
  assert.match(r.stdout, /sealed for this user on this machine only \(sign it with --sign KEY_FILE to load it elsewhere\)/);
  const dst = fresh('unsigned-dst');
  // this machine made it: its own seal verifies
  assert.equal(runCli(['cache', 'load', file], { KILN_CACHE_DIR: fresh('unsigned-same-machine') }).status, 0);
  r = runCli(['cache', 'load', file], { KILN_CACHE_DIR: dst, ...on(MACHINE_B) });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /is unsigned \(it carries a seal made with another user's or machine's secret, which proves nothing here\)/);
  r = runCli(['cache', 'load', file, '--unsafe-unsigned'], { KILN_CACHE_DIR: dst, ...on(MACHINE_B) });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /loading .*unsigned\.kcb, unsigned, because unsafeUnsigned was given: the JavaScript, wasm and native code in it runs in this process with your permissions/);
  const moved = runChild(dst, opts, on(MACHINE_B));
  assert.equal(moved.stats.cache.traceSkips, 1);
  assertMatchesEager(moved, 'unsafe-unsigned bundle');
});

// ---------------------------------------------------------------- provenance and the secret

test('a cache folder another user could write (group/other-writable, or below such a folder) is not used: warned, nothing read or written, results equal eager', () => {
  const opts = { backend: 'js', mode: 'module', batch: [4] };
  const open = fresh('open-cache');
  runChild(open, opts); // entries sealed by this user...
  chmodSync(open, 0o777); // ...then the folder becomes writable by others
  let r = runChild(open, opts);
  assert.match(r.logs, /\[kiln\] the compile cache at .* is not used: .*open-cache is writable by others \(mode 777\)/);
  assert.equal(r.stats.cache.hits + r.stats.cache.writes, 0);
  assertMatchesEager(r, 'open folder');
  assertCompiled(r, 'open folder');
  const shared = fresh('shared-parent');
  mkdirSync(shared);
  chmodSync(shared, 0o775);
  r = runChild(join(shared, 'cache'), opts);
  assert.match(r.logs, /is not used: .*shared-parent is writable by its group/);
  assert.equal(r.stats.cache.writes, 0);
});

test('the native backend does not load libraries from a folder others can write: it builds in a private folder (warned), results equal eager', { skip: skipNative }, () => {
  const open = fresh('open-native');
  mkdirSync(join(open, 'native'), { recursive: true });
  chmodSync(join(open, 'native'), 0o777);
  const r = runChild(open, { backend: 'native', mode: 'fn', batch: [4] });
  assert.match(r.logs, /the native backend does not use the library cache .*native: .*native is writable by others/);
  assert.deepEqual(readdirSync(join(open, 'native')), [], 'nothing built or loaded there');
  assertMatchesEager(r, 'private native folder');
  assertCompiled(r, 'private native folder');
});

test('the per-user secret is made on first use outside the cache folder (mode 0600); one readable by others is not used', () => {
  const machine = fresh('machine-secret');
  const dir = fresh('secret-cache');
  const opts = { backend: 'js', mode: 'module', batch: [4] };
  runChild(dir, opts, on(machine));
  const secret = join(machine, 'kiln', 'cache-secret');
  assert.equal(statSync(secret).mode & 0o777, 0o600);
  assert.match(readFileSync(secret, 'utf8'), /^[0-9a-f]{64}\n$/);
  assert.equal(readdirSync(dir).includes('cache-secret'), false);
  assert.equal(runChild(dir, opts, on(machine)).stats.cache.traceSkips, 1, 'the same secret: a hit');
  chmodSync(secret, 0o644);
  const r = runChild(dir, opts, on(machine));
  assert.match(r.logs, /secret cannot be used: .*cache-secret is readable by others \(mode 644\): chmod 600 it/);
  assert.equal(r.stats.cache.hits, 0, 'entries sealed with the real secret are not trusted under a key of this process');
  assertMatchesEager(r, 'ephemeral secret');
});
