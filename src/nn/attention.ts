// nn.MultiheadAttention with torch's parameters (in_proj_weight [3E, E], in_proj_bias,
// out_proj) and mask conventions (a bool attnMask or keyPaddingMask is true where
// attention is NOT allowed; a float mask is added to the scores). The attention itself
// is kiln.scaledDotProductAttention, so the compiler sees one well-known pattern.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { arange, zeros } from '../ops/creation.js';
import { dropout, linear, scaledDotProductAttention } from '../ops/functional.js';
import { matmul } from '../ops/linalg.js';
import * as m from '../ops/math.js';
import { chunk, narrow, permute, reshape, squeeze, transpose, unsqueeze } from '../ops/movement.js';
import { mean, softmax } from '../ops/reduce.js';
import { Module } from './module.js';
import { Linear } from './linear.js';
import { constant_, xavierUniform_ } from './init.js';
import { checkSize } from './linear.js';

export interface MultiheadAttentionOptions {
  dropout?: number;
  bias?: boolean;
  /** inputs are [B, L, E] (default false: [L, B, E], as torch) */
  batchFirst?: boolean;
  dtype?: 'float32' | 'float64';
}

export interface AttentionCallOptions {
  /** [B, S]: true (or -inf) marks keys to ignore, e.g. padding */
  keyPaddingMask?: Tensor | null;
  /** [L, S] or [B * numHeads, L, S]: true (or -inf) where attention is not allowed */
  attnMask?: Tensor | null;
  /** mask future positions (query i sees keys <= i) */
  isCausal?: boolean;
  /** forwardWithWeights only: average the weights over heads (default true) */
  averageAttnWeights?: boolean;
}

export class MultiheadAttention extends Module<[Tensor, (Tensor | null)?, (Tensor | null)?, AttentionCallOptions?]> {
  readonly embedDim: number;
  readonly numHeads: number;
  readonly headDim: number;
  readonly dropout: number;
  readonly batchFirst: boolean;
  in_proj_weight: Tensor;
  in_proj_bias: Tensor | null;
  out_proj: Linear;

  constructor(embedDim: number, numHeads: number, opts: MultiheadAttentionOptions = {}) {
    super();
    checkSize('MultiheadAttention', 'embedDim', embedDim, false);
    checkSize('MultiheadAttention', 'numHeads', numHeads, false);
    if (embedDim % numHeads !== 0) throw new ArgumentError(`embedDim ${embedDim} must be divisible by numHeads ${numHeads}`, 'MultiheadAttention');
    this.embedDim = embedDim;
    this.numHeads = numHeads;
    this.headDim = embedDim / numHeads;
    this.dropout = opts.dropout ?? 0;
    this.batchFirst = opts.batchFirst ?? false;
    const dtype = opts.dtype ?? 'float32';
    const bias = opts.bias ?? true;
    this.in_proj_weight = this.registerParameter('in_proj_weight', zeros([3 * embedDim, embedDim], { dtype }));
    this.in_proj_bias = this.registerParameter('in_proj_bias', bias ? zeros([3 * embedDim], { dtype }) : null);
    this.out_proj = this.registerModule('out_proj', new Linear(embedDim, embedDim, { bias, dtype }));
    this.resetParameters();
  }

  get inProjWeight(): Tensor {
    return this.in_proj_weight;
  }
  get inProjBias(): Tensor | null {
    return this.in_proj_bias;
  }
  get outProj(): Linear {
    return this.out_proj;
  }

  /** torch's init: xavier-uniform in_proj_weight, zero biases, out_proj weight as Linear. */
  resetParameters(): void {
    xavierUniform_(this.in_proj_weight);
    if (this.in_proj_bias) constant_(this.in_proj_bias, 0);
    this.out_proj.resetParameters();
    if (this.out_proj.bias) constant_(this.out_proj.bias, 0);
  }

  /** Attention output, shaped like query. key and value default to query (self-attention). */
  forward(query: Tensor, key?: Tensor | null, value?: Tensor | null, opts: AttentionCallOptions = {}): Tensor {
    return this.run(query, key ?? query, value ?? key ?? query, opts, false).output;
  }

  /** Output and attention weights [B, L, S] (or [B, H, L, S] with averageAttnWeights false). */
  forwardWithWeights(query: Tensor, key?: Tensor | null, value?: Tensor | null, opts: AttentionCallOptions = {}): { output: Tensor; weights: Tensor } {
    const r = this.run(query, key ?? query, value ?? key ?? query, opts, true);
    return { output: r.output, weights: r.weights! };
  }

