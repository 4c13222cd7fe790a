// A fused program: the scheduled kernels over planned buffers. Scratch buffers are
// allocated once and reused by lifetime (and in place where an elementwise kernel's input
// dies). Outputs belong to the caller: each call gets its own, but where the kernel backend
// asks for it (or under 'reduce-overhead') the buffer of an output the caller disposed comes
// back to the program (output-pool.ts) and serves a later call.

import type { Backend, BackendBuffer, PreparedKernel, ProgramRecording } from '../../backend/backend.js';
import type { ContentVersion } from '../../ir/kernel-spec.js';
import { itemSize, type DType } from '../../core/dtype.js';
import { defaultGenerator } from '../../core/random.js';
import { isGradEnabled, setGradEnabled } from '../../autograd/grad-mode.js';
import { runtime } from '../../ops/dispatch.js';
import { Storage } from '../../tensor/storage.js';
import { CallBuffers } from './call-buffers.js';
import { Tensor } from '../../tensor/tensor.js';
import { kernelExtent, kernelLoads, kernelStores, kernelWork, printKernel, type LoopKernel, type MatmulKernel } from '../../ir/loop-ir.js';
import { affKey } from '../../ir/affine.js';
import { log } from '../../core/logs.js';
import { OutputPool } from './output-pool.js';
import { profileSpan, profiling, type ProfileSink } from '../../core/profiling.js';

/** The cache blockings max-autotune tries on each matmul (the first is the default). */
const MATMUL_TILE_CANDIDATES = [
  { kc: 256, mc: 64, nc: 1024 },
  { kc: 128, mc: 64, nc: 512 },
  { kc: 512, mc: 32, nc: 1024 },
  { kc: 256, mc: 128, nc: 256 },
  { kc: 384, mc: 96, nc: 2048 },
] as const;
import type { BufferView } from '../../ir/lowered.js';
import type { Lowered, Step } from '../schedule/lowered.js';

interface PlannedStep {
  readonly step: Step;
  readonly prepared?: PreparedKernel;
}

export interface MemoryPlan {
  /** physical scratch slot of each logical scratch buffer (-1: input, constant or output) */
  readonly slotOf: number[];
  readonly slots: { dtype: DType; size: number }[];
  readonly scratchBytes: number;
  readonly outputBytes: number;
  /** logical buffers written in place of a dead input of their kernel */
  readonly inPlace: number;
}

function stepReads(s: Step): number[] {
  return s.kind === 'kernel' ? [...kernelLoads(s.kernel)] : s.inputs.map((v) => v.buf);
}
function stepWrites(s: Step): number[] {
  return s.kind === 'kernel' ? [...new Set(kernelStores(s.kernel).map((x) => x.buf))] : [s.out.buf];
}

/**
 * Buffers some step reads or writes. Lowering can leave buffers no step touches (e.g. a
 * matmul's output after its epilogue was fused into the consumer): they get no memory, since
 * allocating them per call would zero-fill fresh pages for nothing.
 */
export function usedBuffers(l: Lowered): Set<number> {
  return new Set(l.steps.flatMap((s) => [...stepReads(s), ...stepWrites(s)]));
}

/** Lifetime-based reuse of scratch buffers (best fit by size, same dtype). */
export function planMemory(l: Lowered): MemoryPlan {
  const outputBufs = new Set(l.outputs.map((o) => o.buf));
  const lastUse = new Map<number, number>();
  l.steps.forEach((s, i) => stepReads(s).forEach((b) => lastUse.set(b, i)));
  const slotOf = l.buffers.map(() => -1);
  const slots: { dtype: DType; size: number; freeAfter: number }[] = [];
  let inPlace = 0;
  l.steps.forEach((s, i) => {
    for (const b of stepWrites(s)) {
      const info = l.buffers[b]!;
      if (info.kind !== 'scratch' || outputBufs.has(b) || slotOf[b] !== -1) continue;
      // a slot free before this step, or one whose last reader is this elementwise kernel
      let best = -1;
      for (let k = 0; k < slots.length; k++) {
        const sl = slots[k]!;
        if (sl.dtype !== info.dtype || sl.size < info.size) continue;
        const free = sl.freeAfter < i || (sl.freeAfter === i && elementwiseInPlace(s, b, slotOf, k));
        if (free && (best < 0 || sl.size < slots[best]!.size)) best = k;
      }
      if (best >= 0 && slots[best]!.freeAfter === i) inPlace++;
      if (best < 0) {
        slots.push({ dtype: info.dtype, size: info.size, freeAfter: -1 });
        best = slots.length - 1;
      }
      slotOf[b] = best;
      slots[best]!.freeAfter = Math.max(lastUse.get(b) ?? i, i);
    }
  });
  const scratchBytes = slots.reduce((a, s) => a + s.size * itemSize(s.dtype), 0);
  const outputBytes = [...outputBufs].reduce((a, b) => a + (l.buffers[b]!.kind === 'scratch' ? l.buffers[b]!.size * itemSize(l.buffers[b]!.dtype) : 0), 0);
  return { slotOf, slots: slots.map(({ dtype, size }) => ({ dtype, size })), scratchBytes, outputBytes, inPlace };
}

