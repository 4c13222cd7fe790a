// The advisor's HTML report in a real browser: a report from a short real measurement (the
// mlp example), opened in headless Chromium (Debian's `chromium`, driven by playwright-core):
// no console errors, every chart's SVG present with drawn content, and a screenshot whose
// chart areas are not blank. Skips only when /usr/bin/chromium is absent (CI installs it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { advise, renderHtml, type Io } from '../src/advisor/index.js';
import { chromiumUnavailableReason, decodePng, inkIn, launchChromium, renderReport } from '../scripts/lib/chromium.js';

const quiet: Io = { out: () => {}, err: () => {} };
const skip = chromiumUnavailableReason();

test('the HTML report renders its charts in headless Chromium with no console errors', { skip: skip ?? false, timeout: 180_000 }, async () => {
  // a real (short) measurement, with a cost figure so the cost chart shows dollars
  const { report } = await advise(['--example', 'mlp', '--calls', '8', '--warmup', '3', '--no-html', '--quiet', '--process-lifetime', '7d', '--calls-per-day', '1000000', '--monthly-compute-cost', '5000'], quiet);
  const html = renderHtml(report);
  const browser = await launchChromium();
  try {
    const r = await renderReport(browser, html);
    assert.deepEqual(r.errors, [], 'no console errors, page errors or failed requests');

    // the four charts: latency, cumulative time, speedup per backend, cost
    const labels = r.charts.map((c) => c.label);
    assert.equal(r.charts.length, 4, labels.join(', '));
    assert.ok(labels.some((l) => /per-call latency/.test(l)), labels.join(', '));
    assert.ok(labels.some((l) => /cumulative/.test(l)), labels.join(', '));
    assert.ok(labels.includes('speedup per backend'), labels.join(', '));
    assert.ok(labels.includes('cost projection'), labels.join(', '));
    for (const c of r.charts) {
      assert.ok(c.box.width > 300 && c.box.height > 80, `${c.label}: laid out at ${c.box.width}x${c.box.height}`);
      assert.ok(c.shapes > 5, `${c.label}: ${c.shapes} drawn elements`);
    }
    // the line charts plot every measured call (11 per variant here)
    for (const c of r.charts.filter((x) => /latency|cumulative/.test(x.label))) assert.ok(c.points >= 2 * 11, `${c.label}: ${c.points} points`);

    // the screenshot: each chart's area has ink (not a blank white box), in several colors
    const img = decodePng(r.png);
    assert.ok(img.width >= 800 && img.height > 1000, `screenshot ${img.width}x${img.height}`);
    for (const c of r.charts) {
      const ink = inkIn(img, c.box);
      const frac = ink.ink / ink.pixels;
      assert.ok(frac > 0.01, `${c.label}: only ${(frac * 100).toFixed(2)}% of the chart's pixels are drawn`);
      assert.ok(ink.colors >= 3, `${c.label}: ${ink.colors} distinct colors`);
    }
    // the latency chart draws both series: kiln's eager blue and compiled orange are on screen
    const lat = r.charts.find((c) => /per-call latency/.test(c.label))!;
    const has = (rgb: [number, number, number]): boolean => {
      const [x0, y0] = [Math.floor(lat.box.x), Math.floor(lat.box.y)];
      for (let y = y0; y < y0 + lat.box.height && y < img.height; y++) {
        for (let x = x0; x < x0 + lat.box.width && x < img.width; x++) {
          const k = (y * img.width + x) * 4;
          if (Math.abs(img.rgba[k]! - rgb[0]) < 12 && Math.abs(img.rgba[k + 1]! - rgb[1]) < 12 && Math.abs(img.rgba[k + 2]! - rgb[2]) < 12) return true;
        }
      }
      return false;
    };
    assert.ok(has([0x54, 0x70, 0xc6]), 'eager series (blue) drawn');
    assert.ok(has([0xe8, 0x74, 0x3b]), 'compiled series (orange) drawn');
  } finally {
    await browser.close();
  }
});

test('decodePng reads what Chromium writes, and a blank image has no ink', { skip: skip ?? false, timeout: 60_000 }, async () => {
  const browser = await launchChromium();
  try {
    const blank = await renderReport(browser, '<!doctype html><html><head><meta charset="utf-8"><title>blank</title></head><body style="margin:0;background:#fff"></body></html>', { width: 320 });
    assert.deepEqual(blank.errors, []);
    const img = decodePng(blank.png);
    assert.equal(img.width, 320);
    assert.equal(inkIn(img, { x: 0, y: 0, width: img.width, height: img.height }).ink, 0);
    const red = await renderReport(browser, '<!doctype html><html><head><meta charset="utf-8"><title>red</title></head><body style="margin:0"><div style="width:100px;height:50px;background:#f00"></div></body></html>', { width: 320 });
    const r = decodePng(red.png);
    const ink = inkIn(r, { x: 0, y: 0, width: r.width, height: r.height });
    assert.equal(ink.ink, 100 * 50);
    assert.deepEqual([...r.rgba.subarray(0, 4)], [255, 0, 0, 255]);
  } finally {
    await browser.close();
  }
});
