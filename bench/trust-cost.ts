// What verifying the cache costs a restarted process (issue 19): the warm-cache first call of
// this checkout against another checkout (`--base`, e.g. the commit before the seals and schema
// checks), side by side in one run, alternating the two so a busy machine skews both alike.
//
//   restart   the advisor's restart check (src/advisor/first-call-runner.ts, as
//             src/advisor/cache-check.ts runs it): the first call of an example workload in a
//             fresh process with a cold, then a warm cache folder
//   coldstart bench/coldstart.ts's child: the first call of a workload (W7: an inference
//             service, tracing skipped on a warm start) in a fresh process, warm cache
//
// Each round makes a new cache folder per checkout (a cold process, then `--warm` warm ones);
// reported: the medians of the warm first calls, their ratio (this / base), the warm processes'
// whole CPU time (user + system, all threads: less sensitive to a shared machine than wall time,
// though it also counts start-up), and this checkout's stats().cache.verifyMs (seals and schema
// checks, wall time) in the warm processes.
//
// --rt runs each child under SCHED_FIFO (`chrt -f 50`, Linux, needs CAP_SYS_NICE) so that other
// work on a shared machine cannot preempt it; both checkouts alike. The table shows medians and
// minima (the minimum estimates the cost with the least interference).
//
// Run:  npx tsx bench/trust-cost.ts --base=/path/to/base-checkout [--rounds=5] [--warm=2] [--backends=js,wasm,native]
//        [--cases=restart:mlp,restart:char-gpt,coldstart:W7] [--rt] [--out=bench/results/trust-cost.json]

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { finishMachineInfo, fmtMs, fmtRatio, intArg, machineInfo, parseArgs, printTable, writeJson } from './lib/report.js';

const HERE = resolve(fileURLToPath(import.meta.url), '..', '..');

interface Sample { firstMs: number; cpuMs: number; verifyMs: number | null; hits: number; traceSkips: number }

/** Preloaded into every child: its CPU time (all threads) at exit. */
const CPU_PRELOAD = `import { writeFileSync } from 'node:fs';
process.on('exit', () => { const r = process.resourceUsage(); writeFileSync(process.env.KILN_BENCH_CPU_OUT, String((r.userCPUTime + r.systemCPUTime) / 1000)); });
`;

