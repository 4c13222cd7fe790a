// A remote byte store on Redis (Node), for a fleet of processes sharing compiled programs, as
// Inductor's remote cache does. Thin: bytes by name under a key prefix; entry-store.ts verifies
// what comes back, auth-bytes.ts authenticates it (entries hold code).
//
// The cache interface is synchronous (compiling is), a Redis client is not: the client (ioredis)
// runs in a worker thread, and a read posts its request on a MessagePort, blocks on an Atomics
// flag for at most `timeoutMs`, and takes the reply with receiveMessageOnPort. Writes and
// removals are posted without waiting (flush() awaits them). Redis down or slow is a miss,
// never a failure: while the client reports the connection down, reads miss at once and
// writes are dropped; a read that times out skips Redis for RETRY_MS.

import { createRequire } from 'node:module';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { log } from '../../core/logs.js';
import type { ByteStore } from './byte-store.js';
import { REDIS_WORKER_SOURCE, type WorkerReply, type WorkerRequest, type WorkerState } from './redis-worker.js';

export interface RedisStoreOptions {
  /** redis://[user:password@]host:port[/db] */
  readonly url: string;
  /** prefix of every key (default 'kiln:') */
  readonly keyPrefix?: string;
  /** the longest a read waits for Redis before it counts as a miss (default 250 ms) */
  readonly timeoutMs?: number;
  /** entries expire after this many seconds (default: never; cap the memory with Redis's maxmemory-policy allkeys-lru) */
  readonly ttlSeconds?: number;
}

export interface RedisStoreStats {
  /** reads that found bytes, found nothing, failed (Redis error or down), timed out */
  found: number;
  absent: number;
  errors: number;
  timeouts: number;
  /** writes acknowledged by Redis, and writes that failed or were dropped while Redis was down */
  writes: number;
  writeErrors: number;
  bytesRead: number;
  bytesWritten: number;
  /** whether the client is connected now */
  up: boolean;
  lastError: string | null;
}

/** After a read timed out, Redis is skipped for this long (a hung server must not cost every read its timeout). */
const RETRY_MS = 5000;

/** `redis://user:pw@host:6379/0` -> `redis://host:6379/0`: locations appear in logs. */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return 'redis (unparsable url)';
  }
}

export class RedisBytes implements ByteStore {
  readonly location: string;
  readonly stats: RedisStoreStats = { found: 0, absent: 0, errors: 0, timeouts: 0, writes: 0, writeErrors: 0, bytesRead: 0, bytesWritten: 0, up: false, lastError: null };
  private readonly worker: Worker;
  /** reads: requests and replies, replies taken synchronously */
  private readonly port: MessagePort;
  /** the id of the latest read the worker answered */
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readonly ttl: number | null;
  private seq = 0;
  private skipUntil = 0;
  private readonly pending = new Map<number, number>();
  private readonly waiters: (() => void)[] = [];
  private readonly stateWaiters: ((up: boolean) => void)[] = [];
  private settled = false;
  private closed = false;

  constructor(opts: RedisStoreOptions) {
    this.location = `${withoutCredentials(opts.url)} (keys ${opts.keyPrefix ?? 'kiln:'}*)`;
    this.prefix = opts.keyPrefix ?? 'kiln:';
    this.timeoutMs = opts.timeoutMs ?? 250;
    this.ttl = opts.ttlSeconds ?? null;
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(REDIS_WORKER_SOURCE, {
      eval: true,
      workerData: { url: opts.url, ioredis: createRequire(import.meta.url).resolve('ioredis'), flag: this.flag.buffer, port: port2 },
      transferList: [port2],
    });
    this.worker.on('message', (m: WorkerState | { ack: number; ok: boolean; error?: string }) => this.onMessage(m));
    this.worker.on('error', (e: Error) => this.onMessage({ state: 'down', error: `worker: ${e.message}` }));
    this.worker.unref();
    this.port.unref();
  }

