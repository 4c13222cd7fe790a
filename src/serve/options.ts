// The server's options, their defaults, and their checks (a bad option is an ArgumentError
// saying which and what is accepted, before anything starts).

import { ArgumentError } from '../core/errors.js';
import type { RemoteCacheOptions } from '../compiler/cache/remote.js';
import type { TrustOptions } from '../compiler/cache/seal.js';
import { DEFAULT_CANARY, type CanaryOptions } from './canary.js';
import type { Engine, Mode } from './engine.js';

export interface ServeOptions {
  /** what to serve: an artifact (kiln.export), a module file (src/serve/model-file.ts), or an engine */
  readonly model: string | Engine;
  /** safetensors weights of a module file (overrides the file's own `weights`) */
  readonly weights?: string;
  /** default 127.0.0.1 */
  readonly host?: string;
  /** default 8080; 0 picks a free port (KilnServer.port says which) */
  readonly port?: number;
  /** kiln.compile backend for module files (default 'auto', kiln.compile's: the fastest that runs here); for artifacts, which stored program runs */
  readonly backend?: string;
  /** the path that answers first (default 'compiled') */
  readonly mode?: Mode;
  /** most rows per batch, and per request (default 32; an artifact: its batch dim) */
  readonly maxBatch?: number;
  /** batch sizes compiled ahead and padded to (default: powers of two up to maxBatch) */
  readonly buckets?: readonly number[];
  /** batch concurrent requests (default true) */
  readonly batching?: boolean;
  /** the longest a request waits for others to share its batch (default 2 ms) */
  readonly maxWaitMs?: number;
  /** requests waiting beyond which new ones get 503 + Retry-After (default 256) */
  readonly maxQueue?: number;
  readonly canary?: Partial<CanaryOptions>;
  /** a fleet's remote compile cache on Redis (src/compiler/cache/remote.ts) */
  readonly remoteCache?: RemoteCacheOptions;
  /** an artifact's signature: the public keys it may be signed with, or unsafeUnsigned (kiln.load's TrustOptions) */
  readonly artifactTrust?: TrustOptions;
  /** required as `Authorization: Bearer TOKEN` by /admin/*; without one, /admin/* answers loopback clients only */
  readonly adminToken?: string;
  /** the longest a shutdown waits for accepted requests (default 30 s) */
  readonly drainTimeoutMs?: number;
  /** Fastify's (pino) logger level (default 'info'; 'silent' for none) */
  readonly logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent';
  /** also receives each line the server logs (tests, embedding) */
  readonly onLog?: (level: 'info' | 'warn' | 'error', msg: string) => void;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'silent'] as const;

export interface Resolved {
  readonly host: string;
  readonly port: number;
  readonly maxBatch: number;
  readonly batching: boolean;
  readonly maxWaitMs: number;
  readonly maxQueue: number;
  readonly canary: CanaryOptions;
  readonly drainTimeoutMs: number;
  readonly logLevel: NonNullable<ServeOptions['logLevel']>;
}

const WHERE = 'kilnjs serve';

function int(name: string, v: number | undefined, dflt: number, min: number): number {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < min) throw new ArgumentError(`${name} must be an integer >= ${min}, got ${v}`, WHERE);
  return v;
}

function real(name: string, v: number | undefined, dflt: number, min: number, max = Infinity): number {
  if (v === undefined) return dflt;
  if (!Number.isFinite(v) || v < min || v > max) throw new ArgumentError(`${name} must be a number in [${min}, ${max}], got ${v}`, WHERE);
  return v;
}

/** Checks the options that do not depend on the model. */
export function resolveOptions(o: ServeOptions): Resolved {
  if (o.mode !== undefined && o.mode !== 'compiled' && o.mode !== 'eager') throw new ArgumentError(`mode must be 'compiled' or 'eager', got ${JSON.stringify(o.mode)}`, WHERE);
  if (o.logLevel !== undefined && !LOG_LEVELS.includes(o.logLevel)) throw new ArgumentError(`logLevel must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(o.logLevel)}`, WHERE);
  if (o.buckets !== undefined && (o.buckets.length === 0 || o.buckets.some((b, i) => !Number.isInteger(b) || b < 1 || (i > 0 && b <= o.buckets![i - 1]!)))) {
    throw new ArgumentError(`buckets must be ascending positive integers, got [${o.buckets.join(', ')}]`, WHERE);
  }
  const c = o.canary ?? {};
  const canary: CanaryOptions = {
    fraction: real('canary.fraction', c.fraction, DEFAULT_CANARY.fraction, 0, 1),
    rtol: real('canary.rtol', c.rtol, DEFAULT_CANARY.rtol, 0),
    atol: real('canary.atol', c.atol, DEFAULT_CANARY.atol, 0),
    window: int('canary.window', c.window, DEFAULT_CANARY.window, 1),
    maxFailures: int('canary.maxFailures', c.maxFailures, DEFAULT_CANARY.maxFailures, 1),
  };
  return {
    host: o.host ?? '127.0.0.1',
    port: int('port', o.port, 8080, 0),
    maxBatch: int('maxBatch', o.maxBatch ?? o.buckets?.at(-1), 32, 1),
    batching: o.batching ?? true,
    maxWaitMs: real('maxWaitMs', o.maxWaitMs, 2, 0, 60_000),
    maxQueue: int('maxQueue', o.maxQueue, 256, 0),
    canary,
    drainTimeoutMs: int('drainTimeoutMs', o.drainTimeoutMs, 30_000, 0),
    logLevel: o.logLevel ?? 'info',
  };
}
