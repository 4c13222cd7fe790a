// The advisor's HTML report: one self-contained file (inline CSS and SVG, no scripts, no
// network): verdict, checklist, per-call latency with warm-up and break-even, cumulative
// time, speedup per backend, the process restart with a cold and a warm persistent cache, the
// shape policies (tables), cost projection, compiler facts.

import type { AdvisorReport } from './report.js';
import type { BackendMeasurement } from './measure.js';
import type { DynamicShapes } from './shape-policies.js';
import type { TrainForm, TrainingForms } from './train-forms.js';

const W = 760, H = 300, M = { l: 64, r: 20, t: 28, b: 44 };

export function esc(s: unknown): string {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const num = (x: number | null | undefined): number => (typeof x === 'number' && Number.isFinite(x) ? x : NaN);
const f1 = (x: number): string => (Math.round(x * 10) / 10).toString();
function fmtMs(x: number | null | undefined): string {
  const v = num(x);
  if (Number.isNaN(v)) return 'n/a';
  return v >= 100 ? `${v.toFixed(0)} ms` : v >= 1 ? `${v.toFixed(2)} ms` : `${v.toFixed(3)} ms`;
}
function fmtUsd(x: number | null | undefined): string {
  const v = num(x);
  return Number.isNaN(v) ? 'n/a' : `${v < 0 ? '-' : ''}$${Math.abs(v).toLocaleString('en-US', { maximumFractionDigits: 0 })}`;
}
const fmtCount = (x: number): string => (x >= 1e6 ? `${(x / 1e6).toFixed(1)}M` : x >= 1e4 ? `${(x / 1e3).toFixed(0)}k` : String(Math.round(x)));

/** "Nice" ticks over [lo, hi]. */
function linTicks(lo: number, hi: number, n = 5): number[] {
  if (!(hi > lo)) return [lo];
  const step0 = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= step0) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
  return out;
}

function frame(title: string, body: string, xLabel: string, yLabel: string): string {
  return `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(title)}">
<title>${esc(title)}</title>
<rect x="0" y="0" width="${W}" height="${H}" fill="#fff"/>
<text x="${M.l}" y="18" class="t">${esc(title)}</text>
${body}
<text x="${(M.l + W - M.r) / 2}" y="${H - 8}" text-anchor="middle" class="ax">${esc(xLabel)}</text>
<text transform="translate(14 ${(M.t + H - M.b) / 2}) rotate(-90)" text-anchor="middle" class="ax">${esc(yLabel)}</text>
</svg>`;
}

