// ONNX graphs of the inference workloads (W1, W3, W4, W5 = 1024³ matmul, W7), built from a
// workload instance's own weights (bench/peers/common.ts PeerCase), so onnxruntime computes
// the same function of the same numbers as kiln. Training workloads (W2, W6) have no graph:
// onnxruntime-node runs inference only.
//
// Opset 20 (IR 9): LayerNormalization (17) and Gelu with approximate='tanh' (20) are single
// ops, which is what an exporter would emit and what ORT has fused kernels for. Linear
// layers are Gemm(transB=1) on kiln's [out, in] weights where the input is 2-D, and
// MatMul on a pre-transposed [in, out] weight + Add where it is 3-D (W7).

import { param, transpose2d, causalMask, LN_EPS, W7_SHAPE, type HostTensor, type PeerCase } from '../peers/common.js';
import { attrFloat, encodeModel, type InitializerSpec, type ModelSpec, type NodeSpec } from './proto.js';

export const OPSET = 20;

/** A graph under construction: unique value names, initializers from host tensors. */
class G {
  nodes: NodeSpec[] = [];
  inits: InitializerSpec[] = [];
  private n = 0;

  init(name: string, t: HostTensor | { shape: number[]; data: Float32Array | BigInt64Array }): string {
    this.inits.push({ name, dims: t.shape, data: t.data });
    return name;
  }
  scalar(v: number): string {
    return this.init(`c${this.n++}`, { shape: [], data: Float32Array.of(v) });
  }
  ints(v: number[]): string {
    return this.init(`i${this.n++}`, { shape: [v.length], data: BigInt64Array.from(v.map(BigInt)) });
  }
  op(op: string, inputs: string[], attrs?: NodeSpec['attrs']): string {
    const out = `${op.toLowerCase()}${this.n++}`;
    this.nodes.push({ op, inputs, outputs: [out], attrs });
    return out;
  }
  /** Gemm with transB on an [out, in] weight: x[N, in] -> [N, out] */
  linear2d(x: string, c: PeerCase, prefix: string): string {
    return this.op('Gemm', [x, this.init(`${prefix}.weight`, param(c, `${prefix}.weight`)), this.init(`${prefix}.bias`, param(c, `${prefix}.bias`))], { transB: 1 });
  }
  /** MatMul with [in, out] + Add: works on any leading dims */
  linearNd(x: string, c: PeerCase, prefix: string): string {
    const w = this.init(`${prefix}.weight_t`, transpose2d(param(c, `${prefix}.weight`)));
    return this.op('Add', [this.op('MatMul', [x, w]), this.init(`${prefix}.bias`, param(c, `${prefix}.bias`))]);
  }
  layerNorm(x: string, c: PeerCase, prefix: string): string {
    return this.op('LayerNormalization', [x, this.init(`${prefix}.weight`, param(c, `${prefix}.weight`)), this.init(`${prefix}.bias`, param(c, `${prefix}.bias`))], { axis: -1, epsilon: attrFloat(LN_EPS) });
  }
  gelu(x: string): string {
    return this.op('Gelu', [x], { approximate: 'tanh' });
  }
}

/** The last node's (single) output becomes the graph output 'y'. */
function model(name: string, g: G, inputs: ModelSpec['inputs'], outDims: (number | string)[]): ModelSpec {
  g.nodes[g.nodes.length - 1]!.outputs = ['y'];
  return { name, nodes: g.nodes, initializers: g.inits, inputs, outputs: [{ name: 'y', dims: outDims }], opset: OPSET };
}

function w1(c: PeerCase): ModelSpec {
  const g = new G();
  let h = g.linear2d('x', c, '0');
  h = g.linear2d(g.op('Relu', [h]), c, '2');
  g.linear2d(g.op('Relu', [h]), c, '4');
  return model('W1', g, [{ name: 'x', dims: ['N', 784] }], ['N', 10]);
}

function w3(c: PeerCase): ModelSpec {
  const g = new G();
  const h = g.linear2d(g.gelu(g.linear2d(g.layerNorm('x', c, 'norm'), c, 'fc1')), c, 'fc2');
  g.op('Add', ['x', h]);
  return model('W3', g, [{ name: 'x', dims: ['N', 768] }], ['N', 768]);
}

