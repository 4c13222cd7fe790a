// nn.utils.clipGradNorm_ and clipGradValue_ (torch.nn.utils): in-place rescaling or clamping of
// gradients with tensor ops only, so they trace into a compiled training step (no value is read
// into JS, except with errorIfNonfinite, which must read the norm: a graph break when compiled).

import { ArgumentError, NumericsError } from '../../core/errors.js';
import { isTensor, type Tensor } from '../../tensor/tensor.js';
import { scope } from '../../core/scope.js';
import { noGrad } from '../../autograd/grad-mode.js';
import { full } from '../../ops/creation.js';
import { assign } from '../../ops/inplace.js';
import { abs, add, clamp, div, isinf, isnan, logicalOr, mul, ne, pow, sqrt } from '../../ops/math.js';
import { cast } from '../../ops/pointwise.js';
import { max, min, sum } from '../../ops/reduce.js';
import { stack } from '../../ops/movement.js';

type Params = Tensor | Iterable<Tensor>;

function gradsOf(op: string, parameters: Params): Tensor[] {
  const list = isTensor(parameters) ? [parameters] : [...(parameters as Iterable<Tensor>)];
  list.forEach((p, i) => {
    if (!isTensor(p)) throw new ArgumentError(`parameter ${i} is not a Tensor`, op, 'pass model.parameters()');
  });
  return list.flatMap((p) => (p.grad ? [p.grad] : []));
}

/** torch.norm(x, p) of a flattened tensor: p in (0, inf), inf, -inf or 0 (the count of non-zeros). */
function vectorNorm(x: Tensor, p: number): Tensor {
  if (p === Infinity) return max(abs(x));
  if (p === -Infinity) return min(abs(x));
  if (p === 0) return sum(cast(ne(x, 0), x.dtype));
  if (p === 1) return sum(abs(x));
  if (p === 2) return sqrt(sum(mul(x, x)));
  return pow(sum(pow(abs(x), p)), 1 / p);
}

/**
 * Rescales the gradients in place so that their joint p-norm is at most maxNorm (torch's
 * clip_grad_norm_: coefficient min(1, maxNorm / (norm + 1e-6))); returns the norm before
 * clipping as a 0-d tensor. Parameters without a gradient are skipped.
 */
export function clipGradNorm_(parameters: Params, maxNorm: number, normType = 2, errorIfNonfinite = false): Tensor {
  const op = 'clipGradNorm_';
  if (typeof maxNorm !== 'number' || Number.isNaN(maxNorm)) throw new ArgumentError(`maxNorm must be a number, got ${maxNorm}`, op);
  if (typeof normType !== 'number' || Number.isNaN(normType) || normType < 0) throw new ArgumentError(`normType must be a number >= 0 (or Infinity), got ${normType}`, op);
  const grads = gradsOf(op, parameters);
  if (grads.length === 0) return full([], 0, { dtype: 'float32' });
  return noGrad(() =>
    scope(() => {
      const norms = grads.map((g) => vectorNorm(g, normType));
      const total = norms.length === 1 ? norms[0]! : normType === Infinity ? max(stack(norms)) : normType === -Infinity ? min(stack(norms)) : vectorNorm(stack(norms), normType);
      if (errorIfNonfinite && logicalOr(isnan(total), isinf(total)).item()) {
        throw new NumericsError(`the total norm of order ${normType} of the gradients is non-finite`, op, 'the gradients hold NaN or Inf; pass errorIfNonfinite: false to clip anyway');
      }
      const coef = clamp(div(maxNorm, add(total, 1e-6)), null, 1);
      for (const g of grads) assign(g, mul(g, coef));
      return total;
    }, isTensor),
  );
}

/** Clamps every gradient in place to [-clipValue, clipValue] (torch's clip_grad_value_). */
export function clipGradValue_(parameters: Params, clipValue: number): void {
  const op = 'clipGradValue_';
  if (typeof clipValue !== 'number' || !(clipValue >= 0)) throw new ArgumentError(`clipValue must be a number >= 0, got ${clipValue}`, op);
  const grads = gradsOf(op, parameters);
  noGrad(() =>
    scope(() => {
      for (const g of grads) assign(g, clamp(g, -clipValue, clipValue));
    }, isTensor),
  );
}
