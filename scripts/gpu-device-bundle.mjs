// Bundles kiln's GPU checks into plain ES modules under .device/ (issue 10), so that a lent GPU
// machine runs them with a bare `node`: no tsx, no esbuild, no full node_modules there.
// Called by scripts/gpu-device-prepare.sh; run from the repository root.
//
//   node scripts/gpu-device-bundle.mjs [outdir=.device]
//
// Entries: bench/gpu.ts, bench/webgpu-overhead.ts, scripts/gpu-device-adapter.ts and every
// test/webgpu*.test.ts except the *-browser.test.ts (they drive Chromium) and webgpu-lavapipe (a software adapter). Outputs keep their folder:
// .device/bench/gpu.mjs, .device/test/webgpu.test.mjs, shared code in .device/chunks/.
//
// - 'kilnjs' and 'kilnjs/node' resolve to the sources (tsconfig.json "paths", as under tsx; the
//   package's "exports" point at the build in dist/), the same files as the relative imports,
//   so there is one copy of kiln per bundle.
// - `webgpu` and `koffi` stay external: node finds them in .device/node_modules.
// - Every output lies two folders below the repository root, and each `import.meta.url` in a
//   source file is rewritten to that file's own URL, computed from the bundle's location
//   (`new URL('../../src/x.ts', import.meta.url)`). The tracked sources travel with the tree,
//   so what kiln reads next to itself (package.json for its version, src/ for the compile
//   cache's fingerprint) is found, and examples/mlp.ts's "am I the main module" check stays
//   false. `createRequire(import.meta.url)` keeps the bundle's URL, so require() looks in
//   .device/node_modules.
// - Source maps (without source contents: the sources travel) so that stack traces, and kiln's
//   graph-break locations, name the .ts files when node runs with --enable-source-maps.

import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const root = process.cwd();
const outdir = resolve(root, process.argv[2] ?? '.device');
const DEPTH = 2; // outputs: <outdir>/<folder>/<file>.mjs with outdir one below the root
if (relative(root, outdir).split(sep).length !== 1) throw new Error(`outdir must be a folder directly in the repository root, got ${outdir}`);
const up = '../'.repeat(DEPTH);

const entries = [
  'bench/gpu.ts',
  'bench/webgpu-overhead.ts',
  'scripts/gpu-device-adapter.ts',
  ...readdirSync('test')
    .filter((f) => /^webgpu.*\.test\.ts$/.test(f) && !f.endsWith('-browser.test.ts') && f !== 'webgpu-lavapipe.test.ts')
    .sort()
    .map((f) => `test/${f}`),
];

// tsconfig.json paths: { "kilnjs": ["./src/index.ts"], "kilnjs/node": ["./src/node.ts"] }
const paths = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')).compilerOptions.paths;
const selfRef = new Map(Object.entries(paths).map(([name, [file]]) => [name, resolve(root, file)]));

const RE_ESC = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const selfFilter = new RegExp(`^(${[...selfRef.keys()].map(RE_ESC).join('|')})$`);

const kilnPlugin = {
  name: 'kiln-device',
  setup(b) {
    b.onResolve({ filter: selfFilter }, (args) => ({ path: selfRef.get(args.path) }));
    b.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
      if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
      let src = readFileSync(args.path, 'utf8');
      if (src.includes('import.meta.')) {
        const rel = JSON.stringify(up + relative(root, args.path).split(sep).join('/'));
        const own = `new URL(${rel}, import.meta.url)`;
        src = src
          .replace(/createRequire\(\s*import\.meta\.url\s*\)/g, 'createRequire(__KILN_BUNDLE_URL__)')
          .replace(/\bimport\.meta\.url\b/g, `${own}.href`)
          .replace(/\bimport\.meta\.filename\b/g, `decodeURIComponent(${own}.pathname)`)
          .replace(/\bimport\.meta\.dirname\b/g, `decodeURIComponent(new URL('.', ${own}).pathname).replace(/\\/$/, '')`)
          .replace(/__KILN_BUNDLE_URL__/g, 'import.meta.url');
      }
      return { contents: src, loader: 'ts', resolveDir: dirname(args.path) };
    });
  },
};

// bundles only (the caller adds node, node_modules and the rest): clear the folders they go to
for (const d of ['bench', 'test', 'scripts', 'chunks']) rmSync(join(outdir, d), { recursive: true, force: true });
const result = await build({
  entryPoints: entries,
  outbase: root,
  outdir,
  bundle: true,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outExtension: { '.js': '.mjs' },
  external: ['webgpu', 'koffi'],
  keepNames: true, // error classes and constructors keep their names (DTypeError, ...)
  // package.json's "sideEffects" describes the package's modules, not the tests' and benchmarks'
  ignoreAnnotations: true,
  sourcemap: 'linked',
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
  plugins: [kilnPlugin],
});

let bytes = 0;
const bad = [];
for (const [file, out] of Object.entries(result.metafile.outputs)) {
  bytes += out.bytes;
  const rel = relative(root, resolve(root, file)).split(sep);
  if (rel.length !== DEPTH + 1) bad.push(`${file}: not ${DEPTH} folders below the root`);
  if (file.endsWith('.mjs') && readFileSync(file, 'utf8').includes('Dynamic require of')) bad.push(`${file}: has a CommonJS require that cannot run in ESM`);
}
if (bad.length) throw new Error(`bundle check failed:\n${bad.join('\n')}`);
// sha256 of every source file that went in (sha256sum -c format, paths from the root): the run
// script warns when the tree it runs in differs from what was bundled
const sums = Object.keys(result.metafile.inputs)
  .filter((f) => !f.includes('node_modules/'))
  .sort()
  .map((f) => `${createHash('sha256').update(readFileSync(resolve(root, f))).digest('hex')}  ${relative(root, resolve(root, f)).split(sep).join('/')}`);
writeFileSync(join(outdir, 'inputs.sha256'), sums.join('\n') + '\n');
const externals = new Set();
for (const out of Object.values(result.metafile.outputs)) for (const i of out.imports) if (i.external && !i.path.startsWith('node:')) externals.add(i.path);
console.log(`bundled ${entries.length} entries (${sums.length} source files) into ${relative(root, outdir)}/ (${(bytes / 2 ** 20).toFixed(1)} MiB with maps): ${entries.join(' ')}`);
console.log(`external imports left for node_modules: ${[...externals].sort().join(' ') || '(none)'}`);
