// nn.LayerNorm over the trailing normalizedShape dims; weight ones, bias zeros.

import type { Tensor } from '../tensor/tensor.js';
import { ones, zeros } from '../ops/creation.js';
import { layerNorm } from '../ops/functional.js';
import { Module } from './module.js';
import { checkSize } from './linear.js';

export interface LayerNormOptions {
  eps?: number;
  elementwiseAffine?: boolean;
  /** with elementwiseAffine, also learn a bias (torch's bias=True) */
  bias?: boolean;
  dtype?: 'float32' | 'float64';
}

export class LayerNorm extends Module {
  readonly normalizedShape: readonly number[];
  readonly eps: number;
  readonly elementwiseAffine: boolean;
  weight: Tensor | null;
  bias: Tensor | null;

  constructor(normalizedShape: number | readonly number[], opts: LayerNormOptions = {}) {
    super();
    this.normalizedShape = typeof normalizedShape === 'number' ? [normalizedShape] : [...normalizedShape];
    for (const s of this.normalizedShape) checkSize('LayerNorm', 'normalizedShape', s);
    this.eps = opts.eps ?? 1e-5;
    this.elementwiseAffine = opts.elementwiseAffine ?? true;
    const dtype = opts.dtype ?? 'float32';
    this.weight = this.registerParameter('weight', this.elementwiseAffine ? ones(this.normalizedShape, { dtype }) : null);
    this.bias = this.registerParameter('bias', this.elementwiseAffine && opts.bias !== false ? zeros(this.normalizedShape, { dtype }) : null);
  }

  forward(x: Tensor): Tensor {
    return layerNorm(x, this.normalizedShape, this.weight, this.bias, this.eps);
  }

  override extraRepr(): string {
    return `(${this.normalizedShape.join(', ')}${this.normalizedShape.length === 1 ? ',' : ''}), eps=${fmtNum(this.eps)}, elementwise_affine=${this.elementwiseAffine ? 'True' : 'False'}`;
  }
}

/** A float as Python prints it in torch reprs (1e-05, 0.1, 20.0). */
export function fmtNum(v: number): string {
  if (!Number.isFinite(v)) return v !== v ? 'nan' : v > 0 ? 'inf' : '-inf';
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-4 || a >= 1e16)) return v.toExponential().replace(/e([+-])(\d)$/, 'e$10$2');
  return Number.isInteger(v) ? v.toFixed(1) : String(v);
}
