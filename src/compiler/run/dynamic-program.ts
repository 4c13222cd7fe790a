// A program whose sizes are runtime values (issue 7). The loop kernels are symbolic: each is
// rendered once and reads the sizes (s0, s1, ...) from an extra float64 buffer at entry, by a
// backend that says `symbolicKernels` (JS, wasm, native C), through its prepare/launch; buffer
// sizes and output shapes are evaluated per distinct size (cached). Kernel backends without
// symbolic support get the program specialized per concrete size instead (specializeKernel),
// cached by size and logged.

import type { Backend, BackendBuffer, PreparedKernel } from '../../backend/backend.js';
import type { DType } from '../../core/dtype.js';
import { CallBuffers } from './call-buffers.js';
import { Tensor } from '../../tensor/tensor.js';
import { kernelStores, printKernel, specializeKernel, type LoopKernel } from '../../ir/loop-ir.js';
import type { BufferView } from '../../ir/lowered.js';
import type { Lowered, Step } from '../schedule/lowered.js';
import { FusedProgram, planMemory, runOpaque, usedBuffers, type MemoryPlan } from './fused-program.js';
import { specializeTree, type Iota } from '../../ir/sym-tree.js';
import { symEval, type Sym } from '../../ir/symbolic.js';
import { log } from '../../core/logs.js';
import { OutputPool } from './output-pool.js';
import { profiling } from '../../core/profiling.js';

/** Where symbol i is read at call time: dim `dim` of the program's input `input`. */
export interface SymbolSource {
  readonly name: string;
  readonly input: number;
  readonly dim: number;
  /** e.g. 'arg x dim 0' */
  readonly label: string;
}

interface SizeState {
  readonly values: number[];
  readonly bufSizes: number[];
  readonly outputs: BufferView[];
  readonly opaque: Map<number, Extract<Step, { kind: 'opaque' }>>;
}

export class DynamicProgram {
  private readonly plan: MemoryPlan;
  /** buffers some step touches (the others get no memory) */
  private readonly used: Set<number>;
  private readonly slotBufs: (BackendBuffer | null)[];
  private readonly consts = new Map<number, BackendBuffer>();
  private readonly iotas = new Map<number, { buf: BackendBuffer | null; cap: number; iota: Iota }>();
  private readonly sizesBuf: BackendBuffer;
  private readonly states = new Map<string, SizeState>();
  private readonly specialized = new Map<string, FusedProgram>();
  private readonly profileViews = new WeakMap<SizeState, { readonly kernelBackend: Backend; readonly lowered: Lowered }>();
  private readonly writtenInputs: number[];
  /** scratch buffers held in a slot: the slot's size at a call is the largest of theirs */
  private readonly slotted: { readonly id: number; readonly slot: number }[];
  /** scratch buffers a call gives memory (used by a step, or an output), in buffer order */
  private readonly scratch: { readonly id: number; readonly slot: number; readonly output: boolean; readonly dtype: DType }[];
  /** a backend with symbolic kernels: each step's prepared kernel (null: opaque); null: specialized per size */
  private readonly prepared: (PreparedKernel | null)[] | null = null;
  /** the kernel backend, else the default backend's own kernels */
  private readonly kernelBackend: Backend;
  /** where scratch, constants, outputs and the sizes live (the kernel backend's heap for wasm) */
  private readonly mem: Backend;
  /** this call's sizes, written to the sizes buffer */
  private readonly sizesHost: Float64Array;
  /** outputs: fresh, or recycled where `mem` wants it and under reduce-overhead (output-pool.ts) */
  private readonly outputs: OutputPool;
  /** per-size programs built for a kernel backend without symbolic sizes */
  specializations = 0;

