// nn.TransformerEncoderLayer, nn.TransformerDecoderLayer and the stacks nn.TransformerEncoder /
// nn.TransformerDecoder, with torch's submodule names (self_attn, multihead_attn, linear1,
// linear2, norm1..3, dropout, dropout1..3), so torch state dicts load, and torch's forward
// (post-norm by default, normFirst for pre-norm). Masks follow MultiheadAttention: a bool mask
// is true where attention is not allowed, a float mask is added to the scores.

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { noGrad } from '../autograd/grad-mode.js';
import { assign } from '../ops/inplace.js';
import * as m from '../ops/math.js';
import { MultiheadAttention } from './attention.js';
import { ModuleList } from './container.js';
import { Dropout } from './dropout.js';
import { LayerNorm } from './layer-norm.js';
import { Linear, checkSize } from './linear.js';
import { Module, type AnyModule } from './module.js';

export type TransformerActivation = 'relu' | 'gelu' | ((x: Tensor) => Tensor);

export interface TransformerLayerOptions {
  /** default 2048 */
  dimFeedforward?: number;
  /** default 0.1 */
  dropout?: number;
  /** default 'relu' */
  activation?: TransformerActivation;
  /** default 1e-5 */
  layerNormEps?: number;
  /** inputs are [N, L, E] (default false: [L, N, E]) */
  batchFirst?: boolean;
  /** layer norm before attention and feed-forward (pre-norm); default false (post-norm) */
  normFirst?: boolean;
  dtype?: 'float32' | 'float64';
}

function activationFn(op: string, a: TransformerActivation): (x: Tensor) => Tensor {
  if (typeof a === 'function') return a;
  if (a === 'relu') return m.relu;
  if (a === 'gelu') return (x) => m.gelu(x);
  throw new ArgumentError(`unknown activation ${JSON.stringify(a)}`, op, "valid values: 'relu', 'gelu', or a function");
}

/** The feed-forward block and settings both layer kinds share. */
abstract class TransformerLayerBase<In extends unknown[]> extends Module<In, Tensor> {
  readonly dModel: number;
  readonly nhead: number;
  readonly normFirst: boolean;
  readonly options: Readonly<TransformerLayerOptions>;
  readonly #activation: (x: Tensor) => Tensor;
  self_attn: MultiheadAttention;
  linear1!: Linear;
  dropout!: Dropout;
  linear2!: Linear;

  protected constructor(dModel: number, nhead: number, opts: TransformerLayerOptions) {
    super();
    const op = this.typeName;
    checkSize(op, 'dModel', dModel, false);
    checkSize(op, 'nhead', nhead, false);
    const ff = opts.dimFeedforward ?? 2048;
    checkSize(op, 'dimFeedforward', ff, false);
    this.dModel = dModel;
    this.nhead = nhead;
    this.options = { ...opts };
    this.normFirst = opts.normFirst ?? false;
    this.#activation = activationFn(op, opts.activation ?? 'relu');
    const p = opts.dropout ?? 0.1;
    this.self_attn = this.registerModule('self_attn', new MultiheadAttention(dModel, nhead, { dropout: p, batchFirst: opts.batchFirst ?? false, dtype: opts.dtype }));
  }

  /** Registers linear1, dropout, linear2 after the attention modules (torch's order). */
  protected addFeedForward(): void {
    const dtype = this.options.dtype;
    this.linear1 = this.registerModule('linear1', new Linear(this.dModel, this.options.dimFeedforward ?? 2048, { dtype }));
    this.dropout = this.registerModule('dropout', new Dropout(this.options.dropout ?? 0.1));
    this.linear2 = this.registerModule('linear2', new Linear(this.options.dimFeedforward ?? 2048, this.dModel, { dtype }));
  }

  protected norm(): LayerNorm {
    return new LayerNorm(this.dModel, { eps: this.options.layerNormEps ?? 1e-5, dtype: this.options.dtype });
  }