/** One process of a checkout: the restart check's runner, or coldstart's child. */
function runOnce(checkout: string, kind: 'restart' | 'coldstart', target: string, backend: string, dir: string, config: string, rt: boolean): Sample {
  const cpuOut = join(dir, `cpu-${Math.random().toString(36).slice(2)}`);
  const env = { ...process.env, KILN_CACHE_DIR: dir, KILN_CACHE_SOURCES: 'off', XDG_CONFIG_HOME: config, KILN_BENCH_CPU_OUT: cpuOut };
  let args: string[];
  const out = join(dir, `r-${Math.random().toString(36).slice(2)}.json`);
  if (kind === 'restart') args = [join(checkout, 'src/advisor/first-call-runner.ts'), JSON.stringify({ source: `example:${target}`, seed: 1, backend, calls: 1, out })];
  else args = [join(checkout, 'bench/coldstart.ts'), '--child', JSON.stringify({ id: target, backend, phase: 'warm', iters: 1 })];
  const node = [process.execPath, '--import', join(config, 'cpu-preload.mjs'), '--import', 'tsx', ...args];
  const [cmd, ...rest] = rt ? ['chrt', '-f', '50', ...node] : node;
  const r = spawnSync(cmd!, rest, { cwd: checkout, encoding: 'utf8', env, timeout: 600_000, maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${checkout} ${kind} ${target} ${backend} failed:\n${r.stderr.slice(-2000)}`);
  const cpuMs = Number(readFileSync(cpuOut, 'utf8'));
  if (kind === 'restart') {
    const res = JSON.parse(readFileSync(out, 'utf8')) as { callsMs: number[]; cache: Record<string, number> };
    return { firstMs: res.callsMs[0]!, cpuMs, verifyMs: res.cache.verifyMs ?? null, hits: res.cache.hits!, traceSkips: res.cache.traceSkips! };
  }
  const res = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { firstMs: number; cache: Record<string, number> };
  return { firstMs: res.firstMs, cpuMs, verifyMs: res.cache.verifyMs ?? null, hits: res.cache.hits!, traceSkips: res.cache.traceSkips! };
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const base = args.get('base');
  if (!base) throw new Error('--base=/path/to/a/checkout is required (the code to compare against)');
  const rounds = intArg(args, 'rounds', 5);
  const warm = intArg(args, 'warm', 2);
  const backends = (args.get('backends') ?? 'js,wasm,native').split(',');
  const rt = args.has('rt');
  const cases = (args.get('cases') ?? 'restart:mlp,restart:char-gpt,coldstart:W7').split(',').map((c) => {
    const [kind, target] = c.split(':') as ['restart' | 'coldstart', string];
    if ((kind !== 'restart' && kind !== 'coldstart') || !target) throw new Error(`--cases: ${c} is not restart:EXAMPLE or coldstart:WORKLOAD`);
    return { kind, target };
  });
  const checkouts = { base: resolve(base), this: HERE };
  const machine = machineInfo();
  const rows: Record<string, unknown>[] = [];
  const table: string[][] = [];
  const config = mkdtempSync(join(tmpdir(), 'kiln-trust-cost-config-'));
  writeFileSync(join(config, 'cpu-preload.mjs'), CPU_PRELOAD);
  try {
    for (const c of cases) {
      for (const backend of backends) {
        const samples: Record<'base' | 'this', Sample[]> = { base: [], this: [] };
        for (let round = 0; round < rounds; round++) {
          // alternate which checkout goes first, so a trend in the machine's load skews both alike
          const order = round % 2 === 0 ? (['base', 'this'] as const) : (['this', 'base'] as const);
          for (const who of order) {
            const dir = mkdtempSync(join(tmpdir(), 'kiln-trust-cost-'));
            try {
              runOnce(checkouts[who], c.kind, c.target, backend, dir, config, false); // cold: fills the cache
              for (let w = 0; w < warm; w++) samples[who].push(runOnce(checkouts[who], c.kind, c.target, backend, dir, config, rt));
            } finally {
              rmSync(dir, { recursive: true, force: true });
            }
          }
        }
        const b = median(samples.base.map((s) => s.firstMs)), t = median(samples.this.map((s) => s.firstMs));
        const bMin = Math.min(...samples.base.map((s) => s.firstMs)), tMin = Math.min(...samples.this.map((s) => s.firstMs));
        const bc = median(samples.base.map((s) => s.cpuMs)), tc = median(samples.this.map((s) => s.cpuMs));
        const verify = median(samples.this.map((s) => s.verifyMs ?? 0));
        const hitsOk = [...samples.base, ...samples.this].every((s) => s.hits > 0);
        rows.push({ case: c.kind, workload: c.target, backend, baseFirstMs: b, thisFirstMs: t, ratio: t / b, baseFirstMinMs: bMin, thisFirstMinMs: tMin, minRatio: tMin / bMin, baseProcessCpuMs: bc, thisProcessCpuMs: tc, cpuRatio: tc / bc, thisVerifyMs: verify, samples, allWarmHit: hitsOk });
        table.push([c.kind, c.target, backend, fmtMs(b), fmtMs(t), fmtRatio(t / b), fmtMs(bMin), fmtMs(tMin), fmtRatio(tMin / bMin), fmtMs(bc), fmtMs(tc), fmtRatio(tc / bc), fmtMs(verify), hitsOk ? 'yes' : 'NO']);
        console.log(`${c.kind} ${c.target} ${backend}: first call base ${fmtMs(b)} ms, this ${fmtMs(t)} ms (${fmtRatio(t / b)}; minima ${fmtMs(bMin)} / ${fmtMs(tMin)}); process CPU base ${fmtMs(bc)} ms, this ${fmtMs(tc)} ms (${fmtRatio(tc / bc)}); verify ${fmtMs(verify)} ms`);
      }
    }
  } finally {
    rmSync(config, { recursive: true, force: true });
  }
  printTable(['check', 'workload', 'backend', 'base: warm first call (ms, median)', 'this', 'this / base', 'base: min', 'this: min', 'this / base', 'base: process CPU (ms)', 'this', 'this / base', 'this: verifyMs', 'every warm run hit'], table, 3);
  writeJson(args.get('out') ?? 'bench/results/trust-cost.json', { benchmark: 'trust-cost', command: process.argv.slice(1).join(' '), base: checkouts.base, machine: finishMachineInfo(machine), rounds, warmPerRound: warm, rt, rows });
}

await main();
