// reduce-overhead on WebGPU: a compiled program's step of dispatches prerecorded, the nearest
// WebGPU has to CUDA graphs. A GPUCommandBuffer can be submitted once and compute passes have no
// render bundles, so what is kept is everything but the encoding itself: per dispatch its
// pipeline, its bind group over the program's buffers and its grid, made on the first call. A
// call then runs one tight loop of setPipeline / setBindGroup / dispatchWorkgroups into the
// open compute pass (one command buffer, one submit, as before) with no WGSL lookups, alias
// analysis per kernel or bind-group creation.
//
// Buffers: scratch slots and constants belong to the program and never change. Inputs and
// outputs can (new data tensors each call; outputs served by the program's output pool or the
// buffer pool, so they cycle among a few GPU buffers): each call compares their GPU buffers
// with the last call's, and only the dispatches binding one that changed get a bind group, from
// a small cache per dispatch keyed by those buffers (created on a miss). A change in which
// logical buffers are one GPU buffer (the same tensor passed twice) selects other WGSL variants
// (AliasMap): the recording is rebuilt for the new pattern. So is it when the backend's render
// epoch moved (gpu.matmulConfig or gpu.subgroups set, a max-autotune measurement): the kernels
// render again, so a program never keeps a configuration the backend no longer renders.
//
// Opaque steps (gather, scatterAdd, indexSelect, indexAdd, cumsum, im2col, col2im, pad, cat) run
// their eager kernels on the first call while the backend captures their dispatches; when those
// bound only the program's buffers (no temporary, no host write) they are replayed like the
// kernels from then on. Otherwise (a non-contiguous input copied to a temporary), and for
// `random` (fresh numbers each call: a Philox dispatch whose seed and offset are written to a
// parameter buffer; float64/bool outputs and some integer ranges upload from the host, a queue
// write that submits what is recorded before it) and custom ops (user code), the step runs
// its eager kernels on every call, in order; `summary` says which and why.

import type { BackendBuffer } from '../backend.js';
import type { ProgramRecording, RecordStep } from '../backend.js';
import { aliases, type Compiled, type GpuKernel, type Pipeline, type WebGpuBackend, type WebGpuBuffer } from './index.js';

/** opaque ops whose eager kernels depend only on shapes and attributes: captured and replayed */
const CAPTURABLE = new Set(['gather', 'scatterAdd', 'indexSelect', 'indexAdd', 'cumsum', 'im2col', 'col2im', 'pad', 'cat']);
const PENDING = 'its eager kernels are captured on the first call, then replayed if they bind only program buffers';
/** bind groups kept per dispatch (inputs and pooled outputs cycle among a few buffers) */
const GROUPS_PER_DISPATCH = 8;

/** A small stable id per GPU buffer, for bind-group cache keys. */
const ids = new WeakMap<GPUBuffer, number>();
let nextId = 1;
function gpuId(g: GPUBuffer): number {
  let id = ids.get(g);
  if (id === undefined) ids.set(g, (id = nextId++));
  return id;
}

interface Dispatch {
  readonly pipe: Pipeline;
  readonly grid: readonly [number, number, number];
  /** logical buffer of each binding */
  readonly bindings: readonly number[];
  /** logical buffers it writes (their host copies are dropped, as an eager dispatch does) */
  readonly writes: readonly number[];
  /** binding positions holding a variable buffer (input or output) */
  readonly variable: readonly number[];
  group: GPUBindGroup | null;
  readonly groups: Map<string, GPUBindGroup>;
}

type Step =
  | { readonly kind: 'kernel'; readonly kernel: GpuKernel; dispatches: Dispatch[] }
  | { readonly kind: 'opaque'; readonly op: string; readonly node: number; state: 'capture' | 'captured' | 'per-call'; reason: string; dispatches: Dispatch[] };

export class PrerecordedProgram implements ProgramRecording {
  private readonly steps: Step[];
  private readonly variableIds: readonly number[];
  private readonly isVariable: Set<number>;
  /** the GPU buffer of each variable logical buffer at the last call (null: not built yet) */
  private lastGpu: (GPUBuffer | undefined)[] | null = null;
  private aliasKey: string | null = null;
  /** the backend's render epoch the dispatches were built at */
  private epoch = -1;
  /** rebuilds after the first build, and why the last one happened */
  private rebuilds = 0;
  private rebuiltFor = '';
  /**
   * per step starting a run of replayed steps (no JavaScript runs between their dispatches): the
   * logical buffers the run writes, deduplicated; their host copies are dropped once, before the
   * run, as the eager dispatches would (see planClears)
   */
  private clears: (readonly number[] | undefined)[] = [];
  summary = '';