/** Per-call latency over the measured calls (log scale), warm-up shaded, break-even marked. */
export function latencyChart(b: BackendMeasurement): string {
  const e = b.perCall.eagerMs.map(num), c = b.perCall.compiledMs.map(num);
  const n = Math.max(e.length, c.length);
  const all = [...e, ...c].filter((x) => x > 0);
  if (n === 0 || all.length === 0) return frame(`per-call latency (${b.backend})`, `<text x="${W / 2}" y="${H / 2}" text-anchor="middle">no data</text>`, 'call', 'ms');
  const lo = Math.log10(Math.min(...all)) - 0.05, hi = Math.log10(Math.max(...all)) + 0.05;
  const x = (i: number) => M.l + ((i - 1) / Math.max(1, n - 1)) * (W - M.l - M.r);
  const y = (v: number) => H - M.b - ((Math.log10(Math.max(v, 1e-9)) - lo) / Math.max(1e-9, hi - lo)) * (H - M.t - M.b);
  const parts: string[] = [];
  // warm-up
  const k = b.breakEven.warmupCalls;
  parts.push(`<rect class="warm" x="${f1(x(1) - 4)}" y="${M.t}" width="${f1(Math.max(8, x(k) - x(1) + 8))}" height="${H - M.t - M.b}"/>`);
  parts.push(`<text x="${f1(x(1))}" y="${M.t + 12}" class="note">warm-up (${k} traced call${k === 1 ? '' : 's'})</text>`);
  const firstTimed = n - num(b.eager.n) + 1;
  if (firstTimed > 1 && firstTimed <= n) parts.push(`<line class="grid" stroke-dasharray="3 3" x1="${f1(x(firstTimed))}" x2="${f1(x(firstTimed))}" y1="${M.t}" y2="${H - M.b}"/><text x="${f1(x(firstTimed) + 4)}" y="${H - M.b - 6}" class="note">timed calls (medians) &#8594;</text>`);
  // axes and log ticks
  for (let p = Math.floor(lo); p <= Math.ceil(hi); p++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** p;
      if (Math.log10(v) < lo || Math.log10(v) > hi) continue;
      parts.push(`<line class="grid" x1="${M.l}" x2="${W - M.r}" y1="${f1(y(v))}" y2="${f1(y(v))}"/><text x="${M.l - 6}" y="${f1(y(v) + 4)}" text-anchor="end" class="tick">${v >= 1 ? v : v.toPrecision(1)}</text>`);
    }
  }
  for (const t of linTicks(1, n, 8)) if (t >= 1) parts.push(`<text x="${f1(x(t))}" y="${H - M.b + 16}" text-anchor="middle" class="tick">${t}</text>`);
  parts.push(`<line class="axis" x1="${M.l}" x2="${M.l}" y1="${M.t}" y2="${H - M.b}"/><line class="axis" x1="${M.l}" x2="${W - M.r}" y1="${H - M.b}" y2="${H - M.b}"/>`);
  // steady medians
  for (const [v, cls] of [[num(b.eager.medianMs), 'eager'], [num(b.compiled.medianMs), 'compiled']] as const) {
    if (v > 0) parts.push(`<line class="med ${cls}" x1="${M.l}" x2="${W - M.r}" y1="${f1(y(v))}" y2="${f1(y(v))}"/>`);
  }
  const line = (vs: number[], cls: string) => {
    const pts = vs.map((v, i) => (v > 0 ? `${f1(x(i + 1))},${f1(y(v))}` : null)).filter(Boolean).join(' ');
    return `<polyline class="series ${cls}" points="${pts}"/>` + vs.map((v, i) => (v > 0 ? `<circle class="${cls}" cx="${f1(x(i + 1))}" cy="${f1(y(v))}" r="2.5"><title>call ${i + 1}: ${esc(fmtMs(v))}</title></circle>` : '')).join('');
  };
  parts.push(line(e, 'eager'), line(c, 'compiled'));
  // break-even
  const be = b.breakEven.calls;
  if (be !== null && be <= n) {
    parts.push(`<line class="be" x1="${f1(x(be))}" x2="${f1(x(be))}" y1="${M.t}" y2="${H - M.b}"/><text x="${f1(x(be) + 4)}" y="${M.t + 26}" class="note">break-even: call ${be}</text>`);
  } else {
    parts.push(`<text x="${W - M.r}" y="${M.t + 26}" text-anchor="end" class="note">break-even: ${be === null ? 'never (compiled is not faster)' : `call ${be.toLocaleString('en-US')} (beyond the ${n} measured)`}</text>`);
  }
  parts.push(legend([['eager', 'eager'], ['compiled', 'compiled'], ['be', 'break-even']]));
  return frame(`per-call latency, first ${n} calls (${b.backend}, log scale)`, parts.join('\n'), 'call', 'ms per call');
}

/**
 * Cumulative time of n calls. Solid: the break-even model (the first K calls as measured,
 * then the steady medians), so the lines cross exactly at the reported break-even; thin:
 * what the measured calls actually added up to.
 */
