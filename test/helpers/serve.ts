// Helpers for the serving tests: the fixture model with its weights on disk and its float64
// reference, `kilnjs serve` in a child process (its JSON log lines read as they come), a
// Debian redis-server on a free loopback port in a temp dir, and small HTTP helpers.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as kiln from 'kilnjs';
import * as kilnNode from 'kilnjs/node';
import { ServeMlp } from '../fixtures/serve/mlp.js';

export const ROOT = join(import.meta.dirname, '..', '..');
export const MODEL_FILE = join(ROOT, 'test', 'fixtures', 'serve', 'mlp.ts');

/** A fresh fixture model (seeded) and its weights written to `dir`/weights.safetensors. */
export async function fixtureModel(dir: string, seed = 7): Promise<{ model: ServeMlp; weights: string }> {
  kiln.manualSeed(seed);
  const model = new ServeMlp();
  model.eval();
  model.requiresGrad_(false);
  const weights = join(dir, 'weights.safetensors');
  await kilnNode.saveSafetensors(weights, model.stateDict());
  return { model, weights };
}

/** The fixture's forward in float64 from its float32 weights: tanh(x W1' + b1) W2' + b2, times scale. */
export function reference(model: ServeMlp, x: Float32Array, rows: number): Float64Array {
  const w1 = model.fc1.weight.dataSync(), b1 = model.fc1.bias!.dataSync(), w2 = model.fc2.weight.dataSync(), b2 = model.fc2.bias!.dataSync();
  const [h, i] = model.fc1.weight.shape as [number, number];
  const o = model.fc2.weight.shape[0]!;
  const out = new Float64Array(rows * o);
  for (let r = 0; r < rows; r++) {
    const hid = new Float64Array(h);
    for (let j = 0; j < h; j++) {
      let s = b1[j]!;
      for (let k = 0; k < i; k++) s += x[r * i + k]! * w1[j * i + k]!;
      hid[j] = Math.tanh(s);
    }
    for (let j = 0; j < o; j++) {
      let s = b2[j]!;
      for (let k = 0; k < h; k++) s += hid[k]! * w2[j * h + k]!;
      out[r * o + j] = s * model.knobs.scale;
    }
  }
  return out;
}

/** Row-major float32 data as nested rows. */
export function rowsOf(x: Float32Array, rows: number, cols: number): number[][] {
  return Array.from({ length: rows }, (_, r) => Array.from(x.subarray(r * cols, (r + 1) * cols)));
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `kiln-${prefix}-`));
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export async function postJson(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
  const r = await fetch(`${url}/v1/predict`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await r.text();
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = { text };
  }
  return { status: r.status, json, headers: r.headers };
}

/** The value of a Prometheus sample (`name{labels}`) in /metrics text, or null. */
export function metric(text: string, sample: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.slice(sample.length + 1)) : null;
}

export async function metrics(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}

export interface ServeChild {
  readonly proc: ChildProcess;
  /** every log message so far */
  readonly lines: string[];
  /** resolves with the first message matching `re` (from the start), rejects after `ms` */
  waitFor(re: RegExp, ms?: number): Promise<RegExpMatchArray>;
  /** resolves with the exit code */
  readonly exited: Promise<number | null>;
  url(): Promise<string>;
}

/** `kilnjs serve ARGS` in a child process (the CLI's sources through tsx). */
export function spawnServe(args: readonly string[], env: Record<string, string> = {}): ServeChild {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), 'serve', ...args], { cwd: ROOT, env: { ...process.env, KILN_CACHE_SOURCES: 'off', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const listeners = new Set<() => void>();
  const take = (chunk: string) => {
    for (const raw of chunk.split('\n')) {
      if (!raw.trim()) continue;
      let msg = raw;
      try {
        msg = (JSON.parse(raw) as { msg?: string }).msg ?? raw;
      } catch {
        // not a pino line (stderr)
      }
      lines.push(msg);
    }
    for (const l of listeners) l();
  };
  let outBuf = '', errBuf = '';
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
    outBuf += d;
    const i = outBuf.lastIndexOf('\n');
    if (i >= 0) take(outBuf.slice(0, i)), (outBuf = outBuf.slice(i + 1));
  });
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
    errBuf += d;
    const i = errBuf.lastIndexOf('\n');
    if (i >= 0) take(errBuf.slice(0, i)), (errBuf = errBuf.slice(i + 1));
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const waitFor = (re: RegExp, ms = 120_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        for (const l of lines) {
          const m = l.match(re);
          if (m) {
            listeners.delete(check);
            clearTimeout(t);
            resolve(m);
            return;
          }
        }
      };
      const t = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`no log line matching ${re} in ${ms} ms; got:\n${lines.join('\n')}`));
      }, ms);
      listeners.add(check);
      void exited.then((code) => {
        if (listeners.has(check)) {
          check();
          if (listeners.has(check)) {
            listeners.delete(check);
            clearTimeout(t);
            reject(new Error(`kilnjs serve exited (${code}) before a line matching ${re}; got:\n${lines.join('\n')}`));
          }
        }
      });
      check();
    });
  return { proc, lines, waitFor, exited, url: async () => (await waitFor(/listening on (http:\/\/\S+?);/))[1]! };
}

/** Why redis-server cannot run here, or null. */
export function redisUnavailable(): string | null {
  if (!existsSync('/usr/bin/redis-server')) return 'redis-server is not installed (Debian package redis-server; .ci/run installs it)';
  const r = spawnSync('/usr/bin/redis-server', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? null : `redis-server --version failed: ${r.stderr}`;
}

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** Debian's redis-server on a free loopback port, no persistence, in a temp dir. */
export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  const dir = tempDir('redis');
  const proc = spawn('/usr/bin/redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 10_000);
    proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('Ready to accept connections')) {
        clearTimeout(t);
        resolve();
      }
    });
    proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}):\n${out}`)));
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}
