// The core entry point must bundle for browsers: no Node built-ins reachable from 'kilnjs'. And
// the eager tests (the op table's float32 forward checks against float64 references,
// test/ops.test.ts, and the float64 gradient checks, test/gradcheck.test.ts) bundled unchanged
// into a page (node:test and node:assert/strict are helpers/node-test-shim.ts there) pass in
// headless Chromium, on the wasm eager kernels: in a page without cross-origin isolation (no
// SharedArrayBuffer: an unshared heap, one thread, views re-pointed when the memory grows) and
// in a cross-origin-isolated one (shared memory, Web Worker threads).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromiumUnavailableReason, launchChromium, servePage } from '../scripts/lib/chromium.js';
import { bundleForBrowser, pageHtml } from './helpers/browser-bundle.js';


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

/** The page: the eager test files, their tests run in order; the result in window.__result. */
async function eagerTestsBundle(): Promise<string> {
  const shim = fileURLToPath(new URL('./helpers/node-test-shim.ts', import.meta.url));
  return bundleForBrowser(`
        import * as kiln from './src/index.ts';
        import { recorded } from './test/helpers/node-test-shim.ts';
        import './test/ops.test.ts';
        import './test/gradcheck.test.ts';
        (async () => {
          const failures = [];
          let passed = 0, skipped = 0;
          for (const t of recorded) {
            if (t.skip) { skipped++; continue; }
            try {
              await t.fn({ after() {}, skip() {} });
              passed++;
            } catch (e) {
              failures.push(t.name + ': ' + String(e && e.message || e).split('\\n').slice(0, 3).join(' | '));
            }
          }
          // large kernels (split across threads where there are some) against float64
          const large = kiln.scope(() => {
            const a = kiln.randn([256, 384]), b = kiln.randn([384, 512]);
            const got = kiln.matmul(a, b).relu().sum(1).dataSync(), want = kiln.matmul(a.double(), b.double()).relu().sum(1).dataSync();
            let worst = 0;
            for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
            return worst;
          });
          if (!(large <= 1e-4)) failures.push('large matmul + relu + sum: relative error ' + large);
          window.__result = { passed, skipped, failures, eager: kiln.eagerStats(), wasm: kiln.wasmStats(), shared: typeof SharedArrayBuffer !== 'undefined' };
        })().catch((e) => { window.__result = { error: String(e && e.stack || e) }; });`, 'eager-tests-page.ts', { 'node:test': shim, 'node:assert/strict': shim });
}

/** COOP + COEP: a cross-origin-isolated page, where SharedArrayBuffer exists */
const ISOLATION = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };

interface PageResult {
  passed: number; skipped: number; failures: string[]; shared: boolean; error?: string;
  eager: { backend: string; wasmLaunches: number; jsLaunches: number; skipped: string[] };
  wasm: { threads: number; singleThreadReason: string | null; parallelLaunches: number };
}

const why = chromiumUnavailableReason();
for (const isolated of [false, true]) {
  test(`the eager tests pass in headless Chromium on the wasm eager kernels (${isolated ? 'cross-origin isolated: shared memory, threads' : 'no isolation: unshared memory, one thread'})`, { skip: why ?? false, timeout: 600_000 }, async () => {
    const html = pageHtml(await eagerTestsBundle(), 'kiln eager tests');
    const served = await servePage(html, isolated ? ISOLATION : {});
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
      await page.goto(served.url, { waitUntil: 'load' });
      await page.waitForFunction(() => (window as unknown as { __result?: unknown }).__result !== undefined, undefined, { timeout: 540_000 });
      const r = await page.evaluate(() => (window as unknown as { __result: unknown }).__result) as PageResult;
      if (r.error) assert.fail(`the page failed: ${r.error}\n${errors.join('\n')}`);
      console.log(`# chromium (${isolated ? 'isolated' : 'not isolated'}): ${r.passed} passed, ${r.skipped} skipped, ${r.failures.length} failed; eager on ${r.eager.backend}: ${r.eager.wasmLaunches} wasm / ${r.eager.jsLaunches} JS launches; wasm threads ${r.wasm.threads} (${r.wasm.singleThreadReason ?? 'shared memory'}), ${r.wasm.parallelLaunches} parallel launches`);
      assert.deepEqual(r.failures, []);
      assert.deepEqual(errors, []);
      assert.ok(r.passed > 700, `${r.passed} tests ran`);
      assert.equal(r.eager.backend, 'wasm');
      assert.ok(r.eager.wasmLaunches > 1000, 'the ops ran on the wasm kernels');
      assert.deepEqual(r.eager.skipped, [], 'every eager kernel built');
      assert.equal(r.shared, isolated, isolated ? 'SharedArrayBuffer in the isolated page' : 'no SharedArrayBuffer without isolation');
      if (isolated) assert.ok(r.wasm.threads > 1 && r.wasm.parallelLaunches > 0, 'large kernels split across Web Workers');
    } finally {
      await browser.close();
      await served.close();
    }
  });
}
