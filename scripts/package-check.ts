// CI's check of the package as a user gets it (.ci/run, after `npm test`; `npm run
// check:package` by hand): `npm pack` (the prepack script builds dist/), `npm install` of the
// tarball into a new project in the temp folder, outside the repository, then
//   (a) plain `node` (no tsx) runs test/package/consumer-node.mjs: imports 'kilnjs' and
//       'kilnjs/node', trains the README's example eagerly and compiled on js, wasm and native,
//       checks the losses fall and the compiled runs follow eager;
//   (b) `tsc --noEmit` type-checks a strict consumer (strict, noUncheckedIndexedAccess, the
//       default lib, skipLibCheck false) against the shipped .d.ts, with @types/node and without
//       (the browser entry alone);
//   (c) the installed binary runs `kilnjs advise --example mlp --json r.json`, which must write a
//       report with a verdict that the shipped schema accepts;
//   (d) esbuild bundles test/package/consumer-browser.mjs from the installed browser entry, and
//       headless Chromium trains the README example in the page (js and wasm).
// Prints the packed size and file count; exits 1 naming each check that failed.
//
//   node --import tsx scripts/package-check.ts [--keep]   (--keep: leave the temp project)

import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { launchChromium, servePage } from './lib/chromium.js';
import { CONSUMER_DIR, ROOT, consumerEnv, pack, packProblems, run, tail } from './lib/package.js';

const keep = process.argv.includes('--keep');
const tmp = mkdtempSync(join(tmpdir(), 'kilnjs-package-check-'));
const project = join(tmp, 'project');
const env = consumerEnv(join(tmp, 'cache'));
const failures: string[] = [];
const t0 = performance.now();

function check(name: string, fn: () => string | null | Promise<string | null>): Promise<void> {
  const s = performance.now();
  return Promise.resolve()
    .then(fn)
    .catch((e: unknown) => `threw: ${e instanceof Error ? e.stack ?? e.message : String(e)}`)
    .then((problem) => {
      const secs = ((performance.now() - s) / 1000).toFixed(1);
      console.log(`${problem === null ? 'ok  ' : 'FAIL'} ${name} (${secs} s)${problem === null ? '' : `\n     ${problem.split('\n').join('\n     ')}`}`);
      if (problem !== null) failures.push(name);
    });
}

