// kiln.profile on a reference workload: the table (kernels by time, what each fused, bytes,
// FLOPs, achieved rates against this machine's floors) and a Chrome trace of the profiled calls
// (bench/results/profile-W7-native.trace.json: chrome://tracing or ui.perfetto.dev).
//
// Run:  npx tsx bench/profile.ts [--only W7] [--backend native] [--runs=10] [--warmup=2] [--top=30]
// Each call is timed kernel by kernel (wall clock around each launch): on a machine shared with
// other work the times stretch; shares and rates within one run are what to compare.

import * as kiln from 'kilnjs';
import 'kilnjs/node';
import { intArg, joinSpacedValues, parseArgs, writeJson } from './lib/report.js';
import { workload } from './workloads/index.js';

const args = parseArgs(joinSpacedValues(process.argv.slice(2)));
const id = args.get('only') ?? 'W7';
const backend = args.get('backend') ?? 'native';
const runs = intArg(args, 'runs', 10);
const warmup = intArg(args, 'warmup', 2, 0);
const w = workload(id);
const inst = w.setup({});
const compiled = kiln.compile(inst.fn, { backend });
const call = () => kiln.noGrad(() => compiled(...inst.inputs));
const report = kiln.profile(call, { warmup, runs })() as kiln.ProfileReport;
console.log(`${w.id} ${w.title} [${inst.shapes}] on ${backend}`);
console.log(report.table({ top: intArg(args, 'top', 30) }));
const out = `bench/results/profile-${w.id}-${backend}.trace.json`;
writeJson(out, report.chromeTrace());
console.log(`\nwrote ${out}`);
inst.dispose();
process.exit(0);
