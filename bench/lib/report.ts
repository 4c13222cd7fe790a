// Reporting helpers shared by kiln's benchmarks: machine info, FLOP-rate figures,
// a plain-text table, JSON output.

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import * as os from 'node:os';
import { numpyMatmulGflops } from './floors.js';

export interface MachineInfo {
  cpuModel: string;
  logicalCpus: number;
  node: string;
  v8: string;
  platform: string;
  arch: string;
  totalMemGiB: number;
  /** 1/5/15-minute load averages when the run started and ended: other processes skew timings */
  loadAvgStart: number[];
  loadAvgEnd?: number[];
  date: string;
  kilnCommit: string | null;
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  let commit: string | null = null;
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    commit = null;
  }
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    logicalCpus: cpus.length,
    node: process.version,
    v8: process.versions.v8,
    platform: process.platform,
    arch: process.arch,
    totalMemGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    loadAvgStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    date: new Date().toISOString(),
    kilnCommit: commit,
  };
}

export function finishMachineInfo(m: MachineInfo): MachineInfo {
  m.loadAvgEnd = os.loadavg().map((x) => Math.round(x * 100) / 100);
  return m;
}

/** GFLOP/s of `flops` done in `ms` milliseconds. */
export function gflops(flops: number, ms: number): number {
  return flops / (ms * 1e6);
}

/** Milliseconds `flops` take at `gflopsPeak`. */
export function floorMs(flops: number, gflopsPeak: number): number {
  return flops / (gflopsPeak * 1e6);
}

export interface PeakMeasurement {
  /** how it was measured */
  what: string;
  gflops2Threads: number | null;
  gflops1Thread: number | null;
  error?: string;
}

/**
 * Measures the machine's float32 matmul peak with numpy/OpenBLAS (floors.ts's
 * numpyMatmulGflops: median of 10 calls of an n³ matmul), on every core and on one, if
 * python3 and numpy are there.
 */
export function measureBlasPeak(n = 1024, timeoutMs = 60_000): PeakMeasurement {
  const what = `numpy/OpenBLAS float32 matmul ${n}^3, median of 10 calls`;
  try {
    const two = numpyMatmulGflops(n, Math.max(1, os.cpus().length), timeoutMs).gflops;
    const one = numpyMatmulGflops(n, 1, timeoutMs).gflops;
    return { what, gflops2Threads: two, gflops1Thread: one };
  } catch (e) {
    return { what, gflops2Threads: null, gflops1Thread: null, error: String((e as Error).message ?? e).split('\n')[0] };
  }
}

/** Right-aligned columns except the first `leftCols`; returns the lines. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[], leftCols = 2): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i < leftCols ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}

export function printTable(header: readonly string[], rows: readonly (readonly string[])[], leftCols = 2): void {
  for (const l of formatTable(header, rows, leftCols)) console.log(l);
}

/** A duration with sensible digits: 0.123, 12.3, 1234 */
export function fmtMs(ms: number): string {
  if (ms >= 1000) return ms.toFixed(0);
  if (ms >= 10) return ms.toFixed(1);
  return ms.toFixed(2);
}

export function fmtRatio(x: number): string {
  return `${x >= 10 ? x.toFixed(1) : x.toFixed(2)}x`;
}

export function writeJson(path: string, data: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(data, null, 2) + '\n');
}

/**
 * Joins `--name value` into `--name=value`, so a benchmark accepts both spellings before
 * parseArgs (which wants the latter). A name in `bareFlags` never takes the next word.
 */
export function joinSpacedValues(argv: readonly string[], bareFlags: readonly string[] = []): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!, next = argv[i + 1];
    if (/^--[^=]+$/.test(a) && next !== undefined && !next.startsWith('--') && !bareFlags.includes(a.slice(2))) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** --name=value and --flag arguments. */
export function parseArgs(argv: readonly string[] = process.argv.slice(2)): Map<string, string> {
  const m = new Map<string, string>();
  for (const a of argv) {
    const r = /^--([^=]+)(?:=(.*))?$/.exec(a);
    if (!r) throw new Error(`unrecognized argument ${a} (expected --name=value)`);
    m.set(r[1]!, r[2] ?? 'true');
  }
  return m;
}

export function intArg(args: Map<string, string>, name: string, dflt: number, min = 1): number {
  const v = args.get(name);
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${v}`);
  return n;
}
