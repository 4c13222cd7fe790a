// The built package, as npm packs it (the build runs here: `npm pack` runs the prepack
// script, scripts/build.mjs): only what users need, under 1 MB, every exports/bin target and
// side-effect module accounted for; then the tarball unpacked as node_modules/kilnjs of a
// project outside the repository (its dependencies linked from the repository's install),
// without tsx anywhere it can be found, where plain `node` trains the README's example
// (test/package/consumer-node.mjs), `require()` works, and the bin runs the advisor's own
// examples and says how to load TypeScript modules. scripts/package-check.ts (CI) goes
// further: a real `npm install` of the tarball, the strict TypeScript consumer, the default
// `advise --example mlp` and the browser bundle in Chromium.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nativeUnavailableReason } from 'kilnjs/node';
import { loaderArgs } from '../src/advisor/cache-check.js';
import { CONSUMER_DIR, MAX_PACKED_BYTES, ROOT, consumerEnv, hasSideEffects, pack, packageJson, packProblems, run, tail, type Packed } from '../scripts/lib/package.js';

const tmp = mkdtempSync(join(tmpdir(), 'kilnjs-package-test-'));
const project = join(tmp, 'project');
let packed: Packed | null = null;

test.after(() => rmSync(tmp, { recursive: true, force: true }));

test('npm pack: only dist/, the report schema, README, LICENSE and package.json; under 1 MB; entries, declarations and side effects in place', { timeout: 300_000 }, () => {
  packed = pack(tmp);
  console.log(`# packed ${packed.size} bytes (${packed.unpackedSize} unpacked), ${packed.files.length} files`);
  assert.deepEqual(packProblems(packed, join(ROOT, 'dist')), []);
  assert.ok(packed.size < MAX_PACKED_BYTES);
  for (const f of ['LICENSE', 'dist/index.js', 'dist/index.d.ts', 'dist/node.js', 'dist/cli.js', 'dist/require/index.cjs', 'dist/advisor/examples/mlp.js', 'dist/advisor/examples/data/first-names.txt']) {
    assert.ok(packed.files.includes(f), `${f} ships`);
  }
  assert.ok(!packed.files.some((f) => f.startsWith('src/') || f.startsWith('test/') || f.startsWith('bench/') || f.startsWith('examples/')), 'no sources, tests, benchmarks or repository examples');
  assert.ok(readFileSync(join(ROOT, 'dist', 'cli.js'), 'utf8').startsWith('#!/usr/bin/env node\n'), 'the bin keeps its shebang');
});

test('the sideEffects matcher: exact files and * within one folder', () => {
  assert.ok(hasSideEffects('dist/require/index.cjs', ['./dist/require/*.cjs']));
  assert.ok(hasSideEffects('dist/ops/tensor-methods.js', ['./dist/ops/tensor-methods.js']));
  assert.ok(!hasSideEffects('dist/tensor/tensor.js', ['./dist/ops/tensor-methods.js', './dist/require/*.cjs']));
  assert.ok(!hasSideEffects('dist/require/x/index.cjs', ['./dist/require/*.cjs']));
});

test('the tarball as node_modules/kilnjs: plain node trains the README example eagerly and compiled (js, wasm, native); without koffi the native backend says how to add it', { timeout: 300_000 }, (t) => {
  assert.ok(packed, 'packed by the first test');
  mkdirSync(join(project, 'node_modules'), { recursive: true });
  assert.equal(run('tar', ['-xzf', packed.tarball, '-C', tmp]).status, 0);
  renameSync(join(tmp, 'package'), join(project, 'node_modules', 'kilnjs'));
  cpSync(CONSUMER_DIR, project, { recursive: true });
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  assert.throws(() => createRequire(join(project, 'x.js')).resolve('tsx'), 'no TypeScript loader reachable from the project');
  const env = consumerEnv(join(tmp, 'cache'));
  const why = nativeUnavailableReason();
  if (why === null) {
    // without the optional dependency (npm install --omit=optional), the native backend says how to add it
    const r = run(process.execPath, ['--input-type=module', '-e', "import { nativeUnavailableReason } from 'kilnjs/node'; console.log(nativeUnavailableReason())"], { cwd: project, env });
    assert.equal(r.status, 0, tail(r));
    assert.match(r.stdout, /koffi package cannot be loaded .*optional dependency for the native backend; add it with `npm install koffi`/);
  }
  // the dependencies (and koffi) from the repository's install, as npm would have put them beside kilnjs
  const pkg = packageJson();
  for (const name of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.optionalDependencies)]) {
    const from = join(ROOT, 'node_modules', name);
    if (existsSync(from)) symlinkSync(from, join(project, 'node_modules', name), 'dir');
  }

  if (why) t.diagnostic(`native left out: ${why}`);
  const r = run(process.execPath, ['consumer-node.mjs', 'js', 'wasm', ...(why ? [] : ['native'])], { cwd: project, env });
  assert.equal(r.status, 0, tail(r));
  const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, { first: number; last: number }>;
  assert.ok(out['eager']!.last < out['eager']!.first);
});