  private onMessage(m: WorkerState | { ack: number; ok: boolean; error?: string }): void {
    if ('state' in m) {
      const up = m.state === 'up';
      if (up !== this.stats.up || m.error !== this.stats.lastError) log('cache', `remote cache ${this.location}: ${up ? 'connected' : `unavailable (${m.error ?? 'disconnected'}); compiling locally`}`);
      this.stats.up = up;
      if (m.error) this.stats.lastError = m.error;
      if (up) this.skipUntil = 0;
      this.settled = true;
      for (const w of this.stateWaiters.splice(0)) w(up);
      return;
    }
    const bytes = this.pending.get(m.ack);
    this.pending.delete(m.ack);
    if (m.ok) {
      this.stats.writes++;
      this.stats.bytesWritten += bytes ?? 0;
    } else {
      this.stats.writeErrors++;
      this.stats.lastError = m.error ?? 'write failed';
    }
    if (this.pending.size === 0) for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves at the client's first report: true once connected, false if refused or unreachable (or nothing within `timeoutMs`); the store then misses until it connects. */
  connected(timeoutMs = 2000): Promise<boolean> {
    if (this.settled || this.closed) return Promise.resolve(this.stats.up);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(this.stats.up), timeoutMs);
      this.stateWaiters.push((up) => {
        clearTimeout(t);
        resolve(up);
      });
    });
  }

  private usable(): boolean {
    return !this.closed && this.stats.up && Date.now() >= this.skipUntil;
  }

  read(name: string): Uint8Array | null {
    if (!this.usable()) {
      this.stats.errors++;
      return null;
    }
    const id = ++this.seq;
    const req: WorkerRequest = { op: 'get', id, key: this.prefix + name };
    this.port.postMessage(req);
    const deadline = performance.now() + this.timeoutMs;
    for (;;) {
      const answered = Atomics.load(this.flag, 0);
      if (answered === id) break;
      const left = deadline - performance.now();
      if (left <= 0) {
        this.stats.timeouts++;
        this.skipUntil = Date.now() + RETRY_MS;
        log('cache', `remote cache ${this.location}: no answer in ${this.timeoutMs} ms for ${name}; skipping Redis for ${RETRY_MS / 1000} s (compiling locally)`);
        return null;
      }
      Atomics.wait(this.flag, 0, answered, left);
    }
    // earlier replies (reads that timed out) are dropped on the way
    for (let m = receiveMessageOnPort(this.port); m; m = receiveMessageOnPort(this.port)) {
      const r = m.message as WorkerReply;
      if (r.id !== id) continue;
      if (r.error !== undefined) {
        this.stats.errors++;
        this.stats.lastError = r.error;
        return null;
      }
      if (r.value === null) {
        this.stats.absent++;
        return null;
      }
      this.stats.found++;
      this.stats.bytesRead += r.value.byteLength;
      return new Uint8Array(r.value);
    }
    this.stats.errors++;
    return null;
  }

  write(name: string, bytes: Uint8Array): boolean {
    if (!this.usable()) {
      this.stats.writeErrors++;
      return false;
    }
    // a fresh buffer, transferred to the worker (a Buffer's slice() would share, and detach, Node's pool)
    const copy = new Uint8Array(bytes.byteLength);
    copy.set(bytes);
    const id = ++this.seq;
    this.pending.set(id, copy.byteLength);
    const req: WorkerRequest = { op: 'set', id, key: this.prefix + name, value: copy.buffer, ttl: this.ttl };
    this.worker.postMessage(req, [copy.buffer]);
    return true;
  }

  remove(name: string): void {
    if (!this.usable()) return;
    const id = ++this.seq;
    this.pending.set(id, 0);
    const req: WorkerRequest = { op: 'del', id, key: this.prefix + name };
    this.worker.postMessage(req);
  }

  /** Resolves when every write posted so far is acknowledged (or failed), or after `timeoutMs`. */
  flush(timeoutMs = 5000): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, timeoutMs);
      this.waiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** Flushes, disconnects and stops the worker. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    this.stats.up = false;
    const req: WorkerRequest = { op: 'quit', id: ++this.seq };
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage(req);
    const timer = setTimeout(() => void this.worker.terminate(), 1000);
    await exited;
    clearTimeout(timer);
    this.port.close();
  }
}