  constructor(
    readonly lowered: Lowered,
    readonly backend: Backend,
    readonly symbols: readonly SymbolSource[],
    readonly opts: { kernelBackend?: Backend; name: string; reuseOutputs?: boolean },
  ) {
    const nb = lowered.buffers.length;
    const kb = (this.kernelBackend = opts.kernelBackend ?? backend);
    const symbolic = kb.symbolicKernels === true;
    // a symbolic kernel backend allocates (as FusedProgram does): its kernels read in place
    this.mem = symbolic ? kb : backend;
    this.outputs = new OutputPool(this.mem, backend, opts.reuseOutputs === true);
    this.sizesBuf = this.mem.alloc('float64', Math.max(1, symbols.length), 'shared');
    this.sizesHost = new Float64Array(Math.max(1, symbols.length));
    this.plan = planMemory(lowered);
    this.used = usedBuffers(lowered);
    this.slotBufs = this.plan.slots.map(() => null);
    const written = new Set(lowered.steps.flatMap((s) => (s.kind === 'kernel' ? kernelStores(s.kernel).map((x) => x.buf) : [s.out.buf])));
    this.writtenInputs = lowered.inputBuffers.flatMap((b, i) => (written.has(b) ? [i] : []));
    const outputBufs = new Set(lowered.outputs.map((o) => o.buf));
    this.slotted = [];
    this.scratch = [];
    lowered.buffers.forEach((b, id) => {
      if (b.kind !== 'scratch') return;
      const slot = this.plan.slotOf[id]!;
      if (slot >= 0) this.slotted.push({ id, slot });
      const output = outputBufs.has(id);
      if (this.used.has(id) || output) this.scratch.push({ id, slot, output, dtype: b.dtype });
    });
    if (!symbolic) return; // specialized per size on first use
    for (const b of lowered.buffers) {
      if (b.kind !== 'constant') continue;
      const iota = (b as { dataIota?: Iota }).dataIota;
      if (iota) this.iotas.set(b.id, { buf: null, cap: 0, iota });
      else {
        const buf = this.mem.alloc(b.dtype, b.size);
        this.mem.write(buf, b.data!);
        this.consts.set(b.id, buf);
      }
    }
    const sizes = { buf: nb, count: symbols.length };
    for (const s of lowered.steps) {
      if (s.kind !== 'kernel') continue;
      const k = s.kernel;
      k.sizes = sizes;
      if (k.kind === 'group') for (const p of k.parts) p.sizes = sizes;
    }
    // rendered once by the kernel backend, which reads the sizes at launch
    this.prepared = lowered.steps.map((s) => (s.kind === 'kernel' ? kb.prepare({ kind: 'loop', kernel: s.kernel, nBuffers: nb + 1 }) : null));
    kb.flush?.();
  }

  get kernels(): LoopKernel[] {
    return this.lowered.steps.flatMap((s) => (s.kind === 'kernel' ? [s.kernel] : []));
  }

  /** Concrete sizes of the call, read from the inputs. */
  sizesOf(inputs: readonly Tensor[]): number[] {
    return this.symbols.map((s) => inputs[s.input]!.shape[s.dim]!);
  }

  run(inputs: readonly Tensor[]): Tensor[] {
    const values = this.sizesOf(inputs);
    if (!this.prepared) return this.runSpecialized(values, inputs);
    const st = this.state(values);
    const l = this.lowered;
    // one slot past the lowered buffers: the sizes buffer of the symbolic kernels
    const call = new CallBuffers(l.buffers.length + 1, l.inputBuffers, inputs);
    const bufs = call.bufs;
    for (const [id, buf] of this.consts) bufs[id] = buf;
    for (const [id, c] of this.iotas) bufs[id] = this.iotaBuffer(id, c, st.bufSizes[id]!);
    // scratch slots grow to the largest size they hold at these sizes
    const need = this.plan.slots.map(() => 0);
    for (const { id, slot } of this.slotted) need[slot] = Math.max(need[slot]!, st.bufSizes[id]!);
    need.forEach((n, k) => {
      const cur = this.slotBufs[k];
      if (!cur || cur.size < n) {
        if (cur) this.mem.free(cur);
        this.slotBufs[k] = this.mem.alloc(this.plan.slots[k]!.dtype, Math.max(n, 1), 'shared');
      }
    });
    for (const { id, slot, output, dtype } of this.scratch) {
      if (slot >= 0 && !output) bufs[id] = this.slotBufs[slot]!;
      else if (!output) bufs[id] = this.mem.alloc(dtype, Math.max(1, st.bufSizes[id]!), 'shared');
      else {
        call.hold(id, this.outputs.output(id, dtype, Math.max(1, st.bufSizes[id]!)));
      }
    }
    values.forEach((v, i) => (this.sizesHost[i] = v));
    this.mem.write(this.sizesBuf, this.sizesHost);
    bufs[l.buffers.length] = this.sizesBuf;
    const kb = this.kernelBackend, prepared = this.prepared, args = { kind: 'loop' as const, buffers: bufs };
    const runStep = (s: Step, si: number): void => {
      if (s.kind !== 'kernel') runOpaque(st.opaque.get(si)!, bufs, this.backend);
      else kb.launch(prepared[si]!, args);
    };
    const sink = profiling.sink;
    if (!sink) l.steps.forEach(runStep);
    else {
      // kiln.profile: each step timed, and reported as the kernel at this call's sizes
      const t0 = performance.now();
      const view = this.profileView(st);
      l.steps.forEach((s, si) => {
        const s0 = sink.begin();
        try {
          runStep(s, si);
        } finally {
          sink.endStep(view, si, s0);
        }
      });
      sink.span('program', `dynamic program (${view.kernelBackend.name}, sizes ${values.join(', ')})`, t0, performance.now());
    }
    for (const i of this.writtenInputs) inputs[i]!.storage.version++;
    return call.tensors(st.outputs, this.backend);
  }

