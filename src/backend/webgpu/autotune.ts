// max-autotune on WebGPU: matmul configurations measured on the device.
//
// Compiling is synchronous and timing a GPU is not (work runs after submit), so tuning is a
// separate, explicit, asynchronous step:
//
//   const f = kiln.compile(fn, { backend: 'webgpu', mode: 'max-autotune' });
//   await gpu.autotune(f, [x]);   // compiles f (via f.warmup: state restored), times the matmuls
//   f(x);                         // runs the fastest configuration of each matmul
//
// When a max-autotune program is built, each matmul kernel is registered here under its key
// (dtype, batch, m, n, k, operand strides and offsets, epilogue): a key measured before uses its
// winner at once; an unmeasured one runs the default configuration and waits. `gpu.autotune()`
// times every waiting key: for each configuration the device can run (MATMUL_CONFIGS, or the
// caller's), its pipeline from the backend (a WGSL error is the backend's typed error, reported
// as a failed candidate), one warm-up dispatch, then batches of dispatches of the real shape on
// scratch buffers, timed by timestamps.ts (timestamp queries around the pass where the device
// has 'timestamp-query', else the wall clock to `queue.onSubmittedWorkDone()`); the median batch
// decides. The winner's pipeline joins the backend's cache (losers are not kept: at most one
// pipeline per measured key stays). Winners are kept in memory per backend (= per device) and
// key; the backend's render epoch moves, so programs holding a tuned kernel render it again at
// their next call (prerecorded ones rebuild). Every decision is a fusion decision `autotuned`
// (kiln.explain, KILN_LOGS=fusion), updated in place when the measurement lands, and logged
// under `perf`.

import type { DType } from '../../core/dtype.js';
import type { MatmulKernel } from '../../ir/loop-ir.js';
import type { FusionDecision, Lowered } from '../../ir/lowered.js';
import { log } from '../../core/logs.js';
import { scope } from '../../core/scope.js';
import { configName, DEFAULT_MATMUL_CONFIG, deviceProblem, MATMUL_CONFIGS, parseConfig, renderMatmul, type MatmulConfig, type MatmulPrecision } from './render-matmul.js';
import { hasTimestamps, timePass } from './timestamps.js';
import type { Compiled, WebGpuBackend, WebGpuBuffer } from './index.js';

export interface AutotuneOptions {
  /** configurations to try (default MATMUL_CONFIGS), objects or names like '128x128x16/8x8+pf' */
  readonly candidates?: readonly (MatmulConfig | string)[];
  /** time the default configuration too, whatever `candidates` says (default true) */
  readonly includeDefault?: boolean;
  /** GPU time to aim for per timed batch of dispatches (default 20 ms) */
  readonly targetMs?: number;
  /** timed batches per configuration, the median decides (default 3) */
  readonly repeats?: number;
  /** measure keys again even if measured before */
  readonly force?: boolean;
}

export interface MatmulCandidateTime {
  readonly config: string;
  /** ms per dispatch (null: the configuration failed, see error) */
  readonly ms: number | null;
  readonly error?: string;
}

export interface MatmulTuneResult {
  readonly kernel: string;
  /** e.g. 'float32 [8192x768]@[768x3072]' */
  readonly shape: string;
  readonly key: string;
  /** the backend's matmul precision it was measured at (a winner holds for that precision only) */
  readonly precision: MatmulPrecision;
  readonly chosen: string;
  readonly config: MatmulConfig;
  readonly timing: 'timestamp-query' | 'wall clock';
  /** dispatches per timed batch */
  readonly batch: number;
  readonly candidates: readonly MatmulCandidateTime[];
  /** GFLOP/s of the winner (2 m n k per matrix) */
  readonly gflops: number;
}

export interface AutotuneReport {
  readonly adapter: string;
  /** keys measured by this call */
  readonly measured: readonly MatmulTuneResult[];
  /** every key measured on this backend so far (this call's included) */
  readonly known: number;
  readonly ms: number;
  readonly text: string;
}

