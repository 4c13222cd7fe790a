// Issue 5's CPU benchmark: kiln eager (wasm kernels; 'eager-js': the JS kernels alone, kiln's
// eager before issue 21), kiln compiled on the 'js', 'wasm' and 'native' backends, and peers (onnxruntime-node, tfjs-backend-wasm, jax-js), side by side in one
// process, round-robin (bench/lib/timing.ts), on W1-W7 of bench/compile.ts (same
// definitions: bench/workloads/) plus W5 = a 1024³ float32 matmul (bench/lib/w5-matmul.ts),
// with this machine's floors (memory copy, OpenBLAS matmul, the hand-written C W4 loop) and
// issue 5's and issue 21's bars as PASS / FAIL / N/A lines. Writes bench/results/cpu.json.
//
// Run:  npx tsx bench/cpu.ts [--quick] [--only W1,W4] [--backends js,native]
//                            [--peers ort,tfjs-wasm,jax] [--iters=10] [--warmup=2]
//                            [--slow-iters=3] [--slow-warmup=1] [--jax-workers=false]
//                            [--eager-js=false] [--floors=false] [--out=bench/results/cpu.json]
// --quick: 3 timed calls, 1 warm-up, W3 on 1024 rows: a smoke test of the harness, not a result.
// Threads: KILN_THREADS (default: all cores) for kiln's compiled backends; onnxruntime's
// intraOpNumThreads and OpenBLAS get the same count. tfjs-wasm runs on one thread in Node.
//
// Per workload: kiln.compiler.reset() and a fresh, empty KILN_CACHE_DIR (so the first
// compile on every backend is cold: no compile cache, no cached native library); the same
// seed builds one instance per training variant (identical weights and data); each peer
// gets copies of those weights and inputs (bench/lib/peer-case.ts). First calls: eager (the
// reference output), each compiled backend (compile time = kiln.stats().compileTimeMs over
// that call, which includes its first run), each peer; every output (inference) or first
// loss (training) is checked against kiln eager before anything is timed, and a variant
// that disagrees is not timed. Then warm-up and timed calls, round-robin. Then the "from
// the cache" compile: kiln.compiler.reset() (and, for native, the in-process kernel cache
// cleared) with KILN_CACHE_DIR now warm, and one new compile per backend.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import { clearNativeMemoryCache, nativeStats, nativeUnavailableReason } from 'kilnjs/node';
import { threadCount } from '../src/backend/js/threads.js';
import { runtime } from '../src/ops/dispatch.js';
import { resolveKernelBackend } from '../src/backend/registry.js';
import { checkEagerBars } from './lib/eager-bars.js';
import { checkBars, type Bar } from './lib/cpu-bars.js';
import { blasMatmulRate, jsCopyBandwidth, nativeCopyBandwidth, w4Floor, type Floor } from './lib/floors.js';
import { peerCase } from './lib/peer-case.js';
import { finishMachineInfo, fmtMs, intArg, joinSpacedValues, machineInfo, parseArgs, printTable, writeJson } from './lib/report.js';
import { compare, round, timeOnce, type Candidate, type Timing } from './lib/timing.js';
import { w5 } from './lib/w5-matmul.js';
import type { Peer, PeerRun } from './peers/common.js';
import { jaxPeer } from './peers/jax.js';
import { ortPeer } from './peers/ort.js';
import { tfjsWasmPeer } from './peers/tfjs-wasm.js';
import { WORKLOADS, type Instance, type Workload } from './workloads/index.js';

// ---------------------------------------------------------------- arguments

