// Fault injection for kiln's own tests (as torch._dynamo.config's *_TESTING_ONLY flags): makes
// lowering fail, so tests can check what a failure does. It must never be silent: a bug
// rethrows, a kernel backend's failure rethrows, and only a typed refusal of the JS renderer
// falls back to the recorded eager kernels, counted and warned once (an error under fullgraph).
// Not part of the public API; off unless a test turns it on.

import { KilnError } from '../core/errors.js';

export type LoweringFault = 'bug' | 'refusal';

let injected: LoweringFault | null = null;

/** Every lowering from now on fails as `fault` (null: none). */
export function injectLoweringFault(fault: LoweringFault | null): void {
  injected = fault;
}

/** Throws the injected fault, if any (called where lowering starts). */
export function raiseInjectedLoweringFault(): void {
  if (injected === 'bug') throw new Error('kiln testing: an injected bug in lowering');
  if (injected === 'refusal') throw new KilnError('kiln testing: an injected refusal to lower', 'lower');
}