/** What `gpu.autotune(f, args)` accepts: a compiled function (its `warmup` is used) or any function. */
export type AutotuneTarget = ((...args: never[]) => unknown) & { warmup?(spec: readonly (readonly unknown[])[]): Promise<unknown> };

interface Waiting {
  readonly kernel: MatmulKernel;
  /** logical buffer -> dtype and size in the program */
  readonly sizes: ReadonlyMap<number, { dtype: DType; size: number }>;
}

const shapeOf = (k: MatmulKernel) => `${k.dtype} ${k.batch.length ? `[${k.batch.join(', ')}] x ` : ''}[${k.m}x${k.k}]@[${k.k}x${k.n}]`;

/** The key a measurement is kept under (per backend): shape, strides, offsets, epilogue. */
export function matmulKey(k: MatmulKernel): string {
  const op = (o: MatmulKernel['a']) => ({ base: { c: o.base.c, o: o.base.o }, sRow: o.sRow, sCol: o.sCol });
  return JSON.stringify({ dtype: k.dtype, batch: k.batch, m: k.m, n: k.n, k: k.k, a: op(k.a), b: op(k.b), body: k.body, stores: k.stores, ab: k.a.buf === k.b.buf });
}

export class MatmulTuner {
  private readonly results = new Map<string, MatmulTuneResult>();
  /** every key registered (what measuring it needs) */
  private readonly registered = new Map<string, Waiting>();
  /** kernels of max-autotune programs, with their key */
  private readonly keys = new WeakMap<MatmulKernel, string>();
  /** the decision lists that hold a key's `autotuned` decision (updated when it is measured) */
  private readonly decisionLists = new Map<string, { list: WeakRef<FusionDecision[]>; kernel: WeakRef<MatmulKernel> }[]>();

  constructor(private readonly be: WebGpuBackend) {}

  /** The configuration a matmul kernel renders with: the backend's override, its measured winner, or the default. */
  configFor(k: MatmulKernel): MatmulConfig {
    if (this.be.matmulConfig) return this.be.matmulConfig;
    const key = this.keys.get(k);
    return (key !== undefined && this.results.get(this.atPrecision(key))?.config) || DEFAULT_MATMUL_CONFIG;
  }

  /** Measurements so far, by key. */
  get known(): ReadonlyMap<string, MatmulTuneResult> {
    return this.results;
  }

  /** Keys registered by max-autotune programs and not measured yet (at the backend's matmul precision). */
  get pending(): number {
    return this.unmeasured().length;
  }

  /**
   * A measurement holds for the precision it was made at: f16 tiles (gpu.matmulPrecision) halve
   * the workgroup memory, so another configuration may win.
   */
  private atPrecision(key: string): string {
    return this.be.matmulPrecision === 'float32' ? key : `${this.be.matmulPrecision}|${key}`;
  }

  private unmeasured(): string[] {
    return [...this.registered.keys()].filter((key) => !this.results.has(this.atPrecision(key)));
  }

  /**
   * max-autotune (called by FusedProgram before its kernels are prepared): registers each matmul
   * kernel and records its decision (measured winner, or the default while it waits).
   */
  register(l: Lowered): void {
    for (const s of l.steps) {
      if (s.kind !== 'kernel' || s.kernel.kind !== 'matmul') continue;
      const k = s.kernel;
      const key = matmulKey(k);
      this.keys.set(k, key);
      if (!this.registered.has(key)) {
        const sizes = new Map<number, { dtype: DType; size: number }>();
        for (const b of l.buffers) sizes.set(b.id, { dtype: b.dtype, size: b.size });
        this.registered.set(key, { kernel: k, sizes });
      }
      // a program from the persistent cache carries the decision made when it was stored: replace it
      const old = l.decisions.findIndex((d) => d.decision === 'autotuned' && d.reason.startsWith(`${k.name} `));
      const d: FusionDecision = { decision: 'autotuned', nodes: k.stores.map((st) => st.node).filter((n) => n >= 0), reason: this.reason(k, key) };
      if (old >= 0) l.decisions[old] = d;
      else l.decisions.push(d);
      if (this.results.has(this.atPrecision(key))) continue;
      // a decision still waiting: updated in place when the measurement lands
      let refs = this.decisionLists.get(key);
      if (!refs) this.decisionLists.set(key, (refs = []));
      refs.push({ list: new WeakRef(l.decisions), kernel: new WeakRef(k) });
      log('perf', `webgpu max-autotune: ${k.name} ${shapeOf(k)} runs the default ${configName(DEFAULT_MATMUL_CONFIG)} until \`await gpu.autotune()\` measures it`);
    }
  }