// `--only W1,W4` as well as `--only=W1,W4`
const args = parseArgs(joinSpacedValues(process.argv.slice(2)));
const QUICK = args.get('quick') === 'true';
const ITERS = intArg(args, 'iters', QUICK ? 3 : 10);
const WARMUP = intArg(args, 'warmup', QUICK ? 1 : 2, 0);
const SLOW_ITERS = intArg(args, 'slow-iters', QUICK ? 2 : 3);
const SLOW_WARMUP = intArg(args, 'slow-warmup', QUICK ? 0 : 1, 0);
const OUT = args.get('out') ?? 'bench/results/cpu.json';
const list = (k: string, all: readonly string[]): string[] => {
  const v = args.get(k);
  if (!v) return [...all];
  const xs = v.split(',').map((s) => s.trim()).filter(Boolean);
  for (const x of xs) if (!all.some((a) => a.toLowerCase() === x.toLowerCase())) throw new Error(`--${k}: unknown ${x} (have ${all.join(', ')})`);
  return all.filter((a) => xs.some((x) => x.toLowerCase() === a.toLowerCase()));
};
const ALL_WORKLOADS: readonly Workload[] = [...WORKLOADS.slice(0, 3), WORKLOADS[3]!, w5, ...WORKLOADS.slice(4)].sort((a, b) => a.id.localeCompare(b.id));
const IDS = list('only', ALL_WORKLOADS.map((w) => w.id));
const BACKENDS = list('backends', ['js', 'wasm', 'native']);
const PEERS = list('peers', ['ort', 'tfjs-wasm', 'jax']);
const JAX_WORKERS = args.get('jax-workers') !== 'false';
/** also time eager on the JS kernels alone (the eager of before issue 21: issue 21's "3x faster" baseline) */
const EAGER_JS = args.get('eager-js') !== 'false';
/** single calls that take seconds (eager W3 at full size): fewer calls, said in the output */
const SLOW = new Set(['W3']);
const INFERENCE_TOL = 1e-4; // max |x - eager| / max |eager|
const LOSS_TOL = 1e-4; // |loss - eager loss| / |eager loss|, first step
const THREADS = threadCount();

// ---------------------------------------------------------------- helpers

interface Check { ok: boolean; relErr: number; summary: string }
interface CompileTime { firstCallMs: number; compileMs: number; overheadMs?: number; native?: Record<string, number>; cache?: Record<string, number> }
interface VariantResult {
  name: string;
  status: 'ok' | 'unavailable' | 'mismatch' | 'failed';
  reason?: string;
  timing?: Timing;
  p90Ms?: number;
  check?: Check;
  compileCold?: CompileTime;
  compileCached?: CompileTime;
  note?: string;
}
interface WorkloadResult { id: string; title: string; kind: string; shapes: string; flops: number | null; bytes: number | null; itersNote: string; variants: VariantResult[] }

const f32 = (t: kiln.Tensor): Float32Array => Float32Array.from(t.dataSync() as ArrayLike<number>);
function compareOut(ref: Float32Array, got: Float32Array, training: boolean): Check {
  if (ref.length !== got.length) return { ok: false, relErr: Infinity, summary: `length ${got.length} vs ${ref.length}` };
  let d = 0, m = 1e-30;
  for (let i = 0; i < ref.length; i++) {
    const x = Math.abs(ref[i]! - got[i]!);
    if (!(x <= d)) d = x;
    m = Math.max(m, Math.abs(ref[i]!));
  }
  const rel = d / m;
  const ok = rel <= (training ? LOSS_TOL : INFERENCE_TOL);
  return { ok, relErr: rel, summary: training ? `loss ${got[0]!.toFixed(5)} vs ${ref[0]!.toFixed(5)}` : `max|d| ${d.toExponential(1)} (max ${m.toPrecision(3)})` };
}
function p90(samples: readonly number[]): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.9 * s.length) - 1)]!;
}
const errMsg = (e: unknown): string => `${(e as Error).name ?? 'Error'}: ${((e as Error).message ?? String(e)).split('\n')[0]}`;
const delta = <T extends Record<string, number>>(a: T, b: T): Record<string, number> => Object.fromEntries(Object.keys(a).map((k) => [k, round(a[k]! - b[k]!, 1)]).filter(([, v]) => v !== 0));
const cacheStats = (): Record<string, number> => ({ ...kiln.stats().cache }) as unknown as Record<string, number>;

/**
 * Whether a compiled function's kernels really ran on `backend`: kiln.compile treats an
 * unknown backend name as the JS backend without an error, so the program printout is
 * checked ('fused program (kernels on wasm)') as well as the output's storage backend.
 */
