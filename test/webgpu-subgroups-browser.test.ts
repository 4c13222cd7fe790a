// Subgroup row reductions (src/backend/webgpu/render-row.ts) on a real WebGPU implementation
// with the 'subgroups' feature: headless Chromium's SwiftShader adapter (Node's Dawn here runs on
// llvmpipe/OpenGL, which has none). The page (test/helpers/webgpu-reductions.ts, bundled with
// kiln) runs row reductions eager, compiled in one function and compiled one function per op,
// with subgroups on (twice), off, and on with the fallback forced, over row lengths that cover
// every workgroup size and lengths not multiple of the subgroup size; Node draws the inputs
// (fresh each run, the seed is printed) and checks:
//  - every result against a float64 reference on the CPU within float32 tolerance; max/min
//    exactly, NaN positions and argmax/argmin indices (ties: the first) exactly;
//  - determinism: two runs with subgroups on give the same bits; the forced fallback gives the
//    same bits as subgroups off (it is the plain tree);
//  - the path taken: row kernels rendered with subgroups while on and none while off, the WGSL
//    of a sample kernel, and the prologue's width run alone on the device (the fast path, not
//    the fallback, is what runs here);
//  - gpu.profile (timestamp queries, which SwiftShader has): one entry per dispatch of a
//    compiled program called often enough to fill more than one query set (1024 dispatches
//    each), durations finite and non-negative.
//
// Skipped, with the reason, where /usr/bin/chromium is missing, or where the adapter has no
// 'subgroups' feature (printed).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromiumUnavailableReason } from '../scripts/lib/chromium.js';
import { bundleForBrowser, openWebGpuPage, pageHtml, type WebGpuPage } from './helpers/browser-bundle.js';
import type { SubgroupPageResult } from './helpers/webgpu-reductions.js';
import { checkReferencesOnCpu, checkSubgroupResult, makeCases, reference } from './helpers/subgroup-checks.js';

const why = chromiumUnavailableReason();
const seed = Math.floor(Math.random() * 2 ** 31);

/** The page's script: kiln and the reduction runs; Node calls window.__run with the inputs. */
function bundle(): Promise<string> {
  return bundleForBrowser(`
    import * as kiln from './src/index.ts';
    import { runSubgroupPage } from './test/helpers/webgpu-reductions.ts';
    window.__run = async (cases, profileCase) => {
      try {
        const gpu = await kiln.requestWebGpuBackend();
        return { ok: true, result: await runSubgroupPage(gpu, cases, profileCase) };
      } catch (e) {
        return { ok: false, error: String(e && e.stack || e) };
      }
    };
    window.__ready = true;`, 'webgpu-subgroups-page.ts');
}

type PageAnswer = { ok: true; result: SubgroupPageResult } | { ok: false; error: string };

test(`webgpu subgroups in headless Chromium: row reductions on and off match float64 references, deterministic, profiled (seed ${seed})`, { skip: why ?? false, timeout: 600_000 }, async (t) => {
  const cases = makeCases(seed);
  const refs = cases.map(reference);
  checkReferencesOnCpu(cases, refs);

  const html = pageHtml(await bundle(), 'kiln webgpu subgroups');
  let open: WebGpuPage | null = null;
  let res: SubgroupPageResult;
  try {
    open = await openWebGpuPage(html);
    const { page, errors } = open;
    await page.waitForFunction(() => (window as unknown as { __ready?: boolean }).__ready === true, undefined, { timeout: 60_000 });
    const answer = await page.evaluate(([c, p]) => (window as unknown as { __run(c: unknown, p: unknown): Promise<unknown> }).__run(c, p), [cases, cases[1]!] as const) as PageAnswer;
    if (!answer.ok) assert.fail(`the page failed: ${answer.error}\n${errors.join('\n')}`);
    assert.deepEqual(errors, []);
    res = answer.result;
  } finally {
    await open?.close();
  }

  if (!checkSubgroupResult(res, cases, refs, 'chromium')) t.skip(`the adapter (${res.adapter}) has no 'subgroups' feature`);
});
