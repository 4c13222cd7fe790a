// Serving under load: `kilnjs serve`'s server (src/serve) answering W1 (the MLP 784-1024-1024-10,
// bench/workloads/w1.ts) with kiln compiled (js), kiln eager, and onnxruntime-node running the
// same weights (bench/onnx/graphs.ts) behind the same server, each with and without dynamic
// batching, at 1, 8 and 64 concurrent connections (autocannon, loopback only). Each request
// is one row as safetensors bytes (3 KiB; JSON's parsing would be most of a row's cost).
//
// Each (engine, batching) is its own server process (`--server`): the client (autocannon, in
// this process) and the server share the machine's cores, as on any one-box test. Every run is
// bounded in requests and in time; "lost" counts requests sent and not answered with a 200, and
// the server's own count of 200s is checked against the client's. Outputs of the three engines
// are compared on one batch before anything is timed.
//
// Run:  npx tsx bench/serve.ts [--connections=1,8,64] [--requests=300,1500,3000] [--seconds=30] [--out=bench/results/serve.json]

import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import * as kiln from 'kilnjs';
import type { Engine, EngineOutput } from 'kilnjs/node';
import autocannon from 'autocannon';
import { buildMlp, MLP_DIMS } from './workloads/w1.js';
import { freeze } from './workloads/types.js';
import { buildOnnxModel } from './onnx/graphs.js';
import type { HostTensor, PeerCase } from './peers/common.js';
import { finishMachineInfo, fmtMs, machineInfo, parseArgs, printTable, writeJson } from './lib/report.js';

const SELF = fileURLToPath(import.meta.url);
const IN = MLP_DIMS[0];
const MAX_BATCH = 64;
const ENGINES = ['kiln-compiled', 'kiln-eager', 'ort'] as const;
type EngineName = (typeof ENGINES)[number];

function buildModel(): kiln.nn.Sequential {
  kiln.manualSeed(0);
  return freeze(buildMlp());
}

async function ortEngine(model: kiln.nn.Sequential, buckets: number[]): Promise<Engine> {
  const ort = await import('onnxruntime-node');
  const params = new Map<string, HostTensor>(Object.entries(model.stateDict()).map(([k, t]) => [k, { shape: [...t.shape], data: t.dataSync() as Float32Array }]));
  const c: PeerCase = { id: 'W1', kind: 'inference', params, inputs: [{ shape: [1, IN], data: new Float32Array(IN) }] };
  const session = await ort.InferenceSession.create(buildOnnxModel(c)!, { intraOpNumThreads: availableParallelism(), interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' });
  return {
    name: 'W1 (onnxruntime-node)',
    inputs: [{ name: 'x', dtype: 'float32', row: [IN] }],
    modes: ['compiled'],
    buckets,
    rows: { ok: true },
    async warmup() {
      const t0 = performance.now();
      for (const b of buckets) await session.run({ x: new ort.Tensor('float32', new Float32Array(b * IN), [b, IN]) });
      return [{ bucket: buckets.at(-1)!, source: 'onnxruntime session', ms: performance.now() - t0 }];
    },
    async run(_mode, inputs): Promise<EngineOutput[]> {
      const x = inputs[0]!;
      const y = (await session.run({ x: new ort.Tensor('float32', x.data as Float32Array, x.shape) }))['y']!;
      return [{ name: 'output', tensor: { dtype: 'float32', shape: [...y.dims], data: y.data as Float32Array }, rows: { axis: 0, factor: 1 } }];
    },
  };
}

/** `--server=ENGINE --batching=0|1`: serves W1 on a free port and prints it. */
async function server(engineName: EngineName, batching: boolean): Promise<void> {
  const kilnNode = await import('kilnjs/node');
  const { moduleEngine } = await import('../src/serve/module-engine.js');
  const { pow2Buckets } = await import('../src/serve/rows.js');
  const model = buildModel();
  const buckets = pow2Buckets(MAX_BATCH);
  const inputs = [{ name: 'x', dtype: 'float32' as const, row: [IN] }];
  const engine = engineName === 'ort' ? await ortEngine(model, buckets) : moduleEngine({ name: 'W1', model, inputs, buckets, backend: 'js', mode: engineName === 'kiln-eager' ? 'eager' : 'compiled' });
  const s = await kilnNode.serve({ model: engine, port: 0, batching, maxBatch: MAX_BATCH, maxWaitMs: 2, maxQueue: 4096, logLevel: 'silent', canary: { fraction: 0 } });
  await s.ready;
  process.stdout.write(`${JSON.stringify({ url: s.url, stats: kiln.stats() })}\n`);
  process.once('SIGTERM', () => void s.close().then(() => process.exit(0)));
}

function startServer(engine: EngineName, batching: boolean): Promise<{ url: string; stop: () => Promise<void>; compiles: number }> {
  const p = spawn(process.execPath, ['--import', 'tsx', SELF, `--server=${engine}`, `--batching=${batching ? 1 : 0}`], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, KILN_CACHE: '0' } });
  return new Promise((resolve, reject) => {
    let out = '';
    p.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      const { url, stats } = JSON.parse(out.slice(0, nl)) as { url: string; stats: kiln.CompilerStats };
      const exited = new Promise<void>((r) => p.once('exit', () => r()));
      resolve({ url, compiles: stats.compiles, stop: async () => void (p.kill('SIGTERM'), await exited) });
    });
    p.once('exit', (code) => reject(new Error(`server ${engine} exited (${code}) before listening`)));
  });
}

