// The core entry point must bundle for browsers: no Node built-ins reachable from 'kilnjs'.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build } from 'esbuild';

test('src/index.ts bundles for the browser without Node built-ins', async () => {
  const r = await build({
    entryPoints: ['src/index.ts'], bundle: true, platform: 'browser', format: 'esm', write: false, logLevel: 'silent', metafile: true,
  });
  const inputs = Object.keys(r.metafile!.inputs);
  assert.ok(inputs.some((f) => f.includes('src/compiler/')), 'the compiler is part of the browser bundle');
  const nodeImports = Object.values(r.metafile!.inputs).flatMap((i) => i.imports.filter((m) => m.path.startsWith('node:') || m.external));
  assert.deepEqual(nodeImports, []);
  assert.ok(r.outputFiles[0]!.text.length > 10_000);
});