  protected feedForward(x: Tensor, out: Dropout): Tensor {
    return out.call(this.linear2.call(this.dropout.call(this.#activation(this.linear1.call(x)))));
  }

  /** A new layer of the same configuration and weights (what torch's TransformerEncoder deep-copies). */
  abstract clone(): this;

  protected copyStateInto<T extends AnyModule>(layer: T): T {
    layer.train(this.training);
    const src = this.stateDict(), dst = layer.stateDict();
    noGrad(() => {
      for (const [k, t] of Object.entries(dst)) assign(t, src[k]!);
    });
    return layer;
  }
}

type EncoderArgs = [src: Tensor, srcMask?: Tensor | null, srcKeyPaddingMask?: Tensor | null, opts?: { isCausal?: boolean }];
type DecoderArgs = [tgt: Tensor, memory: Tensor, tgtMask?: Tensor | null, memoryMask?: Tensor | null, tgtKeyPaddingMask?: Tensor | null, memoryKeyPaddingMask?: Tensor | null, opts?: { tgtIsCausal?: boolean; memoryIsCausal?: boolean }];

export class TransformerEncoderLayer extends TransformerLayerBase<EncoderArgs> {
  norm1: LayerNorm;
  norm2: LayerNorm;
  dropout1: Dropout;
  dropout2: Dropout;

  constructor(dModel: number, nhead: number, opts: TransformerLayerOptions = {}) {
    super(dModel, nhead, opts);
    this.addFeedForward();
    this.norm1 = this.registerModule('norm1', this.norm());
    this.norm2 = this.registerModule('norm2', this.norm());
    this.dropout1 = this.registerModule('dropout1', new Dropout(opts.dropout ?? 0.1));
    this.dropout2 = this.registerModule('dropout2', new Dropout(opts.dropout ?? 0.1));
  }

  /** torch's forward(src, src_mask, src_key_padding_mask); isCausal masks future positions. */
  override forward(src: Tensor, srcMask?: Tensor | null, srcKeyPaddingMask?: Tensor | null, opts: { isCausal?: boolean } = {}): Tensor {
    const sa = (x: Tensor) => this.dropout1.call(this.self_attn.call(x, x, x, { attnMask: srcMask, keyPaddingMask: srcKeyPaddingMask, isCausal: opts.isCausal }));
    let x = src;
    if (this.normFirst) {
      x = m.add(x, sa(this.norm1.call(x)));
      return m.add(x, this.feedForward(this.norm2.call(x), this.dropout2));
    }
    x = this.norm1.call(m.add(x, sa(x)));
    return this.norm2.call(m.add(x, this.feedForward(x, this.dropout2)));
  }

  clone(): this {
    return this.copyStateInto(new TransformerEncoderLayer(this.dModel, this.nhead, this.options) as this);
  }
}

export class TransformerDecoderLayer extends TransformerLayerBase<DecoderArgs> {
  multihead_attn: MultiheadAttention;
  norm1: LayerNorm;
  norm2: LayerNorm;
  norm3: LayerNorm;
  dropout1: Dropout;
  dropout2: Dropout;
  dropout3: Dropout;

  constructor(dModel: number, nhead: number, opts: TransformerLayerOptions = {}) {
    super(dModel, nhead, opts);
    const p = opts.dropout ?? 0.1;
    this.multihead_attn = this.registerModule('multihead_attn', new MultiheadAttention(dModel, nhead, { dropout: p, batchFirst: opts.batchFirst ?? false, dtype: opts.dtype }));
    this.addFeedForward();
    this.norm1 = this.registerModule('norm1', this.norm());
    this.norm2 = this.registerModule('norm2', this.norm());
    this.norm3 = this.registerModule('norm3', this.norm());
    this.dropout1 = this.registerModule('dropout1', new Dropout(p));
    this.dropout2 = this.registerModule('dropout2', new Dropout(p));
    this.dropout3 = this.registerModule('dropout3', new Dropout(p));
  }

  /** torch's forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask). */
  override forward(tgt: Tensor, memory: Tensor, tgtMask?: Tensor | null, memoryMask?: Tensor | null, tgtKeyPaddingMask?: Tensor | null, memoryKeyPaddingMask?: Tensor | null, opts: { tgtIsCausal?: boolean; memoryIsCausal?: boolean } = {}): Tensor {
    const sa = (x: Tensor) => this.dropout1.call(this.self_attn.call(x, x, x, { attnMask: tgtMask, keyPaddingMask: tgtKeyPaddingMask, isCausal: opts.tgtIsCausal }));
    const mha = (x: Tensor) => this.dropout2.call(this.multihead_attn.call(x, memory, memory, { attnMask: memoryMask, keyPaddingMask: memoryKeyPaddingMask, isCausal: opts.memoryIsCausal }));
    let x = tgt;
    if (this.normFirst) {
      x = m.add(x, sa(this.norm1.call(x)));
      x = m.add(x, mha(this.norm2.call(x)));
      return m.add(x, this.feedForward(this.norm3.call(x), this.dropout3));
    }
    x = this.norm1.call(m.add(x, sa(x)));
    x = this.norm2.call(m.add(x, mha(x)));
    return this.norm3.call(m.add(x, this.feedForward(x, this.dropout3)));
  }

  clone(): this {
    return this.copyStateInto(new TransformerDecoderLayer(this.dModel, this.nhead, this.options) as this);
  }
}

/** numLayers copies of a layer (same initial weights, as torch's deepcopy), then an optional norm. */
abstract class TransformerStack<L extends AnyModule & { clone(): AnyModule }, In extends unknown[]> extends Module<In, Tensor> {
  layers: ModuleList<L>;
  norm: AnyModule | null;
  readonly numLayers: number;

  protected constructor(layer: L, kind: new (...a: never[]) => L, numLayers: number, norm: AnyModule | null) {
    super();
    const op = this.typeName;
    checkSize(op, 'numLayers', numLayers, false);
    if (!(layer instanceof kind)) throw new ArgumentError(`the layer must be an nn.${kind.name}`, op);
    this.numLayers = numLayers;
    this.layers = this.registerModule('layers', new ModuleList<L>(Array.from({ length: numLayers }, () => layer.clone() as L)));
    this.norm = this.registerModule('norm', norm);
  }

  protected finish(x: Tensor): Tensor {
    return this.norm ? (this.norm.call(x) as Tensor) : x;
  }
}

export class TransformerEncoder extends TransformerStack<TransformerEncoderLayer, EncoderArgs> {
  constructor(encoderLayer: TransformerEncoderLayer, numLayers: number, norm: AnyModule | null = null) {
    super(encoderLayer, TransformerEncoderLayer, numLayers, norm);
  }

  override forward(src: Tensor, mask?: Tensor | null, srcKeyPaddingMask?: Tensor | null, opts: { isCausal?: boolean } = {}): Tensor {
    let x = src;
    for (const layer of this.layers) x = layer.call(x, mask, srcKeyPaddingMask, opts);
    return this.finish(x);
  }
}

export class TransformerDecoder extends TransformerStack<TransformerDecoderLayer, DecoderArgs> {
  constructor(decoderLayer: TransformerDecoderLayer, numLayers: number, norm: AnyModule | null = null) {
    super(decoderLayer, TransformerDecoderLayer, numLayers, norm);
  }

  override forward(tgt: Tensor, memory: Tensor, tgtMask?: Tensor | null, memoryMask?: Tensor | null, tgtKeyPaddingMask?: Tensor | null, memoryKeyPaddingMask?: Tensor | null, opts: { tgtIsCausal?: boolean; memoryIsCausal?: boolean } = {}): Tensor {
    let x = tgt;
    for (const layer of this.layers) x = layer.call(x, memory, tgtMask, memoryMask, tgtKeyPaddingMask, memoryKeyPaddingMask, opts);
    return this.finish(x);
  }
}
