// The worker thread of redis-store.ts: an ioredis client answering the main thread's reads on
// a MessagePort (setting the Atomics flag the main thread waits on) and its writes on the
// worker's own port. Plain JavaScript run with `eval: true`, so it needs no TypeScript loader;
// ioredis is required by the absolute path the main thread resolved.

export type WorkerRequest =
  | { op: 'get'; id: number; key: string }
  | { op: 'set'; id: number; key: string; value: ArrayBuffer; ttl: number | null }
  | { op: 'del'; id: number; key: string }
  | { op: 'quit'; id: number };

/** A read's answer: the bytes, null (absent), or the error. */
export interface WorkerReply {
  id: number;
  value: ArrayBuffer | null;
  error?: string;
}

export interface WorkerState {
  state: 'up' | 'down';
  error?: string;
}

export const REDIS_WORKER_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const Redis = require(workerData.ioredis);
const flag = new Int32Array(workerData.flag);
const port = workerData.port;
// no offline queue and no retries per command: while disconnected, commands fail at once
const redis = new Redis(workerData.url, {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  connectTimeout: 2000,
  retryStrategy: (times) => Math.min(200 * times, 2000),
});
let up = false;
let lastError;
const state = (next, error) => {
  if (next === up && error === lastError) return;
  up = next;
  lastError = error;
  parentPort.postMessage({ state: next ? 'up' : 'down', error });
};
redis.on('ready', () => state(true, undefined));
redis.on('error', (e) => state(false, String(e && e.message || e)));
redis.on('close', () => state(false, lastError || 'connection closed'));
redis.on('end', () => state(false, lastError || 'connection ended'));

const answer = (id, value, error) => {
  const reply = { id, value };
  if (error !== undefined) reply.error = error;
  port.postMessage(reply, value ? [value] : []);
  Atomics.store(flag, 0, id);
  Atomics.notify(flag, 0);
};
port.on('message', (m) => {
  redis.getBuffer(m.key).then(
    (b) => {
      if (!b) return answer(m.id, null);
      const out = new ArrayBuffer(b.length);
      new Uint8Array(out).set(b);
      answer(m.id, out);
    },
    (e) => answer(m.id, null, String(e && e.message || e)),
  );
});
const ack = (id, p) => p.then(() => parentPort.postMessage({ ack: id, ok: true }), (e) => parentPort.postMessage({ ack: id, ok: false, error: String(e && e.message || e) }));
parentPort.on('message', (m) => {
  if (m.op === 'set') ack(m.id, m.ttl ? redis.set(m.key, Buffer.from(m.value), 'EX', m.ttl) : redis.set(m.key, Buffer.from(m.value)));
  else if (m.op === 'del') ack(m.id, redis.del(m.key));
  else if (m.op === 'quit') {
    const bye = () => { port.close(); process.exit(0); };
    redis.quit().then(bye, () => { redis.disconnect(); bye(); });
  }
});
`;