function w4(): ModelSpec {
  // tanh(x*1.5 + 0.3) * sigmoid(x) - 0.1*x, as bench/workloads/w4.ts writes it
  const g = new G();
  const t = g.op('Tanh', [g.op('Add', [g.op('Mul', ['x', g.scalar(1.5)]), g.scalar(0.3)])]);
  g.op('Sub', [g.op('Mul', [t, g.op('Sigmoid', ['x'])]), g.op('Mul', ['x', g.scalar(0.1)])]);
  return model('W4', g, [{ name: 'x', dims: ['N'] }], ['N']);
}

function w5(): ModelSpec {
  const g = new G();
  g.op('MatMul', ['a', 'b']);
  return model('W5', g, [{ name: 'a', dims: ['M', 'K'] }, { name: 'b', dims: ['K', 'N'] }], ['M', 'N']);
}

function w7(c: PeerCase): ModelSpec {
  const { batch: B, seq: T, dim: C, heads: H, layers } = W7_SHAPE;
  const hd = C / H;
  const g = new G();
  const mask = g.init('causal_mask', { shape: [T, T], data: causalMask(T) });
  const scale = g.scalar(1 / Math.sqrt(hd));
  const headsShape = g.ints([B, T, H, hd]);
  const mergedShape = g.ints([B, T, C]);
  const splitSizes = g.ints([C, C, C]);
  let x = 'x';
  for (let l = 0; l < layers; l++) {
    const p = `blocks.${l}`;
    const qkv = g.linearNd(g.layerNorm(x, c, `${p}.ln1`), c, `${p}.attn.qkv`); // [B,T,3C]
    const outs = ['q', 'k', 'v'].map((s) => `${p}.${s}`);
    g.nodes.push({ op: 'Split', inputs: [qkv, splitSizes], outputs: outs, attrs: { axis: -1 } });
    const [q, k, v] = outs.map((o) => g.op('Reshape', [o, headsShape])) as [string, string, string];
    const qh = g.op('Transpose', [q], { perm: [0, 2, 1, 3] }); // [B,H,T,hd]
    const kT = g.op('Transpose', [k], { perm: [0, 2, 3, 1] }); // [B,H,hd,T]
    const vh = g.op('Transpose', [v], { perm: [0, 2, 1, 3] });
    const scores = g.op('Add', [g.op('Mul', [g.op('MatMul', [qh, kT]), scale]), mask]);
    const att = g.op('MatMul', [g.op('Softmax', [scores], { axis: -1 }), vh]); // [B,H,T,hd]
    const merged = g.op('Reshape', [g.op('Transpose', [att], { perm: [0, 2, 1, 3] }), mergedShape]);
    const h = g.op('Add', [x, g.linearNd(merged, c, `${p}.attn.proj`)]);
    const mlp = g.linearNd(g.gelu(g.linearNd(g.layerNorm(h, c, `${p}.ln2`), c, `${p}.fc1`)), c, `${p}.fc2`);
    x = g.op('Add', [h, mlp]);
  }
  g.layerNorm(x, c, 'lnF');
  return model('W7', g, [{ name: 'x', dims: [B, T, C] }], [B, T, C]);
}

const BUILDERS: Record<string, (c: PeerCase) => ModelSpec> = { W1: w1, W3: w3, W4: w4, W5: w5, W7: w7 };

/** Workloads that have an ONNX graph here. */
export const ONNX_WORKLOADS = Object.keys(BUILDERS);

/** The ModelSpec of a workload, or null where onnxruntime cannot express it (training). */
export function onnxModelSpec(c: PeerCase): ModelSpec | null {
  const b = BUILDERS[c.id];
  return b ? b(c) : null;
}

/** Serialized ONNX model bytes of a workload, or null (see onnxModelSpec). */
export function buildOnnxModel(c: PeerCase): Uint8Array | null {
  const m = onnxModelSpec(c);
  return m ? encodeModel(m) : null;
}