  /** The program as the profiler reports it at one set of sizes: its kernels specialized (made once per size, when profiled). */
  private profileView(st: SizeState): { readonly kernelBackend: Backend; readonly lowered: Lowered } {
    let v = this.profileViews.get(st);
    if (!v) {
      const l = this.lowered;
      const steps = l.steps.map((s, si): Step => (s.kind === 'kernel' ? { kind: 'kernel', kernel: specializeKernel(s.kernel, st.values) } : st.opaque.get(si) ?? s));
      v = { kernelBackend: this.kernelBackend, lowered: { ...l, steps } };
      this.profileViews.set(st, v);
    }
    return v;
  }

  private iotaBuffer(id: number, c: { buf: BackendBuffer | null; cap: number; iota: Iota }, n: number): BackendBuffer {
    if (!c.buf || c.cap < n) {
      if (c.buf) this.mem.free(c.buf);
      const cap = Math.max(n, c.cap * 2, 1);
      const dtype = this.lowered.buffers[id]!.dtype;
      c.buf = this.mem.alloc(dtype, cap, 'shared');
      const data = new (dtype === 'int32' ? Int32Array : dtype === 'float64' ? Float64Array : Float32Array)(cap);
      for (let i = 0; i < cap; i++) data[i] = c.iota.start + i * c.iota.step;
      this.mem.write(c.buf, data);
      c.cap = cap;
    }
    return c.buf;
  }

  /** Sizes, output views and opaque steps at concrete sizes (once per distinct size). */
  private state(values: number[]): SizeState {
    const key = values.join(',');
    let st = this.states.get(key);
    if (st) return st;
    const l = this.lowered;
    const bufSizes = l.buffers.map((b) => ((b as { sizeSym?: Sym }).sizeSym ? symEval((b as { sizeSym?: Sym }).sizeSym!, values) : b.size));
    const opaque = new Map<number, Extract<Step, { kind: 'opaque' }>>();
    // (the kernel backend evaluates the kernels' extents at launch)
    l.steps.forEach((s, i) => {
      if (s.kind === 'opaque') opaque.set(i, specializeTree(s, values));
    });
    st = { values, bufSizes, outputs: specializeTree(l.outputs, values), opaque };
    if (this.states.size >= 256) this.states.delete(this.states.keys().next().value!);
    this.states.set(key, st);
    return st;
  }

  /** A kernel backend without symbolic kernels: one static program per concrete size. */
  private runSpecialized(values: number[], inputs: readonly Tensor[]): Tensor[] {
    const key = values.join(',');
    let p = this.specialized.get(key);
    if (!p) {
      const spec = specializeTree(this.lowered, values);
      for (const s of spec.steps) if (s.kind === 'kernel') (s as { kernel: LoopKernel }).kernel = specializeKernel(s.kernel, values);
      log('recompiles', `${this.opts.name}: specializing the dynamic program for ${this.symbols.map((s, i) => `${s.name}=${values[i]}`).join(', ')} on the ${this.kernelBackend.name} backend (its renderer has no symbolic sizes yet; cached per size)`);
      log('perf', `${this.opts.name}: ${this.kernelBackend.name} kernels compiled for sizes ${key}`);
      p = new FusedProgram(spec, this.backend, { kernelBackend: this.opts.kernelBackend, reuseOutputs: this.opts.reuseOutputs });
      if (this.specialized.size >= 32) this.specialized.delete(this.specialized.keys().next().value!);
      this.specialized.set(key, p);
      this.specializations++;
    }
    return p.run(inputs);
  }

  print(): string {
    const names = this.symbols.map((s) => `${s.name} = ${s.label}`).join(', ');
    const kb = this.kernelBackend;
    // (the JS renderer goes unsaid)
    const how = kb.name === 'js' ? '' : this.prepared ? `; symbolic kernels on ${kb.name}` : `; specialized per size for ${kb.name}`;
    const lines = [`dynamic fused program (${names}): ${this.kernels.length} kernels, ${this.lowered.steps.length - this.kernels.length} opaque steps${how}`];
    for (const s of this.lowered.steps) {
      if (s.kind === 'kernel') lines.push(printKernel(s.kernel));
      else lines.push(`opaque ${s.node.op} (%${s.node.id}): (${s.inputs.map((v) => `buf${v.buf}`).join(', ')}) -> buf${s.out.buf}`);
    }
    return lines.join('\n');
  }

  source(): string {
    const nb = this.lowered.buffers.length + 1;
    // specialized per size: the code is made per size, the loop IR is what the sizes share
    if (!this.prepared) return this.kernels.map((k) => printKernel(k)).join('\n\n');
    const kb = this.kernelBackend;
    return this.kernels.map((k) => kb.describe?.({ kind: 'loop', kernel: k, nBuffers: nb }) ?? printKernel(k)).join('\n\n');
  }
}