export function cumulativeChart(b: BackendMeasurement): string {
  const e = b.perCall.eagerMs.map(num), c = b.perCall.compiledMs.map(num);
  const n = Math.min(e.length, c.length);
  const be = b.breakEven.calls;
  const me = num(b.eager.medianMs), mc = num(b.compiled.medianMs);
  if (n === 0 || Number.isNaN(me) || Number.isNaN(mc)) return frame(`cumulative time (${b.backend})`, `<text x="${W / 2}" y="${H / 2}" text-anchor="middle">no data</text>`, 'calls', 'ms');
  const k = Math.min(n, Math.max(1, b.breakEven.warmupCalls));
  const X = Math.max(n, be !== null ? Math.min(Math.ceil(be * 1.3), 1e9) : n * 2);
  const sum = (arr: number[], m: number) => arr.slice(0, m).reduce((s, v) => s + v, 0);
  const model = (arr: number[], med: number, i: number) => (i <= k ? sum(arr, i) : sum(arr, k) + (i - k) * med);
  const measured = (arr: number[], i: number) => sum(arr, i);
  const steps = 240;
  const xs = [...new Set([...Array.from({ length: k + 1 }, (_, j) => j), ...Array.from({ length: steps + 1 }, (_, j) => Math.round((j * X) / steps))])].sort((p, q) => p - q);
  const xm = xs.filter((i) => i <= n).concat(n > (xs.filter((i) => i <= n).at(-1) ?? 0) ? [n] : []);
  const maxY = Math.max(model(e, me, X), model(c, mc, X), measured(e, n), measured(c, n)) * 1.05;
  const x = (i: number) => M.l + (i / X) * (W - M.l - M.r);
  const y = (v: number) => H - M.b - (v / maxY) * (H - M.t - M.b);
  const parts: string[] = [];
  for (const t of linTicks(0, maxY, 5)) parts.push(`<line class="grid" x1="${M.l}" x2="${W - M.r}" y1="${f1(y(t))}" y2="${f1(y(t))}"/><text x="${M.l - 6}" y="${f1(y(t) + 4)}" text-anchor="end" class="tick">${t >= 1000 ? `${f1(t / 1000)} s` : `${f1(t)}`}</text>`);
  for (const t of linTicks(0, X, 6)) parts.push(`<text x="${f1(x(t))}" y="${H - M.b + 16}" text-anchor="middle" class="tick">${fmtCount(t)}</text>`);
  parts.push(`<line class="axis" x1="${M.l}" x2="${M.l}" y1="${M.t}" y2="${H - M.b}"/><line class="axis" x1="${M.l}" x2="${W - M.r}" y1="${H - M.b}" y2="${H - M.b}"/>`);
  if (X > n) parts.push(`<rect class="proj" x="${f1(x(n))}" y="${M.t}" width="${f1(x(X) - x(n))}" height="${H - M.t - M.b}"/><text x="${f1(x(n) + 4)}" y="${M.t + 12}" class="note">beyond the ${n} measured calls: projected</text>`);
  parts.push(`<polyline class="series eager thin" points="${xm.map((i) => `${f1(x(i))},${f1(y(measured(e, i)))}`).join(' ')}"/>`);
  parts.push(`<polyline class="series compiled thin" points="${xm.map((i) => `${f1(x(i))},${f1(y(measured(c, i)))}`).join(' ')}"/>`);
  parts.push(`<polyline class="series eager" points="${xs.map((i) => `${f1(x(i))},${f1(y(model(e, me, i)))}`).join(' ')}"/>`);
  parts.push(`<polyline class="series compiled" points="${xs.map((i) => `${f1(x(i))},${f1(y(model(c, mc, i)))}`).join(' ')}"/>`);
  if (be !== null) parts.push(`<line class="be" x1="${f1(x(be))}" x2="${f1(x(be))}" y1="${M.t}" y2="${H - M.b}"/><text x="${f1(x(be) - 4)}" y="${M.t + 40}" text-anchor="end" class="note">break-even: ${be.toLocaleString('en-US')} calls</text>`);
  else parts.push(`<text x="${W - M.r}" y="${M.t + 40}" text-anchor="end" class="note">no break-even: compiled is not faster</text>`);
  parts.push(legend([['eager', 'eager'], ['compiled', 'compiled'], ['be', 'break-even']]));
  return frame(`cumulative time (${b.backend})`, parts.join('\n'), 'calls (solid: first K calls measured, then steady medians; thin: all measured calls)', 'ms, cumulative');
}

/** Steady-state speedup per backend (eager median / compiled median). */
export function speedupChart(backends: readonly BackendMeasurement[]): string {
  const rows = backends.map((b) => ({ name: b.backend, v: b.status === 'ok' ? num(b.speedup) : 0, failed: b.status !== 'ok' }));
  const h = Math.max(120, M.t + M.b + rows.length * 40);
  const maxV = Math.max(1.5, ...rows.map((r) => (Number.isNaN(r.v) ? 0 : r.v))) * 1.1;
  const x = (v: number) => M.l + 30 + (v / maxV) * (W - M.l - 30 - M.r);
  const parts: string[] = [];
  rows.forEach((r, i) => {
    const yy = M.t + 10 + i * 40;
    parts.push(`<text x="${M.l + 24}" y="${yy + 17}" text-anchor="end" class="tick">${esc(r.name)}</text>`);
    if (r.failed) parts.push(`<text x="${x(0) + 4}" y="${yy + 17}" class="note">failed</text>`);
    else parts.push(`<rect class="bar ${r.v > 1 ? 'good' : 'bad'}" x="${f1(x(0))}" y="${yy}" width="${f1(Math.max(1, x(r.v) - x(0)))}" height="24"><title>${esc(r.name)}: ${r.v.toFixed(2)}x</title></rect><text x="${f1(x(r.v) + 4)}" y="${yy + 17}" class="tick">${r.v.toFixed(2)}x</text>`);
  });
  parts.push(`<line class="be" x1="${f1(x(1))}" x2="${f1(x(1))}" y1="${M.t}" y2="${h - M.b + 6}"/><text x="${f1(x(1) + 4)}" y="${h - M.b + 18}" class="note">1x = eager</text>`);
  return `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${h}" width="${W}" height="${h}" role="img" aria-label="speedup per backend"><title>speedup per backend</title><rect x="0" y="0" width="${W}" height="${h}" fill="#fff"/><text x="${M.l}" y="18" class="t">steady-state speedup per backend (eager median / compiled median)</text>${parts.join('\n')}</svg>`;
}

