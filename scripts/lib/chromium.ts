// Headless Chromium for checking and screenshotting kiln's HTML reports: Debian's `chromium`
// package driven by playwright-core (no browser download: playwright-core ships none). Used by
// test/advisor-html.test.ts and scripts/screenshot-report.ts, so both launch it the same way.
//
// Flags (../shared/FACTS.md): --no-sandbox because CI runs as root; the rest stop Chromium
// from reaching for the network (component updates, sync, QUIC) on machines that have none,
// where those attempts only add start-up time and log noise.

import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inflateSync } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
] as const;

/** Why Chromium cannot be used here, or null when it can. */
export function chromiumUnavailableReason(path: string = CHROMIUM_PATH): string | null {
  return existsSync(path) ? null : `${path} not found: install Debian's chromium package (apt-get install -y chromium)`;
}

/**
 * WebGPU in headless Chromium without a GPU (FACTS.md): `navigator.gpu` gets a SwiftShader
 * adapter (vendor google, architecture swiftshader) with this flag.
 */
export const WEBGPU_ARGS = ['--enable-unsafe-webgpu'] as const;

export async function launchChromium(path: string = CHROMIUM_PATH, extraArgs: readonly string[] = []): Promise<Browser> {
  const why = chromiumUnavailableReason(path);
  if (why) throw new Error(why);
  return chromium.launch({ executablePath: path, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs] });
}

/** Serves one HTML document from 127.0.0.1 (FACTS.md: pages behave best served, not from file://). */
export async function servePage(html: string, headers: Readonly<Record<string, string>> = {}): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.url === '/' || req.url === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers });
      res.end(html);
    } else if (req.url === '/favicon.ico') {
      res.writeHead(204).end(); // the browser asks for it on its own; the report does not
    } else {
      res.writeHead(404).end(); // a report that fetches anything shows up as a console error
    }
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise<void>((ok) => server.close(() => ok())) };
}

export interface ChartInfo {
  label: string;
  /** layout box in CSS pixels, relative to the page (full-page screenshot coordinates) */
  box: { x: number; y: number; width: number; height: number };
  /** drawn elements (lines, polylines, rects, circles, text) inside the SVG */
  shapes: number;
  /** total number of points of the SVG's polylines */
  points: number;
}

export interface RenderedReport {
  /** console messages of type 'error', uncaught page errors and failed requests */
  errors: string[];
  charts: ChartInfo[];
  /** full-page PNG screenshot */
  png: Buffer;
}

/** Opens `html` in a fresh page, waits for it to load, and reports its errors, charts and a screenshot. */
export async function renderReport(browser: Browser, html: string, opts: { width?: number; screenshotPath?: string } = {}): Promise<RenderedReport> {
  const served = await servePage(html);
  const page: Page = await browser.newPage({ viewport: { width: opts.width ?? 900, height: 800 }, deviceScaleFactor: 1 });
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()}`));
  page.on('response', (r) => {
    if (r.status() >= 400) errors.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  try {
    await page.goto(served.url, { waitUntil: 'load' });
    const charts = await page.$$eval('svg.chart', (svgs) =>
      svgs.map((svg) => {
        const r = svg.getBoundingClientRect();
        const polys = [...svg.querySelectorAll('polyline')];
        return {
          label: svg.getAttribute('aria-label') ?? '',
          box: { x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height },
          shapes: svg.querySelectorAll('line, polyline, rect, circle, path, text').length,
          points: polys.reduce((n, p) => n + (p.getAttribute('points') ?? '').trim().split(/\s+/).filter(Boolean).length, 0),
        };
      }),
    );
    const png = await page.screenshot({ fullPage: true, type: 'png', ...(opts.screenshotPath ? { path: opts.screenshotPath } : {}) });
    return { errors, charts, png };
  } finally {
    await page.close();
    await served.close();
  }
}

// ---------------------------------------------------------------- PNG decoding (for checks)

export interface DecodedPng {
  width: number;
  height: number;
  /** RGBA, 8 bits per channel, row-major */
  rgba: Uint8Array;
}

/**
 * Decodes the 8-bit, non-interlaced RGB/RGBA PNGs that Chromium's screenshots are (the PNG
 * spec's filter types 0-4 undone per row); anything else throws.
 */
export function decodePng(buf: Uint8Array): DecodedPng {
  const sig = [137, 80, 78, 71, 13, 10, 26, 10];
  if (!sig.every((b, i) => buf[i] === b)) throw new Error('not a PNG');
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let width = 0, height = 0, colorType = -1;
  const idat: Uint8Array[] = [];
  for (let off = 8; off + 8 <= buf.length;) {
    const len = dv.getUint32(off);
    const type = String.fromCharCode(...buf.subarray(off + 4, off + 8));
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = dv.getUint32(off + 8);
      height = dv.getUint32(off + 12);
      const depth = data[8], interlace = data[12];
      colorType = data[9]!;
      if (depth !== 8 || interlace !== 0 || (colorType !== 2 && colorType !== 6)) throw new Error(`unsupported PNG: depth ${depth}, color type ${colorType}, interlace ${interlace}`);
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  const bpp = colorType === 6 ? 4 : 3, stride = width * bpp;
  const raw = inflateSync(Buffer.concat(idat));
  const px = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)]!, src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = px.subarray(y * stride, (y + 1) * stride), up = y > 0 ? px.subarray((y - 1) * stride, y * stride) : new Uint8Array(stride);
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? row[i - bpp]! : 0, b = up[i]!, c = i >= bpp ? up[i - bpp]! : 0;
      let pred = 0;
      if (f === 1) pred = a;
      else if (f === 2) pred = b;
      else if (f === 3) pred = (a + b) >> 1;
      else if (f === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else if (f !== 0) throw new Error(`bad PNG filter ${f} in row ${y}`);
      row[i] = (src[i]! + pred) & 0xff;
    }
  }
  if (bpp === 4) return { width, height, rgba: px };
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0, j = 0; i < px.length; i += 3, j += 4) {
    rgba[j] = px[i]!;
    rgba[j + 1] = px[i + 1]!;
    rgba[j + 2] = px[i + 2]!;
    rgba[j + 3] = 255;
  }
  return { width, height, rgba };
}

/** Pixels in a box that differ from white by more than `threshold` in some channel, and the distinct colors among them (quantized to 4 bits). */
export function inkIn(img: DecodedPng, box: { x: number; y: number; width: number; height: number }, threshold = 24): { pixels: number; ink: number; colors: number } {
  const x0 = Math.max(0, Math.floor(box.x)), y0 = Math.max(0, Math.floor(box.y));
  const x1 = Math.min(img.width, Math.ceil(box.x + box.width)), y1 = Math.min(img.height, Math.ceil(box.y + box.height));
  let ink = 0;
  const colors = new Set<number>();
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      const k = (y * img.width + x) * 4;
      const r = img.rgba[k]!, g = img.rgba[k + 1]!, b = img.rgba[k + 2]!;
      if (255 - r > threshold || 255 - g > threshold || 255 - b > threshold) {
        ink++;
        colors.add(((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4));
      }
    }
  }
  return { pixels: Math.max(0, x1 - x0) * Math.max(0, y1 - y0), ink, colors: colors.size };
}
