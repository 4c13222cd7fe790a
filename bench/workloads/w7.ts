// W7: GPT-style decoder inference (CPU shapes): x[1,128,768] (token embeddings already
// looked up), 2 pre-LayerNorm blocks, final LayerNorm. Each block:
//   x = x + proj(attention(LN1(x)))    causal self-attention, 12 heads of 64: one qkv Linear
//                                      768->2304, split, heads [B,12,T,64],
//                                      kiln.scaledDotProductAttention(isCausal), merge, proj 768->768
//   x = x + fc2(GELU_tanh(fc1(LN2(x))))   768->3072->768
// size 'gpu' (WORKLOADS.md's GPU column): 12 layers, x[8,256,768].

import * as kiln from 'kilnjs';
import { matmulFlops } from '../lib/flops.js';
import { DEFAULT_SEED, freeze, makeInstance, type Instance, type SetupOptions, type Workload, type WorkloadSize } from './types.js';

export const W7_BATCH = 1;
export const W7_SEQ = 128;
export const W7_DIM = 768;
export const W7_HEADS = 12;
export const W7_LAYERS = 2;
export const W7_BATCH_GPU = 8;
export const W7_SEQ_GPU = 256;
export const W7_LAYERS_GPU = 12;

/** Layers, batch and sequence length of W7 at a size of WORKLOADS.md (width and heads are fixed). */
export interface W7Config {
  readonly layers: number;
  readonly batch: number;
  readonly seq: number;
}

export function w7Config(size: WorkloadSize = 'cpu'): W7Config {
  return size === 'gpu' ? { layers: W7_LAYERS_GPU, batch: W7_BATCH_GPU, seq: W7_SEQ_GPU } : { layers: W7_LAYERS, batch: W7_BATCH, seq: W7_SEQ };
}

/** The shapes string of a W7 instance (the input; the layer count is part of it where it is not 2). */
export function w7Shapes({ layers, batch, seq }: W7Config): string {
  return `x[${batch},${seq},${W7_DIM}]${layers === W7_LAYERS ? '' : `, ${layers} layers`}`;
}

export class CausalSelfAttention extends kiln.nn.Module {
  readonly qkv: kiln.nn.Linear;
  readonly proj: kiln.nn.Linear;

  constructor(readonly dim = W7_DIM, readonly heads = W7_HEADS) {
    super();
    this.qkv = new kiln.nn.Linear(dim, 3 * dim);
    this.proj = new kiln.nn.Linear(dim, dim);
  }

  forward(x: kiln.Tensor): kiln.Tensor {
    const [b, t, c] = x.shape as [number, number, number];
    const hd = c / this.heads;
    const [q, k, v] = this.qkv.call(x).split(c, -1).map((u) => u.reshape([b, t, this.heads, hd]).permute([0, 2, 1, 3])) as [kiln.Tensor, kiln.Tensor, kiln.Tensor];
    const y = kiln.scaledDotProductAttention(q, k, v, { isCausal: true }); // [B,H,T,hd]
    return this.proj.call(y.permute([0, 2, 1, 3]).reshape([b, t, c]));
  }
}

export class DecoderBlock extends kiln.nn.Module {
  readonly ln1: kiln.nn.LayerNorm;
  readonly attn: CausalSelfAttention;
  readonly ln2: kiln.nn.LayerNorm;
  readonly fc1: kiln.nn.Linear;
  readonly act: kiln.nn.GELU;
  readonly fc2: kiln.nn.Linear;

  constructor(dim = W7_DIM, heads = W7_HEADS) {
    super();
    this.ln1 = new kiln.nn.LayerNorm(dim);
    this.attn = new CausalSelfAttention(dim, heads);
    this.ln2 = new kiln.nn.LayerNorm(dim);
    this.fc1 = new kiln.nn.Linear(dim, 4 * dim);
    this.act = new kiln.nn.GELU({ approximate: 'tanh' });
    this.fc2 = new kiln.nn.Linear(4 * dim, dim);
  }

  forward(x: kiln.Tensor): kiln.Tensor {
    const h = x.add(this.attn.call(this.ln1.call(x)));
    return h.add(this.fc2.call(this.act.call(this.fc1.call(this.ln2.call(h)))));
  }
}

export class Decoder extends kiln.nn.Module {
  readonly blocks: kiln.nn.ModuleList<DecoderBlock>;
  readonly lnF: kiln.nn.LayerNorm;

  constructor(layers = W7_LAYERS, dim = W7_DIM, heads = W7_HEADS) {
    super();
    this.blocks = new kiln.nn.ModuleList(Array.from({ length: layers }, () => new DecoderBlock(dim, heads)));
    this.lnF = new kiln.nn.LayerNorm(dim);
  }

  forward(x: kiln.Tensor): kiln.Tensor {
    let h = x;
    for (const blk of this.blocks) h = blk.call(h);
    return this.lnF.call(h);
  }
}

/** Matmul-class FLOPs of one forward pass. */
export function decoderFlops(batch: number, seq: number, dim: number, heads: number, layers: number): number {
  const tokens = batch * seq;
  const hd = dim / heads;
  const perLayer =
    matmulFlops(tokens, 3 * dim, dim) + // qkv
    2 * batch * heads * matmulFlops(seq, seq, hd) + // q·kᵀ and p·v (full, causal masking does not skip work here)
    matmulFlops(tokens, dim, dim) + // out proj
    matmulFlops(tokens, 4 * dim, dim) + matmulFlops(tokens, dim, 4 * dim); // MLP
  return layers * perLayer;
}

export const w7: Workload = {
  id: 'W7',
  title: 'GPT decoder inference, 2 layers, x[1,128,768], 12 heads',
  kind: 'inference',
  setup(opts: SetupOptions = {}): Instance {
    kiln.manualSeed(opts.seed ?? DEFAULT_SEED);
    const cfg = w7Config(opts.size);
    const model = freeze(new Decoder(cfg.layers));
    const x = kiln.randn([cfg.batch, cfg.seq, W7_DIM]);
    return makeInstance({
      inputs: [x],
      fn: (x: kiln.Tensor) => model.call(x),
      shapes: w7Shapes(cfg),
      flops: decoderFlops(cfg.batch, cfg.seq, W7_DIM, W7_HEADS, cfg.layers),
      params: model.parameters(),
    });
  },
};

export default w7;
