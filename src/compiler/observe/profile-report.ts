// What kiln.profile returns (profile.ts records, this file summarizes): per kernel of each
// program that ran, what it fused, its time, bytes and FLOPs (kernel-cost.ts) and the achieved
// rates against the backend's floors (profile-floors.ts); eager ops by op; compile stages. As a
// text table (`table()`) and as a Chrome trace (`chromeTrace()`: chrome://tracing, Perfetto).

import type { Backend } from '../../backend/backend.js';
import { itemSize } from '../../core/dtype.js';
import type { SpanCategory } from '../../core/profiling.js';
import { kernelCost, type KernelCost } from './kernel-cost.js';
import type { LoopKernel } from '../../ir/loop-ir.js';
import type { Lowered, Step } from '../schedule/lowered.js';
import type { Floors } from './profile-floors.js';

/** A program as the profiler sees it (FusedProgram, or a dynamic program at one call's sizes). */
export interface ProfiledProgram {
  readonly kernelBackend: Backend;
  readonly lowered: Lowered;
}

/** One recorded interval (performance.now() ms); `unit` ties it to device-timed dispatches. */
export interface RecordedSpan {
  readonly cat: SpanCategory | 'profile';
  readonly name: string;
  readonly t0: number;
  readonly t1: number;
  readonly args?: Record<string, unknown>;
  readonly unit?: number;
}

export interface RecordedStep {
  readonly program: ProfiledProgram;
  readonly step: number;
  readonly t0: number;
  readonly t1: number;
  readonly unit: number;
}

/** A device-timed dispatch (webgpu timestamp queries), attributed to the unit open when it was made. */
export interface DeviceDispatch {
  readonly kernel: string;
  readonly ns: number;
  readonly unit: number | null;
}

export interface Recording {
  readonly runs: { t0: number; t1: number }[];
  readonly spans: RecordedSpan[];
  readonly steps: RecordedStep[];
  /** device-timed profiles: every dispatch, in submission order */
  readonly device: DeviceDispatch[] | null;
}

export interface KernelProfile {
  /** index of its program, in the order programs first ran */
  readonly program: number;
  readonly backend: string;
  /** the step of the program (kernels and opaque steps are numbered together) */
  readonly step: number;
  readonly name: string;
  readonly kind: LoopKernel['kind'] | 'opaque';
  /** the graph nodes it computes, named by op (stores, reductions and fusion decisions naming it) */
  readonly fused: string;
  /** launches while profiling */
  readonly calls: number;
  readonly totalMs: number;
  readonly msPerCall: number;
  /** of all kernel time */
  readonly share: number;
  /** per launch (kernel-cost.ts) */
  readonly bytes: number;
  readonly flops: number;
  readonly gbps: number;
  readonly gflops: number;
  /** achieved / floor, null where the floor is unknown */
  readonly bandwidthOfFloor: number | null;
  readonly computeOfFloor: number | null;
}

export interface EagerOpProfile {
  readonly op: string;
  readonly calls: number;
  readonly totalMs: number;
}

export interface ProfileReport {
  readonly runs: number;
  /** wall time of each profiled call */
  readonly runMs: readonly number[];
  /** time of the kernels of compiled programs, all runs */
  readonly kernelMs: number;
  /** whether kernel times are device time (webgpu timestamps) rather than wall time around each launch */
  readonly deviceTimed: boolean;
  /** every kernel and opaque step that ran, per program in step order */
  readonly kernels: readonly KernelProfile[];
  /** eager ops by op, most time first */
  readonly eager: readonly EagerOpProfile[];
  /** compile stages by name (trace + passes + lowering + codegen: `compile <fn>` spans include the others) */
  readonly compile: readonly { readonly stage: string; readonly calls: number; readonly totalMs: number }[];
  /** per kernel backend */
  readonly floors: Readonly<Record<string, Floors>>;
  /** the text table (kernels by time, then eager ops and compile stages) */
  table(opts?: { top?: number }): string;
  /** a Chrome trace ({ traceEvents }: chrome://tracing, Perfetto): calls, compile stages, eager ops, programs and kernels, nested as they ran */
  chromeTrace(): ChromeTrace;
}

