// The uniform interface of kiln's reference workloads (../../../shared/WORKLOADS.md).
//
// A workload module (w1.ts, w2.ts, ...) exports one `Workload`. `setup(opts)` builds the
// model and draws its data from kiln's generator (seeded, so two setups with the same seed
// have identical weights and inputs), and returns an `Instance`:
//
//   fn(...inputs)  one call as plain tensor code: what eager mode runs and what
//                  kiln.compile wraps. Parameters and optimizer state are captured from the
//                  closure; data (inputs, labels) comes in as explicit tensor arguments, so
//                  a compiled version guards on them like any caller's arguments.
//   inputs         the arguments of fn (kept: they survive any kiln.scope).
//   step()         fn(...inputs), eagerly.
//
// Eager:     kiln.scope(() => inst.step())
// Compiled:  const c = kiln.compile(inst.fn);  kiln.scope(() => c(...inst.inputs))
//
// Inference instances have parameters that do not require grad; run them under
// kiln.noGrad as well (runInference below). Training instances mutate their own parameters
// on every call (a full step: zeroGrad, forward, backward, optimizer step) and return the
// loss (a 0-d tensor): build one instance per variant, with the same seed, to compare
// eager and compiled from identical initial weights.

import * as kiln from 'kilnjs';

export type WorkloadId = 'W1' | 'W2' | 'W3' | 'W4' | 'W5' | 'W6' | 'W7';

/**
 * Which column of WORKLOADS.md to build: 'cpu' (the default: what bench/cpu.ts, the advisor
 * and the tests use) or 'gpu' (W4 at 64M elements, W6 with 100,000-row tables and batch 2048,
 * W7 with 12 layers, batch 8, sequence 256; W1, W2, W3 are the same in both).
 */
export type WorkloadSize = 'cpu' | 'gpu';

export interface SetupOptions {
  /** seed for kiln.manualSeed before building weights and data (default 20261130) */
  seed?: number;
  /** smaller shapes for quick runs (only workloads that are slow at full size shrink) */
  quick?: boolean;
  /** the CPU or the GPU shapes of WORKLOADS.md (default 'cpu') */
  size?: WorkloadSize;
}

export interface Instance {
  /** the explicit tensor arguments of fn (data and labels); kept */
  readonly inputs: readonly kiln.Tensor[];
  /** one call, written with kiln ops only (no reads of tensor values into JS) */
  readonly fn: (...inputs: kiln.Tensor[]) => kiln.Tensor;
  /** fn(...inputs), eagerly */
  step(): kiln.Tensor;
  /** training: the step written against the model's call, for `kiln.compile(model)` in a loop (the advisor's TrainLoop) */
  readonly trainLoop?: { readonly module: kiln.nn.AnyModule; step(forward: (...xs: kiln.Tensor[]) => kiln.Tensor, ...inputs: kiln.Tensor[]): kiln.Tensor };
  /** the shapes actually used, e.g. 'x[8192,768]' */
  readonly shapes: string;
  /** floating-point work of one call (matmul-class work, 2·m·n·k), or null where it is not the measure */
  readonly flops: number | null;
  /** minimum memory traffic of one call in bytes, where that is the measure (memory-bound workloads) */
  readonly bytes: number | null;
  /** the trainable or inference parameters (for checks) */
  readonly params: readonly kiln.Tensor[];
  /** frees the parameters, optimizer state and inputs */
  dispose(): void;
}

export interface Workload {
  readonly id: WorkloadId;
  readonly title: string;
  readonly kind: 'inference' | 'training';
  setup(opts?: SetupOptions): Instance;
}

export const DEFAULT_SEED = 20261130;

/** Runs an inference call as it should be run: under noGrad, inside a scope. */
export function runInference(f: () => kiln.Tensor): kiln.Tensor {
  return kiln.noGrad(() => kiln.scope(f));
}

/**
 * Builds an Instance from its parts: keeps the inputs, binds step(), and disposes inputs,
 * parameters and anything in `extra` (e.g. optimizer state tensors) on dispose().
 */
export function makeInstance(parts: {
  inputs: kiln.Tensor[];
  fn: (...inputs: kiln.Tensor[]) => kiln.Tensor;
  trainLoop?: Instance['trainLoop'];
  shapes: string;
  flops: number | null;
  bytes?: number | null;
  params: kiln.Tensor[];
  extra?: () => kiln.Tensor[];
}): Instance {
  for (const t of parts.inputs) kiln.keep(t);
  for (const p of parts.params) kiln.keep(p);
  let disposed = false;
  return {
    inputs: parts.inputs,
    fn: parts.fn,
    step: () => parts.fn(...parts.inputs),
    ...(parts.trainLoop ? { trainLoop: parts.trainLoop } : {}),
    shapes: parts.shapes,
    flops: parts.flops,
    bytes: parts.bytes ?? null,
    params: parts.params,
    dispose() {
      if (disposed) return;
      disposed = true;
      const all = new Set<kiln.Tensor>([...parts.inputs, ...parts.params, ...(parts.extra?.() ?? [])]);
      for (const p of parts.params) if (p.grad) all.add(p.grad);
      for (const t of all) if (!t.isDisposed) t.dispose();
    },
  };
}

/** Turns off requiresGrad on every parameter of a module and sets eval mode (inference workloads). */
export function freeze<M extends kiln.nn.AnyModule>(m: M): M {
  m.requiresGrad_(false);
  m.eval();
  return m;
}

/** The tensors an optimizer owns (per-parameter state, the groups' lr tensors), for dispose(). */
export function optimizerTensors(opt: { readonly paramGroups: readonly { readonly lrTensor: kiln.Tensor }[]; readonly state: ReadonlyMap<kiln.Tensor, Record<string, kiln.Tensor>> }): kiln.Tensor[] {
  const out: kiln.Tensor[] = opt.paramGroups.map((g) => g.lrTensor);
  for (const s of opt.state.values()) out.push(...Object.values(s));
  return out;
}
