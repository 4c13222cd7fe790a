// `kilnjs serve`: compiled inference over HTTP (Fastify, imported lazily), as a library call.
//
//   start     remote cache (if any) -> load the model -> listen -> warm up every bucket -> ready
//   GET  /healthz        200 while the process runs
//   GET  /readyz         200 only once warm-up is done (503 before, and while shutting down)
//   GET  /metrics        Prometheus text (metrics.ts)
//   GET  /v1/model       the declared inputs, buckets, batching, mode
//   POST /v1/predict     JSON (json-payload.ts) or safetensors bytes (binary-payload.ts) -> outputs
//   GET  /admin/state    mode and canary counts;  POST /admin/mode {"mode": "compiled" | "eager"}
//   close() / SIGTERM    stop accepting (new requests 503, the listener closes), answer everything
//                        accepted, then stop
//
// A bad request is a 400 decided before it is queued: it never reaches a batch, so it cannot
// disturb other requests. A full queue is a 503 with Retry-After.

import { closeSync, openSync, readSync } from 'node:fs';
import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { stats } from '../core/stats.js';
import { useRemoteCache, type RemoteCache } from '../compiler/cache/remote.js';
import { artifactEngine } from './artifact-engine.js';
import { Batcher } from './batcher.js';
import { decodeBinaryInputs, encodeBinaryOutputs } from './binary-payload.js';
import { ModeController, type ModeState } from './canary.js';
import type { Engine, Mode, WarmupEntry } from './engine.js';
import { OverloadError, RequestError } from './errors.js';
import { decodeJsonInputs, encodeJsonOutputs } from './json-payload.js';
import { createMetrics } from './metrics.js';
import { loadModelFile } from './model-file.js';
import { moduleEngine } from './module-engine.js';
import { resolveOptions, type ServeOptions } from './options.js';
import { pow2Buckets } from './rows.js';
import { describeSignature } from './signature.js';

export type { ServeOptions } from './options.js';

export interface KilnServer {
  /** http://host:port */
  readonly url: string;
  readonly port: number;
  readonly engine: Engine;
  /** resolves once warm-up is done and /readyz answers 200 (rejects if warm-up failed) */
  readonly ready: Promise<void>;
  /** the answering path and the canary's counts */
  state(): ModeState;
  setMode(mode: Mode, reason: string): void;
  /** the remote cache's counters (null: none configured) */
  remoteCache(): ReturnType<RemoteCache['stats']> | null;
  /** stops accepting, answers what was accepted (up to drainTimeoutMs), then stops; resolves when stopped */
  close(): Promise<void>;
}

const ARTIFACT_MAGIC = 'KILN\n';

function isArtifact(path: string): boolean {
  try {
    const fd = openSync(path, 'r');
    const b = Buffer.alloc(ARTIFACT_MAGIC.length);
    readSync(fd, b, 0, b.length, 0);
    closeSync(fd);
    return b.toString('utf8') === ARTIFACT_MAGIC;
  } catch {
    return false;
  }
}

async function makeEngine(o: ServeOptions, maxBatch: number, artifact: boolean): Promise<Engine> {
  if (typeof o.model !== 'string') return o.model;
  if (artifact) return artifactEngine({ path: o.model, ...(o.backend ? { backend: o.backend } : {}), ...(o.mode ? { mode: o.mode } : {}), ...(o.artifactTrust ? { trust: o.artifactTrust } : {}) });
  const m = await loadModelFile(o.model, o.weights);
  const buckets = o.buckets ?? m.buckets ?? pow2Buckets(maxBatch);
  return moduleEngine({ name: m.name, model: m.model, inputs: m.inputs, buckets, ...(o.backend ? { backend: o.backend } : {}), ...(o.mode ? { mode: o.mode } : {}) });
}

function isLoopback(addr: string | undefined): boolean {
  return !!addr && (addr === '::1' || addr.startsWith('127.') || addr.startsWith('::ffff:127.'));
}

function describeWarmup(entries: readonly WarmupEntry[]): string {
  return entries.map((e) => `${e.bucket} ${e.source} ${e.ms.toFixed(0)} ms`).join(', ');
}

