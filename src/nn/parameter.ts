// nn.Parameter: a leaf tensor that a Module trains. Not a subclass: kiln tensors are
// made by ops, so a parameter is the same Tensor, marked (requiresGrad, kept, and
// remembered here) so Modules can tell parameters from buffers and plain fields.

import '../ops/tensor-methods.js';
import { keep } from '../core/scope.js';
import type { Tensor } from '../tensor/tensor.js';

const parameters = new WeakSet<Tensor>();

/**
 * Marks `t` as a parameter: requiresGrad = true and kept (no kiln.scope disposes it).
 * A tensor that came out of an autograd graph is detached first, as torch does.
 */
export function Parameter(t: Tensor, requiresGrad = true): Tensor {
  t.assertAlive('Parameter');
  const p = t.isLeaf ? t : t.detach();
  if (requiresGrad) p.requiresGrad = true;
  keep(p);
  parameters.add(p);
  return p;
}

export function isParameter(x: unknown): x is Tensor {
  return typeof x === 'object' && x !== null && parameters.has(x as Tensor);
}
