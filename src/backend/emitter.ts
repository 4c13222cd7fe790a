// What every loop-IR renderer shares: lines of code, fresh names, and the running pointer
// variable that holds each distinct affine index inside the current loop nest.

import { affKey, type Affine } from '../ir/affine.js';

export class Emitter {
  readonly lines: string[] = [];
  private readonly ptrs = new Map<string, string>();
  private n = 0;
  emit(s: string): void {
    this.lines.push(s);
  }
  fresh(prefix: string): string {
    return `${prefix}${this.n++}`;
  }
  /** The variable holding an affine index's current value in the nest being emitted. */
  setPtr(a: Affine, name: string): void {
    this.ptrs.set(affKey(a), name);
  }
  ptr(a: Affine): string {
    const p = this.ptrs.get(affKey(a));
    if (!p) throw new Error(`kiln internal: no pointer for ${affKey(a)}`);
    return p;
  }
}