function ranOn(c: object, out: kiln.Tensor, backend: string): boolean {
  if (backend === 'js') return true;
  const graphs = (c as unknown as { compiled: { report: { graphs: { program?: string }[] } | null } }).compiled.report?.graphs ?? [];
  const viaKernels = graphs.length > 0 && graphs.every((g) => g.program?.includes(`(kernels on ${backend})`));
  return viaKernels || out.backendName === backend;
}

const NATIVE_WHY = nativeUnavailableReason();

// ---------------------------------------------------------------- floors and peers

const machine = machineInfo();
console.log(`kiln CPU benchmark: ${machine.cpuModel} x${machine.logicalCpus}, node ${machine.node}, KILN_THREADS=${process.env.KILN_THREADS ?? '(unset)'} -> ${THREADS} threads, load ${machine.loadAvgStart.join(' ')}`);
if (QUICK) console.log('--quick: few calls, W3 on 1024 rows: checks that the harness works; the numbers are not results');

const floors: Record<string, Floor> = {};
if (args.get('floors') !== 'false') {
  process.stdout.write('floors: memory copy ... ');
  floors['copyJs'] = jsCopyBandwidth();
  floors['copyNative'] = nativeCopyBandwidth();
  process.stdout.write('OpenBLAS ... ');
  floors['blasMatmul'] = blasMatmulRate(THREADS);
  process.stdout.write('W4 C loop ... ');
  floors['w4'] = await w4Floor();
  console.log('done');
  for (const [k, v] of Object.entries(floors)) console.log(`  ${k.padEnd(11)} ${v.value === null ? `missing: ${v.missing}` : `${v.value.toFixed(v.unit === 'ms' ? 3 : 1)} ${v.unit}`}  (${v.what})`);
}

const peers: Peer[] = [];
const peerInitErrors: Record<string, string> = {};
const makePeer: Record<string, () => Peer> = { ort: () => ortPeer(THREADS), 'tfjs-wasm': () => tfjsWasmPeer(), jax: () => jaxPeer({ workers: JAX_WORKERS }) };
for (const name of PEERS) {
  const p = makePeer[name]!();
  try {
    await p.init();
    peers.push(p);
  } catch (e) {
    peerInitErrors[name] = errMsg(e);
    console.log(`peer ${name} unavailable: ${peerInitErrors[name]}`);
  }
}

// ---------------------------------------------------------------- one workload