  private reason(k: MatmulKernel, key: string): string {
    const r = this.results.get(this.atPrecision(key));
    if (this.be.matmulConfig) return `${k.name} ${shapeOf(k)} on webgpu: ${configName(this.be.matmulConfig)} (forced by backend.matmulConfig)`;
    if (!r) return `${k.name} ${shapeOf(k)} on webgpu: default ${configName(DEFAULT_MATMUL_CONFIG)} for now (not measured on this device yet: \`await gpu.autotune()\` times the configurations; the program switches at its next call)`;
    const times = r.candidates.map((c) => `${c.config}: ${c.ms === null ? `failed (${c.error})` : `${c.ms.toFixed(3)} ms`}`).join(', ');
    return `${k.name} ${shapeOf(k)} on webgpu: ${r.chosen} (${r.gflops.toFixed(0)} GFLOP/s; measured with ${r.timing}, ${r.batch} dispatches per batch: ${times})`;
  }

  /** Measures every waiting key (see the file comment). */
  async tune(opts: AutotuneOptions = {}): Promise<AutotuneReport> {
    const t0 = performance.now();
    const be = this.be;
    const todo = opts.force ? [...this.registered.keys()] : this.unmeasured();
    const candidates = (opts.candidates ?? MATMUL_CONFIGS).map((c) => (typeof c === 'string' ? parseConfig(c) : c));
    if (opts.includeDefault !== false && !candidates.some((c) => configName(c) === configName(DEFAULT_MATMUL_CONFIG))) candidates.unshift(DEFAULT_MATMUL_CONFIG);
    if (candidates.length === 0) throw new Error('kiln: gpu.autotune needs at least one candidate configuration');
    const measured: MatmulTuneResult[] = [];
    be.submit();
    await be.sync();
    for (const key of todo) {
      const r = await this.measure(key, this.registered.get(key)!, candidates, opts);
      if (!r) continue;
      this.results.set(this.atPrecision(key), r);
      measured.push(r);
      this.refreshDecisions(key);
      log('perf', `webgpu autotune: ${r.kernel} ${r.shape}: ${r.chosen} (${r.candidates.map((c) => `${c.config} ${c.ms === null ? 'failed' : `${c.ms.toFixed(3)} ms`}`).join(', ')}; ${r.timing})`);
    }
    // tuned kernels render again at their next launch, prerecorded programs rebuild
    if (measured.length) be.rerender(`max-autotune measured ${measured.length} matmul${measured.length === 1 ? '' : 's'}`);
    const text = measured.length
      ? measured.map((r) => `${r.kernel} ${r.shape}: ${r.chosen}, ${r.gflops.toFixed(0)} GFLOP/s (${r.timing}; ${r.candidates.map((c) => `${c.config} ${c.ms === null ? 'failed' : `${c.ms.toFixed(3)} ms`}`).join(', ')})`).join('\n')
      : 'nothing to measure: no max-autotune program registered a matmul that is not measured yet';
    return { adapter: be.adapterInfo, measured, known: this.results.size, ms: performance.now() - t0, text };
  }

  private refreshDecisions(key: string): void {
    const refs = this.decisionLists.get(key) ?? [];
    for (const r of refs.filter((x) => x.list.deref() && x.kernel.deref())) {
      const list = r.list.deref()!, k = r.kernel.deref()!;
      const i = list.findIndex((d) => d.decision === 'autotuned' && d.reason.startsWith(`${k.name} `));
      if (i >= 0) list[i] = { ...list[i]!, reason: this.reason(k, key) };
    }
    this.decisionLists.delete(key);
  }