/** Whether kernel `s` reads every buffer living in `slot` only at the index it writes `b`. */
function elementwiseInPlace(s: Step, b: number, slotOf: number[], slot: number): boolean {
  if (s.kind !== 'kernel' || s.kernel.kind !== 'pointwise') return false;
  const k = s.kernel;
  const store = k.stores.find((x) => x.buf === b);
  if (!store) return false;
  const key = affKey(store.at);
  return k.body.every((st) => st.e.k !== 'load' || slotOf[st.e.buf] !== slot || affKey(st.e.at) === key);
}

export class FusedProgram {
  private readonly planned: PlannedStep[];
  private readonly scratch: BackendBuffer[];
  private readonly constants = new Map<number, BackendBuffer>();
  readonly plan: MemoryPlan;
  /** scratch buffers bound to a planned slot, and those allocated on every call (outputs) */
  private readonly slotted: [number, number][] = [];
  private readonly perCall: { id: number; dtype: DType; size: number; output: boolean }[] = [];
  /** inputs the program writes (in-place updates): their storage version moves, as in eager */
  private readonly writtenInputs: number[];
  /** KernelArgs.stable before a call's inputs are filled in: the constants */
  private readonly stableTemplate: (ContentVersion | undefined)[];

  /** outputs: fresh, or recycled where the kernel backend wants it and under reduce-overhead */
  private readonly outputs: OutputPool;
  /** prepares and launches the loop kernels (`backend` unless another one shares its buffers, e.g. native) */
  readonly kernelBackend: Backend;
  /** reduce-overhead on a backend that prerecords (webgpu): the steps' prerecorded state */
  private readonly recording: ProgramRecording | null = null;
  private loggedSummary = '';

  constructor(
    readonly lowered: Lowered,
    readonly backend: Backend,
    opts: { reuseOutputs?: boolean; autotune?: boolean; kernelBackend?: Backend } = {},
  ) {
    const kb = (this.kernelBackend = opts.kernelBackend ?? backend);
    this.outputs = new OutputPool(kb, backend, opts.reuseOutputs === true);
    // max-autotune: a kernel backend with its own tuner (webgpu: measured on the device,
    // asynchronously, src/backend/webgpu/autotune.ts) gets the program, also when it comes from the
    // persistent cache (its stored `autotuned` decisions say it was compiled for max-autotune);
    // elsewhere the matmul blockings are timed here
    if (kb.autotuneProgram) {
      if (opts.autotune || lowered.decisions.some((d) => d.decision === 'autotuned')) kb.autotuneProgram(lowered);
    } else if (opts.autotune) autotune(lowered, kb);
    this.plan = planMemory(lowered);
    // scratch, constants and outputs live where the kernels run (e.g. the wasm heap; native and
    // js share the JS backend's typed arrays), so no call copies them in
    this.scratch = this.plan.slots.map((s) => kb.alloc(s.dtype, s.size, 'shared'));
    for (const b of lowered.buffers) {
      if (b.kind !== 'constant') continue;
      const buf = kb.alloc(b.dtype, b.size);
      kb.write(buf, b.data!);
      this.constants.set(b.id, buf);
    }
    const outputBufs = new Set(lowered.outputs.map((o) => o.buf));
    const used = usedBuffers(lowered);
    for (const b of lowered.buffers) {
      if (b.kind !== 'scratch' || !(used.has(b.id) || outputBufs.has(b.id))) continue;
      const slot = this.plan.slotOf[b.id]!;
      const output = outputBufs.has(b.id);
      if (output || slot === -1) this.perCall.push({ id: b.id, dtype: b.dtype, size: b.size, output });
      else this.slotted.push([b.id, slot]);
    }
    const written = new Set(lowered.steps.flatMap(stepWrites));
    this.writtenInputs = lowered.inputBuffers.flatMap((b, i) => (written.has(b) ? [i] : []));
    this.stableTemplate = lowered.buffers.map((b) => (b.kind === 'constant' && !written.has(b.id) ? { version: 0 } : undefined));
    const n = lowered.buffers.length;
    const tc = performance.now();
    this.planned = lowered.steps.map((step) => (step.kind === 'kernel' ? { step, prepared: kb.prepare({ kind: 'loop', kernel: step.kernel, nBuffers: n }) } : { step }));
    kb.flush?.();
    profileSpan('compile', `codegen (${kb.name})`, tc, { kernels: this.planned.filter((p) => p.prepared).length });
    if (opts.reuseOutputs === true && kb.recordProgram) {
      const variable = [...lowered.inputBuffers, ...this.perCall.map((b) => b.id)];
      this.recording = kb.recordProgram(this.planned.map((p) => (p.step.kind === 'opaque' ? { op: p.step.node.op, node: p.step.node.id } : { prepared: p.prepared! })), variable);
      this.logRecording();
    }
  }

