// Program: a flat list of alloc / write / launch steps, recorded once by running each graph
// node's kernel code against placeholder buffers, then replayed on real buffers. Replay
// does no shape inference, no kernel preparation and no autograd bookkeeping.

import type { Backend, BackendBuffer, PreparedKernel } from '../../backend/backend.js';
import type { KernelArgs, KernelSpec, ViewArg } from '../../ir/kernel-spec.js';
import type { DType, TypedArray } from '../../core/dtype.js';
import { defaultGenerator } from '../../core/random.js';
import { setGradEnabled, isGradEnabled } from '../../autograd/grad-mode.js';
import { apply, runtime, type PrimDef } from '../../ops/dispatch.js';
import { isOpaque } from '../capture/custom-op.js';
import { assign } from '../../ops/inplace.js';
import { Storage, memoryStats } from '../../tensor/storage.js';
import { Tensor } from '../../tensor/tensor.js';
import type { Graph } from '../capture/graph.js';
import type { BufferView } from '../../ir/lowered.js';

class SlotBuffer implements BackendBuffer {
  constructor(readonly slot: number, readonly dtype: DType, readonly size: number) {}
}

interface SlotTensor { slot: number; shape: readonly number[]; strides: readonly number[]; offset: number; dtype: DType }

type Step =
  | { kind: 'alloc'; slot: number; dtype: DType; size: number }
  /** a custom op: runs the user's code on real tensors at replay */
  | { kind: 'opaque'; prim: PrimDef<unknown>; attrs: unknown; inputs: SlotTensor[]; out: SlotTensor }
  | { kind: 'launch'; kernel: PreparedKernel; args: KernelArgs; bind: [ViewArg, number][]; random: boolean };

/** A backend stand-in that records what the real one is asked to do. */
class RecordingBackend implements Backend {
  readonly name: string;
  readonly steps: Step[] = [];
  readonly constants = new Map<number, TypedArray>();
  readonly slotInfo: { dtype: DType; size: number }[] = [];
  constructor(readonly real: Backend) {
    this.name = real.name;
  }
  newSlot(dtype: DType, size: number): SlotBuffer {
    this.slotInfo.push({ dtype, size });
    return new SlotBuffer(this.slotInfo.length - 1, dtype, size);
  }
  alloc(dtype: DType, size: number): BackendBuffer {
    const b = this.newSlot(dtype, size);
    this.steps.push({ kind: 'alloc', slot: b.slot, dtype, size });
    return b;
  }
  free(): void {}
  write(buf: BackendBuffer, data: TypedArray, offset = 0): void {
    const slot = (buf as SlotBuffer).slot;
    if (offset !== 0) throw new Error('kiln internal: recorded write with offset');
    // constants are written once when the program is built, not on every call
    const i = this.steps.findIndex((s) => s.kind === 'alloc' && s.slot === slot);
    if (i >= 0) this.steps.splice(i, 1);
    this.constants.set(slot, data.slice());
  }
  readSync(): TypedArray {
    throw new Error('kiln internal: a kernel read data while its program was recorded');
  }
  read(): Promise<TypedArray> {
    return Promise.reject(new Error('kiln internal: read while recording'));
  }
  prepare(spec: KernelSpec): PreparedKernel {
    return this.real.prepare(spec);
  }
  launch(kernel: PreparedKernel, args: KernelArgs): void {
    const bind: [ViewArg, number][] = [];
    const copy = cloneArgs(args, bind);
    this.steps.push({ kind: 'launch', kernel, args: copy, bind, random: args.kind === 'random' });
  }
}

function cloneArgs(args: KernelArgs, bind: [ViewArg, number][]): KernelArgs {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) {
    if (isView(v)) out[k] = bindView(v, bind);
    else if (Array.isArray(v) && v.length > 0 && isView(v[0])) out[k] = v.map((x) => bindView(x as ViewArg, bind));
    else out[k] = v;
  }
  return out as unknown as KernelArgs;
}

function isView(v: unknown): v is ViewArg {
  return typeof v === 'object' && v !== null && 'buf' in v && 'strides' in v;
}

function bindView(v: ViewArg, bind: [ViewArg, number][]): ViewArg {
  const c = { buf: v.buf, offset: v.offset, strides: [...v.strides] };
  bind.push([c, (v.buf as SlotBuffer).slot]);
  return c;
}

/** An output of a replayed program: a strided window of one of its slots. */
export interface ProgramOutput extends Omit<BufferView, 'buf'> {
  readonly slot: number;
}

export interface ProgramOptions {
  /** keep intermediate buffers across calls (mode 'reduce-overhead') */
  readonly persistentScratch: boolean;
}

export class Program {
  private readonly slots: BackendBuffer[];
  private readonly persistent = new Set<number>();

