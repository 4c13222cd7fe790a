// `kilnjs advise`: the command line of the advisor (src/cli.ts calls main()).

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_EXAMPLE, exampleNames, loadExample, loadWorkloadModule, WorkloadError, type LoadedWorkload } from './workload.js';
import { availableBackends, DEFAULT_MEASURE, KNOWN_BACKENDS, measure } from './measure.js';
import { buildReport, compiledIsFaster, formatSummary, type AdvisorReport } from './report.js';
import { renderHtml } from './html.js';
import { parseSignature, ShapeListError } from './shapes.js';
import { DEFAULT_USAGE, parseProcessLifetime, type Usage } from './verdict.js';

export const HELP = `kilnjs advise: measure a workload eager vs compiled and decide whether compiling pays off

usage:
  kilnjs advise [workload-module] [options]

workload (one of):
  workload-module            a .js/.mjs module exporting a workload (default export or 'workload';
                             the Workload type of 'kilnjs'); a .ts module needs a TypeScript loader
                             (npx tsx node_modules/.bin/kilnjs advise my-workload.ts)
  --example NAME             one of kiln's example workloads: ${exampleNames().join(', ')};
                             default: ${DEFAULT_EXAMPLE}
  --config NAME              one of the workload's configs (the recommender: small (default), w6)

measurement:
  --calls N                  timed steady-state calls per variant (default ${DEFAULT_MEASURE.calls})
  --warmup N                 calls before the steady state, still charted (default ${DEFAULT_MEASURE.warmup})
  --seed N                   seed for both setups (default ${DEFAULT_MEASURE.seed})
  --backend LIST             compiler backends, comma-separated (default: every CPU backend that can run here, now ${availableBackends().join(', ')}; known: ${KNOWN_BACKENDS.join(', ')})
  --tolerance X              max relative error of outputs/losses and parameters (default 1e-3)
  --shapes LIST              input shapes seen in production, ';'-separated (e.g. 'x[32,784];x[64,784]',
                             inputs in order, 'x[64,2] float32, y[64] int32'): replaces the workload's
                             list; with more than one, a stream cycling through them is measured eagerly
                             and per policy (static, automatic dynamic, buckets) and a policy recommended
  --no-cache-check           skip the restart measurement (the first calls in two fresh processes, with a
                             cold and then a warm persistent cache; a few seconds)

usage in production (for the projection and the verdict):
  --calls-per-day N          calls per day over the fleet (default ${DEFAULT_USAGE.callsPerDay.toLocaleString('en-US')}, marked as assumed)
  --process-lifetime N|DUR   calls per process start (e.g. 1 for a CLI, 50000), or a duration
                             (90s, 30m, 12h, 7d) at the calls-per-day rate (default 1d, assumed)
  --monthly-compute-cost USD what the workload's compute costs per month today
  --engineer-weeks N         engineering time to adopt kiln.compile (default ${DEFAULT_USAGE.engineerWeeks})
  --engineer-week-cost USD   cost of an engineer-week (default ${DEFAULT_USAGE.engineerWeekCostUsd})
  --amortize-months N        months to spread the engineering cost over (default ${DEFAULT_USAGE.amortizationMonths})

output:
  --json FILE                write the report as JSON (schema: docs/advisor-report.schema.json)
  --html FILE                write the HTML report (default kiln-report.html)
  --no-html                  do not write the HTML report
  --fail-if-slower           exit with status 3 when compiled is not faster than eager
  --quiet                    no progress lines
  -h, --help                 this help

exit status: 0 done; 1 the workload or the measurement failed; 2 bad arguments; 3 --fail-if-slower and compiled is not faster.

examples:
  npx kilnjs advise                                   # the recommender example, small config
  npx kilnjs advise --config w6 --calls 20            # the recommender at W6's shapes
  npx kilnjs advise --example mlp --calls-per-day 2000000 --process-lifetime 7d --monthly-compute-cost 3000
  npx kilnjs advise ./my-workload.ts --process-lifetime 1 --json report.json --fail-if-slower
`;

export interface Io {
  out(s: string): void;
  err(s: string): void;
}

