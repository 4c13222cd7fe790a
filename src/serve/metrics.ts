// /metrics: Prometheus metrics through prom-client (imported here, lazily: 'kilnjs' and
// 'kilnjs/node' do not load it until a server starts). The server's own metrics (requests,
// batches, queue, warm-up, mode, canary) are recorded as they happen; the compiler's
// (compiles, recompiles with reasons, graph breaks, fallbacks, the compile cache, memory) are
// read from kiln.stats() and kiln.memory() at each scrape. kiln's counters are per process:
// two servers in one process report the same compiler totals.

import type { CompilerStats } from '../core/stats.js';
import { stats } from '../core/stats.js';
import { memoryStats } from '../tensor/storage.js';
import type { RemoteCacheStats } from '../compiler/cache/remote.js';
import type { BatchReport } from './batcher.js';
import type { CanaryEvents } from './canary.js';
import type { Mode, WarmupEntry } from './engine.js';

export interface MetricSources {
  readonly queueDepth: () => number;
  readonly queueLimit: number;
  readonly inFlight: () => number;
  readonly mode: () => Mode;
  readonly modes: readonly Mode[];
  readonly buckets: readonly number[];
  readonly remote: () => RemoteCacheStats | null;
}

export interface ServeMetrics {
  readonly contentType: string;
  text(): Promise<string>;
  request(code: number, format: string, seconds: number): void;
  rejected(reason: 'overload' | 'bad_request' | 'shutting_down' | 'error'): void;
  batch(r: BatchReport, mode: Mode): void;
  warmup(seconds: number, entries: readonly WarmupEntry[]): void;
  ready(ready: boolean): void;
  readonly canary: CanaryEvents;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** distinct label values kept per labelled compiler counter (reasons are free text) */
const MAX_LABELS = 50;

export async function createMetrics(src: MetricSources): Promise<ServeMetrics> {
  const prom = await import('prom-client');
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  const registers = [registry];
  let snap: CompilerStats = stats();

  /** a counter whose value is kiln's (read at the scrape) */
  const fromStats = (name: string, help: string, get: (s: CompilerStats) => number) =>
    new prom.Counter({ name, help, registers, collect() { this.reset(); this.inc(get(snap)); } });
  /** the same per label: counts of records by a label value, at most MAX_LABELS values */
  const byLabel = (name: string, help: string, label: string, records: (s: CompilerStats) => readonly string[]) =>
    new prom.Counter({
      name, help, labelNames: [label], registers,
      collect() {
        this.reset();
        const counts = new Map<string, number>();
        for (const r of records(snap)) {
          const v = r.length > 120 ? `${r.slice(0, 117)}...` : r;
          if (counts.has(v) || counts.size < MAX_LABELS) counts.set(v, (counts.get(v) ?? 0) + 1);
          else counts.set('(other)', (counts.get('(other)') ?? 0) + 1);
        }
        for (const [v, n] of counts) this.inc({ [label]: v }, n);
      },
    });
  const gauge = (name: string, help: string, get: () => number) => new prom.Gauge({ name, help, registers, collect() { this.set(get()); } });

  // the compiler
  fromStats('kiln_compiles_total', 'compiled entries made (traced, or restored from the persistent cache)', (s) => s.compiles);
  fromStats('kiln_graphs_compiled_total', 'graphs lowered to programs (or taken from the cache)', (s) => s.graphsCompiled);
  fromStats('kiln_compile_seconds_total', 'time spent tracing and compiling', (s) => s.compileTimeMs / 1000);
  byLabel('kiln_recompiles_total', 'recompiles, by reason', 'reason', (s) => s.recompiles.map((r) => `${r.fn}: ${r.reason}`));
  byLabel('kiln_graph_breaks_total', 'graph breaks, by location', 'location', (s) => s.graphBreaks.map((b) => `${b.fn} at ${b.location}: ${b.reason}`));
  fromStats('kiln_eager_fallbacks_total', 'calls that ran eagerly (recompile limit, stance, disabled)', (s) => s.eagerFallbacks);
  byLabel('kiln_eager_fallback_reasons_total', 'eager fallbacks, by reason', 'reason', (s) => s.fallbackReasons);
  fromStats('kiln_fusion_fallbacks_total', 'graphs whose fusion failed (recorded eager kernels run instead)', (s) => s.fusionFallbacks);
  fromStats('kiln_replays_total', 'calls that replayed a compiled entry', (s) => s.cacheHits);
  fromStats('kiln_traces_total', 'calls that had to trace', (s) => s.cacheMisses);
  fromStats('kiln_cache_hits_total', 'persistent cache entries found (programs and warm starts)', (s) => s.cache.hits);
  fromStats('kiln_cache_trace_skips_total', 'persistent cache warm starts (tracing skipped too)', (s) => s.cache.traceSkips);
  fromStats('kiln_cache_misses_total', 'persistent cache program lookups that found nothing', (s) => s.cache.misses);
  fromStats('kiln_cache_writes_total', 'persistent cache entries written', (s) => s.cache.writes);
  fromStats('kiln_cache_corrupt_total', 'persistent cache entries rejected (checksum, key, version)', (s) => s.cache.corrupt);
  fromStats('kiln_cache_evictions_total', 'persistent cache entries evicted (size cap)', (s) => s.cache.evictions);
  fromStats('kiln_cache_compile_seconds_saved_total', 'compile time the cache hits did not spend', (s) => s.cache.compileMsSaved / 1000);
  gauge('kiln_memory_bytes', 'bytes of live tensor storage (kiln.memory())', () => memoryStats.liveBytes);
  gauge('kiln_memory_peak_bytes', 'peak bytes of live tensor storage', () => memoryStats.peakBytes);
  gauge('kiln_memory_tensors', 'live tensors', () => memoryStats.liveTensors);

  // the remote cache (a fleet)
  const remote = (name: string, help: string, get: (r: RemoteCacheStats) => number) =>
    new prom.Counter({ name, help, registers, collect() { this.reset(); const r = src.remote(); if (r) this.inc(get(r)); } });
  remote('kiln_remote_cache_hits_total', 'entries read from the remote cache that verified', (r) => r.hits);
  remote('kiln_remote_cache_misses_total', 'remote lookups that found nothing', (r) => r.absent);
  remote('kiln_remote_cache_errors_total', 'remote lookups that failed or were skipped (Redis down)', (r) => r.errors);
  remote('kiln_remote_cache_timeouts_total', 'remote lookups that timed out', (r) => r.timeouts);
  remote('kiln_remote_cache_rejected_total', 'remote entries rejected (authentication or verification failed)', (r) => r.rejected);
  remote('kiln_remote_cache_writes_total', 'entries Redis acknowledged', (r) => r.writes);
  gauge('kiln_remote_cache_up', '1 while the remote cache is connected (absent: none configured)', () => (src.remote()?.up ? 1 : 0));

  // the server
  const latency = new prom.Histogram({ name: 'kiln_serve_request_duration_seconds', help: 'POST /v1/predict latency, from the request read to the reply', labelNames: ['code', 'format'], buckets: LATENCY_BUCKETS, registers });
  const rejected = new prom.Counter({ name: 'kiln_serve_rejected_total', help: 'requests refused, by reason', labelNames: ['reason'], registers });
  const batchRows = new prom.Histogram({ name: 'kiln_serve_batch_rows', help: 'rows per batch (before padding)', buckets: [...src.buckets], registers });
  const batchRequests = new prom.Histogram({ name: 'kiln_serve_batch_requests', help: 'requests per batch', buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256], registers });
  const padding = new prom.Counter({ name: 'kiln_serve_padding_rows_total', help: 'zero rows added to fill batches up to their bucket', registers });
  const batchTime = new prom.Histogram({ name: 'kiln_serve_batch_duration_seconds', help: 'time to run one batch, by mode', labelNames: ['mode'], buckets: LATENCY_BUCKETS, registers });
  gauge('kiln_serve_queue_depth', 'requests waiting for a batch', src.queueDepth);
  gauge('kiln_serve_queue_limit', 'requests waiting beyond which new ones get 503', () => src.queueLimit);
  gauge('kiln_serve_in_flight', 'requests accepted and not yet answered', src.inFlight);
  const ready = new prom.Gauge({ name: 'kiln_serve_ready', help: '1 once warm-up is done and the server takes requests', registers });
  const warmup = new prom.Gauge({ name: 'kiln_serve_warmup_seconds', help: 'start-up warm-up time (every bucket compiled or loaded)', registers });
  const warmupEntry = new prom.Gauge({ name: 'kiln_serve_warmup_entry_seconds', help: 'warm-up time per bucket and where its program came from', labelNames: ['bucket', 'source'], registers });
  new prom.Gauge({ name: 'kiln_serve_mode', help: '1 for the path answering requests (compiled or eager)', labelNames: ['mode'], registers, collect() { for (const m of src.modes) this.set({ mode: m }, src.mode() === m ? 1 : 0); } });
  const modeChanges = new prom.Counter({ name: 'kiln_serve_mode_changes_total', help: 'switches of the answering path, by target mode', labelNames: ['to'], registers });
  const rollbacks = new prom.Counter({ name: 'kiln_serve_rollbacks_total', help: 'automatic switches to eager by the canary', registers });
  const checks = new prom.Counter({ name: 'kiln_serve_canary_checks_total', help: 'canary checks (compiled vs eager), by outcome: match, mismatch, error (compiled threw)', labelNames: ['outcome'], registers });
  const maxErr = new prom.Gauge({ name: 'kiln_serve_canary_max_abs_error', help: 'largest |compiled - eager| of the last canary check', registers });
  ready.set(0);

  return {
    contentType: registry.contentType,
    async text() {
      snap = stats();
      return registry.metrics();
    },
    request: (code, format, seconds) => latency.observe({ code: String(code), format }, seconds),
    rejected: (reason) => rejected.inc({ reason }),
    batch(r, mode) {
      batchRows.observe(r.rows);
      batchRequests.observe(r.requests);
      padding.inc(r.bucket - r.rows);
      batchTime.observe({ mode }, r.ms / 1000);
    },
    warmup(seconds, entries) {
      warmup.set(seconds);
      for (const e of entries) warmupEntry.set({ bucket: String(e.bucket), source: e.source }, e.ms / 1000);
    },
    ready: (v) => ready.set(v ? 1 : 0),
    canary: {
      check(outcome, maxAbs) {
        checks.inc({ outcome });
        if (Number.isFinite(maxAbs)) maxErr.set(maxAbs);
      },
      mode(mode, _reason, automatic) {
        modeChanges.inc({ to: mode });
        if (automatic) rollbacks.inc();
      },
    },
  };
}
