// A GPT-style decoder (the model of ../../shared/tools/torch_fixtures.py, so PyTorch weights
// load by name): token + position embeddings, pre-LayerNorm blocks of causal self-attention
// and a GELU(tanh) MLP x4, a final LayerNorm and a bias-free linear head.
//
// Parameter names follow the PyTorch reference's state_dict exactly:
//   wte.weight, wpe.weight,
//   h.{i}.ln_1.{weight,bias}, h.{i}.attn_qkv.{weight,bias}, h.{i}.attn_proj.{weight,bias},
//   h.{i}.ln_2.{weight,bias}, h.{i}.mlp_fc.{weight,bias}, h.{i}.mlp_proj.{weight,bias},
//   ln_f.{weight,bias}, lm_head.weight
// so `gpt.loadStateDict(weights)` takes the fixture's param.* tensors with the prefix stripped.
//
// The W7 benchmark configuration (../bench/workloads/w7.ts) is the same decoder without the
// embeddings and the head: x[B,T,768] in, ln_f(blocks(x)) out. createW7Model / runW7 build
// and run it.
//
//   npx tsx examples/gpt.ts [--compile]     (W7 inference, eager or compiled, timed)

import { pathToFileURL } from 'node:url';
import * as kiln from 'kilnjs';

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

// ---- W7 ------------------------------------------------------------------------------------

/** W7 (../../shared/WORKLOADS.md): d 768, 12 heads, 2 layers (CPU shapes), batch 1, sequence 128. */
export const W7 = { dim: 768, heads: 12, layers: 2, batch: 1, seq: 128 } as const;

/**
 * The W7 decoder: GPT without token/position embeddings and head (state-dict keys h.* and
 * ln_f.*), in eval mode with frozen parameters. Seeded with kiln.manualSeed(seed) when given.
 */
export function createW7Model(opts: { layers?: number; seed?: number } = {}): GPT {
  if (opts.seed !== undefined) kiln.manualSeed(opts.seed);
  const model = new GPT({ vocabSize: 0, blockSize: 0, nEmbd: W7.dim, nHead: W7.heads, nLayer: opts.layers ?? W7.layers, embeddings: false });
  model.requiresGrad_(false);
  model.eval();
  return model;
}

/**
 * One W7 inference call: ln_f(blocks(x)) for x [B,T,768], under noGrad and a scope (the
 * result is returned; free it when done). `run` may be a compiled version of the model.
 */
export function runW7(model: GPT | ((x: kiln.Tensor) => kiln.Tensor), x: kiln.Tensor): kiln.Tensor {
  const f = typeof model === 'function' ? model : (t: kiln.Tensor) => model.hidden(t);
  return kiln.noGrad(() => kiln.scope(() => f(x)));
}

function main(): void {
  const compile = process.argv.includes('--compile');
  const model = createW7Model({ seed: 0 });
  const x = kiln.keep(kiln.randn([W7.batch, W7.seq, W7.dim]));
  const fn = compile ? kiln.compile((t: kiln.Tensor) => model.hidden(t), { name: 'w7' }) : (t: kiln.Tensor) => model.hidden(t);
  console.log(`W7: ${W7.layers} layers, d ${W7.dim}, ${W7.heads} heads, x[${x.shape.join(',')}], ${(model.numParameters() / 1e6).toFixed(1)}M parameters${compile ? ', compiled' : ''}`);
  const times: number[] = [];
  for (let i = 0; i < 6; i++) {
    const t0 = performance.now();
    const y = runW7(fn, x);
    times.push(performance.now() - t0);
    if (i === 0) console.log(kiln.scope(() => `output [${y.shape.join(',')}], mean ${y.mean().item().toFixed(6)}, std ${y.std().item().toFixed(4)}`));
    y.dispose();
  }
  const steady = times.slice(1).sort((a, b) => a - b);
  console.log(`first call ${times[0]!.toFixed(0)} ms, median of the next ${steady.length}: ${steady[steady.length >> 1]!.toFixed(0)} ms`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