/** Monthly projection: compute (USD, or hours without a cost figure) eager vs compiled, and engineering. */
export function costChart(r: AdvisorReport): string {
  const p = r.projection;
  const usd = p.monthlyComputeCostUsd !== null && p.computeSavingUsdPerMonth !== null;
  const rows: { label: string; v: number; cls: string; text: string }[] = usd
    ? [
        { label: 'eager compute', v: p.monthlyComputeCostUsd!, cls: 'eager', text: fmtUsd(p.monthlyComputeCostUsd) },
        { label: 'compiled compute', v: p.monthlyComputeCostUsd! - p.computeSavingUsdPerMonth!, cls: 'compiled', text: `${fmtUsd(p.monthlyComputeCostUsd! - p.computeSavingUsdPerMonth!)} (incl. warm-up)` },
        { label: 'engineering / month', v: p.engineeringCostUsdPerMonth, cls: 'eng', text: `${fmtUsd(p.engineeringCostUsdPerMonth)} (${fmtUsd(p.engineeringCostUsd)} over ${p.amortizationMonths} months)` },
        { label: 'net saving', v: p.netSavingUsdPerMonth!, cls: p.netSavingUsdPerMonth! >= 0 ? 'good' : 'bad', text: `${fmtUsd(p.netSavingUsdPerMonth)} / month` },
      ]
    : [
        { label: 'eager compute', v: p.eagerHoursPerMonth, cls: 'eager', text: `${p.eagerHoursPerMonth.toFixed(2)} h` },
        { label: 'compiled compute', v: p.compiledHoursPerMonth, cls: 'compiled', text: `${p.compiledHoursPerMonth.toFixed(2)} h (incl. ${p.warmupHoursPerMonth.toFixed(3)} h warm-up)` },
        { label: 'saved', v: p.savedHoursPerMonth, cls: p.savedHoursPerMonth >= 0 ? 'good' : 'bad', text: `${p.savedHoursPerMonth.toFixed(2)} h / month` },
      ];
  const h = M.t + 16 + rows.length * 40 + 16;
  const maxV = Math.max(1e-9, ...rows.map((x) => Math.abs(x.v))) * 1.1;
  const L = M.l + 90;
  const x0 = L + (rows.some((x) => x.v < 0) ? (W - L - M.r) * 0.25 : 0);
  const scale = (W - x0 - M.r - 150) / maxV;
  const parts: string[] = [];
  rows.forEach((row, i) => {
    const yy = M.t + 20 + i * 40;
    const w = Math.abs(row.v) * scale;
    const bx = row.v >= 0 ? x0 : x0 - w;
    parts.push(`<text x="${L - 6}" y="${yy + 17}" text-anchor="end" class="tick">${esc(row.label)}</text><rect class="bar ${row.cls}" x="${f1(bx)}" y="${yy}" width="${f1(Math.max(1, w))}" height="24"/><text x="${f1(x0 + Math.max(0, row.v) * scale + 6)}" y="${yy + 17}" class="tick">${esc(row.text)}</text>`);
  });
  parts.push(`<line class="axis" x1="${f1(x0)}" x2="${f1(x0)}" y1="${M.t + 14}" y2="${h - 10}"/>`);
  const title = usd ? 'projected monthly cost' : 'projected monthly compute time (no --monthly-compute-cost)';
  return `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${h}" width="${W}" height="${h}" role="img" aria-label="cost projection"><title>cost projection</title><rect x="0" y="0" width="${W}" height="${h}" fill="#fff"/><text x="${M.l}" y="18" class="t">${esc(title)}</text><text x="${M.l}" y="34" class="tick">${esc(p.callsPerDay.toLocaleString('en-US'))} calls/day, ${esc(fmtCount(p.callsPerProcess))} calls per process</text>${parts.join('\n')}</svg>`;
}