async function runWorkload(w: Workload): Promise<WorkloadResult> {
  const slow = SLOW.has(w.id);
  const iters = slow ? SLOW_ITERS : ITERS, warmup = slow ? SLOW_WARMUP : WARMUP;
  const training = w.kind === 'training';
  const inference = !training;
  kiln.compiler.reset();
  const cacheDir = mkdtempSync(join(tmpdir(), `kiln-cpu-${w.id}-`));
  process.env.KILN_CACHE_DIR = cacheDir;
  clearNativeMemoryCache();

  const instances: Instance[] = [];
  const setup = (): Instance => {
    const i = w.setup({ quick: QUICK });
    instances.push(i);
    return i;
  };
  const eagerInst = setup();
  const res: WorkloadResult = { id: w.id, title: w.title, kind: w.kind, shapes: eagerInst.shapes, flops: eagerInst.flops, bytes: eagerInst.bytes, itersNote: `${warmup} warm-up + ${iters} timed calls each${slow ? ' (slow workload: fewer calls)' : ''}`, variants: [] };
  console.log(`\n${w.id} ${w.title} [${eagerInst.shapes}], ${res.itersNote}`);
  const wrap = (f: () => kiln.Tensor): (() => kiln.Tensor) => (inference ? () => kiln.noGrad(() => kiln.scope(f)) : () => kiln.scope(f));
  const readOut = (t: kiln.Tensor): Float32Array => (training ? Float32Array.of(t.item()) : f32(t));
  const cands: Candidate[] = [];
  const byName = new Map<string, VariantResult>();
  const add = (v: VariantResult): VariantResult => (res.variants.push(v), byName.set(v.name, v), v);
  const disposers: (() => void)[] = [];

  try {
    // ---- eager: the reference
    const peerInput = peerCase(w, eagerInst); // copies taken before any training step changes the weights
    let ref!: Float32Array;
    const eagerCall = wrap(() => eagerInst.step());
    const ev = add({ name: 'eager', status: 'ok' });
    const t0 = performance.now();
    kiln.scope(() => {
      ref = readOut(eagerCall());
    });
    ev.note = `first call ${fmtMs(performance.now() - t0)} ms`;
    cands.push({ name: 'eager', fn: () => void eagerCall() });

    // ---- eager on the JS kernels alone (kiln's eager before issue 21): its own instance, made
    // and run with a JsBackend as the default backend (ops follow their inputs' backend)
    if (EAGER_JS) {
      const v = add({ name: 'eager-js', status: 'ok' });
      const js = new kiln.JsBackend();
      const onJs = <T>(f: () => T): T => {
        const saved = runtime.backend;
        kiln.setDefaultBackend(js);
        try {
          return f();
        } finally {
          kiln.setDefaultBackend(saved);
        }
      };
      const inst = onJs(setup);
      const call = wrap(() => onJs(() => inst.step()));
      let out!: Float32Array;
      kiln.scope(() => {
        out = readOut(call());
      });
      v.check = compareOut(ref, out, training);
      if (v.check.ok) cands.push({ name: 'eager-js', fn: () => void call() });
      else Object.assign(v, { status: 'mismatch', reason: `output differs from eager: ${v.check.summary}` });
    }

    // ---- compiled backends: cold compile + check
    for (const be of BACKENDS) {
      const v = add({ name: be, status: 'ok' });
      if (be === 'native' && NATIVE_WHY) {
        Object.assign(v, { status: 'unavailable', reason: NATIVE_WHY });
        continue;
      }
      try {
        const inst = training ? setup() : eagerInst;
        const compiled = kiln.compile(inst.fn, { backend: be });
        const call = wrap(() => compiled(...inst.inputs));
        const s0 = kiln.stats().compileTimeMs, n0 = nativeStats() as unknown as Record<string, number>, c0 = cacheStats();
        let out!: Float32Array, ran = true;
        const first = await timeOnce(() =>
          kiln.scope(() => {
            const y = call();
            ran = ranOn(compiled, y, be);
            out = readOut(y);
          }),
        );
        v.compileCold = { firstCallMs: round(first, 1), compileMs: round(kiln.stats().compileTimeMs - s0, 1), cache: delta(cacheStats(), c0) };
        if (be === 'native') v.compileCold.native = delta(nativeStats() as unknown as Record<string, number>, n0);
        if (!ran) {
          Object.assign(v, { status: 'unavailable', reason: `backend '${be}' is not registered: kiln.compile ran it on the JS backend without an error` });
          continue;
        }
        v.check = compareOut(ref, out, training);
        if (!v.check.ok) {
          Object.assign(v, { status: 'mismatch', reason: `output differs from eager: ${v.check.summary}` });
          continue;
        }
        cands.push({ name: be, fn: () => void call() });
        // the "from the cache" compile, after timing
        disposers.push(() => undefined);
        (v as VariantResult & { recompile?: () => Promise<void> }).recompile = async () => {
          kiln.compiler.reset();
          if (be === 'native') clearNativeMemoryCache();
          const again = kiln.compile(inst.fn, { backend: be });
          const s1 = kiln.stats().compileTimeMs, n1 = nativeStats() as unknown as Record<string, number>, c1 = cacheStats();
          const ms = await timeOnce(() => kiln.scope(() => void readOut(wrap(() => again(...inst.inputs))())));
          v.compileCached = { firstCallMs: round(ms, 1), compileMs: round(kiln.stats().compileTimeMs - s1, 1), cache: delta(cacheStats(), c1) };
          if (be === 'native') v.compileCached.native = delta(nativeStats() as unknown as Record<string, number>, n1);
        };
      } catch (e) {
        const msg = errMsg(e);
        Object.assign(v, { status: /not registered|unavailable/i.test(msg) ? 'unavailable' : 'failed', reason: msg });
      }
    }

    // ---- peers: setup + check
    for (const name of PEERS) {
      const v = add({ name, status: 'ok' });
      const p = peers.find((x) => x.name === name);
      if (!p) {
        Object.assign(v, { status: 'unavailable', reason: peerInitErrors[name] ?? 'not loaded' });
        continue;
      }
      let run: PeerRun | null = null;
      try {
        const s = await p.setup(peerInput);
        if ('unavailable' in s) {
          Object.assign(v, { status: 'unavailable', reason: s.unavailable });
          continue;
        }
        run = s;
        disposers.push(() => s.dispose());
        const t1 = performance.now();
        v.check = compareOut(ref, await s.check(), training);
        v.note = [`first call ${fmtMs(performance.now() - t1)} ms`, s.note].filter(Boolean).join('; ');
        if (!v.check.ok) {
          Object.assign(v, { status: 'mismatch', reason: `output differs from kiln eager: ${v.check.summary}` });
          continue;
        }
        cands.push({ name, fn: s.call });
      } catch (e) {
        // e.g. a kernel the peer's backend lacks: the workload does not run on it
        Object.assign(v, { status: 'unavailable', reason: errMsg(e) });
        void run;
      }
    }

    // ---- timing, round-robin
    const names = cands.map((c) => c.name);
    process.stdout.write(`  timing ${names.join(', ')} ... `);
    const t = await compare(cands, { iters, warmup });
    console.log('done');
    for (const n of names) {
      const v = byName.get(n)!;
      v.timing = t[n]!;
      v.p90Ms = p90(t[n]!.samplesMs);
    }

    // ---- compile from the cache
    for (const v of res.variants) {
      const r = (v as VariantResult & { recompile?: () => Promise<void> }).recompile;
      if (!r) continue;
      delete (v as VariantResult & { recompile?: () => Promise<void> }).recompile;
      try {
        await r();
      } catch (e) {
        v.compileCached = { firstCallMs: NaN, compileMs: NaN };
        v.note = `cached compile failed: ${errMsg(e)}`;
      }
      if (v.compileCold && v.timing) v.compileCold.overheadMs = round(Math.max(0, v.compileCold.compileMs - v.timing.medianMs), 1);
      if (v.compileCached && v.timing) v.compileCached.overheadMs = round(Math.max(0, v.compileCached.compileMs - v.timing.medianMs), 1);
    }
  } finally {
    for (const d of disposers) d();
    for (const i of instances) i.dispose();
    rmSync(cacheDir, { recursive: true, force: true });
  }
  printWorkload(res);
  return res;
}

