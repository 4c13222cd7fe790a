// kiln.explain(fn)(...args): what compiling fn does for these arguments: graphs, breaks
// with locations and hints, ops per graph, guards, compile time per stage.

import { CompiledFunction, type CompileOptions, type CompileReport } from '../compile.js';
import { bucketSummary } from '../dynamic/bucket.js';
import { KilnError } from '../../core/errors.js';

export interface ExplainResult extends CompileReport {
  graphCount: number;
  graphBreakCount: number;
  opsPerGraph: number[];
  text: string;
  /** bucketing (issue 7): the buckets this call hit, with the sizes they served */
  buckets?: { bucket: number; hits: number; sizes: number[] }[];
  /** the typed error compiling stopped at after a break it reported (a value read on webgpu) */
  stopped?: string;
}

export function explain<A extends unknown[]>(fn: (...args: A) => Generator<unknown, unknown, never>, opts?: CompileOptions & { print?: boolean }): (...args: A) => Promise<ExplainResult>;
export function explain<F extends (...args: never[]) => unknown>(fn: F, opts?: CompileOptions & { print?: boolean }): (...args: Parameters<F>) => ExplainResult;
export function explain(fn: (...args: never[]) => unknown, opts: CompileOptions & { print?: boolean } = {}): (...args: unknown[]) => ExplainResult | Promise<ExplainResult> {
  return (...args) => {
    const cf = new CompiledFunction(fn as unknown as (...a: unknown[]) => unknown, { ...opts, fullgraph: false });
    let out: unknown;
    try {
      out = cf.call(args);
    } catch (e) {
      return explained(cf, opts, stoppedBy(e, cf));
    }
    // a compiled generator (reads are asynchronous breaks): its report is complete when it settles
    if (cf.isGeneratorFn && out instanceof Promise) return out.then(() => explained(cf, opts), (e) => explained(cf, opts, stoppedBy(e, cf)));
    return explained(cf, opts);
  };
}

/**
 * A break that cannot run (a synchronous read on webgpu) is reported, not thrown: explaining
 * what happens is the point; other errors are the caller's.
 */
function stoppedBy(e: unknown, cf: CompiledFunction): string {
  if (!(e instanceof KilnError) || !cf.report) throw e;
  return `${e.name}: ${e.message.split('\n')[0]}`;
}

function explained(cf: CompiledFunction, opts: { print?: boolean }, stopped?: string): ExplainResult {
  const r = cf.report!;
  const result: ExplainResult = {
    ...r,
    graphCount: r.graphs.length,
    graphBreakCount: r.breaks.length,
    opsPerGraph: r.graphs.map((g) => g.ops),
    text: formatExplain(r),
  };
  if (stopped) {
    result.stopped = stopped;
    result.text += `\n  stopped: ${stopped}`;
  }
  const buckets = bucketSummary(cf.bucketState);
  if (buckets) {
    result.buckets = buckets;
    result.text += `\n  buckets: ${buckets.map((b) => `${b.bucket} (sizes ${b.sizes.join(', ')})`).join('; ')}`;
  }
  if (opts.print !== false) console.log(result.text);
  return result;
}

function formatExplain(r: CompileReport): string {
  const lines = [`explain ${r.name}: ${r.graphs.length} graph(s), ${r.breaks.length} graph break(s)`];
  r.breaks.forEach((b, i) => lines.push(`  break ${i + 1} at ${b.location}: ${b.reason}`, `    hint: ${b.hint}`));
  r.graphs.forEach((g, i) => {
    lines.push(`  graph ${i} (${g.ops} ops):`);
    lines.push(...g.text.split('\n').map((l) => `    ${l}`));
    // how the program runs when it is not the plain kernel list (e.g. WebGPU prerecording)
    const mode = g.program?.split('\n').find((l) => l.startsWith('reduce-overhead: '));
    if (mode) lines.push(`    ${mode}`);
    // a compiled forward/backward pair: what the forward saves and the backward recomputes
    if (g.partition) lines.push('    partition (forward -> backward):', ...g.partition.split('\n').map((l) => `      ${l}`));
  });
  if (r.guards.length) {
    lines.push('  guards:');
    lines.push(...r.guards.map((g) => `    ${g}`));
  }
  if (r.backend) lines.push(`  backend: ${r.backend.chosen}${r.backend.requested !== r.backend.chosen ? ` (requested ${r.backend.requested})` : ''}: ${r.backend.reason}`);
  const t = r.timings;
  lines.push(`  compile time: ${(t.total - t.firstRun).toFixed(1)} ms = trace ${t.trace.toFixed(1)} + passes ${Object.entries(t.passes).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')} + codegen ${t.codegen.toFixed(1)}; first run ${t.firstRun.toFixed(1)} ms`);
  return lines.join('\n');
}
