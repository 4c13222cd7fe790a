// kiln on WebGPU in a real browser: kiln's browser bundle (esbuild, as in
// test/browser-bundle.test.ts) plus the MLP example (examples/mlp.ts) trained with a compiled
// step on `navigator.gpu`, in headless Chromium (Debian's chromium driven by playwright-core,
// scripts/lib/chromium.ts). Without a GPU, `--enable-unsafe-webgpu` gives Chromium a
// SwiftShader adapter (../shared/FACTS.md). The losses, weights and accuracy must match the
// same code run in Node on the CPU backend (same seed: data and initial weights come from
// kiln's host-side Philox generator on both), within float32 tolerance.
//
// Skipped, with the reason, only where /usr/bin/chromium is missing (CI installs it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromiumUnavailableReason } from '../scripts/lib/chromium.js';
import { bundleForBrowser, openWebGpuPage, pageHtml, type WebGpuPage } from './helpers/browser-bundle.js';
import { trainMlpSteps, type MlpRun } from './helpers/webgpu-mlp.js';

const why = chromiumUnavailableReason();
const STEPS = 12;

/** The page's script: kiln's browser entry and the shared MLP run, bundled for the browser. */
function bundle(): Promise<string> {
  return bundleForBrowser(`
    import * as kiln from './src/index.ts';
    import { trainMlpSteps } from './test/helpers/webgpu-mlp.ts';
    (async () => {
      try {
        const gpu = await kiln.requestWebGpuBackend();
        const run = await trainMlpSteps(gpu, { steps: ${STEPS} });
        window.__result = { ok: true, adapter: gpu.adapterInfo, run };
      } catch (e) {
        window.__result = { ok: false, error: String(e && e.stack || e) };
      }
    })();`, 'webgpu-page.ts');
}

test('webgpu in headless Chromium: the MLP example trained compiled on WebGPU equals Node on the CPU', { skip: why ?? false, timeout: 300_000 }, async () => {
  const js = await bundle();
  const html = pageHtml(js);
  const ref: MlpRun = await trainMlpSteps(null, { steps: STEPS });
  let open: WebGpuPage | null = null;
  try {
    open = await openWebGpuPage(html);
    const { page, errors } = open;
    // GPU work settles after load: wait on the page's own result
    await page.waitForFunction(() => (window as unknown as { __result?: unknown }).__result !== undefined, undefined, { timeout: 240_000 });
    const res = await page.evaluate(() => (window as unknown as { __result: unknown }).__result) as { ok: true; adapter: string; run: MlpRun } | { ok: false; error: string };
    if (!res.ok) assert.fail(`the page failed: ${res.error}\n${errors.join('\n')}`);
    console.log(`# chromium webgpu adapter: ${res.adapter}; losses ${res.run.losses.map((l) => l.toFixed(4)).join(' ')}`);
    assert.equal(res.run.backend, 'webgpu');
    assert.equal(res.run.losses.length, STEPS);
    res.run.losses.forEach((l, i) => assert.ok(Math.abs(l - ref.losses[i]!) <= 1e-4 * Math.max(1, Math.abs(ref.losses[i]!)), `step ${i}: loss ${l} in Chromium vs ${ref.losses[i]} on the CPU`));
    res.run.params.forEach((p, i) => p.forEach((v, j) => assert.ok(Math.abs(v - ref.params[i]![j]!) <= 2e-4, `param ${i}[${j}]: ${v} in Chromium vs ${ref.params[i]![j]} on the CPU`)));
    assert.ok(Math.abs(res.run.testAccuracy - ref.testAccuracy) <= 1 / 60 + 1e-6, `accuracy ${res.run.testAccuracy} vs ${ref.testAccuracy}`);
    assert.ok(res.run.losses[STEPS - 1]! < res.run.losses[0]!, 'it trains');
    assert.deepEqual(errors, []);
  } finally {
    await open?.close();
  }
});