function printWorkload(r: WorkloadResult): void {
  const eager = r.variants.find((v) => v.name === 'eager')?.timing?.medianMs;
  const peerMeds = r.variants.filter((v) => PEERS.includes(v.name) && v.timing).map((v) => v.timing!.medianMs);
  const best = peerMeds.length ? Math.min(...peerMeds) : undefined;
  const work = r.flops ? (ms: number) => `${(r.flops! / (ms * 1e6)).toFixed(1)} GFLOP/s` : r.bytes ? (ms: number) => `${(r.bytes! / (ms * 1e6)).toFixed(1)} GB/s` : () => '';
  printTable(
    ['variant', 'status', 'median ms', 'p90 ms', 'vs eager', 'vs best peer', 'rate', 'compile cold / cached ms', 'check'],
    r.variants.map((v) => {
      const m = v.timing?.medianMs;
      const comp = v.compileCold ? `${fmtMs(v.compileCold.compileMs)} / ${v.compileCached ? fmtMs(v.compileCached.compileMs) : '-'}` : '';
      if (m === undefined) return [v.name, v.status, '', '', '', '', '', comp, (v.reason ?? '').slice(0, 90)];
      return [v.name, v.status, fmtMs(m), fmtMs(v.p90Ms!), eager ? `${(eager / m).toFixed(2)}x faster` : '', best ? `${(m / best).toFixed(2)}x time` : '', work(m), comp, v.check?.summary ?? 'reference'];
    }),
  );
}

// ---------------------------------------------------------------- run

const results: WorkloadResult[] = [];
for (const id of IDS) results.push(await runWorkload(ALL_WORKLOADS.find((w) => w.id === id)!));

