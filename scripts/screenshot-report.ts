// Takes docs/advisor-report.png: runs `kiln advise` on the default example (the recommender)
// with illustrative usage figures, renders its HTML report in headless Chromium (the launcher
// the HTML test uses) and screenshots the whole page.
//
//   npx tsx scripts/screenshot-report.ts [--out docs/advisor-report.png] [advise options...]

import { resolve } from 'node:path';
import { advise, renderHtml } from '../src/advisor/index.js';
import { launchChromium, renderReport } from './lib/chromium.js';

const args = process.argv.slice(2);
const i = args.indexOf('--out');
const out = resolve(i >= 0 ? args.splice(i, 2)[1]! : 'docs/advisor-report.png');
// a long-lived training job with a compute bill: every section of the report has content
const adviseArgs = args.length ? args : ['--process-lifetime', '7d', '--calls-per-day', '2000000', '--monthly-compute-cost', '3000'];

const { report } = await advise([...adviseArgs, '--no-html'], { out: (s) => console.log(s), err: (s) => console.error(s) });
const browser = await launchChromium();
try {
  const r = await renderReport(browser, renderHtml(report), { screenshotPath: out });
  if (r.errors.length) throw new Error(`the report logged errors in Chromium:\n${r.errors.join('\n')}`);
  console.log(`wrote ${out} (${r.charts.length} charts)`);
} finally {
  await browser.close();
}
