// `npm run bench`: the side-by-side benchmarks in one run, then one markdown table.
//   1. bench/cpu.ts   W1–W7 and a 1024³ matmul: kiln eager, compiled js / wasm / native, and
//                     onnxruntime-node, TensorFlow.js (WebAssembly) and jax-js; floors; issue 5's bars
//   2. bench/eager.ts kiln eager against TensorFlow.js on its CPU backend (W1, W2, matmul), and
//                     the first eager op of fresh processes
// Each writes its own JSON under bench/results/; this runner writes bench/results/summary.md.
// Options after `--` go to bench/cpu.ts (e.g. `npm run bench -- --quick --only W1,W4`);
// `--summary-only` rebuilds the table from the JSON files already there.
// The benchmarks run one after another in child processes: never two timings at once.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const results = join(here, 'results');
const args = process.argv.slice(2);

function run(script: string, extra: string[]): number {
  console.log(`\n=== ${script} ${extra.join(' ')}`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, script), ...extra], { stdio: 'inherit' });
  return r.status ?? 1;
}

const failed: string[] = [];
// --summary-only: rebuild summary.md from the JSON files already written
if (!args.includes('--summary-only')) {
  if (run('cpu.ts', args) !== 0) failed.push('cpu.ts');
  if (run('eager.ts', []) !== 0) failed.push('eager.ts');
}

interface Timing { medianMs: number }
interface Variant { name: string; status: string; timing?: Timing; compileCold?: { firstCallMs: number } }
interface Workload { id: string; title: string; variants: Variant[] }
interface Bar { name: string; status: string; detail: string }
interface Floor { what: string; value: number | null; unit: string }

const fmt = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));

/** The markdown summary of bench/results/cpu.json (the table every issue's note quotes). */
function summarize(): string {
  const file = join(results, 'cpu.json');
  if (!existsSync(file)) return '_bench/results/cpu.json is missing: bench/cpu.ts did not finish._\n';
  const cpu = JSON.parse(readFileSync(file, 'utf8')) as { machine: Record<string, unknown>; workloads: Record<string, Workload>; bars: Bar[]; eagerBars?: Bar[]; floors: Record<string, Floor> };
  const names = [...new Set(Object.values(cpu.workloads).flatMap((w) => w.variants.map((v) => v.name)))];
  const L: string[] = [];
  L.push(`# kiln benchmarks (${String(cpu.machine.date ?? new Date().toISOString())})`, '');
  L.push(`Machine: ${String(cpu.machine.cpuModel ?? '?')}, ${String(cpu.machine.logicalCpus ?? '?')} cores, Node ${String(cpu.machine.node ?? process.version)}. Median ms per call (ratio to kiln eager).`, '');
  L.push(`| workload | ${names.join(' | ')} |`, `|---|${names.map(() => '---:').join('|')}|`);
  for (const w of Object.values(cpu.workloads)) {
    const eager = w.variants.find((v) => v.name === 'eager')?.timing?.medianMs;
    const cells = names.map((n) => {
      const v = w.variants.find((x) => x.name === n);
      if (!v?.timing) return v ? v.status : '–';
      return `${fmt(v.timing.medianMs)}${eager ? ` (${(eager / v.timing.medianMs).toFixed(2)}×)` : ''}`;
    });
    L.push(`| ${w.id} ${w.title} | ${cells.join(' | ')} |`);
  }
  L.push('', '## Floors', '');
  for (const f of Object.values(cpu.floors)) L.push(`- ${f.what}: ${f.value === null ? 'not measured' : `${f.value.toFixed(2)} ${f.unit}`}`);
  L.push('', '## Bars (issue 5)', '');
  for (const b of cpu.bars) L.push(`- **${b.status}** ${b.name}: ${b.detail}`);
  if (cpu.eagerBars) {
    L.push('', '## Bars (issue 21: eager on wasm kernels)', '');
    for (const b of cpu.eagerBars) L.push(`- **${b.status}** ${b.name}: ${b.detail}`);
  }
  return `${L.join('\n')}\n`;
}

const md = summarize();
writeFileSync(join(results, 'summary.md'), md);
console.log(`\n${md}\nwrote bench/results/summary.md`);
if (failed.length) {
  console.error(`failed: ${failed.join(', ')}`);
  process.exitCode = 1;
}
