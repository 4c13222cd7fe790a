// What a can-fuse rule answers when a value cannot be computed where lowering wants it: a
// value, not an exception. `no-fuse`: this kernel cannot compute it (the caller tries another
// host or opens a kernel of its own); `materialize`: the node needs a buffer of its own, and
// lowering starts over with the node materialized (lower.ts).

import type { LExpr } from '../../ir/loop-ir.js';

export interface NoFuse {
  readonly kind: 'no-fuse';
  readonly why: string;
}

export interface Materialize {
  readonly kind: 'materialize';
  readonly node: number;
  readonly why: string;
}

export type Blocked = NoFuse | Materialize;

/** An expression built for a kernel, or why it cannot be. */
export type Built = LExpr | Blocked;

export const noFuse = (why: string): NoFuse => ({ kind: 'no-fuse', why });

export const materialize = (node: number, why: string): Materialize => ({ kind: 'materialize', node, why });

/** Loop-IR expressions have no `why`: this tells them apart from a refusal. */
export const isBlocked = <T extends object>(x: T | Blocked | null): x is Blocked => x !== null && 'why' in x;

/** The error a refusal becomes when nothing can act on it. */
export function blockedMessage(b: Blocked): string {
  return b.kind === 'materialize' ? `materialize %${b.node}: ${b.why}` : b.why;
}
