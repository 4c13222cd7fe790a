// `kilnjs serve <model> [options]` (src/cli.ts): parses the flags into ServeOptions, starts the
// server, and on SIGTERM / SIGINT stops accepting, answers what was accepted, and exits 0.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { KilnError } from '../core/errors.js';
import type { RemoteCacheOptions } from '../compiler/cache/remote.js';
import { LOG_LEVELS, type ServeOptions } from './options.js';

export const SERVE_HELP = `kilnjs serve: compiled inference over HTTP

usage:
  kilnjs serve <model> [options]

model (one of):
  an artifact                a file written by kiln.export (one batch size: its own)
  a module file              .ts/.js exporting a servable model (src/serve/model-file.ts)
  --weights FILE             safetensors weights for a module file

server:
  --host HOST                address to listen on (default 127.0.0.1)
  --port N                   port (default 8080; 0: any free port, printed when listening)
  --backend NAME             kiln.compile backend of a module file (default js: js, wasm, native, auto);
                             of an artifact: which stored program runs
  --mode compiled|eager      the path that answers first (default compiled)
  --max-batch N              most rows per batch and per request (default 32)
  --buckets LIST             batch sizes compiled ahead and padded to, e.g. 1,8,32 (default: powers of two)
  --no-batching              run each request alone (padded to its bucket)
  --max-wait-ms N            the longest a request waits for others to share a batch (default 2)
  --max-queue N              waiting requests beyond which new ones get 503 + Retry-After (default 256)
  --drain-timeout-ms N       the longest SIGTERM waits for accepted requests (default 30000)
  --admin-token-file FILE    /admin/* requires "Authorization: Bearer <token>" (default: loopback clients only)
  --log-level LEVEL          ${LOG_LEVELS.join(', ')} (default info)

canary (a fraction of batches also runs eagerly; past the threshold the server switches to eager):
  --canary-fraction X        fraction of batches checked (default 0.01; 0: off)
  --canary-rtol X, --canary-atol X   tolerance (default 1e-4, 1e-5)
  --canary-window N          checks remembered (default 100)
  --canary-max-failures N    failures in the window that roll back to eager (default 3)

fleet (compiled programs shared through Redis, so the next instance starts warm):
  --remote-cache URL         redis://host:6379 (or KILN_REMOTE_CACHE)
  --cache-secret-file FILE   the fleet's shared secret, 32+ bytes (or KILN_REMOTE_CACHE_SECRET_FILE):
                             every entry carries an HMAC-SHA256 with it
  --cache-public-key FILE    or Ed25519: entries must be signed with this key's private half ...
  --cache-private-key FILE   ... which instances that publish entries hold (without it: read only)
  --remote-cache-unauthenticated   no authentication (only for a Redis that only trusted processes reach)

endpoints: GET /healthz, GET /readyz (200 after warm-up), GET /metrics, GET /v1/model,
  POST /v1/predict (JSON {"inputs": {...}} or safetensors bytes), GET /admin/state, POST /admin/mode

exit status: 0 stopped by SIGTERM/SIGINT after draining; 1 the model or warm-up failed; 2 bad arguments.
`;

class UsageError extends Error {}

function int(v: string | undefined, name: string, min: number): number | undefined {
  if (v === undefined) return undefined;
  const x = Number(v);
  if (!Number.isInteger(x) || x < min) throw new UsageError(`--${name}: expected an integer >= ${min}, got '${v}'`);
  return x;
}

function real(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const x = Number(v);
  if (!Number.isFinite(x) || x < 0) throw new UsageError(`--${name}: expected a number >= 0, got '${v}'`);
  return x;
}

function readFile(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new UsageError(`${what} ${path}: ${(e as Error).message}`);
  }
}

/** A secret file without its trailing newline (`openssl rand -hex 32 > fleet.key`). */
function secretFile(path: string, what: string): Buffer {
  const b = readFile(path, what);
  return b.at(-1) === 10 ? b.subarray(0, b.length - 1) : b;
}

