// A stage of a kernel under construction: the statements of one loop level (a pointwise body,
// a row kernel's outer or per-row body, a reduction's body) with a memo so that equal values are
// computed once. A fusion attempt that is refused rewinds the host's stages to a mark, leaving
// the kernel as it was.

import { someLeaf, type Affine, type LExpr, type Stmt } from '../../ir/loop-ir.js';

export interface Stage {
  readonly stmts: Stmt[];
  readonly memo: Map<string, LExpr>;
  /** the memo key of each statement, in order (what a rewind forgets) */
  readonly keys: string[];
  /** a stage to share values with when they do not depend on this stage's own vars */
  readonly outer?: Stage;
  /** vars this stage loops over that the outer stage does not */
  readonly ownVars?: readonly number[];
}

/** The counter of temporaries (statement and reduction ids) of one lowering. */
export interface TmpIds {
  tmpId: number;
}

export const newStage = (outer?: Stage, ownVars?: readonly number[]): Stage => ({ stmts: [], memo: new Map(), keys: [], outer, ownVars });

/** Adds e as a statement of the right stage (memoized), returning a reference. */
export function intern(ids: TmpIds, stage: Stage, key: string, e: LExpr, uses: readonly Affine[]): LExpr {
  let s = stage;
  // hoist to the outer stage when nothing depends on this stage's own loop vars
  while (s.outer && s.ownVars && uses.every((u) => s.ownVars!.every((v) => u.c[v] === 0)) && !dependsOnStage(e, s)) s = s.outer;
  const hit = s.memo.get(key) ?? stage.memo.get(key);
  if (hit) return hit;
  const id = ids.tmpId++;
  s.stmts.push({ id, e });
  s.keys.push(key);
  const ref: LExpr = { k: 'tmp', id };
  s.memo.set(key, ref);
  return ref;
}

function dependsOnStage(e: LExpr, s: Stage): boolean {
  return someLeaf(e, (x) => x.k === 'tmp' && s.stmts.some((st) => st.id === x.id));
}

export interface StageMark {
  readonly lengths: readonly (readonly [Stage, number])[];
  readonly tmpId: number;
}

/** Where the stages (and the temporary counter) are now. */
export function markStages(ids: TmpIds, stages: readonly Stage[]): StageMark {
  return { lengths: stages.map((s) => [s, s.stmts.length] as const), tmpId: ids.tmpId };
}

/** Forgets everything added to the stages since the mark (a refused attempt adds nothing else). */
export function rewindStages(ids: TmpIds, mark: StageMark): void {
  for (const [s, n] of mark.lengths) {
    for (const key of s.keys.slice(n)) s.memo.delete(key);
    s.stmts.length = n;
    s.keys.length = n;
  }
  ids.tmpId = mark.tmpId;
}
