// A GPT-style decoder (the model of shared/tools/torch_fixtures.py, so PyTorch weights load
// by name): token + position embeddings, pre-LayerNorm blocks of causal self-attention and a
// GELU(tanh) MLP x4, a final LayerNorm and a bias-free linear head. The model of the char-gpt
// workload (../char-gpt.ts); examples/gpt.ts builds the W7 benchmark configuration from it.
//
// Parameter names follow the PyTorch reference's state_dict exactly:
//   wte.weight, wpe.weight,
//   h.{i}.ln_1.{weight,bias}, h.{i}.attn_qkv.{weight,bias}, h.{i}.attn_proj.{weight,bias},
//   h.{i}.ln_2.{weight,bias}, h.{i}.mlp_fc.{weight,bias}, h.{i}.mlp_proj.{weight,bias},
//   ln_f.{weight,bias}, lm_head.weight
// so `gpt.loadStateDict(weights)` takes the fixture's param.* tensors with the prefix stripped.

import * as kiln from '../../../api/kiln.js';

const { nn } = kiln;

export interface GptConfig {
  /** tokens in the vocabulary (wte rows, lm_head outputs) */
  vocabSize: number;
  /** longest sequence (wpe rows) */
  blockSize: number;
  /** model width d */
  nEmbd: number;
  nHead: number;
  nLayer: number;
  /**
   * false: no wte, wpe or lm_head; forward takes embedded x [B,T,d] and returns
   * ln_f(blocks(x)) (the W7 workload). Default true.
   */
  embeddings?: boolean;
}

/** Causal self-attention + MLP, both pre-LayerNorm with residual adds (torch_fixtures.py's Block). */
export class Block extends nn.Module {
  readonly nHead: number;
  ln_1: kiln.nn.LayerNorm;
  attn_qkv: kiln.nn.Linear;
  attn_proj: kiln.nn.Linear;
  ln_2: kiln.nn.LayerNorm;
  mlp_fc: kiln.nn.Linear;
  mlp_proj: kiln.nn.Linear;

  constructor(d: number, nHead: number) {
    super();
    if (d % nHead !== 0) throw new Error(`width ${d} is not divisible by ${nHead} heads`);
    this.nHead = nHead;
    // registered in torch's order, so stateDict() lists keys as torch does
    this.ln_1 = this.registerModule('ln_1', new nn.LayerNorm(d));
    this.attn_qkv = this.registerModule('attn_qkv', new nn.Linear(d, 3 * d));
    this.attn_proj = this.registerModule('attn_proj', new nn.Linear(d, d));
    this.ln_2 = this.registerModule('ln_2', new nn.LayerNorm(d));
    this.mlp_fc = this.registerModule('mlp_fc', new nn.Linear(d, 4 * d));
    this.mlp_proj = this.registerModule('mlp_proj', new nn.Linear(4 * d, d));
  }

  /** x [B,T,C] -> [B,T,C] */
  forward(x: kiln.Tensor): kiln.Tensor {
    const [b, t, c] = x.shape as [number, number, number];
    const h = this.nHead, hd = c / h;
    // q, k, v: [B,T,C] each -> [B,H,T,hd]
    const [q, k, v] = this.attn_qkv.call(this.ln_1.call(x)).split(c, 2)
      .map((u) => u.reshape([b, t, h, hd]).transpose(1, 2)) as [kiln.Tensor, kiln.Tensor, kiln.Tensor];
    const y = kiln.scaledDotProductAttention(q, k, v, { isCausal: true }); // [B,H,T,hd]
    const a = x.add(this.attn_proj.call(y.transpose(1, 2).reshape([b, t, c])));
    return a.add(this.mlp_proj.call(this.mlp_fc.call(this.ln_2.call(a)).gelu('tanh')));
  }
}

export class GPT extends nn.Module {
  readonly config: Required<GptConfig>;
  wte: kiln.nn.Embedding | null;
  wpe: kiln.nn.Embedding | null;
  h: kiln.nn.ModuleList<Block>;
  ln_f: kiln.nn.LayerNorm;
  lm_head: kiln.nn.Linear | null;

  constructor(config: GptConfig) {
    super();
    this.config = { embeddings: true, ...config };
    const { vocabSize, blockSize, nEmbd: d, nHead, nLayer, embeddings } = this.config;
    this.wte = this.registerModule('wte', embeddings ? new nn.Embedding(vocabSize, d) : null);
    this.wpe = this.registerModule('wpe', embeddings ? new nn.Embedding(blockSize, d) : null);
    this.h = this.registerModule('h', new nn.ModuleList(Array.from({ length: nLayer }, () => new Block(d, nHead))));
    this.ln_f = this.registerModule('ln_f', new nn.LayerNorm(d));
    this.lm_head = this.registerModule('lm_head', embeddings ? new nn.Linear(d, vocabSize, { bias: false }) : null);
  }

  /**
   * With embeddings: int32 token ids [B,T] -> logits [B,T,vocab].
   * Without (W7): embedded x [B,T,d] -> ln_f(blocks(x)) [B,T,d].
   */
  forward(input: kiln.Tensor): kiln.Tensor {
    if (!this.wte || !this.wpe || !this.lm_head) return this.hidden(input);
    const t = input.shape[1]!;
    if (t > this.config.blockSize) throw new Error(`sequence of ${t} tokens is longer than blockSize ${this.config.blockSize}`);
    const x = this.wte.call(input).add(this.wpe.call(kiln.arange(t, undefined, 1, { dtype: 'int32' })));
    return this.lm_head.call(this.hidden(x));
  }

  /** The decoder stack on embedded input: ln_f(h[n-1](...h[0](x))). */
  hidden(x: kiln.Tensor): kiln.Tensor {
    let y = x;
    for (const block of this.h) y = block.call(y);
    return this.ln_f.call(y);
  }

  /** Parameter count (each shared tensor once). */
  numParameters(): number {
    return this.parameters().reduce((n, p) => n + p.size, 0);
  }
}

/**
 * GPT-2's initialization (normal(0, 0.02) weights and embeddings, zero biases, residual
 * projections scaled by 1/sqrt(2 nLayer)): trains faster from scratch than torch's module
 * defaults (which the constructor uses, matching torch_fixtures.py's freshly built model).
 */
export function initGpt2_(model: GPT): GPT {
  const std = 0.02, projStd = 0.02 / Math.sqrt(2 * model.config.nLayer);
  kiln.noGrad(() => {
    for (const [name, p] of model.namedParameters()) {
      if (/\.ln_\d\.|^ln_f\./.test(name)) continue; // LayerNorms keep ones / zeros
      if (name.endsWith('.bias')) nn.init.zeros_(p);
      else nn.init.normal_(p, 0, /(attn_proj|mlp_proj)\.weight$/.test(name) ? projStd : std);
    }
  });
  return model;
}