  private async measure(key: string, w: Waiting, candidates: readonly MatmulConfig[], opts: AutotuneOptions): Promise<MatmulTuneResult | null> {
    const be = this.be;
    const k = w.kernel;
    const targetMs = opts.targetMs ?? 20;
    const repeats = Math.max(1, opts.repeats ?? 3);
    const times: MatmulCandidateTime[] = [];
    const tried = new Map<string, Compiled>();
    const buffers = new Map<number, WebGpuBuffer>();
    const bufferFor = (b: number): WebGpuBuffer => {
      let buf = buffers.get(b);
      if (!buf) {
        const s = w.sizes.get(b) ?? { dtype: k.dtype, size: 1 };
        buffers.set(b, (buf = be.alloc(s.dtype, Math.max(1, s.size)) as WebGpuBuffer));
      }
      return buf;
    };
    let batch = 1;
    try {
      for (const cfg of candidates) {
        const name = configName(cfg);
        const problem = deviceProblem(cfg, be.device.limits);
        if (problem) {
          times.push({ config: name, ms: null, error: `not on this device: ${problem}` });
          continue;
        }
        try {
          // the backend's pipeline: a WGSL error is its typed error, here a failed candidate
          const c = await be.tryCompile(renderMatmul(k, new Map(), cfg, be.matmulPrecision));
          const group = be.bindGroup(c.p.layout, c.w.bindings.map((b) => bufferFor(b).gpu));
          const [x, y, z] = c.w.grid;
          const run = (n: number) => timePass(be.device, (pass) => {
            pass.setPipeline(c.p.pipeline);
            pass.setBindGroup(0, group);
            for (let i = 0; i < n; i++) pass.dispatchWorkgroups(x, y, z);
          });
          const first = await run(1);
          // the batch size is fixed by the first (default) configuration, so all run the same count
          if (times.every((t) => t.ms === null)) batch = Math.max(1, Math.min(64, Math.round(targetMs / Math.max(first, 1e-3))));
          const ts: number[] = [];
          for (let r = 0; r < repeats; r++) ts.push((await run(batch)) / batch);
          ts.sort((a, b) => a - b);
          times.push({ config: name, ms: ts[Math.floor(ts.length / 2)]! });
          tried.set(name, c);
        } catch (e) {
          times.push({ config: name, ms: null, error: (e as Error).message.split('\n')[0] });
        }
      }
    } finally {
      for (const b of buffers.values()) be.free(b);
    }
    const ok = times.filter((t) => t.ms !== null);
    if (ok.length === 0) {
      log('perf', `webgpu autotune: ${k.name} ${shapeOf(k)}: no configuration ran (${times.map((t) => `${t.config}: ${t.error}`).join('; ')}); keeping the default`);
      return null;
    }
    const best = ok.reduce((a, b) => (b.ms! < a.ms! ? b : a));
    // the winner's pipeline joins the backend's cache (programs render it next); the others are dropped
    be.keep(tried.get(best.config)!);
    const config = parseConfig(best.config);
    const flops = 2 * k.batch.reduce((a, b) => a * b, 1) * k.m * k.n * k.k;
    const timing = hasTimestamps(be.device) ? 'timestamp-query' : 'wall clock';
    return { kernel: k.name, shape: shapeOf(k), key, precision: be.matmulPrecision, chosen: best.config, config, timing, batch, candidates: times, gflops: flops / (best.ms! * 1e6) };
  }

  /** `gpu.autotune(f, args)`: compile f for args (warm-up restores state it knows), then measure. */
  async run(target: AutotuneTarget | undefined, args: readonly unknown[], opts: AutotuneOptions): Promise<AutotuneReport> {
    if (target) {
      if (typeof target.warmup === 'function') await target.warmup([args]);
      else scope(() => void (target as (...a: unknown[]) => unknown)(...args), (x): x is never => false); // the result is dropped: nothing to keep
    }
    return this.tune(opts);
  }
}