  constructor(
    readonly backend: Backend,
    readonly steps: readonly Step[],
    readonly inputSlots: readonly number[],
    readonly outputs: readonly ProgramOutput[],
    readonly constants: ReadonlyMap<number, TypedArray>,
    slotInfo: readonly { dtype: DType; size: number }[],
    opts: ProgramOptions,
    /** inputs the program writes (in-place updates): their storage version moves, as in eager */
    private readonly writtenInputs: readonly number[] = [],
  ) {
    this.slots = new Array<BackendBuffer>(slotInfo.length);
    for (const [slot, data] of constants) {
      const b = backend.alloc(slotInfo[slot]!.dtype, slotInfo[slot]!.size);
      backend.write(b, data);
      this.slots[slot] = b;
    }
    if (opts.persistentScratch) {
      const outSlots = new Set(outputs.map((o) => o.slot));
      for (const s of steps) {
        if (s.kind === 'alloc' && !outSlots.has(s.slot)) {
          this.slots[s.slot] = backend.alloc(s.dtype, s.size);
          this.persistent.add(s.slot);
        }
      }
    }
  }

  get launchCount(): number {
    return this.steps.filter((s) => s.kind === 'launch').length;
  }

  /** Runs on the given input tensors; returns the output tensors (fresh handles). */
  run(inputs: readonly Tensor[]): Tensor[] {
    const slots = this.slots;
    const storages = new Map<number, Storage>();
    for (let i = 0; i < inputs.length; i++) {
      const st = inputs[i]!.storage;
      slots[this.inputSlots[i]!] = st.buf;
      storages.set(this.inputSlots[i]!, st);
    }
    const backend = this.backend;
    for (const s of this.steps) {
      if (s.kind === 'alloc') {
        if (!this.persistent.has(s.slot)) slots[s.slot] = backend.alloc(s.dtype, s.size);
      } else if (s.kind === 'opaque') {
        runOpaque(s, slots, backend);
      } else {
        for (const [v, slot] of s.bind) (v as { buf: BackendBuffer }).buf = slots[slot]!;
        if (s.random) {
          const a = s.args as { seed: number; offset: number; size: number };
          const r = defaultGenerator.reserve(a.size);
          a.seed = r.seed;
          a.offset = r.offset;
        }
        backend.launch(s.kernel, s.args);
      }
    }
    for (const i of this.writtenInputs) inputs[i]!.storage.version++;
    const result = this.outputs.map((o) => {
      let st = storages.get(o.slot);
      if (!st) {
        st = new Storage(backend, slots[o.slot]!);
        storages.set(o.slot, st);
      }
      return new Tensor(st, o.shape, o.strides, o.offset, o.dtype);
    });
    // drop references to this call's buffers so they can be collected
    for (let i = 0; i < slots.length; i++) if (!this.persistent.has(i) && !this.constants.has(i)) slots[i] = undefined as never;
    return result;
  }

  /** The program as text (the `output_code` stage printer until fused kernels land). */
  print(): string {
    const lines = [`program (${this.launchCount} launches, ${this.steps.filter((s) => s.kind === 'alloc').length} buffers, ${this.constants.size} constants)`];
    for (const s of this.steps) {
      if (s.kind === 'alloc') lines.push(`  alloc  $${s.slot} ${s.dtype}[${s.size}]`);
      else if (s.kind === 'opaque') lines.push(`  opaque ${s.prim.name}  (${s.inputs.map((i) => `$${i.slot}`).join(', ')}) -> $${s.out.slot}`);
      else {
        const slots = s.bind.map(([, slot]) => `$${slot}`).join(', ');
        lines.push(`  launch ${describeSpec(s.kernel.spec)}  (${slots})`);
      }
    }
    return lines.join('\n');
  }
}

function describeSpec(spec: KernelSpec): string {
  switch (spec.kind) {
    case 'pointwise': return `pointwise<${spec.outDType}> rank ${spec.ndim}`;
    case 'reduce': return `reduce ${spec.op} keep ${spec.nKeep} over ${spec.nReduce}`;
    case 'matmul': return `matmul<${spec.dtype}> batch dims ${spec.nBatch}`;
    default: return spec.kind;
  }
}

