// `npm run bench:install`, run first by `npm run bench`, `bench:cpu`, `bench:eager` and
// `bench:serve`: installs the benchmark peers of bench/package.json (onnxruntime-node,
// TensorFlow.js, jax-js, autocannon) into bench/node_modules, once, and again after
// bench/package.json or its lock file changes. They are a package of their own so that
// installing kiln never installs them (onnxruntime-node alone is ~290 MB). `--ignore-scripts`:
// of these packages only onnxruntime-node has an install script, and all it does is download
// GPU (CUDA) binaries; its CPU binaries are in the package.
//
//   node bench/install.mjs [--force]

import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const manifests = ['package.json', 'package-lock.json'].map((f) => join(here, f));
// npm writes node_modules/.package-lock.json at the end of every install
const stamp = join(here, 'node_modules', '.package-lock.json');
const current = existsSync(stamp) && manifests.every((f) => statSync(f).mtimeMs <= statSync(stamp).mtimeMs);
if (current && !process.argv.includes('--force')) process.exit(0);

console.log('bench/install.mjs: installing the benchmark peers (bench/package.json) into bench/node_modules');
const args = ['ci', '--ignore-scripts', '--no-audit', '--no-fund'];
// under npm, npm_execpath is npm's own CLI script: run it with this node
const npm = process.env.npm_execpath;
const r = npm && !npm.endsWith('npx-cli.js')
  ? spawnSync(process.execPath, [npm, ...args], { cwd: here, stdio: 'inherit' })
  : spawnSync('npm', args, { cwd: here, stdio: 'inherit', shell: process.platform === 'win32' });
if (r.status !== 0) {
  console.error(`bench/install.mjs: npm ${args.join(' ')} in bench/ failed (${r.error?.message ?? `exit ${r.status}`})`);
  process.exit(r.status ?? 1);
}