  get kernels(): LoopKernel[] {
    return this.lowered.steps.flatMap((s) => (s.kind === 'kernel' ? [s.kernel] : []));
  }

  get launchCount(): number {
    return this.lowered.steps.length;
  }

  /** Peak bytes the program holds while it runs (scratch slots and this call's outputs). */
  get peakBytes(): number {
    return this.plan.scratchBytes + this.plan.outputBytes;
  }

  run(inputs: readonly Tensor[]): Tensor[] {
    const l = this.lowered;
    const call = new CallBuffers(l.buffers.length, l.inputBuffers, inputs);
    const bufs = call.bufs;
    for (const [id, buf] of this.constants) bufs[id] = buf;
    for (const [id, slot] of this.slotted) bufs[id] = this.scratch[slot]!;
    for (const b of this.perCall) {
      if (!b.output) bufs[b.id] = this.kernelBackend.alloc(b.dtype, b.size, 'shared');
      else {
        call.hold(b.id, this.outputs.output(b.id, b.dtype, b.size));
      }
    }
    const sink = profiling.sink;
    if (sink) this.runProfiled(bufs, sink, this.stableContents(inputs));
    else if (this.recording?.run) {
      this.recording.run(bufs, (i) => runOpaque(this.planned[i]!.step as Extract<Step, { kind: 'opaque' }>, bufs, this.backend));
      if (this.recording.summary !== this.loggedSummary) this.logRecording();
    } else {
      const args = { kind: 'loop' as const, buffers: bufs, stable: this.stableContents(inputs) };
      for (const p of this.planned) {
        if (p.prepared) this.kernelBackend.launch(p.prepared, args);
        else runOpaque(p.step as Extract<Step, { kind: 'opaque' }>, bufs, this.backend);
      }
    }
    for (const i of this.writtenInputs) inputs[i]!.storage.version++;
    return call.tensors(l.outputs, this.backend);
  }

  /**
   * Which buffers keep their content between calls (KernelArgs.stable): constants, and inputs
   * this program does not write (nor shares storage with one it writes), by their storage.
   */
  private stableContents(inputs: readonly Tensor[]): (ContentVersion | undefined)[] {
    const out = this.stableTemplate.slice();
    const written = this.writtenInputs.map((i) => inputs[i]!.storage);
    this.lowered.inputBuffers.forEach((b, i) => {
      const st = inputs[i]!.storage;
      if (!written.includes(st)) out[b] = st;
    });
    return out;
  }

  /**
   * run()'s loop while kiln.profile runs: each step timed on its own (and, on a device-timed
   * backend, its dispatches attributed to it), never prerecorded, so the profile sees every step.
   */
  private runProfiled(bufs: BackendBuffer[], sink: ProfileSink, stable: readonly (ContentVersion | undefined)[]): void {
    const t0 = performance.now();
    const args = { kind: 'loop' as const, buffers: bufs, stable };
    this.planned.forEach((p, i) => {
      const s0 = sink.begin();
      try {
        if (p.prepared) this.kernelBackend.launch(p.prepared, args);
        else runOpaque(p.step as Extract<Step, { kind: 'opaque' }>, bufs, this.backend);
      } finally {
        sink.endStep(this, i, s0);
      }
    });
    sink.span('program', `program (${this.kernelBackend.name}, ${this.planned.length} steps)`, t0, performance.now());
  }

  /** The loop IR of every kernel, the opaque steps, and the memory plan (printer). */
  print(): string {
    const on = this.kernelBackend !== this.backend ? ` (kernels on ${this.kernelBackend.name})` : '';
    const lines = [`fused program${on}: ${this.kernels.length} kernels, ${this.lowered.steps.length - this.kernels.length} opaque steps; scratch ${this.plan.slots.length} buffers / ${this.plan.scratchBytes} bytes (reused by lifetime, ${this.plan.inPlace} in place), outputs ${this.plan.outputBytes} bytes`];
    if (this.recording) lines.push(`reduce-overhead: ${this.recording.summary}`);
    for (const s of this.lowered.steps) {
      if (s.kind === 'kernel') lines.push(printKernel(s.kernel));
      else lines.push(`opaque ${s.node.op} (%${s.node.id}): (${s.inputs.map((v) => `buf${v.buf}`).join(', ')}) -> buf${s.out.buf}`);
    }
    return lines.join('\n');
  }