function legend(items: [string, string][]): string {
  const widths = items.map(([, label]) => 30 + label.length * 6.2);
  let x = W - M.r - widths.reduce((a, b) => a + b, 0);
  return items.map(([cls, label], i) => {
    const s = `<line class="${cls === 'be' ? 'be' : `series ${cls}`}" x1="${f1(x)}" x2="${f1(x + 18)}" y1="14" y2="14"/><text x="${f1(x + 22)}" y="18" class="tick">${esc(label)}</text>`;
    x += widths[i]!;
    return s;
  }).join('');
}

const CSS = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:820px;color:#1d2330;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e3e6ec;padding-bottom:4px}
.sub{color:#5b6475} .verdict{font-size:20px;font-weight:600;padding:12px 16px;border-radius:8px;margin:16px 0 8px}
.v-go{background:#e5f6ea;color:#17653a} .v-warn{background:#fff4de;color:#7a5200} .v-stop{background:#fde8e8;color:#8f1d1d}
table{border-collapse:collapse;width:100%;margin:6px 0} td,th{border-bottom:1px solid #eceef2;padding:4px 8px;text-align:left;vertical-align:top} th{color:#5b6475;font-weight:500}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
pre{background:#f4f5f7;padding:8px 12px;border-radius:6px;overflow-x:auto}
.pass{color:#17653a;font-weight:600} .fail{color:#b42318;font-weight:600} .unknown{color:#7a5200;font-weight:600}
code{background:#f3f4f7;padding:1px 4px;border-radius:3px;font-size:12.5px}
svg.chart{display:block;margin:10px 0;max-width:100%;height:auto;border:1px solid #eceef2;border-radius:6px}
svg .t{font-size:13px;font-weight:600;fill:#1d2330} svg .ax{font-size:12px;fill:#5b6475} svg .tick{font-size:11px;fill:#5b6475} svg .note{font-size:11px;fill:#7a5200}
svg .grid{stroke:#e3e6ec} svg .axis{stroke:#9aa1ad}
svg .series{fill:none;stroke-width:1.8} svg .series.eager{stroke:#5470c6} svg .series.compiled{stroke:#e8743b} svg .series.thin{stroke-width:1;stroke-opacity:.45}
svg circle.eager{fill:#5470c6} svg circle.compiled{fill:#e8743b}
svg .med{stroke-dasharray:2 4;stroke-width:1} svg .med.eager{stroke:#5470c6} svg .med.compiled{stroke:#e8743b}
svg .be{stroke:#2f9e44;stroke-width:1.5;stroke-dasharray:6 3} svg .warm{fill:#fff4de} svg .proj{fill:#f6f7f9}
svg .bar.eager{fill:#5470c6} svg .bar.compiled{fill:#e8743b} svg .bar.eng{fill:#9aa1ad} svg .bar.good{fill:#2f9e44} svg .bar.bad{fill:#d9480f}
`;

/** Restarted-process first calls per backend: cold vs warm persistent cache. */
export function cacheTable(r: AdvisorReport): string {
  const rows = r.backends.map((b) => {
    const c = b.cacheCheck;
    if (c.status !== 'ok' || !c.cold || !c.warm) return `<tr><td>${esc(b.backend)}</td><td colspan="5" class="unknown">${esc(c.status === 'failed' ? 'failed' : 'not measured')}: ${esc(c.reason)}</td></tr>`;
    const what = c.skipped === 'tracing' ? 'tracing + code generation' : c.skipped === 'code generation' ? 'code generation (traced)' : 'nothing';
    return `<tr><td>${esc(b.backend)}</td><td class="n">${c.calls}</td><td class="n">${fmtMs(c.cold.totalMs)}</td><td class="n">${fmtMs(c.warm.totalMs)}</td><td>${c.warm.cache.hits} hits, ${c.warm.cache.traceSkips} trace skips: ${esc(what)} skipped</td><td class="n">${c.breakEven ? `${fmtMs(c.breakEven.extraWarmupMs)} / ${c.breakEven.calls === null ? 'never' : c.breakEven.calls.toLocaleString('en-US')}` : 'n/a'}</td></tr>`;
  }).join('');
  const cfg = r.cacheConfig;
  return `<table id="cache"><tr><th>backend</th><th>calls</th><th>cold cache</th><th>warm cache</th><th>what the warm cache skipped</th><th>warm W / break-even</th></tr>${rows}</table>
<p class="sub">First calls in a fresh process (start-up excluded), on an empty temporary cache folder, then again on the same folder. Your cache folder: <code>${esc(cfg.dir)}</code> (${cfg.from === 'default' ? 'default' : esc(cfg.from)}; ${cfg.disabled ? 'turned off by KILN_CACHE' : cfg.writable ? 'writable' : 'not writable'}).</p>`;
}

/** The shape policies over the production shapes: a table (no chart: a handful of numbers). */
export function dynamicTable(d: DynamicShapes): string {
  const head = `<p class="sub">${d.shapes.length} shapes (${esc(d.shapes.join('; '))}) cycled ${d.passes} times per variant on ${esc(d.backend)}; steady = mean over the shapes of each shape's median after the first pass.</p>`;
  if (d.status !== 'ok') return `${head}<p class="unknown">${esc(d.status === 'failed' ? 'failed' : 'not measured')}: ${esc(d.reason)}</p>`;
  const rx = (v: number | null) => (v === null ? 'n/a' : `${v.toFixed(2)}x`);
  const rows = d.policies.map((x) => {
    const name = `${esc(x.policy)}${x.policy === d.recommended ? ' <span class="pass">recommended</span>' : ''}<br><code>${esc(x.options)}</code>`;
    if (x.status !== 'ok') return `<tr><td>${name}</td><td colspan="6" class="unknown">${esc(x.status)}: ${esc(x.reason)}</td></tr>`;
    const bk = x.buckets.length ? `<br><span class="sub">buckets: ${x.buckets.map((b) => `${b.bucket} &larr; ${esc(b.sizes.join(', '))}`).join('; ')}</span>` : '';
    const eager = x.policy === 'eager';
    return `<tr><td>${name}${bk}</td><td class="n">${eager ? '-' : x.compiles}</td><td class="n">${eager ? '-' : fmtMs(x.compileTimeMs)}</td><td class="n">${fmtMs(x.firstPassMs)}</td><td class="n">${fmtMs(x.steadyMs)}</td><td class="n">${rx(x.vsStatic)}</td><td class="n">${rx(x.speedup)}</td></tr>`;
  }).join('');
  return `${head}<table id="dynamic-shapes"><tr><th>policy</th><th>compiles</th><th>compile time</th><th>1st pass</th><th>steady / call</th><th>vs static</th><th>vs eager</th></tr>${rows}</table>
<ul>${d.reasons.map((x) => `<li>${esc(x)}</li>`).join('')}</ul>`;
}

/** The two training forms beside eager: a table. */
export function trainingFormsTable(f: TrainingForms): string {
  if (f.status !== 'ok') return `<p class="unknown">${esc(f.status)}: ${esc(f.reason)}</p>`;
  const c = f.moduleCompiler;
  const rec = (x: TrainForm) => (x === f.recommended ? ' <span class="pass">recommended</span>' : '');
  return `<table id="training-forms"><tr><th>form (${esc(f.backend)})</th><th>median step</th><th>vs eager</th></tr>
<tr><td>eager</td><td class="n">${fmtMs(f.eagerMs)}</td><td class="n">1.00x</td></tr>
<tr><td>whole step: <code>kiln.compile(step)</code>${rec('whole step')}</td><td class="n">${fmtMs(f.wholeStepMs)}</td><td class="n">${(f.eagerMs / f.wholeStepMs).toFixed(2)}x</td></tr>
<tr><td>compiled module in the loop: <code>kiln.compile(model)</code>${rec('compiled module')}</td><td class="n">${fmtMs(f.moduleMs)}</td><td class="n">${f.moduleSpeedup.toFixed(2)}x</td></tr></table>
<p class="sub">compiled module: losses vs eager ${esc(f.moduleLossRelErr.toExponential(2))}; ${c.interpretedReplays} node-by-node replays, ${c.eagerFallbacks} eager fallbacks, ${c.fusionFallbacks} fusion fallbacks.</p>
<p>${esc(f.why)}</p>`;
}

/** The whole report as one HTML document. */
export function renderHtml(r: AdvisorReport): string {
  const p = r.backends.find((b) => b.backend === r.primaryBackend) ?? r.backends[0]!;
  const vcls = r.verdict.verdict === 'keep eager for now' || r.verdict.verdict === 'do not compile' ? (r.verdict.verdict === 'do not compile' ? 'v-warn' : 'v-stop') : 'v-go';
  const row = (k: string, v: string) => `<tr><th>${esc(k)}</th><td>${v}</td></tr>`;
  const c = p.compiler;
  const backendRows = r.backends.map((b) => `<tr><td>${esc(b.backend)}</td><td class="n">${fmtMs(b.eager.medianMs)} / ${fmtMs(b.eager.p95Ms)}</td><td class="n">${b.status === 'ok' ? `${fmtMs(b.compiled.medianMs)} / ${fmtMs(b.compiled.p95Ms)}` : `failed: ${esc(b.error)}`}</td><td class="n">${b.status === 'ok' ? `${num(b.speedup).toFixed(2)}x${b.speedupInterval ? `<br><span class="sub">${b.speedupInterval[0].toFixed(2)}-${b.speedupInterval[1].toFixed(2)}</span>` : ''}` : '-'}</td><td class="n">${fmtMs(b.eager.firstCallMs)}</td><td class="n">${fmtMs(b.compiled.firstCallMs)}</td><td class="n">${fmtMs(b.compiler.compileTimeMsTotal)}</td><td class="n">${b.breakEven.calls === null ? 'never' : b.breakEven.calls.toLocaleString('en-US')}</td></tr>`).join('');
  const bytes = (x: number | null) => (x === null ? 'n/a' : x >= 2 ** 20 ? `${(x / 2 ** 20).toFixed(1)} MiB` : x >= 1024 ? `${(x / 1024).toFixed(1)} KiB` : `${x} B`);
  const sci = (x: number | null) => (x === null ? 'n/a (not comparable)' : x.toExponential(2));
  const j = r.projection;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>kiln advise: ${esc(r.workload.name)}</title>
<style>${CSS}</style></head>
<body>
<h1>kiln advise: ${esc(r.workload.name)}</h1>
<div class="sub">${esc(r.workload.kind)} workload from <code>${esc(r.workload.source)}</code>${r.workload.description ? ` &middot; ${esc(r.workload.description)}` : ''}<br>
inputs ${esc(r.workload.inputShapes.join(', '))} &middot; ${r.options.warmup} warm-up + ${r.options.calls} timed calls per variant &middot; ${esc(r.machine.cpuModel)}, ${r.machine.logicalCpus} CPUs, Node ${esc(r.machine.node)} &middot; ${esc(r.generatedAt)}</div>
<div class="verdict ${vcls}" id="verdict">Verdict: ${esc(r.verdict.headline)}${r.verdict.confidence === 'uncertain' ? ' <small>(uncertain: noisy timings)</small>' : ''}</div>
<div class="sub">figures from: ${esc(r.verdict.basis)}</div>
<ul>${r.verdict.reasons.map((x) => `<li>${esc(x)}</li>`).join('')}</ul>
${r.verdict.code ? `<h3>Adopt it</h3>\n<pre id="adopt"><code>${esc(r.verdict.code)}</code></pre>` : ''}

<h2>Go-live checklist</h2>
<table>${r.checklist.map((x) => `<tr><td class="${x.status}">${x.status}</td><td>${esc(x.item)}</td><td>${esc(x.detail)}</td></tr>`).join('')}</table>

<h2>Latency</h2>
<table><tr><th>backend</th><th>eager median / p95</th><th>compiled median / p95</th><th>speedup</th><th>1st eager</th><th>1st compiled</th><th>compile time</th><th>break-even (calls)</th></tr>${backendRows}</table>
${latencyChart(p)}
${cumulativeChart(p)}
<p class="sub">${esc(r.breakEvenDefinition)}. Here: K = ${p.breakEven.warmupCalls}, W = ${fmtMs(p.breakEven.extraWarmupMs)}, s = ${fmtMs(p.breakEven.perCallSavingMs)}.</p>
${speedupChart(r.backends)}

<h2>Process restart: the persistent compile cache</h2>
${cacheTable(r)}
${r.dynamicShapes ? `<h2>Dynamic shapes</h2>\n${dynamicTable(r.dynamicShapes)}` : ''}
${r.trainingForms ? `<h2>Training forms</h2>\n${trainingFormsTable(r.trainingForms)}` : ''}

<h2>Cost projection</h2>
${costChart(r)}
<table>
${row('calls per day / per month', `${j.callsPerDay.toLocaleString('en-US')} / ${j.callsPerMonth.toLocaleString('en-US')}`)}
${row('calls per process start', `${Math.round(j.callsPerProcess).toLocaleString('en-US')} (${Math.round(j.processStartsPerMonth).toLocaleString('en-US')} starts per month)`)}
${row('compute per month', `eager ${j.eagerHoursPerMonth.toFixed(2)} h, compiled ${j.compiledHoursPerMonth.toFixed(2)} h including ${j.warmupHoursPerMonth.toFixed(3)} h of warm-up${j.warmupBasis === 'warm cache' ? ` (process starts with a warm persistent cache; ${j.coldWarmupHoursPerMonth.toFixed(3)} h cold)` : ''}: ${j.savedHoursPerMonth.toFixed(2)} h saved (${(j.savedFraction * 100).toFixed(1)}%)`)}
${row('cost per month', j.monthlyComputeCostUsd === null ? 'not given (--monthly-compute-cost)' : `${fmtUsd(j.computeSavingUsdPerMonth)} saved of ${fmtUsd(j.monthlyComputeCostUsd)}; net of engineering ${fmtUsd(j.netSavingUsdPerMonth)}${j.paybackMonths !== null ? `; pays back in ${j.paybackMonths.toFixed(1)} months` : ''}`)}
${row('engineering', `${r.usage.engineerWeeks} weeks x ${fmtUsd(r.usage.engineerWeekCostUsd)} = ${fmtUsd(j.engineeringCostUsd)}, amortized over ${j.amortizationMonths} months`)}
${r.usage.assumptions.length ? row('assumed', esc(r.usage.assumptions.join('; '))) : ''}
</table>

<h2>Accuracy, compiler, memory (${esc(p.backend)})</h2>
<table>
${row('accuracy', `${esc(p.accuracy.compared)}: max rel. error ${sci(p.accuracy.maxRelErr)} (tolerance ${p.accuracy.tolerance})${p.accuracy.gradsMaxRelErr != null ? `; first-step gradients ${sci(p.accuracy.gradsMaxRelErr)}` : ''}${p.accuracy.paramsMaxRelErr !== null ? `; parameter drift ${sci(p.accuracy.paramsMaxRelErr)} (informational)` : ''} &mdash; <span class="${p.accuracy.ok ? 'pass' : 'fail'}">${p.accuracy.ok ? 'ok' : 'problem'}</span>`)}
${row('compiles / graphs / replays', `${c.compiles} / ${c.graphsCompiled} / ${c.cacheHits + c.segmentHits} (traced calls: ${esc(c.tracedCalls.slice(0, 20).join(', '))}${c.tracedCalls.length > 20 ? ', ...' : ''})`)}
${row('graph breaks', c.graphBreaks.length ? c.graphBreaks.map((b) => `<code>${esc(b.location)}</code>: ${esc(b.reason)}${b.count > 1 ? ` (x${b.count})` : ''}<br><span class="sub">${esc(b.hint)}</span>`).join('<br>') : '0')}
${row('recompiles', c.recompiles.length ? c.recompiles.map((x) => esc(x.reason)).join('<br>') : '0')}
${row('eager fallbacks / fusion fallbacks', `${c.eagerFallbacks} / ${c.fusionFallbacks}${c.fallbackReasons.length ? `: ${esc(c.fallbackReasons.slice(0, 5).join('; '))}` : ''}`)}
${row('graphs (ops -> kernels)', c.graphs.map((g) => `${g.ops} -> ${g.kernels ?? '?'}`).join(', ') || 'n/a')}
${row('compile time', `${fmtMs(c.compileTimeMsFirstCall)} in the first call, ${fmtMs(c.compileTimeMsTotal)} in all (kiln.stats().compileTimeMs)`)}
${row('peak memory growth per call', `eager ${bytes(p.eager.peakBytes)}, compiled ${bytes(p.compiled.peakBytes)} (kiln tensors) + ${bytes(p.compiled.planPeakBytes)} planned program buffers; first call: eager ${bytes(p.eager.firstCallPeakBytes)}, compiled ${bytes(p.compiled.firstCallPeakBytes)}`)}
</table>
${r.notMeasured.length ? `<h2>Not measured</h2>\n<table id="not-measured">${r.notMeasured.map((x) => `<tr><td class="unknown">not measured</td><td>${esc(x.what)}</td><td>${esc(x.reason)}</td></tr>`).join('')}</table>` : ''}
<p class="sub">Generated by <code>${esc(r.command ?? 'kilnjs advise')}</code>. No scripts, no network: this file is the whole report.</p>
</body></html>
`;
}