export interface ChromeTraceEvent {
  readonly name: string;
  readonly cat?: string;
  readonly ph: 'X' | 'M';
  /** microseconds */
  readonly ts: number;
  readonly dur?: number;
  readonly pid: number;
  readonly tid: number;
  readonly args?: Record<string, unknown>;
}
export interface ChromeTrace {
  readonly traceEvents: ChromeTraceEvent[];
  readonly displayTimeUnit: 'ms';
}

/** Names of the graph nodes step `k` computes (what its stores, reductions and fusion decisions name). */
function fusedNodes(l: Lowered, k: LoopKernel): string {
  const ids = new Set<number>();
  const parts = k.kind === 'group' ? k.parts : [k];
  for (const p of parts) {
    const stores = p.kind === 'row' ? [...p.outerStores, ...p.rowStores] : p.stores;
    stores.forEach((s) => ids.add(s.node));
    if (p.kind === 'row') p.reductions.forEach((r) => ids.add(r.node));
  }
  const named = new RegExp(`\\b${k.name}\\b`);
  for (const d of l.decisions) if (d.decision === 'fused' && named.test(d.reason)) d.nodes.forEach((n) => ids.add(n));
  const op = (id: number) => l.nodeOps?.[id] ?? '?';
  return [...ids].sort((a, b) => a - b).map((id) => `${op(id)} %${id}`).join(', ');
}

function stepInfo(p: ProfiledProgram, i: number): { name: string; kind: KernelProfile['kind']; fused: string; cost: KernelCost } {
  const s: Step = p.lowered.steps[i]!;
  if (s.kind === 'opaque') {
    const bytes = [...s.inputs, s.out].reduce((a, v) => a + v.shape.reduce((x, y) => x * y, 1) * itemSize(v.dtype), 0);
    return { name: `opaque ${s.node.op}`, kind: 'opaque', fused: `${s.node.op} %${s.node.id}`, cost: { bytes, flops: 0 } };
  }
  return { name: s.kernel.name, kind: s.kernel.kind, fused: fusedNodes(p.lowered, s.kernel), cost: kernelCost(s.kernel, p.lowered.buffers) };
}

/** Device time of each unit (sum of its dispatches' ns), where the profile is device-timed. */
function deviceMsByUnit(device: readonly DeviceDispatch[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const d of device) if (d.unit !== null && Number.isFinite(d.ns)) m.set(d.unit, (m.get(d.unit) ?? 0) + d.ns / 1e6);
  return m;
}

