// The op registry: every primitive a stored graph may hold, by name, so a graph read back from
// the compile cache or an artifact (src/compiler/cache) gets its PrimDefs (opaque steps run them;
// node-by-node replay interprets them). A new primitive is added here, beside the op modules that
// define it. Custom ops are not here: a graph holding one is never stored (its code is the
// user's JavaScript).

import type { PrimDef } from './dispatch.js';
import { BINARY_OPS, TERNARY_OPS, UNARY_OPS } from '../ir/scalar-expr.js';
import { castPrim, pointwisePrim } from './pointwise.js';
import { REDUCE_PRIMS } from './reduce.js';
import { matmulPrim } from './linalg.js';
import { col2imPrim, im2colPrim } from './window.js';
import { cumsumPrim, gatherPrim, indexAddPrim, indexSelectPrim, scatterAddPrim } from './indexing.js';
import { constantPrim, fillPrim, randomPrim } from './creation.js';
import { catPrim, expandPrim, padPrim, permutePrim, slicePrim, viewPrim } from './movement.js';
import { argsortPrim } from './sorting.js';
import { cumIndexPrim, cumprodPrim } from './scan.js';

let table: Map<string, PrimDef<unknown>> | null = null;

function build(): Map<string, PrimDef<unknown>> {
  const m = new Map<string, PrimDef<unknown>>();
  const add = (p: PrimDef<never>) => m.set(p.name, p as unknown as PrimDef<unknown>);
  for (const op of [...UNARY_OPS, ...BINARY_OPS, ...TERNARY_OPS]) add(pointwisePrim(op) as PrimDef<never>);
  for (const p of Object.values(REDUCE_PRIMS)) add(p as PrimDef<never>);
  for (const p of [castPrim, matmulPrim, im2colPrim, col2imPrim, gatherPrim, scatterAddPrim, indexSelectPrim, indexAddPrim, cumsumPrim, constantPrim, fillPrim, randomPrim, viewPrim, permutePrim, expandPrim, slicePrim, padPrim, catPrim, argsortPrim, cumprodPrim, cumIndexPrim]) add(p as PrimDef<never>);
  return m;
}

/** The primitive named `name`, or undefined (a custom op, or an op this version lacks). */
export function primByName(name: string): PrimDef<unknown> | undefined {
  return (table ??= build()).get(name);
}

/** Whether `p` is the registered primitive of its name (custom ops and look-alikes are not). */
export function isRegisteredPrim(p: PrimDef<unknown> | undefined): boolean {
  return !!p && primByName(p.name) === p;
}
