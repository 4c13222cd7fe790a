// The child process of the advisor's cache check (cache-check.ts): loads the workload the way
// `kilnjs advise` did (an example by name, or a module path), builds one instance, compiles its
// fn with the persistent compile cache on (whatever KILN_CACHE_DIR the parent gave it), runs
// the first `calls` calls and writes the times and kiln.stats() to a JSON file.
//
// It is a separate process because a process restart is exactly what the persistent cache is
// for: nothing compiled in the advisor's own process (JIT-warm kernels, in-memory entries)
// may leak into the figure. The parent runs it twice on one folder: cold (empty), then warm.
//
//   node --import tsx src/advisor/first-call-runner.ts '{"source":"example:mlp","seed":1,"backend":"js","calls":1,"out":"/tmp/r.json"}'

import { writeFileSync } from 'node:fs';
import * as kiln from '../api/kiln.js';
import '../api/node.js'; // registers the disk store of the compile cache (and the native backend)
import { checkInstance, loadExample, loadWorkloadModule, resolveConfig } from './workload.js';

/** What the parent passes (one JSON argument). */
export interface RunnerArgs {
  /** LoadedWorkload.source: 'example:NAME' or a module path */
  source: string;
  config?: string;
  seed: number;
  backend: string;
  /** compiled calls to run: the warm-up calls K of the in-process measurement (1 or 2, typically) */
  calls: number;
  /** where to write the RunnerResult */
  out: string;
}

/** What the child writes. */
export interface RunnerResult {
  /** each compiled call, timed with its kiln.scope disposal (outputs not read back) */
  callsMs: number[];
  /** kiln.stats().compileTimeMs after the calls */
  compileTimeMs: number;
  /** calls that traced (kiln.stats().cacheMisses) */
  traces: number;
  cache: kiln.CompilerStats['cache'];
  /** setup() time, for the progress line */
  setupMs: number;
}

async function run(a: RunnerArgs): Promise<RunnerResult> {
  const lw = a.source.startsWith('example:') ? await loadExample(a.source.slice('example:'.length)) : await loadWorkloadModule(a.source);
  const w = lw.workload;
  const config = resolveConfig(w, a.config);
  const t0 = performance.now();
  const inst = checkInstance(await w.setup(config === undefined ? { seed: a.seed } : { seed: a.seed, config }), w.name);
  const setupMs = performance.now() - t0;
  // same name and options as the in-process measurement, but with the cache on (the default)
  const compiled = kiln.compile(inst.fn as (...x: kiln.Tensor[]) => unknown, { backend: a.backend, name: w.name, ...(inst.captures ? { captures: { ...inst.captures } } : {}) });
  const callsMs: number[] = [];
  for (let i = 0; i < a.calls; i++) {
    const body = (): void => {
      kiln.scope(() => {
        compiled(...inst.inputs);
      });
    };
    const s = performance.now();
    if (w.kind === 'inference') kiln.noGrad(body);
    else body();
    callsMs.push(performance.now() - s);
  }
  const st = kiln.stats();
  return { callsMs, compileTimeMs: st.compileTimeMs, traces: st.cacheMisses, cache: st.cache, setupMs };
}

const raw = process.argv[2];
if (raw !== undefined) {
  const args = JSON.parse(raw) as RunnerArgs;
  writeFileSync(args.out, JSON.stringify(await run(args)));
  // worker threads of the kernel pool must not keep the process alive
  process.exit(0);
}
