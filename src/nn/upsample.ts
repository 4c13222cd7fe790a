// nn.Upsample: kiln.interpolate as a module (torch's Upsample(size, scale_factor, mode, align_corners)).

import type { Tensor } from '../tensor/tensor.js';
import { checkEnum } from '../core/enum-arg.js';
import { INTERPOLATE_MODES, interpolate, type InterpolateOptions } from '../ops/resize.js';
import { Module } from './module.js';

export class Upsample extends Module {
  readonly options: Readonly<InterpolateOptions>;

  constructor(opts: InterpolateOptions = {}) {
    super();
    this.options = { mode: 'nearest', ...opts };
    checkEnum('Upsample', 'mode', this.options.mode, INTERPOLATE_MODES);
  }

  forward(x: Tensor): Tensor {
    return interpolate(x, this.options);
  }

  override extraRepr(): string {
    const o = this.options;
    const v = (x: unknown) => (x === undefined || x === null ? 'None' : Array.isArray(x) ? `(${x.join(', ')})` : typeof x === 'number' && Number.isInteger(x) && x === o.scaleFactor ? x.toFixed(1) : String(x));
    let s = o.scaleFactor !== undefined && o.scaleFactor !== null ? `scale_factor=${v(o.scaleFactor)}` : `size=${v(o.size)}`;
    s += `, mode='${o.mode}'`;
    if (o.alignCorners !== undefined && o.alignCorners !== null) s += `, align_corners=${o.alignCorners ? 'True' : 'False'}`;
    return s;
  }
}