const stdio: Io = { out: (s) => process.stdout.write(`${s}\n`), err: (s) => process.stderr.write(`${s}\n`) };

class UsageError extends Error {}

function num(v: string | undefined, name: string, opts: { int?: boolean; min?: number; positive?: boolean } = {}): number | undefined {
  if (v === undefined) return undefined;
  const x = Number(v.replace(/[_,]/g, ''));
  if (!Number.isFinite(x) || (opts.int && !Number.isInteger(x)) || (opts.min !== undefined && x < opts.min) || (opts.positive && !(x > 0))) {
    throw new UsageError(`--${name}: expected ${opts.int ? 'an integer' : 'a number'}${opts.min !== undefined ? ` >= ${opts.min}` : opts.positive ? ' > 0' : ''}, got '${v}'`);
  }
  return x;
}

export interface AdviseResult {
  report: AdvisorReport;
  exitCode: number;
  htmlPath: string | null;
  jsonPath: string | null;
}

/** Parses the arguments after `advise` and runs it. */
export async function advise(argv: readonly string[], io: Io = stdio): Promise<AdviseResult> {
  const { values: v, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      example: { type: 'string' },
      config: { type: 'string' },
      shapes: { type: 'string' },
      calls: { type: 'string' },
      warmup: { type: 'string' },
      seed: { type: 'string' },
      backend: { type: 'string' },
      tolerance: { type: 'string' },
      'calls-per-day': { type: 'string' },
      'process-lifetime': { type: 'string' },
      'monthly-compute-cost': { type: 'string' },
      'engineer-weeks': { type: 'string' },
      'engineer-week-cost': { type: 'string' },
      'amortize-months': { type: 'string' },
      json: { type: 'string' },
      html: { type: 'string' },
      'no-html': { type: 'boolean' },
      'no-cache-check': { type: 'boolean' },
      'fail-if-slower': { type: 'boolean' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (positionals.length > 1) throw new UsageError(`expected at most one workload module, got ${positionals.join(', ')}`);
  if (positionals.length === 1 && v.example !== undefined) throw new UsageError('give a workload module or --example, not both');

  const calls = num(v.calls, 'calls', { int: true, min: 1 }) ?? DEFAULT_MEASURE.calls;
  const warmup = num(v.warmup, 'warmup', { int: true, min: 1 }) ?? DEFAULT_MEASURE.warmup;
  const seed = num(v.seed, 'seed', { int: true, min: 0 }) ?? DEFAULT_MEASURE.seed;
  const tolerance = num(v.tolerance, 'tolerance', { positive: true }) ?? DEFAULT_MEASURE.tolerance;
  const backends = (v.backend ?? availableBackends().join(',')).split(',').map((s) => s.trim()).filter(Boolean);
  for (const b of backends) if (!(KNOWN_BACKENDS as readonly string[]).includes(b)) throw new UsageError(`--backend: '${b}' is not available (have: ${KNOWN_BACKENDS.join(', ')})`);

  const assumptions: string[] = [];
  const cpd = num(v['calls-per-day'], 'calls-per-day', { positive: true });
  if (cpd === undefined) assumptions.push(`${DEFAULT_USAGE.callsPerDay.toLocaleString('en-US')} calls/day (--calls-per-day)`);
  let lifetime: Usage['processLifetime'];
  if (v['process-lifetime'] === undefined) {
    lifetime = { seconds: 86400 };
    assumptions.push('processes live one day (--process-lifetime)');
  } else {
    try {
      lifetime = parseProcessLifetime(v['process-lifetime']);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  }
  const usage: Usage = {
    callsPerDay: cpd ?? DEFAULT_USAGE.callsPerDay,
    processLifetime: lifetime,
    monthlyComputeCostUsd: num(v['monthly-compute-cost'], 'monthly-compute-cost', { min: 0 }) ?? null,
    engineerWeeks: num(v['engineer-weeks'], 'engineer-weeks', { min: 0 }) ?? DEFAULT_USAGE.engineerWeeks,
    engineerWeekCostUsd: num(v['engineer-week-cost'], 'engineer-week-cost', { min: 0 }) ?? DEFAULT_USAGE.engineerWeekCostUsd,
    amortizationMonths: num(v['amortize-months'], 'amortize-months', { positive: true }) ?? DEFAULT_USAGE.amortizationMonths,
  };

  // every argument is checked before anything is loaded or measured
  const shapes = v.shapes === undefined ? undefined : v.shapes.split(';').map((x) => x.trim()).filter(Boolean);
  if (shapes !== undefined && shapes.length === 0) throw new UsageError("--shapes: expected one or more shapes separated by ';'");
  try {
    shapes?.forEach(parseSignature);
  } catch (e) {
    if (e instanceof ShapeListError) throw new UsageError(`--shapes: ${e.message}`);
    throw e;
  }

  let lw: LoadedWorkload;
  if (positionals.length === 1) lw = await loadWorkloadModule(positionals[0]!);
  else lw = await loadExample(v.example ?? DEFAULT_EXAMPLE);

  const progress = v.quiet ? undefined : (s: string) => io.err(s);
  let meas;
  try {
    meas = await measure(lw, {
      calls, warmup, seed, backends, tolerance, paramTolerance: tolerance, progress, cacheCheck: !v['no-cache-check'],
      ...(v.config !== undefined ? { config: v.config } : {}),
      ...(shapes !== undefined ? { shapes } : {}),
    });
  } catch (e) {
    // a shape list that does not fit the workload's inputs, found before anything was timed
    if (e instanceof ShapeListError) throw shapes !== undefined ? new UsageError(`--shapes: ${e.message}`) : new WorkloadError(`the workload's shapes: ${e.message}`);
    throw e;
  }
  const command = `kilnjs advise ${argv.join(' ')}`.trim();
  const report = buildReport(meas, usage, { assumptions, command });

  let jsonPath: string | null = null, htmlPath: string | null = null;
  if (v.json !== undefined) {
    jsonPath = resolve(v.json);
    mkdirSync(dirname(jsonPath), { recursive: true });
    writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  }
  if (!v['no-html']) {
    htmlPath = resolve(v.html ?? 'kiln-report.html');
    mkdirSync(dirname(htmlPath), { recursive: true });
    writeFileSync(htmlPath, renderHtml(report));
  }
  io.out(formatSummary(report));
  io.out('');
  if (jsonPath) io.out(`  wrote ${jsonPath}`);
  if (htmlPath) io.out(`  wrote ${htmlPath}`);
  let exitCode = 0;
  if (v['fail-if-slower'] && !compiledIsFaster(report)) {
    io.err(`kilnjs advise: compiled is not faster than eager (--fail-if-slower)`);
    exitCode = 3;
  }
  return { report, exitCode, htmlPath, jsonPath };
}

/** `kilnjs <command> ...`; returns the exit status. */
export async function main(argv: readonly string[], io: Io = stdio): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === '-h' || cmd === '--help' || cmd === 'help') {
    io.out(`kilnjs: command line tools for kiln\n\ncommands:\n  advise    measure a workload eager vs compiled and decide whether compiling pays off\n  serve     serve a model over HTTP, compiled, with warm-up, batching, canary and metrics (kilnjs serve --help)\n  cache     save | load | dir: move the persistent compile cache between machines\n\n${HELP}`);
    return cmd === undefined ? 2 : 0;
  }
  if (cmd !== 'advise') {
    io.err(`kilnjs: unknown command '${cmd}' (commands: advise, serve, cache; see kilnjs --help)`);
    return 2;
  }
  if (rest.includes('-h') || rest.includes('--help')) {
    io.out(HELP);
    return 0;
  }
  try {
    return (await advise(rest, io)).exitCode;
  } catch (e) {
    const err = e as Error & { code?: string };
    if (e instanceof UsageError || err.code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`kilnjs advise: ${err.message}\n(kilnjs advise --help for usage)`);
      return 2;
    }
    if (e instanceof WorkloadError) {
      io.err(`kilnjs advise: ${err.message}`);
      return 1;
    }
    io.err(`kilnjs advise failed: ${err.stack ?? err.message}`);
    return 1;
  }
}