  private logRecording(): void {
    this.loggedSummary = this.recording!.summary;
    log('perf', `reduce-overhead on ${this.kernelBackend.name}: ${this.loggedSummary}`);
  }

  /** Generated source of every kernel, where the backend can show it (KILN_LOGS=output_code). */
  source(): string {
    const n = this.lowered.buffers.length;
    return this.kernels.map((k) => this.kernelBackend.describe?.({ kind: 'loop', kernel: k, nBuffers: n }) ?? printKernel(k)).join('\n\n');
  }
}

/**
 * Rows (or batches) of a matmul kernel to time: enough work for a stable timing (~2e7
 * multiply-adds) and at least 256 rows, since on a thin slice packing B dominates and the
 * ranking of blockings differs from the full problem's.
 */
function trialExtent(k: MatmulKernel): number {
  const perUnit = kernelWorkPerUnit(k);
  return Math.max(1, Math.min(kernelExtentOf(k), Math.max(256, Math.ceil(2e7 / perUnit))));
}
const kernelExtentOf = (k: MatmulKernel) => kernelExtent(k);
const kernelWorkPerUnit = (k: MatmulKernel) => kernelWork(k) / kernelExtent(k);

/**
 * max-autotune: times each matmul kernel's cache blockings on the real shapes (a slice of its
 * rows, random data in scratch buffers), keeps the fastest, and records the choice.
 */
function autotune(l: Lowered, backend: Backend): void {
  for (const s of l.steps) {
    if (s.kind !== 'kernel' || s.kernel.kind !== 'matmul') continue;
    const k = s.kernel;
    const bufs = l.buffers.map((b) => {
      const buf = backend.alloc(b.dtype, Math.max(1, b.size));
      const data = new Float64Array(Math.max(1, b.size)).map(() => Math.random() - 0.5);
      backend.write(buf, b.dtype === 'float64' ? data : b.dtype === 'float32' ? Float32Array.from(data) : new (b.dtype === 'int32' ? Int32Array : Uint8Array)(data.length));
      return buf;
    });
    const hi = trialExtent(k);
    const results = MATMUL_TILE_CANDIDATES.map((tiles) => {
      const variant = { ...k, tiles };
      const prepared = backend.prepare({ kind: 'loop', kernel: variant, nBuffers: l.buffers.length });
      const args = { kind: 'loop' as const, buffers: bufs, range: [0, hi] as const };
      backend.launch(prepared, args);
      const times: number[] = [];
      for (let r = 0; r < 3; r++) {
        const t0 = performance.now();
        backend.launch(prepared, args);
        times.push(performance.now() - t0);
      }
      return { tiles, ms: times.sort((a, b) => a - b)[1]! };
    });
    const best = results.reduce((a, b) => (b.ms < a.ms ? b : a));
    k.tiles = best.tiles;
    l.decisions.push({
      decision: 'autotuned', nodes: [],
      reason: `${k.name} [${k.m}x${k.k}]@[${k.k}x${k.n}]: kc=${best.tiles.kc} mc=${best.tiles.mc} nc=${best.tiles.nc} (${results.map((r) => `${r.tiles.kc}/${r.tiles.mc}/${r.tiles.nc}: ${r.ms.toFixed(2)} ms`).join(', ')}; ${hi} rows timed)`,
    });
    bufs.forEach((b) => backend.free(b));
  }
}

/** Runs an opaque step (gather, im2col, random, ...) with its eager kernel on planned buffers. */
export function runOpaque(s: Extract<Step, { kind: 'opaque' }>, bufs: BackendBuffer[], backend: Backend): void {
  const wrap = (v: BufferView) => new Tensor(new Storage(backend, bufs[v.buf]!, false), v.shape, v.strides, v.offset, v.dtype, true);
  const ins = s.inputs.map(wrap);
  const out = wrap(s.out);
  const grad = isGradEnabled();
  const tracer = runtime.tracer;
  runtime.tracer = null;
  setGradEnabled(false);
  try {
    let attrs = s.node.attrs;
    if (s.node.op === 'random') {
      // fresh numbers on every call, from the global generator
      const a = attrs as { shape: number[] };
      attrs = { ...(attrs as object), ...reserve(a.shape) };
    }
    s.node.prim!.run!(ins, out, attrs);
  } finally {
    setGradEnabled(grad);
    runtime.tracer = tracer;
    ins.forEach((t) => t.dispose());
    out.dispose();
  }
}

function reserve(shape: readonly number[]): { seed: number; offset: number } {
  return defaultGenerator.reserve(shape.reduce((a, b) => a * b, 1));
}