/** Records a graph into a Program for `backend`. Inputs are bound in graph input order. */
export function buildProgram(graph: Graph, backend: Backend, opts: ProgramOptions): Program {
  const rec = new RecordingBackend(backend);
  const values = new Map<number, Tensor>();
  const inputSlots: number[] = [];
  const savedTracer = runtime.tracer;
  const savedCheck = runtime.checkNumerics;
  const savedGrad = isGradEnabled();
  const savedPeak = memoryStats.peakBytes;
  const savedBackend = runtime.backend;
  runtime.tracer = null;
  runtime.checkNumerics = false;
  runtime.backend = rec; // ops without inputs (full, random, constants) allocate here too
  setGradEnabled(false);
  const made: Tensor[] = [];
  try {
    for (const n of graph.nodes) {
      if (n.op === 'input') {
        const buf = rec.newSlot(n.meta.dtype, bufferSize(n.meta));
        inputSlots.push(buf.slot);
        const t = new Tensor(new Storage(rec, buf), n.meta.shape, n.meta.strides, n.meta.offset, n.meta.dtype, true);
        values.set(n.id, t);
        made.push(t);
        continue;
      }
      const ins = n.inputs.map((i) => values.get(i)!);
      const t = isOpaque(n.prim!) ? recordOpaque(rec, n.prim!, n.attrs, ins, n.meta) : apply(n.prim!, ins, n.attrs);
      values.set(n.id, t);
      made.push(t);
    }
    for (const m of graph.mutations) assign(values.get(m.target)!, values.get(m.value)!);
    const outputs = graph.outputs.map((id) => {
      const t = values.get(id)!;
      return { slot: (t.storage.buf as SlotBuffer).slot, shape: t.shape, strides: t.strides, offset: t.offset, dtype: t.dtype };
    });
    const inputIds = graph.nodes.filter((n) => n.op === 'input').map((n) => n.id);
    const written = [...new Set(graph.mutations.map((m) => inputIds.indexOf(m.target)).filter((i) => i >= 0))];
    return new Program(backend, rec.steps, inputSlots, outputs, rec.constants, rec.slotInfo, opts, written);
  } finally {
    for (const t of made) t.dispose();
    runtime.tracer = savedTracer;
    runtime.backend = savedBackend;
    runtime.checkNumerics = savedCheck;
    setGradEnabled(savedGrad);
    memoryStats.peakBytes = savedPeak;
  }
}

function slotTensor(t: Tensor): SlotTensor {
  return { slot: (t.storage.buf as SlotBuffer).slot, shape: t.shape, strides: t.strides, offset: t.offset, dtype: t.dtype };
}

function recordOpaque(rec: RecordingBackend, prim: PrimDef<unknown>, attrs: unknown, inputs: Tensor[], meta: { shape: readonly number[]; dtype: DType }): Tensor {
  const size = meta.shape.reduce((a, b) => a * b, 1);
  const out = new Tensor(new Storage(rec, rec.alloc(meta.dtype, size)), meta.shape, undefined, 0, meta.dtype, true);
  rec.steps.push({ kind: 'opaque', prim, attrs, inputs: inputs.map(slotTensor), out: slotTensor(out) });
  return out;
}

function runOpaque(s: Extract<Step, { kind: 'opaque' }>, slots: BackendBuffer[], backend: Backend): void {
  const wrap = (x: SlotTensor) => new Tensor(new Storage(backend, slots[x.slot]!, false), x.shape, x.strides, x.offset, x.dtype, true);
  const ins = s.inputs.map(wrap);
  const out = wrap(s.out);
  const grad = isGradEnabled();
  setGradEnabled(false);
  try {
    s.prim.run!(ins, out, s.attrs);
  } finally {
    setGradEnabled(grad);
    ins.forEach((t) => t.dispose());
    out.dispose();
  }
}

/** Size of the buffer behind a (possibly strided) input: enough to hold its last element. */
function bufferSize(m: { shape: readonly number[]; strides: readonly number[]; offset: number }): number {
  let last = m.offset;
  for (let d = 0; d < m.shape.length; d++) if (m.shape[d]! > 0) last += (m.shape[d]! - 1) * Math.abs(m.strides[d]!);
  return m.shape.some((s) => s === 0) ? 0 : last + 1;
}

/**
 * Runs the graph node by node with eager kernels (the 'eager' backend, and the path for
 * graphs whose outputs must carry autograd history).
 */
export function interpret(graph: Graph, inputs: readonly Tensor[]): Tensor[] {
  const values = new Map<number, Tensor>();
  const made: Tensor[] = [];
  const saved = runtime.tracer;
  runtime.tracer = null;
  try {
    let k = 0;
    for (const n of graph.nodes) {
      if (n.op === 'input') {
        values.set(n.id, inputs[k++]!);
        continue;
      }
      // random nodes draw fresh numbers on every call, as eager does
      const attrs = n.op === 'random' ? { ...(n.attrs as object), ...defaultGenerator.reserve(n.meta.shape.reduce((a, b) => a * b, 1)) } : n.attrs;
      const t = apply(n.prim!, n.inputs.map((i) => values.get(i)!), attrs);
      values.set(n.id, t);
      made.push(t);
    }
    const grad = isGradEnabled();
    setGradEnabled(false);
    try {
      for (const m of graph.mutations) assign(values.get(m.target)!, values.get(m.value)!);
    } finally {
      setGradEnabled(grad);
    }
    const outs = graph.outputs.map((id) => values.get(id)!);
    const keepSet = new Set(outs);
    for (const t of made) if (!keepSet.has(t)) t.dispose();
    return outs.map((t) => (inputs.includes(t) ? new Tensor(t.storage, t.shape, t.strides, t.offset, t.dtype) : t));
  } finally {
    runtime.tracer = saved;
  }
}