/** The 200s the server counted (its /metrics). */
async function served(url: string): Promise<{ ok: number; batches: number; rows: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const get = (s: string) => Number(text.split('\n').find((l) => l.startsWith(`${s} `))?.split(' ')[1] ?? 0);
  return { ok: get('kiln_serve_request_duration_seconds_count{code="200",format="binary"}'), batches: get('kiln_serve_batch_rows_count'), rows: get('kiln_serve_batch_rows_sum') };
}

function load(url: string, body: Uint8Array, connections: number, requests: number, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const inst = autocannon({ url: `${url}/v1/predict`, method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from(body), connections, maxOverallRequests: requests, duration: seconds, timeout: 30 }, (err, res) => (err ? reject(err) : resolve(res)));
    inst.on('error', reject);
  });
}

async function predict(url: string, body: Uint8Array): Promise<Float32Array> {
  const r = await fetch(`${url}/v1/predict`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(body) });
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${await r.text()}`);
  return kiln.decodeSafetensors(new Uint8Array(await r.arrayBuffer())).tensors.output!.data as Float32Array;
}

interface Row {
  engine: EngineName;
  batching: boolean;
  connections: number;
  sent: number;
  ok: number;
  /** requests sent and not answered 200, in a run that ended by count (every request had its answer or an error) */
  lost: number;
  /** 200s the server counted in the run (>= ok: a run cut by its time cap leaves answers the client no longer reads) */
  serverOk: number;
  endedBy: 'requests' | 'time';
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  meanBatchRows: number;
}

async function main(): Promise<void> {
  const args = parseArgs();
  if (args.has('server')) return server(args.get('server') as EngineName, args.get('batching') === '1');
  const connections = (args.get('connections') ?? '1,8,64').split(',').map(Number);
  const requests = (args.get('requests') ?? '300,1500,3000').split(',').map(Number);
  const seconds = Number(args.get('seconds') ?? 30);
  const out = args.get('out') ?? 'bench/results/serve.json';
  const machine = machineInfo();
  kiln.manualSeed(1);
  const x = kiln.randn([1, IN]).dataSync() as Float32Array;
  const body = kiln.encodeSafetensors({ x: { dtype: 'float32', shape: [1, IN], data: x } });
  const rows: Row[] = [];
  const outputs = new Map<EngineName, Float32Array>();
  const warm = new Map<string, number>();
  for (const engine of ENGINES) {
    for (const batching of [false, true]) {
      const t0 = performance.now();
      const s = await startServer(engine, batching);
      warm.set(`${engine} batching=${batching}`, performance.now() - t0);
      try {
        outputs.set(engine, await predict(s.url, body));
        await load(s.url, body, 8, 100, 120); // JIT and thread pool warm (ends by count)
        for (const [i, c] of connections.entries()) {
          const before = await served(s.url);
          const n = requests[i] ?? requests.at(-1)!;
          const r = await load(s.url, body, c, n, seconds);
          const after = await served(s.url);
          const ok = r['2xx'];
          const endedBy = ok + r.non2xx + r.errors >= n ? 'requests' : 'time';
          const row: Row = {
            engine, batching, connections: c, sent: r.requests.sent, ok, lost: endedBy === 'requests' ? r.requests.sent - ok : r.non2xx + r.errors, serverOk: after.ok - before.ok,
            endedBy, seconds: r.duration, rps: ok / r.duration, p50Ms: r.latency.p50, p99Ms: r.latency.p99,
            meanBatchRows: (after.rows - before.rows) / Math.max(1, after.batches - before.batches),
          };
          rows.push(row);
          console.log(`${engine.padEnd(13)} batching=${batching ? 'on ' : 'off'} c=${String(c).padEnd(3)} ${row.rps.toFixed(0).padStart(6)} req/s  p50 ${fmtMs(row.p50Ms)} ms  p99 ${fmtMs(row.p99Ms)} ms  batch ${row.meanBatchRows.toFixed(1)} rows  sent ${row.sent} ok ${ok} lost ${row.lost} (server counted ${row.serverOk}; errors ${r.errors}, timeouts ${r.timeouts}, non-2xx ${r.non2xx})`);
        }
      } finally {
        await s.stop();
      }
    }
  }
  const ref = outputs.get('kiln-eager')!;
  const agreement = Object.fromEntries([...outputs].map(([k, v]) => [k, Math.max(...Array.from(v, (y, i) => Math.abs(y - ref[i]!)))]));
  console.log(`\nmax |output - kiln eager| on one request: ${Object.entries(agreement).map(([k, v]) => `${k} ${v.toExponential(1)}`).join(', ')}`);
  const header = ['engine', 'batching', ...connections.flatMap((c) => [`c=${c} req/s`, `p50 ms`, `p99 ms`])];
  const table = ENGINES.flatMap((e) => [false, true].map((b) => [e, b ? 'on' : 'off', ...connections.flatMap((c) => {
    const r = rows.find((x) => x.engine === e && x.batching === b && x.connections === c)!;
    return [r.rps.toFixed(0), fmtMs(r.p50Ms), fmtMs(r.p99Ms)];
  })]));
  console.log('');
  printTable(header, table);
  const lost = rows.reduce((a, r) => a + r.lost + (r.endedBy === 'requests' ? Math.abs(r.serverOk - r.ok) : Math.max(0, r.ok - r.serverOk)), 0);
  console.log(`\nrequests lost (not answered 200; client and server counts disagreeing): ${lost}; runs cut by their time cap: ${rows.filter((r) => r.endedBy === 'time').length}`);
  writeJson(out, {
    benchmark: 'serve',
    note: 'W1 (MLP 784-1024-1024-10) served by src/serve, one row per request as safetensors bytes, autocannon on loopback in the bench process, server in a child process; the 2-core machine was shared with other agents while this ran (load averages in machine): compare rows of one run, not runs',
    machine: finishMachineInfo(machine),
    setup: { maxBatch: MAX_BATCH, buckets: 'powers of two up to 64', maxWaitMs: 2, requestsPerRun: requests, secondsCap: seconds, kilnBackend: 'js', ortThreads: availableParallelism(), kilnThreads: process.env.KILN_THREADS ?? `${availableParallelism()} (default)` },
    agreementWithEager: agreement,
    serverStartMs: Object.fromEntries(warm),
    rows,
    lost,
  });
  console.log(`wrote ${out}`);
}

await main();