const medians: Record<string, Record<string, number | undefined>> = {};
const missing: Record<string, Record<string, string | undefined>> = {};
for (const r of results) {
  medians[r.id] = Object.fromEntries(r.variants.map((v) => [v.name, v.timing?.medianMs]));
  missing[r.id] = Object.fromEntries(r.variants.map((v) => [v.name, v.reason ? `${v.status}: ${v.reason}` : undefined]));
}
const bars: Bar[] = checkBars({
  medians, missing, backends: BACKENDS, workloads: IDS, w5Flops: 2 * 1024 ** 3,
  blasGflops: floors['blasMatmul']?.value ?? null, blasMissing: floors['blasMatmul']?.missing ?? (floors['blasMatmul'] ? undefined : 'floors not measured (--floors=false)'),
  w4FloorMs: floors['w4']?.value ?? null, w4FloorMissing: floors['w4']?.missing ?? (floors['w4'] ? undefined : 'floors not measured (--floors=false)'),
});
console.log(`\nissue 5 bars${QUICK ? ' (--quick: noisy, not a result)' : ''}:`);
for (const b of bars) console.log(`  ${b.status.padEnd(4)} ${b.name}: ${b.detail}`);
const compileDefault = resolveKernelBackend(undefined, runtime.backend).choice.chosen, auto = resolveKernelBackend('auto', runtime.backend).choice.chosen;
const eagerBars: Bar[] = checkEagerBars({ medians, missing, workloads: IDS, w5Flops: 2 * 1024 ** 3, compileDefault, auto });
console.log(`\nissue 21 bars (eager on wasm kernels)${QUICK ? ' (--quick: noisy, not a result)' : ''}:`);
for (const b of eagerBars) console.log(`  ${b.status.padEnd(4)} ${b.name}: ${b.detail}`);

const peerInfo = Object.fromEntries(peers.map((p) => [p.name, p.describe()]));
console.log('\npeers ran as:');
for (const [k, v] of Object.entries(peerInfo)) console.log(`  ${k}: ${JSON.stringify(v)}`);

writeJson(OUT, {
  benchmark: 'issue 5: kiln eager / compiled js, wasm, native vs onnxruntime-node, tfjs-backend-wasm, jax-js, with machine floors',
  command: `npx tsx bench/cpu.ts ${process.argv.slice(2).join(' ')}`.trim(),
  machine: { ...finishMachineInfo(machine), kilnThreadsEnv: process.env.KILN_THREADS ?? null, kilnThreads: THREADS },
  options: { quick: QUICK, iters: ITERS, warmup: WARMUP, slowIters: SLOW_ITERS, slowWarmup: SLOW_WARMUP, slow: [...SLOW], workloads: IDS, backends: BACKENDS, peers: PEERS, jaxWorkers: JAX_WORKERS },
  tolerances: { inferenceRel: INFERENCE_TOL, lossRel: LOSS_TOL },
  floors,
  peers: peerInfo,
  peerInitErrors,
  nativeUnavailable: NATIVE_WHY,
  notes: [
    'compileMs = kiln.stats().compileTimeMs over the first call of a new compiled function (trace, passes, codegen, C compile, AND its first run); overheadMs = compileMs - steady median',
    'cold: first compile of the graph in this process after kiln.compiler.reset(), with a fresh empty KILN_CACHE_DIR (no compile cache, no native library, native runtime library rebuilt); the process itself is warm (earlier workloads ran)',
    'cached: kiln.compiler.reset() (+ clearNativeMemoryCache() for native) and a new compile with that KILN_CACHE_DIR now warm; cache = kiln.stats().cache delta, native = nativeStats() delta',
    'peers and kiln variants see the same weights and inputs; a variant whose first output (inference) or first-step loss (training) differs from kiln eager beyond the tolerance is not timed',
    'W5 is the 1024^3 matmul; flops count matmul work only (bench/lib/flops.ts); W4 rates are GB/s of the minimum traffic',
  ],
  bars,
  eagerBars,
  eager: kiln.eagerStats(),
  workloads: results,
});
console.log(`\nwrote ${OUT}`);
// peers (ORT sessions, jax-js's worker pool, kiln's thread pool) may hold the event loop
process.exit(0);