test('require() from CommonJS: a working import on this Node, a "use ESM" error where require(esm) is missing', () => {
  const r = run(process.execPath, ['-e', "const k = require('kilnjs'); const n = require('kilnjs/node'); console.log(typeof k.compile, typeof n.loadSafetensors, k.ones([2]).sum().item())"], { cwd: project, env: consumerEnv(join(tmp, 'cache')) });
  assert.equal(r.status, 0, tail(r));
  assert.equal(r.stdout.trim(), 'function function 2');
  // what Node < 20.19 throws, through the shipped CommonJS entry's handler
  const requireEsm = createRequire(import.meta.url)(join(project, 'node_modules', 'kilnjs', 'dist', 'require', 'load.cjs')) as (load: () => unknown, name: string) => unknown;
  const old = Object.assign(new Error('require() of ES Module not supported'), { code: 'ERR_REQUIRE_ESM' });
  assert.throws(() => requireEsm(() => { throw old; }, 'kilnjs'), (e: Error) => /kilnjs is an ES module/.test(e.message) && /"type": "module"/.test(e.message) && /await import\('kilnjs'\)/.test(e.message) && e.cause === old);
  const other = new Error('something else');
  assert.throws(() => requireEsm(() => { throw other; }, 'kilnjs'), (e: Error) => e === other);
});

test('the bin runs compiled JavaScript: --help, and the advisor measures its own examples from the package (mlp, char-gpt with its names file)', { timeout: 300_000 }, () => {
  const bin = join(project, 'node_modules', 'kilnjs', 'dist', 'cli.js');
  const env = consumerEnv(join(tmp, 'cache'));
  const h = run(process.execPath, [bin, 'advise', '--help'], { cwd: project, env });
  assert.equal(h.status, 0, tail(h));
  assert.match(h.stdout, /kilnjs advise \[workload-module\]/);
  assert.match(h.stdout, /one of kiln's example workloads: char-gpt, denoiser, mlp, recommender/);
  const missing = run(process.execPath, [bin, 'advise', '--example', 'nope', '--quiet'], { cwd: project, env });
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /there is no example 'nope' \(examples: char-gpt, denoiser, mlp, recommender\)/);
  const serveHelp = run(process.execPath, [bin, 'serve', '--help'], { cwd: project, env });
  assert.equal(serveHelp.status, 0, tail(serveHelp));
  assert.match(serveHelp.stdout, /kilnjs serve <model> \[options\]/);
  // a TypeScript module file without a loader: both commands say how to run it
  writeFileSync(join(project, 'typed.ts'), 'export const workload: unknown = null;\n');
  for (const command of ['advise', 'serve']) {
    const r = run(process.execPath, [bin, command, 'typed.ts'], { cwd: project, env });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, new RegExp(`Node cannot import TypeScript by itself: run \`npx tsx node_modules/\\.bin/kilnjs ${command} typed\\.ts\``), `${command}: ${tail(r)}`);
  }
  for (const example of ['mlp', 'char-gpt']) {
    const json = join(project, `${example}.json`);
    const r = run(process.execPath, [bin, 'advise', '--example', example, '--backend', 'js', '--calls', '2', '--warmup', '1', '--no-cache-check', '--no-html', '--quiet', '--json', json], { cwd: project, env });
    assert.equal(r.status, 0, tail(r));
    const report = JSON.parse(readFileSync(json, 'utf8')) as { workload: { name: string }; verdict: { verdict: string }; command: string };
    assert.equal(report.workload.name, example);
    assert.equal(typeof report.verdict.verdict, 'string');
    assert.match(report.command, /^kilnjs advise --example/);
  }
});

test("the advisor's child processes get the parent's module loaders, nothing else", () => {
  assert.deepEqual(loaderArgs(['--inspect', '--import', 'file:///x/tsx/loader.mjs', '--require=/x/preflight.cjs', '--max-old-space-size=4096', '-r', 'y']), ['--import', 'file:///x/tsx/loader.mjs', '--require=/x/preflight.cjs', '-r', 'y']);
  assert.deepEqual(loaderArgs([]), []);
});