  private run(query: Tensor, key: Tensor, value: Tensor, opts: AttentionCallOptions, needWeights: boolean): { output: Tensor; weights?: Tensor } {
    const op = 'MultiheadAttention';
    const e = this.embedDim, h = this.numHeads;
    if (query.ndim !== key.ndim || query.ndim !== value.ndim || (query.ndim !== 2 && query.ndim !== 3)) {
      throw new ShapeError(`query ${fmtShape(query.shape)}, key ${fmtShape(key.shape)}, value ${fmtShape(value.shape)} must all be 3-D (or all 2-D, unbatched)`, op);
    }
    for (const [n, t] of [['query', query], ['key', key], ['value', value]] as const) {
      if (t.shape[t.ndim - 1] !== e) throw new ShapeError(`${n} ${fmtShape(t.shape)} must end in embedDim ${e}`, op);
    }
    const unbatched = query.ndim === 2;
    // to [B, L, E]
    const toBatchFirst = (t: Tensor) => (unbatched ? unsqueeze(t, 0) : this.batchFirst ? t : transpose(t, 0, 1));
    const q0 = toBatchFirst(query), k0 = toBatchFirst(key), v0 = toBatchFirst(value);
    const b = q0.shape[0]!, l = q0.shape[1]!, s = k0.shape[1]!;
    if (k0.shape[0] !== b || v0.shape[0] !== b || v0.shape[1] !== s) {
      throw new ShapeError(`query ${fmtShape(query.shape)}, key ${fmtShape(key.shape)} and value ${fmtShape(value.shape)} disagree in batch or source length`, op);
    }

    let q: Tensor, k: Tensor, v: Tensor;
    if (query === key && key === value) {
      [q, k, v] = chunk(linear(q0, this.in_proj_weight, this.in_proj_bias), 3, -1) as [Tensor, Tensor, Tensor];
    } else {
      const w = (i: number) => narrow(this.in_proj_weight, 0, i * e, e);
      const bi = (i: number) => (this.in_proj_bias ? narrow(this.in_proj_bias, 0, i * e, e) : null);
      q = linear(q0, w(0), bi(0));
      k = linear(k0, w(1), bi(1));
      v = linear(v0, w(2), bi(2));
    }
    // [B, L, E] -> [B, H, L, hd]
    const heads = (t: Tensor, len: number) => permute(reshape(t, [b, len, h, this.headDim]), [0, 2, 1, 3]);
    q = heads(q, l);
    k = heads(k, s);
    v = heads(v, s);

    const mask = this.additiveMask(opts, b, l, s, query.dtype);
    const p = this.training ? this.dropout : 0;
    let out: Tensor;
    let weights: Tensor | undefined;
    if (needWeights) {
      let scores = m.mul(matmul(q, transpose(k, -2, -1)), 1 / Math.sqrt(this.headDim));
      if (opts.isCausal) scores = m.where(m.gt(m.sub(reshape(arange(s), [1, s]), reshape(arange(l), [l, 1])), 0), -Infinity, scores);
      if (mask) scores = m.add(scores, mask);
      const attn = softmax(scores, -1);
      out = matmul(p > 0 ? dropout(attn, p, true) : attn, v);
      weights = opts.averageAttnWeights === false ? attn : mean(attn, 1);
      if (unbatched) weights = squeeze(weights, 0);
    } else {
      out = scaledDotProductAttention(q, k, v, { attnMask: mask, isCausal: opts.isCausal, dropoutP: p, training: this.training });
    }
    // [B, H, L, hd] -> [B, L, E]
    out = this.out_proj.call(reshape(permute(out, [0, 2, 1, 3]), [b, l, e]));
    out = unbatched ? squeeze(out, 0) : this.batchFirst ? out : transpose(out, 0, 1);
    return { output: out, weights };
  }

  /** attnMask and keyPaddingMask as one additive float mask broadcastable to [B, H, L, S]. */
  private additiveMask(opts: AttentionCallOptions, b: number, l: number, s: number, dtype: Tensor['dtype']): Tensor | null {
    const op = 'MultiheadAttention';
    const additive = (t: Tensor) => (t.dtype === 'bool' ? m.where(t, -Infinity, zeros([], { dtype })) : t);
    let mask: Tensor | null = null;
    if (opts.attnMask) {
      const am = opts.attnMask;
      if (am.ndim === 2 && am.shape[0] === l && am.shape[1] === s) mask = additive(am);
      else if (am.ndim === 3 && am.shape[0] === b * this.numHeads && am.shape[1] === l && am.shape[2] === s) mask = reshape(additive(am), [b, this.numHeads, l, s]);
      else throw new ShapeError(`attnMask ${fmtShape(am.shape)} must be [${l}, ${s}] or [${b * this.numHeads}, ${l}, ${s}]`, op);
    }
    if (opts.keyPaddingMask) {
      const kpm = opts.keyPaddingMask;
      const ok = (kpm.ndim === 2 && kpm.shape[0] === b && kpm.shape[1] === s) || (kpm.ndim === 1 && b === 1 && kpm.shape[0] === s);
      if (!ok) throw new ShapeError(`keyPaddingMask ${fmtShape(kpm.shape)} must be [${b}, ${s}]`, op);
      const k = reshape(additive(kpm), [b, 1, 1, s]);
      mask = mask ? m.add(mask, k) : k;
    }
    return mask;
  }

  override extraRepr(): string {
    return '';
  }
}