  constructor(
    private readonly be: WebGpuBackend,
    steps: readonly RecordStep[],
    variable: readonly number[],
  ) {
    this.variableIds = [...new Set(variable)];
    this.isVariable = new Set(this.variableIds);
    this.steps = steps.map((s): Step => {
      if ('prepared' in s) return { kind: 'kernel', kernel: s.prepared as GpuKernel, dispatches: [] };
      const why = s.op === 'random'
        ? 'fresh random numbers each call: one Philox dispatch on the GPU with a new (seed, offset), no extra submit (float64/bool outputs and integer ranges the GPU cannot draw exactly upload from the host: 2 submits)'
        : s.op.startsWith('custom:') ? 'a custom op runs its JavaScript each call' : `no capture for opaque ${s.op}`;
      return CAPTURABLE.has(s.op)
        ? { kind: 'opaque', op: s.op, node: s.node, state: 'capture', reason: PENDING, dispatches: [] }
        : { kind: 'opaque', op: s.op, node: s.node, state: 'per-call', reason: why, dispatches: [] };
    });
    this.describe();
  }

  /** One call: rebinds what changed since the last call, then encodes every step in order. */
  run = (bufs: readonly BackendBuffer[], opaque: (step: number) => void): void => {
    const be = this.be;
    be.check();
    if (this.epoch !== be.renderEpoch || this.changed(bufs)) this.rebind(bufs);
    const steps = this.steps;
    // this call's plan: a capture below replans for later calls
    const clears = this.clears;
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i]!;
      if (s.kind === 'opaque' && s.state !== 'captured') {
        if (s.state === 'capture') this.capture(s, i, bufs, opaque);
        else opaque(i);
        continue;
      }
      const w = clears[i];
      if (w) for (let k = 0; k < w.length; k++) (bufs[w[k]!] as WebGpuBuffer).host = undefined;
      const ds = s.dispatches;
      for (let j = 0; j < ds.length; j++) {
        const d = ds[j]!;
        be.encode(d.pipe, d.group!, d.grid);
      }
    }
    be.counters.prerecordedRuns++;
  };

  /** Whether a variable buffer is another GPU buffer than at the last call (or nothing is built yet). */
  private changed(bufs: readonly BackendBuffer[]): boolean {
    const last = this.lastGpu;
    if (!last) return true;
    const ids = this.variableIds;
    for (let j = 0; j < ids.length; j++) if ((bufs[ids[j]!] as WebGpuBuffer | undefined)?.gpu !== last[j]) return true;
    return false;
  }

  private rebind(bufs: readonly BackendBuffer[]): void {
    const alias = aliases(bufs);
    const changed = new Set<number>();
    const now = this.variableIds.map((id) => (bufs[id] as WebGpuBuffer | undefined)?.gpu);
    const stale = this.epoch !== this.be.renderEpoch;
    const rebuild = stale || alias.key !== this.aliasKey;
    if (rebuild) {
      // another alias pattern selects other WGSL variants, another render epoch other WGSL
      // (variants() renders the kernels again): build every dispatch
      if (this.lastGpu) {
        this.rebuilds++;
        this.rebuiltFor = stale ? this.be.renderChange : 'another alias pattern';
      }
      this.aliasKey = alias.key;
      this.epoch = this.be.renderEpoch;
      for (const s of this.steps) {
        if (s.kind === 'kernel') s.dispatches = this.be.variants(s.kernel, alias).map((c) => this.dispatchOf(c, c.w.bindings));
        else if (s.state === 'captured') {
          s.state = 'capture';
          s.reason = PENDING;
          s.dispatches = [];
        }
      }
    } else {
      this.variableIds.forEach((id, j) => {
        if (now[j] !== this.lastGpu![j]) changed.add(id);
      });
    }
    for (const s of this.steps) {
      for (const d of s.dispatches) {
        if (!d.group || d.variable.some((p) => changed.has(d.bindings[p]!))) d.group = this.groupFor(d, bufs);
      }
    }
    this.lastGpu = now;
    if (rebuild) this.describe();
  }

  private dispatchOf(c: Compiled, bindings: readonly number[]): Dispatch {
    return {
      pipe: c.p, grid: c.w.grid, bindings,
      writes: bindings.filter((_, i) => c.w.writable[i]),
      variable: bindings.flatMap((b, i) => (this.isVariable.has(b) ? [i] : [])),
      group: null, groups: new Map(),
    };
  }

  /** The bind group of `d` over this call's buffers: cached by the variable ones. */
  private groupFor(d: Dispatch, bufs: readonly BackendBuffer[]): GPUBindGroup {
    let key = '';
    for (const p of d.variable) key += `${gpuId((bufs[d.bindings[p]!] as WebGpuBuffer).gpu)},`;
    let g = d.groups.get(key);
    if (!g) {
      g = this.be.bindGroup(d.pipe.layout, d.bindings.map((b) => (bufs[b] as WebGpuBuffer).gpu));
      if (d.groups.size >= GROUPS_PER_DISPATCH) d.groups.delete(d.groups.keys().next().value!);
      d.groups.set(key, g);
    }
    return g;
  }

  /** Runs an opaque step's eager kernels while capturing their dispatches; replayable ones are kept. */
  private capture(s: Extract<Step, { kind: 'opaque' }>, i: number, bufs: readonly BackendBuffer[], opaque: (step: number) => void): void {
    const cap = this.be.capture(() => opaque(i));
    let why = cap.broken;
    const idOf = new Map<GPUBuffer, number>();
    bufs.forEach((b, id) => {
      const g = (b as WebGpuBuffer | undefined)?.gpu;
      if (g && !idOf.has(g)) idOf.set(g, id);
    });
    const ds: Dispatch[] = [];
    for (const { c, buffers } of why ? [] : cap.dispatches) {
      const bindings = buffers.map((b) => idOf.get(b.gpu));
      if (bindings.some((b) => b === undefined)) {
        why = 'bind a buffer outside the program (a temporary)';
        break;
      }
      ds.push(this.dispatchOf(c, bindings as number[]));
    }
    if (why) {
      s.state = 'per-call';
      s.reason = `they ${why}`;
    } else {
      for (const d of ds) d.group = this.groupFor(d, bufs);
      s.state = 'captured';
      s.reason = `replayed as captured on the first call (${ds.length} dispatch${ds.length === 1 ? '' : 'es'})`;
      s.dispatches = ds;
    }
    this.describe();
  }

  /**
   * The buffers each run of replayed steps writes (see `clears`). Steps that run eager kernels
   * (per-call or being captured) end a run: their JavaScript may read or write host copies, so
   * those are dropped at the same points as before, just not once per dispatch.
   */
  private planClears(): void {
    const clears: (readonly number[] | undefined)[] = [];
    let start = -1;
    let run = new Set<number>();
    const end = () => {
      if (start >= 0 && run.size > 0) clears[start] = [...run];
      start = -1;
      run = new Set();
    };
    this.steps.forEach((s, i) => {
      if (s.kind === 'opaque' && s.state !== 'captured') return end();
      if (start < 0) start = i;
      for (const d of s.dispatches) for (const b of d.writes) run.add(b);
    });
    end();
    this.clears = clears;
  }

  private describe(): void {
    this.planClears();
    const kernels = this.steps.filter((s) => s.kind === 'kernel').length;
    const opaque = this.steps.filter((s): s is Extract<Step, { kind: 'opaque' }> => s.kind === 'opaque');
    const replayed = kernels + opaque.filter((s) => s.state === 'captured').length;
    const built = this.lastGpu !== null;
    const dispatches = this.steps.reduce((a, s) => a + s.dispatches.length, 0);
    const rebuilt = this.rebuilds ? ` (rebuilt ${this.rebuilds}x, last for ${this.rebuiltFor})` : '';
    const head = `prerecorded ${replayed} of ${this.steps.length} steps${built ? ` (${dispatches} dispatches)` : ''}: pipelines, bind groups and grids made ${built ? 'once' : 'on the first call'}${rebuilt}, then one encode loop per call, bind groups remade only for inputs/outputs on new buffers`;
    const notes = opaque.map((s) => `${s.op} (%${s.node}): ${s.state === 'per-call' ? `runs its eager kernels each call: ${s.reason}` : s.reason}`);
    this.summary = [head, ...notes].join('; ');
  }
}