export function buildReport(rec: Recording, floorsOf: (kb: Backend) => Floors): ProfileReport {
  const device = rec.device ? deviceMsByUnit(rec.device) : null;
  const stepMs = (s: RecordedStep) => (device ? device.get(s.unit) ?? 0 : s.t1 - s.t0);
  const programs = new Map<ProfiledProgram, number>();
  const agg = new Map<string, { p: ProfiledProgram; step: number; calls: number; ms: number }>();
  for (const s of rec.steps) {
    if (!programs.has(s.program)) programs.set(s.program, programs.size);
    const key = `${programs.get(s.program)}:${s.step}`;
    const a = agg.get(key) ?? { p: s.program, step: s.step, calls: 0, ms: 0 };
    a.calls++;
    a.ms += stepMs(s);
    agg.set(key, a);
  }
  const floors: Record<string, Floors> = {};
  for (const p of programs.keys()) floors[p.kernelBackend.name] ??= floorsOf(p.kernelBackend);
  const kernelMs = [...agg.values()].reduce((a, x) => a + x.ms, 0);
  const kernels: KernelProfile[] = [...agg.values()]
    .sort((x, y) => programs.get(x.p)! - programs.get(y.p)! || x.step - y.step)
    .map((a) => {
      const info = stepInfo(a.p, a.step);
      const per = a.ms / a.calls;
      const f = floors[a.p.kernelBackend.name]!;
      const gbps = per > 0 ? info.cost.bytes / (per * 1e6) : 0;
      const gflops = per > 0 ? info.cost.flops / (per * 1e6) : 0;
      return {
        program: programs.get(a.p)!, backend: a.p.kernelBackend.name, step: a.step, name: info.name, kind: info.kind, fused: info.fused,
        calls: a.calls, totalMs: a.ms, msPerCall: per, share: kernelMs > 0 ? a.ms / kernelMs : 0,
        bytes: info.cost.bytes, flops: info.cost.flops, gbps, gflops,
        bandwidthOfFloor: f.gbps ? gbps / f.gbps : null, computeOfFloor: f.gflops ? gflops / f.gflops : null,
      };
    });
  const byName = (cat: RecordedSpan['cat']) => {
    const m = new Map<string, { calls: number; totalMs: number }>();
    for (const s of rec.spans) {
      if (s.cat !== cat) continue;
      const e = m.get(s.name) ?? { calls: 0, totalMs: 0 };
      e.calls++;
      e.totalMs += device && cat === 'eager' && s.unit !== undefined ? device.get(s.unit) ?? 0 : s.t1 - s.t0;
      m.set(s.name, e);
    }
    return [...m].map(([name, e]) => ({ name, ...e })).sort((a, b) => b.totalMs - a.totalMs);
  };
  const eager = byName('eager').map(({ name, calls, totalMs }) => ({ op: name, calls, totalMs }));
  const compile = byName('compile').map(({ name, calls, totalMs }) => ({ stage: name, calls, totalMs }));
  const runMs = rec.runs.map((r) => r.t1 - r.t0);
  const report: ProfileReport = {
    runs: rec.runs.length, runMs, kernelMs, deviceTimed: device !== null, kernels, eager, compile, floors,
    table: (opts) => formatTable(report, opts?.top),
    chromeTrace: () => chromeTrace(rec, report, programs),
  };
  return report;
}

// ---------------------------------------------------------------- text

const fmt = (x: number, digits = 2) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(digits));
const pct = (x: number | null) => (x === null ? '' : ` (${(100 * x).toFixed(0)}%)`);

function formatTable(r: ProfileReport, top = 30): string {
  const mean = r.runMs.reduce((a, b) => a + b, 0) / Math.max(1, r.runs);
  const eagerMs = r.eager.reduce((a, e) => a + e.totalMs, 0);
  const compileMs = r.compile.filter((c) => c.stage.startsWith('compile ')).reduce((a, c) => a + c.totalMs, 0);
  const lines = [
    `kiln profile: ${r.runs} call${r.runs === 1 ? '' : 's'}, ${fmt(mean)} ms per call; kernels ${fmt(r.kernelMs / Math.max(1, r.runs))} ms${r.deviceTimed ? ' (device time)' : ''}, eager ops ${fmt(eagerMs / Math.max(1, r.runs))} ms, compiling ${fmt(compileMs / Math.max(1, r.runs))} ms per call`,
  ];
  for (const [b, f] of Object.entries(r.floors)) lines.push(`floors ${b}: ${f.gbps === null ? '?' : fmt(f.gbps, 1)} GB/s, ${f.gflops === null ? '?' : fmt(f.gflops, 1)} GFLOP/s (${f.source})`);
  if (r.kernels.length) {
    const rows = [...r.kernels].sort((a, b) => b.totalMs - a.totalMs).slice(0, top);
    const header = ['kernel', 'kind', 'calls', 'ms/call', 'share', 'MB', 'MFLOP', 'GB/s (floor)', 'GFLOP/s (floor)', 'fused'];
    const body = rows.map((k) => [
      `${r.floors && Object.keys(r.floors).length > 1 ? `${k.backend}:` : ''}p${k.program}.${k.name}`, k.kind, String(k.calls), k.msPerCall.toFixed(3), `${(100 * k.share).toFixed(1)}%`,
      (k.bytes / 1e6).toFixed(2), (k.flops / 1e6).toFixed(1), `${fmt(k.gbps, 1)}${pct(k.bandwidthOfFloor)}`, `${fmt(k.gflops, 1)}${pct(k.computeOfFloor)}`, k.fused.length > 70 ? `${k.fused.slice(0, 67)}...` : k.fused,
    ]);
    lines.push('', ...columns(header, body));
    if (r.kernels.length > rows.length) lines.push(`(${r.kernels.length - rows.length} more kernels)`);
  }
  if (r.eager.length) lines.push('', ...columns(['eager op', 'calls', 'total ms'], r.eager.slice(0, top).map((e) => [e.op, String(e.calls), e.totalMs.toFixed(3)])));
  if (r.compile.length) lines.push('', ...columns(['compile stage', 'calls', 'total ms'], r.compile.map((c) => [c.stage, String(c.calls), c.totalMs.toFixed(3)])));
  return lines.join('\n');
}