try {
  // ---- pack
  const packed = pack(tmp);
  console.log(`packed ${relative(tmp, packed.tarball)}: ${(packed.size / 1024).toFixed(0)} kB packed, ${(packed.unpackedSize / 1024).toFixed(0)} kB unpacked, ${packed.files.length} files`);
  await check('the tarball holds only what users need, under 1 MB', () => {
    const p = packProblems(packed, join(ROOT, 'dist'));
    return p.length ? p.join('\n') : null;
  });

  // ---- install into a project of its own
  cpSync(CONSUMER_DIR, project, { recursive: true });
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'kilnjs-consumer', private: true, type: 'module' }, null, 2)}\n`);
  const typesNode = (JSON.parse(readFileSync(join(ROOT, 'node_modules', '@types', 'node', 'package.json'), 'utf8')) as { version: string }).version;
  const installed = run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', packed.tarball, `@types/node@${typesNode}`], { cwd: project, env });
  if (installed.status !== 0) throw new Error(`npm install of the tarball failed:\n${tail(installed)}`);
  console.log(`installed into ${project}`);

  await check('(a) plain node: the README example, eager and compiled on js, wasm and native', () => {
    const r = run(process.execPath, ['consumer-node.mjs', 'js', 'wasm', 'native'], { cwd: project, env });
    if (r.status !== 0) return tail(r);
    console.log(`     ${r.stdout.trim().split('\n').pop()}`);
    return null;
  });

  await check('(b) tsc: strict consumers against the shipped .d.ts (Node, and the browser entry without @types/node)', () => {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const bad = ['tsconfig.consumer.json', 'tsconfig.consumer-browser.json']
      .map((cfg) => ({ cfg, r: run(process.execPath, [tsc, '-p', cfg], { cwd: project, env }) }))
      .filter(({ r }) => r.status !== 0);
    return bad.length ? bad.map(({ cfg, r }) => `${cfg}:\n${tail(r, 30)}`).join('\n') : null;
  });

  await check('(c) the installed bin: kilnjs advise --example mlp --json r.json writes a verdict', async () => {
    const r = run(join(project, 'node_modules', '.bin', 'kilnjs'), ['advise', '--example', 'mlp', '--json', 'r.json'], { cwd: project, env, timeoutMs: 600_000 });
    if (r.status !== 0) return tail(r);
    const report = JSON.parse(readFileSync(join(project, 'r.json'), 'utf8')) as { verdict: { verdict: string; headline: string } };
    const dist = join(project, 'node_modules', 'kilnjs');
    const { validate } = (await import(pathToFileURL(join(dist, 'dist', 'advisor', 'json-schema.js')).href)) as { validate(schema: unknown, x: unknown): string[] };
    const { VERDICTS } = (await import(pathToFileURL(join(dist, 'dist', 'advisor', 'verdict.js')).href)) as { VERDICTS: readonly string[] };
    const errors = validate(JSON.parse(readFileSync(join(dist, 'docs', 'advisor-report.schema.json'), 'utf8')), report);
    if (errors.length) return `r.json does not match the shipped schema: ${errors.slice(0, 5).join('; ')}`;
    if (!VERDICTS.includes(report.verdict.verdict)) return `no verdict in r.json: ${JSON.stringify(report.verdict)}`;
    console.log(`     verdict: ${report.verdict.headline}`);
    return null;
  });

  await check('(d) esbuild bundle of the browser entry: the README example in headless Chromium', async () => {
    const b = await build({
      entryPoints: ['consumer-browser.mjs'], absWorkingDir: project, bundle: true, platform: 'browser', format: 'esm', write: false, metafile: true, logLevel: 'silent',
    });
    const inputs = Object.keys(b.metafile.inputs);
    const foreign = inputs.filter((f) => !f.startsWith('node_modules/kilnjs/dist/') && !/^consumer-browser\.mjs$|^readme-example\.mjs$/.test(f));
    if (foreign.length) return `the bundle holds more than kilnjs's dist/ and the page: ${foreign.join(', ')}`;
    const builtins = Object.values(b.metafile.inputs).flatMap((i) => i.imports.filter((m) => m.path.startsWith('node:') || m.external).map((m) => m.path));
    if (builtins.length) return `the browser bundle reaches Node built-ins: ${builtins.join(', ')}`;
    // 'kilnjs/node' in a browser bundle: the stub that names the mistake, not Node built-ins
    const nodeEntry = await build({
      stdin: { contents: "import 'kilnjs/node';", resolveDir: project }, absWorkingDir: project, bundle: true, platform: 'browser', format: 'esm', write: false, metafile: true, logLevel: 'silent',
    });
    const nodeInputs = Object.keys(nodeEntry.metafile.inputs);
    if (!nodeInputs.includes('node_modules/kilnjs/dist/node-browser.js') || nodeInputs.length !== 2) return `a browser bundle of 'kilnjs/node' holds ${nodeInputs.join(', ')}`;
    const js = b.outputFiles[0]!.text;
    const browser = await launchChromium();
    const served = await servePage(`<!doctype html><meta charset="utf-8"><script type="module">${js.replace(/<\/script/gi, '<\\/script')}</script>`);
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(served.url, { waitUntil: 'load' });
      await page.waitForFunction(() => (window as unknown as { __result?: unknown }).__result !== undefined, undefined, { timeout: 120_000 });
      const result = (await page.evaluate(() => (window as unknown as { __result: unknown }).__result)) as { ok: boolean; problems: string[]; first?: number; last?: number; wasmKernels?: number };
      if (!result.ok || errors.length) return [...result.problems, ...errors].join('\n');
      console.log(`     ${(js.length / 1024).toFixed(0)} kB bundle; eager loss ${result.first?.toFixed(4)} -> ${result.last?.toFixed(4)}, ${result.wasmKernels} wasm kernels`);
      return null;
    } finally {
      await served.close();
      await browser.close();
    }
  });
} catch (e) {
  failures.push('setup');
  console.log(`FAIL ${(e as Error).message}`);
} finally {
  if (keep) console.log(`kept ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
}

console.log(`package check: ${failures.length ? `FAILED (${failures.join('; ')})` : 'passed'} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
process.exit(failures.length ? 1 : 0);