/** The options for `kilnjs serve ARGS` (throws UsageError). */
export function parseServeArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServeOptions {
  const { values: v, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      weights: { type: 'string' }, host: { type: 'string' }, port: { type: 'string' }, backend: { type: 'string' }, mode: { type: 'string' },
      'max-batch': { type: 'string' }, buckets: { type: 'string' }, 'no-batching': { type: 'boolean' }, 'max-wait-ms': { type: 'string' }, 'max-queue': { type: 'string' },
      'drain-timeout-ms': { type: 'string' }, 'admin-token-file': { type: 'string' }, 'log-level': { type: 'string' },
      'canary-fraction': { type: 'string' }, 'canary-rtol': { type: 'string' }, 'canary-atol': { type: 'string' }, 'canary-window': { type: 'string' }, 'canary-max-failures': { type: 'string' },
      'remote-cache': { type: 'string' }, 'cache-secret-file': { type: 'string' }, 'cache-public-key': { type: 'string' }, 'cache-private-key': { type: 'string' }, 'remote-cache-unauthenticated': { type: 'boolean' },
    },
  });
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'which model? kilnjs serve <artifact or module file>' : `expected one model, got ${positionals.join(', ')}`);
  const mode = v.mode;
  if (mode !== undefined && mode !== 'compiled' && mode !== 'eager') throw new UsageError(`--mode: 'compiled' or 'eager', got '${mode}'`);
  const level = v['log-level'];
  if (level !== undefined && !(LOG_LEVELS as readonly string[]).includes(level)) throw new UsageError(`--log-level: one of ${LOG_LEVELS.join(', ')}, got '${level}'`);
  const buckets = v.buckets?.split(',').map((s) => int(s.trim(), 'buckets', 1)!);
  const url = v['remote-cache'] ?? env.KILN_REMOTE_CACHE;
  let remoteCache: RemoteCacheOptions | undefined;
  if (url) {
    const secretPath = v['cache-secret-file'] ?? env.KILN_REMOTE_CACHE_SECRET_FILE;
    remoteCache = {
      url,
      ...(secretPath ? { secret: secretFile(secretPath, '--cache-secret-file') } : {}),
      ...(v['cache-public-key'] ? { publicKey: readFile(v['cache-public-key'], '--cache-public-key').toString('utf8') } : {}),
      ...(v['cache-private-key'] ? { privateKey: readFile(v['cache-private-key'], '--cache-private-key').toString('utf8') } : {}),
      ...(v['remote-cache-unauthenticated'] ? { unsafeUnauthenticated: true } : {}),
    };
  }
  const canary = {
    fraction: real(v['canary-fraction'], 'canary-fraction'), rtol: real(v['canary-rtol'], 'canary-rtol'), atol: real(v['canary-atol'], 'canary-atol'),
    window: int(v['canary-window'], 'canary-window', 1), maxFailures: int(v['canary-max-failures'], 'canary-max-failures', 1),
  };
  const defined = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, x]) => x !== undefined)) as Partial<T>;
  return {
    model: positionals[0]!,
    ...defined({
      weights: v.weights, host: v.host, port: int(v.port, 'port', 0), backend: v.backend, mode: mode as 'compiled' | 'eager' | undefined,
      maxBatch: int(v['max-batch'], 'max-batch', 1), buckets, batching: v['no-batching'] ? false : undefined,
      maxWaitMs: real(v['max-wait-ms'], 'max-wait-ms'), maxQueue: int(v['max-queue'], 'max-queue', 0), drainTimeoutMs: int(v['drain-timeout-ms'], 'drain-timeout-ms', 0),
      adminToken: v['admin-token-file'] ? secretFile(v['admin-token-file'], '--admin-token-file').toString('utf8') : undefined,
      logLevel: level as ServeOptions['logLevel'], remoteCache,
    }),
    canary: defined(canary),
  };
}

/** `kilnjs serve ...`: runs until SIGTERM / SIGINT; returns the exit status. */
export async function serveCli(argv: readonly string[]): Promise<number> {
  if (argv.includes('-h') || argv.includes('--help')) {
    process.stdout.write(SERVE_HELP);
    return 0;
  }
  let opts: ServeOptions;
  try {
    opts = parseServeArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError) && (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') !== true) throw e;
    process.stderr.write(`kilnjs serve: ${(e as Error).message}\n(kilnjs serve --help)\n`);
    return 2;
  }
  const { serve } = await import('./server.js');
  let server: Awaited<ReturnType<typeof serve>>;
  try {
    server = await serve(opts);
    await server.ready;
  } catch (e) {
    // kiln's typed errors already name the command ('kilnjs serve model.ts: ...')
    process.stderr.write(`${e instanceof KilnError ? e.message : `kilnjs serve: ${(e as Error).message}`}\n`);
    return 1;
  }
  return new Promise<number>((resolve) => {
    const stop = (signal: string) => {
      process.stderr.write(`kilnjs serve: ${signal}: draining\n`);
      void server.close().then(() => resolve(0));
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
