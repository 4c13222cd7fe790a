// nn.EmbeddingBag: sums or averages the embeddings of each bag of indices without
// materializing [B, L, D] for ragged bags. Bags come as a 2-D [B, L] index tensor
// (fixed size) or, as in torch, a flat 1-D index tensor plus int32 bag start offsets.

import { ArgumentError, DTypeError, ShapeError, fmtShape } from '../core/errors.js';
import { checkEnum } from '../core/enum-arg.js';
import type { Tensor } from '../tensor/tensor.js';
import { ones, zeros } from '../ops/creation.js';
import { embedding } from '../ops/functional.js';
import { cumsum, indexAdd } from '../ops/indexing.js';
import { div, maximum, mul, sub } from '../ops/math.js';
import { narrow, unsqueeze } from '../ops/movement.js';
import { mean, sum } from '../ops/reduce.js';
import { Module } from './module.js';
import { normal_ } from './init.js';
import { checkSize } from './linear.js';

export const EMBEDDING_BAG_MODES = ['sum', 'mean'] as const;
export type EmbeddingBagMode = (typeof EMBEDDING_BAG_MODES)[number];

export interface EmbeddingBagOptions {
  mode?: EmbeddingBagMode;
  /** offsets has B + 1 entries, the last one equal to the number of indices (torch's include_last_offset) */
  includeLastOffset?: boolean;
  dtype?: 'float32' | 'float64';
}

export class EmbeddingBag extends Module<[Tensor, (Tensor | null)?, (Tensor | null)?]> {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  readonly mode: EmbeddingBagMode;
  readonly includeLastOffset: boolean;
  weight: Tensor;

  constructor(numEmbeddings: number, embeddingDim: number, opts: EmbeddingBagOptions = {}) {
    super();
    checkSize('EmbeddingBag', 'numEmbeddings', numEmbeddings);
    checkSize('EmbeddingBag', 'embeddingDim', embeddingDim);
    const mode = opts.mode ?? 'mean';
    checkEnum('EmbeddingBag', 'mode', mode, EMBEDDING_BAG_MODES);
    this.numEmbeddings = numEmbeddings;
    this.embeddingDim = embeddingDim;
    this.mode = mode;
    this.includeLastOffset = opts.includeLastOffset ?? false;
    this.weight = this.registerParameter('weight', zeros([numEmbeddings, embeddingDim], { dtype: opts.dtype ?? 'float32' }));
    this.resetParameters();
  }

  resetParameters(): void {
    normal_(this.weight);
  }

  /**
   * input [B, L] (offsets null), or input [N] with int32 offsets [B] giving where each
   * bag starts (offsets[0] = 0; an empty bag gives zeros). perSampleWeights, shaped
   * like input, scales each embedding before the reduction (mode 'sum' only, as torch).
   */
  forward(input: Tensor, offsets?: Tensor | null, perSampleWeights?: Tensor | null): Tensor {
    const op = 'EmbeddingBag';
    if (perSampleWeights) {
      if (this.mode !== 'sum') throw new ArgumentError("perSampleWeights needs mode 'sum'", op);
      if (!sameShape(perSampleWeights.shape, input.shape)) {
        throw new ShapeError(`perSampleWeights ${fmtShape(perSampleWeights.shape)} must have the shape of input ${fmtShape(input.shape)}`, op);
      }
    }
    if (input.ndim === 2) {
      if (offsets) throw new ArgumentError('offsets must be omitted when input is 2-D [B, L] (each row is a bag)', op);
      let rows = embedding(input, this.weight); // [B, L, D]
      if (perSampleWeights) rows = mul(rows, unsqueeze(perSampleWeights, -1));
      return this.mode === 'sum' ? sum(rows, 1) : mean(rows, 1);
    }
    if (input.ndim !== 1) throw new ShapeError(`input must be [B, L], or [N] with offsets, got ${fmtShape(input.shape)}`, op);
    if (!offsets) throw new ArgumentError('a 1-D input needs offsets (int32 start of each bag)', op, 'pass offsets, or reshape fixed-size bags to [B, L]');
    if (offsets.dtype !== 'int32') throw new DTypeError(`offsets must be int32, got ${offsets.dtype}`, op, 'cast with .int()');
    if (offsets.ndim !== 1) throw new ShapeError(`offsets must be 1-D, got ${fmtShape(offsets.shape)}`, op);
    const n = input.shape[0]!;
    const starts = this.includeLastOffset ? narrow(offsets, 0, 0, Math.max(offsets.shape[0]! - 1, 0)) : offsets;
    const b = starts.shape[0]!;
    // bag id of element i = (number of bag starts <= i) - 1: mark each start, prefix-sum.
    // The extra slot n takes the starts of trailing empty bags.
    const marks = indexAdd(zeros([n + 1], { dtype: 'int32' }), 0, starts, ones([b], { dtype: 'int32' }));
    const bagId = sub(cumsum(narrow(marks, 0, 0, n), 0), 1);
    let rows = embedding(input, this.weight); // [N, D]
    if (perSampleWeights) rows = mul(rows, unsqueeze(perSampleWeights, -1));
    const out = indexAdd(zeros([b, this.embeddingDim], { dtype: this.weight.dtype }), 0, bagId, rows);
    if (this.mode === 'sum') return out;
    const counts = indexAdd(zeros([b], { dtype: this.weight.dtype }), 0, bagId, ones([n], { dtype: this.weight.dtype }));
    return div(out, unsqueeze(maximum(counts, 1), 1)); // an empty bag stays zeros
  }

  override extraRepr(): string {
    return `${this.numEmbeddings}, ${this.embeddingDim}, mode='${this.mode}'${this.includeLastOffset ? ', include_last_offset=True' : ''}`;
  }
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}
