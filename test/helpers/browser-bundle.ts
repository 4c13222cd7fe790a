// kiln bundled for a page in headless Chromium (esbuild, as in test/browser-bundle.test.ts),
// and the page opened on WebGPU (`--enable-unsafe-webgpu`: SwiftShader without a GPU, see
// scripts/lib/chromium.ts). Shared by the browser tests (test/webgpu-browser.test.ts,
// test/webgpu-subgroups-browser.test.ts).

import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, servePage, WEBGPU_ARGS } from '../../scripts/lib/chromium.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The page's script: `entry` (TypeScript; imports resolve from the repository root, and
 * `kilnjs` is ./src/index.ts, by tsconfig.json's paths) bundled for the browser as one ES module.
 */
export async function bundleForBrowser(entry: string, sourcefile = 'page.ts'): Promise<string> {
  const r = await build({
    stdin: { contents: entry, resolveDir: ROOT, loader: 'ts', sourcefile },
    bundle: true, platform: 'browser', format: 'esm', write: false, logLevel: 'silent', metafile: true,
    // examples import 'kilnjs' (tsconfig.json "paths": the sources, as under tsx) and node:url
    // for their CLI entry; the CLI part never runs in the page (it checks process.argv, which
    // the page stubs as empty)
    tsconfig: `${ROOT}tsconfig.json`,
    // package.json's "sideEffects" describes the package's modules; the examples' and test
    // helpers' are not listed there, and must keep what they do on import
    ignoreAnnotations: true,
    plugins: [{
      name: 'stub-node-url',
      setup(b) {
        b.onResolve({ filter: /^node:url$/ }, () => ({ path: 'node:url', namespace: 'stub' }));
        b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({ contents: 'export const pathToFileURL = () => ({ href: "" });', loader: 'js' }));
      },
    }],
    banner: { js: 'const process = { argv: [], env: {} };' },
  });
  const nodeImports = Object.values(r.metafile!.inputs).flatMap((i) => i.imports.filter((m) => m.path.startsWith('node:') && m.path !== 'node:url'));
  assert.deepEqual(nodeImports, [], 'nothing but the stubbed node:url reaches Node built-ins');
  return r.outputFiles[0]!.text;
}

/** An HTML document running `js` as a module script. */
export function pageHtml(js: string, title = 'kiln webgpu'): string {
  return `<!doctype html><meta charset="utf-8"><title>${title}</title><script type="module">${js.replace(/<\/script/gi, '<\\/script')}</script>`;
}

export interface WebGpuPage {
  readonly browser: Browser;
  readonly page: Page;
  /** uncaught page errors and console errors so far */
  readonly errors: string[];
  close(): Promise<void>;
}

/** `html` served from 127.0.0.1 and loaded in headless Chromium with WebGPU enabled. */
export async function openWebGpuPage(html: string): Promise<WebGpuPage> {
  const browser = await launchChromium(undefined, WEBGPU_ARGS);
  const served = await servePage(html);
  const errors: string[] = [];
  let page: Page | null = null;
  const close = async () => {
    await page?.close();
    await served.close();
    await browser.close();
  };
  try {
    page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    await page.goto(served.url, { waitUntil: 'load' });
    return { browser, page, errors, close };
  } catch (e) {
    await close();
    throw e;
  }
}