/** Starts a server (see the file comment); resolves once it listens (await `.ready` for warm-up). */
export async function serve(o: ServeOptions): Promise<KilnServer> {
  const t0 = performance.now();
  const r = resolveOptions(o);
  const { default: Fastify, LogController } = await import('fastify');
  // no line per request (metrics count them); the server's own lines go through this logger
  const app = Fastify({ logger: r.logLevel === 'silent' ? false : { level: r.logLevel }, logController: new LogController({ disableRequestLogging: true }), return503OnClosing: true, forceCloseConnections: 'idle', bodyLimit: 1 << 20 });
  app.removeContentTypeParser('text/plain');
  const log = (level: 'info' | 'warn' | 'error', msg: string) => {
    app.log[level](msg);
    o.onLog?.(level, msg);
  };

  const remote = o.remoteCache ? useRemoteCache(o.remoteCache) : null;
  if (remote) {
    // resolves at the client's first word (connected, or refused / timed out: ioredis's 2 s connect timeout)
    const up = await remote.connected(10_000);
    log(up ? 'info' : 'warn', up ? `remote compile cache: ${remote.location}` : `remote compile cache ${remote.location} is unreachable (${remote.stats().lastError ?? 'no answer'}): compiling locally`);
  }
  const artifact = typeof o.model === 'string' && isArtifact(o.model);
  let engine: Engine;
  try {
    engine = await makeEngine(o, r.maxBatch, artifact);
  } catch (e) {
    await remote?.close();
    await app.close();
    throw e;
  }
  const maxRows = engine.buckets[engine.buckets.length - 1]!;
  const batching = r.batching && engine.rows.ok && maxRows > 1;
  if (!engine.rows.ok) log('warn', `${engine.name}: requests are neither batched nor padded (${engine.rows.reason}); each must carry exactly ${engine.buckets.join(' or ')} rows`);
  if (artifact && o.maxBatch !== undefined && o.maxBatch !== maxRows) log('warn', `${o.model} was exported for batches of ${maxRows}: maxBatch ${o.maxBatch} does not apply`);

  let inFlight = 0;
  let isReady = false;
  let closing: Promise<void> | null = null;
  let warmedUp: WarmupEntry[] = [];
  const controller = new ModeController(engine, r.canary, { check: (...a) => metrics.canary.check(...a), mode: (...a) => metrics.canary.mode(...a) }, (level, msg) => log(level, msg));
  const metrics = await createMetrics({
    queueDepth: () => batcher.depth, queueLimit: r.maxQueue, inFlight: () => inFlight,
    mode: () => controller.mode, modes: engine.modes, buckets: engine.buckets, remote: () => remote?.stats() ?? null,
  });
  const batcher = new Batcher(engine.inputs, engine.buckets, { batching, maxWaitMs: r.maxWaitMs, maxQueue: r.maxQueue }, (inputs) => controller.execute(inputs), (b) => metrics.batch(b, controller.mode));

  // the biggest request: JSON numbers take up to ~25 characters, binary 8 bytes per element
  const elems = engine.inputs.reduce((a, s) => a + s.row.reduce((x, y) => x * y, 1), 0) * maxRows;
  const bodyLimit = Math.max(1 << 20, elems * 32 + 65536);
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer', bodyLimit }, (_req, body, done) => done(null, body));

  const started = new WeakMap<FastifyRequest, number>();
  app.addHook('onRequest', async (req) => void started.set(req, performance.now()));
  app.addHook('onResponse', async (req, reply) => {
    if (req.routeOptions.url !== '/v1/predict') return;
    const format = String(req.headers['content-type'] ?? '').startsWith('application/octet-stream') ? 'binary' : 'json';
    metrics.request(reply.statusCode, format, (performance.now() - (started.get(req) ?? performance.now())) / 1000);
    if (reply.statusCode === 400 || reply.statusCode === 413 || reply.statusCode === 415) metrics.rejected('bad_request');
  });
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, _req, reply) => {
    const code = err.statusCode && err.statusCode >= 400 ? err.statusCode : 500;
    if (code >= 500) {
      metrics.rejected('error');
      log('error', `request failed: ${err.stack ?? err.message}`);
    }
    void reply.code(code).send({ error: err.code ?? err.name, message: err.message });
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    const body = { ready: isReady && !closing, warmup: warmedUp, mode: controller.mode };
    return reply.code(body.ready ? 200 : 503).send(closing ? { ...body, reason: 'shutting down' } : isReady ? body : { ...body, reason: 'warming up' });
  });
  app.get('/metrics', async (_req, reply) => reply.type(metrics.contentType).send(await metrics.text()));
  app.get('/v1/model', async () => ({
    name: engine.name, inputs: engine.inputs.map((s) => ({ name: s.name, dtype: s.dtype, shape: ['n', ...s.row] })), signature: describeSignature(engine.inputs),
    buckets: engine.buckets, maxRows, batching, rowsStaySeparate: engine.rows.ok ? true : engine.rows.reason, mode: controller.mode,
  }));

  app.post('/v1/predict', async (req: FastifyRequest, reply: FastifyReply) => {
    const binary = Buffer.isBuffer(req.body);
    let decoded: { tensors: import('../io/safetensors.js').RawTensor[]; rows: number };
    try {
      decoded = binary ? decodeBinaryInputs(req.body as Buffer, engine.inputs, maxRows) : decodeJsonInputs(req.body, engine.inputs, maxRows);
      if (!engine.rows.ok && !engine.buckets.includes(decoded.rows)) throw new RequestError(`${decoded.rows} rows: this model is served without padding or batching (${engine.rows.reason})`, 'POST /v1/predict', `send exactly ${engine.buckets.join(' or ')} rows`);
    } catch (e) {
      if (e instanceof RequestError) return reply.code(400).send({ error: e.name, message: e.detail, hint: e.hint });
      throw e;
    }
    let outs;
    inFlight++;
    try {
      outs = await batcher.submit(decoded.tensors, decoded.rows);
    } catch (e) {
      if (e instanceof OverloadError) {
        metrics.rejected('overload');
        return reply.code(503).header('retry-after', String(e.retryAfterSeconds)).send({ error: e.name, message: e.detail, hint: e.hint });
      }
      throw e;
    } finally {
      inFlight--;
    }
    const accept = String(req.headers.accept ?? '');
    const asBinary = accept.includes('application/octet-stream') || (binary && !accept.includes('application/json'));
    if (asBinary) {
      const bytes = encodeBinaryOutputs(outs);
      return reply.type('application/octet-stream').send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    }
    return reply.type('application/json').send(encodeJsonOutputs(outs));
  });

  const adminAllowed = (req: FastifyRequest): boolean => {
    if (!o.adminToken) return isLoopback(req.socket.remoteAddress);
    const got = Buffer.from(String(req.headers.authorization ?? ''));
    const want = Buffer.from(`Bearer ${o.adminToken}`);
    return got.length === want.length && timingSafeEqual(got, want);
  };
  app.get('/admin/state', async (req, reply) => (adminAllowed(req) ? controller.state() : reply.code(403).send({ error: 'Forbidden', message: 'admin endpoints need the admin token (or a loopback client when none is set)' })));
  app.post('/admin/mode', async (req, reply) => {
    if (!adminAllowed(req)) return reply.code(403).send({ error: 'Forbidden', message: 'admin endpoints need the admin token (or a loopback client when none is set)' });
    const b = req.body as { mode?: unknown; reason?: unknown } | undefined;
    if (!b || (b.mode !== 'compiled' && b.mode !== 'eager') || !engine.modes.includes(b.mode)) return reply.code(400).send({ error: 'RequestError', message: `"mode" must be one of ${engine.modes.map((m) => `"${m}"`).join(', ')}` });
    controller.setMode(b.mode, `operator (POST /admin/mode${typeof b.reason === 'string' ? `: ${b.reason.slice(0, 200)}` : ''})`);
    return controller.state();
  });

  try {
    await app.listen({ host: r.host, port: r.port });
  } catch (e) {
    await remote?.close();
    throw e;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : r.port;
  const url = `http://${r.host.includes(':') ? `[${r.host}]` : r.host}:${port}`;
  log('info', `${engine.name}: listening on ${url}; takes ${describeSignature(engine.inputs)}; buckets ${engine.buckets.join(', ')}; ${batching ? `batching up to ${maxRows} rows, ${r.maxWaitMs} ms` : 'no batching'}; queue ${r.maxQueue}; mode ${controller.mode}; canary ${r.canary.fraction}`);

  const ready = (async () => {
    const before = stats().cache;
    const w0 = performance.now();
    await engine.warmup((e) => warmedUp.push(e));
    const warmupMs = performance.now() - w0;
    await remote?.flush();
    const after = stats();
    metrics.warmup(warmupMs / 1000, warmedUp);
    metrics.ready(true);
    isReady = true;
    const fleet = remote ? `; remote cache: ${remote.stats().hits} hits, ${remote.stats().published} published` : '';
    log('info', `ready in ${(performance.now() - t0).toFixed(0)} ms: warm-up ${warmupMs.toFixed(0)} ms (${describeWarmup(warmedUp)}); cache ${after.cache.hits - before.hits} hits (${after.cache.traceSkips - before.traceSkips} trace skips), ${after.cache.misses - before.misses} misses${fleet}`);
  })();
  ready.catch((e: unknown) => log('error', `warm-up failed, not ready: ${(e as Error).stack ?? String(e)}`));

  const close = (): Promise<void> => {
    closing ??= (async () => {
      metrics.ready(false);
      log('info', `shutting down: refusing new requests, answering the ${inFlight} accepted`);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<boolean>((res) => (timer = setTimeout(() => res(true), r.drainTimeoutMs)));
      const drained = (async () => {
        const closed = app.close(); // the listener closes; requests on open connections get 503
        await batcher.idle();
        // every accepted request has its answer: keep-alive connections would otherwise idle
        // until their timeout, so close each as soon as its last answer is written
        const sweep = setInterval(() => app.server.closeIdleConnections(), 20);
        await closed;
        clearInterval(sweep);
        return false;
      })();
      if (await Promise.race([drained, timedOut])) {
        log('warn', `drain timed out after ${r.drainTimeoutMs} ms with ${inFlight} requests unanswered; closing their connections`);
        app.server.closeAllConnections();
      }
      clearTimeout(timer);
      await ready.catch(() => {});
      await remote?.close();
      await engine.close?.();
      log('info', 'stopped');
    })();
    return closing;
  };

  return {
    url, port, engine, ready,
    state: () => controller.state(),
    setMode: (mode, reason) => controller.setMode(mode, reason),
    remoteCache: () => remote?.stats() ?? null,
    close,
  };
}