function columns(header: readonly string[], rows: readonly string[][]): string[] {
  const w = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(w[i]!))).join('  ').trimEnd();
  return [line(header), line(w.map((n) => '-'.repeat(n))), ...rows.map(line)];
}

// ---------------------------------------------------------------- Chrome trace

const PID = 1, CPU_TID = 1, DEVICE_TID = 2;

function chromeTrace(rec: Recording, r: ProfileReport, programs: ReadonlyMap<ProfiledProgram, number>): ChromeTrace {
  // (loops, not Math.min(...xs): a long profile has more events than a call takes arguments)
  let origin = Infinity;
  for (const x of [rec.runs, rec.spans, rec.steps]) for (const e of x) origin = Math.min(origin, e.t0);
  const us = (ms: number) => (ms - origin) * 1e3;
  const events: ChromeTraceEvent[] = [];
  const X = (name: string, cat: string, t0: number, t1: number, args?: Record<string, unknown>, tid = CPU_TID) =>
    events.push({ name, cat, ph: 'X', ts: us(t0), dur: Math.max(0, (t1 - t0) * 1e3), pid: PID, tid, ...(args ? { args } : {}) });
  rec.runs.forEach((x, i) => X(`call ${i}`, 'profile', x.t0, x.t1));
  for (const s of rec.spans) X(s.name, s.cat, s.t0, s.t1, s.args);
  const info = new Map(r.kernels.map((k) => [`${k.program}:${k.step}`, k]));
  for (const s of rec.steps) {
    const k = info.get(`${programs.get(s.program)}:${s.step}`)!;
    X(k.name, 'kernel', s.t0, s.t1, { program: k.program, backend: k.backend, kind: k.kind, fused: k.fused, bytes: k.bytes, flops: k.flops });
  }
  // device time is on the device's clock: laid end to end from the first dispatch's launch, in order
  if (rec.device) {
    const startOf = new Map<number, number>([...rec.steps.map((s) => [s.unit, s.t0] as const), ...rec.spans.filter((s) => s.unit !== undefined).map((s) => [s.unit!, s.t0] as const)]);
    let t = rec.runs[0]?.t0 ?? origin;
    for (const d of rec.device) if (d.unit !== null) t = Math.min(t, startOf.get(d.unit) ?? Infinity);
    for (const d of rec.device) {
      const ms = Number.isFinite(d.ns) ? d.ns / 1e6 : 0;
      X(d.kernel, 'device', t, t + ms, { ns: d.ns }, DEVICE_TID);
      t += ms;
    }
  }
  // parents before children at equal start times (Perfetto nests by order)
  events.sort((a, b) => a.tid - b.tid || a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
  const meta = (tid: number, name: string): ChromeTraceEvent => ({ name: 'thread_name', ph: 'M', ts: 0, pid: PID, tid, args: { name } });
  return {
    traceEvents: [
      { name: 'process_name', ph: 'M', ts: 0, pid: PID, tid: CPU_TID, args: { name: 'kiln' } },
      meta(CPU_TID, 'calling thread'),
      ...(rec.device ? [meta(DEVICE_TID, 'device (timestamps, laid end to end)')] : []),
      ...events,
    ],
    displayTimeUnit: 'ms',
  };
}
