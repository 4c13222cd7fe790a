// nn.Embedding: a lookup table [num, dim], rows picked by int32 indices; N(0, 1) init.

import { ArgumentError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { zeros } from '../ops/creation.js';
import { embedding } from '../ops/functional.js';
import { noGrad } from '../autograd/grad-mode.js';
import { assign } from '../ops/inplace.js';
import { Module } from './module.js';
import { normal_ } from './init.js';
import { checkSize } from './linear.js';

export interface EmbeddingOptions {
  /** this row starts at zeros, is returned as stored (a loaded checkpoint's row too) and never receives a gradient (torch's padding_idx) */
  paddingIdx?: number;
  dtype?: 'float32' | 'float64';
}

export class Embedding extends Module {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  readonly paddingIdx: number | undefined;
  weight: Tensor;

  constructor(numEmbeddings: number, embeddingDim: number, opts: EmbeddingOptions = {}) {
    super();
    checkSize('Embedding', 'numEmbeddings', numEmbeddings);
    checkSize('Embedding', 'embeddingDim', embeddingDim);
    this.numEmbeddings = numEmbeddings;
    this.embeddingDim = embeddingDim;
    this.paddingIdx = normalizePaddingIdx(opts.paddingIdx, numEmbeddings);
    this.weight = this.registerParameter('weight', zeros([numEmbeddings, embeddingDim], { dtype: opts.dtype ?? 'float32' }));
    this.resetParameters();
  }

  resetParameters(): void {
    normal_(this.weight);
    if (this.paddingIdx !== undefined) {
      const idx = this.paddingIdx;
      noGrad(() => {
        const row = this.weight.select(0, idx);
        assign(row, 0);
        row.dispose();
      });
    }
  }

  forward(indices: Tensor): Tensor {
    return embedding(indices, this.weight, { paddingIdx: this.paddingIdx });
  }

  override extraRepr(): string {
    return `${this.numEmbeddings}, ${this.embeddingDim}${this.paddingIdx !== undefined ? `, padding_idx=${this.paddingIdx}` : ''}`;
  }
}

export function normalizePaddingIdx(idx: number | undefined, num: number): number | undefined {
  if (idx === undefined) return undefined;
  if (!Number.isInteger(idx) || idx >= num || idx < -num) throw new ArgumentError(`paddingIdx ${idx} is out of range for ${num} embeddings`, 'Embedding');
  return idx < 0 ? idx + num : idx;
}
