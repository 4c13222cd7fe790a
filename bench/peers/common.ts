// What every peer implementation (bench/peers/<peer>.ts) receives and returns.
//
// Peers never see kiln tensors: cpu.ts copies a workload instance's parameters (by their
// module names, e.g. 'fc1.weight', in kiln's [out, in] layout) and inputs into plain
// typed arrays, so every library computes the same function of the same numbers, and the
// first call's output (inference) or first step's loss (training, from the same initial
// weights) is checked against kiln eager before anything is timed.

export interface HostTensor {
  shape: number[];
  data: Float32Array | Int32Array;
}

export interface PeerCase {
  /** workload id: W1..W7 (W5 = the 1024³ matmul) */
  id: string;
  kind: 'inference' | 'training';
  /** parameters by kiln module name */
  params: Map<string, HostTensor>;
  /** the workload's explicit inputs, in fn's argument order */
  inputs: HostTensor[];
}

export interface PeerRun {
  /** one call as timed: returns when the result is computed (awaits async peers) */
  call(): unknown;
  /**
   * One call whose result is read back: inference outputs, or [loss] of a training step.
   * cpu.ts calls it once, first (so a training step starts from the initial weights).
   */
  check(): Promise<Float32Array>;
  /** frees what setup made */
  dispose(): void;
  /** how this workload ran, when it differs from the peer's description (e.g. fused ops) */
  note?: string;
}

/** Either a runnable workload or the reason this peer does not run it. */
export type PeerSetup = PeerRun | { unavailable: string };

export interface Peer {
  /** column name, e.g. 'ort' */
  name: string;
  /** library, version, threads, SIMD: filled by init() */
  describe(): Record<string, unknown>;
  /** loads the library; throws (with the reason) if it cannot run here */
  init(): Promise<void>;
  setup(c: PeerCase): Promise<PeerSetup>;
}

export const param = (c: PeerCase, name: string): HostTensor => {
  const p = c.params.get(name);
  if (!p) throw new Error(`${c.id}: no parameter '${name}' (have ${[...c.params.keys()].join(', ')})`);
  return p;
};

/** [out, in] row-major -> [in, out] row-major (libraries without a transposed-B matmul option). */
export function transpose2d(t: HostTensor): HostTensor {
  const [r, c] = t.shape as [number, number];
  const out = new Float32Array(r * c);
  const src = t.data;
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = src[i * c + j]!;
  return { shape: [c, r], data: out };
}

/** Names and counts of the W7 decoder (bench/workloads/w7.ts), shared by peers. */
export const W7_SHAPE = { batch: 1, seq: 128, dim: 768, heads: 12, layers: 2, eps: 1e-5 } as const;
/** nn.LayerNorm's default epsilon (kiln and torch) */
export const LN_EPS = 1e-5;
/** sqrt(2/pi), GELU's tanh approximation */
export const GELU_C = Math.sqrt(2 / Math.PI);

/** The additive causal mask [T,T]: 0 on and below the diagonal, -inf above. */
export function causalMask(t: number): Float32Array {
  const m = new Float32Array(t * t);
  for (let i = 0; i < t; i++) for (let j = i + 1; j < t; j++) m[i * t + j] = -Infinity;
  return m;
}
