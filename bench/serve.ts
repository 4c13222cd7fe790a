// Serving under load: `kilnjs serve`'s server (src/serve) answering W1 (the MLP 784-1024-1024-10,
// bench/workloads/w1.ts) with kiln compiled (the server's default backend, 'auto', unless --backend), kiln eager, and onnxruntime-node running the
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
// --fleet: two W1 servers (compiled), each with its own empty local cache, share one Redis
// (Debian's redis-server on a free loopback port): the first compiles and publishes, the
// second's warm-up should compile nothing; their warm-up and start-up times side by side.
//
// Run:  npx tsx bench/serve.ts [--backend=auto|js|wasm|native] [--connections=1,8,64] [--requests=300,1500,3000] [--seconds=30] [--fleet[=only]] [--out=bench/results/serve.json]

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
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
/** the kiln engines' compile backend: what `kilnjs serve` uses unless told otherwise */
const BACKEND = parseArgs().get('backend') ?? 'auto';
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

/** `--server=ENGINE --batching=0|1 [--remote=URL]`: serves W1 on a free port and prints it. */
async function server(engineName: EngineName, batching: boolean, remote: string | undefined): Promise<void> {
  const t0 = performance.now();
  const kilnNode = await import('kilnjs/node');
  const { moduleEngine } = await import('../src/serve/module-engine.js');
  const { pow2Buckets } = await import('../src/serve/rows.js');
  const model = buildModel();
  const buckets = pow2Buckets(MAX_BATCH);
  const inputs = [{ name: 'x', dtype: 'float32' as const, row: [IN] }];
  const engine = engineName === 'ort' ? await ortEngine(model, buckets) : moduleEngine({ name: 'W1', model, inputs, buckets, backend: BACKEND, mode: engineName === 'kiln-eager' ? 'eager' : 'compiled' });
  const remoteCache = remote ? { url: remote, secret: process.env.KILN_BENCH_FLEET_SECRET! } : undefined;
  let warmupMs = 0;
  const s = await kilnNode.serve({ model: engine, port: 0, batching, maxBatch: MAX_BATCH, maxWaitMs: 2, maxQueue: 4096, logLevel: 'silent', canary: { fraction: 0 }, ...(remoteCache ? { remoteCache } : {}), onLog: (_l, m) => void (warmupMs = Number(/^ready in \d+ ms: warm-up (\d+) ms/.exec(m)?.[1] ?? warmupMs)) });
  await s.ready;
  process.stdout.write(`${JSON.stringify({ url: s.url, stats: kiln.stats(), readyMs: performance.now() - t0, warmupMs, remote: s.remoteCache() })}\n`);
  process.once('SIGTERM', () => void s.close().then(() => process.exit(0)));
}

interface Started {
  url: string;
  stop: () => Promise<void>;
  stats: kiln.CompilerStats;
  readyMs: number;
  warmupMs: number;
  remote: unknown;
}

function startServer(engine: EngineName, batching: boolean, env: Record<string, string> = { KILN_CACHE: '0' }, extra: string[] = []): Promise<Started> {
  const p = spawn(process.execPath, ['--import', 'tsx', SELF, `--server=${engine}`, `--batching=${batching ? 1 : 0}`, `--backend=${BACKEND}`, ...extra], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  return new Promise((resolve, reject) => {
    let out = '';
    p.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      const started = JSON.parse(out.slice(0, nl)) as Omit<Started, 'stop'>;
      const exited = new Promise<void>((r) => p.once('exit', () => r()));
      resolve({ ...started, stop: async () => void (p.kill('SIGTERM'), await exited) });
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

/** Debian's redis-server on a free loopback port, no persistence. */
async function startRedis(): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
  const dir = mkdtempSync(join(tmpdir(), 'kiln-bench-redis-'));
  const p = spawn('/usr/bin/redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    p.stdout!.setEncoding('utf8').on('data', (d: string) => void ((out += d).includes('Ready to accept connections') && resolve()));
    p.once('exit', (code) => reject(new Error(`redis-server exited (${code})`)));
  });
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  return { url: `redis://127.0.0.1:${port}`, stop: async () => void (p.kill('SIGTERM'), await exited) };
}

/** Two W1 servers sharing one Redis (see the file comment). */
async function fleet(): Promise<Record<string, unknown>> {
  const redis = await startRedis();
  const env = { KILN_BENCH_FLEET_SECRET: randomBytes(32).toString('hex'), KILN_CACHE_SOURCES: 'off' };
  const out: Record<string, unknown> = {};
  try {
    for (const name of ['first', 'second']) {
      const s = await startServer('kiln-compiled', true, { ...env, KILN_CACHE_DIR: mkdtempSync(join(tmpdir(), `kiln-bench-fleet-${name}-`)) }, [`--remote=${redis.url}`]);
      await s.stop();
      const c = s.stats.cache;
      out[name] = { readyMs: Math.round(s.readyMs), warmupMs: s.warmupMs, cacheMisses: c.misses, traceSkips: c.traceSkips, programHits: c.hits - c.traceSkips, compileMs: Math.round(s.stats.compileTimeMs), remote: s.remote };
      console.log(`fleet ${name}: ready ${s.readyMs.toFixed(0)} ms after the server process began (model built, serve() called), warm-up ${s.warmupMs} ms; cache misses ${c.misses}, warm starts ${c.traceSkips}, compile time ${s.stats.compileTimeMs.toFixed(0)} ms`);
    }
  } finally {
    await redis.stop();
  }
  return out;
}

async function main(): Promise<void> {
  const args = parseArgs();
  if (args.has('server')) return server(args.get('server') as EngineName, args.get('batching') === '1', args.get('remote'));
  const connections = (args.get('connections') ?? '1,8,64').split(',').map(Number);
  const requests = (args.get('requests') ?? '300,1500,3000').split(',').map(Number);
  const seconds = Number(args.get('seconds') ?? 30);
  const out = args.get('out') ?? 'bench/results/serve.json';
  const machine = machineInfo();
  kiln.manualSeed(1);
  const x = kiln.randn([1, IN]).dataSync() as Float32Array;
  const body = kiln.encodeSafetensors({ x: { dtype: 'float32', shape: [1, IN], data: x } });
  const fleetResult = args.has('fleet') ? await fleet() : null;
  const rows: Row[] = [];
  const outputs = new Map<EngineName, Float32Array>();
  const warm = new Map<string, number>();
  let chosen: string | null = null;
  for (const engine of args.get('fleet') === 'only' ? [] : ENGINES) {
    for (const batching of [false, true]) {
      const t0 = performance.now();
      const s = await startServer(engine, batching);
      warm.set(`${engine} batching=${batching}`, Math.round(performance.now() - t0));
      if (engine === 'kiln-compiled') chosen = s.stats.autoBackend?.chosen ?? BACKEND;
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
  if (args.get('fleet') === 'only') {
    writeJson(out, { benchmark: 'serve (fleet only)', machine: finishMachineInfo(machine), fleet: fleetResult });
    return console.log(`wrote ${out}`);
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
    setup: { maxBatch: MAX_BATCH, buckets: 'powers of two up to 64', maxWaitMs: 2, requestsPerRun: requests, secondsCap: seconds, kilnBackend: BACKEND, kilnBackendChosen: chosen, ortThreads: availableParallelism(), kilnThreads: process.env.KILN_THREADS ?? `${availableParallelism()} (default)` },
    agreementWithEager: agreement,
    serverStartMs: Object.fromEntries(warm),
    rows,
    lost,
    ...(fleetResult ? { fleet: fleetResult } : {}),
  });
  console.log(`wrote ${out}`);
}

await main();
