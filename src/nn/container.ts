// Containers: Sequential (children run in order, named '0', '1', ...) and ModuleList
// (an indexable list of submodules, registered so their parameters are found).

import { ArgumentError, IndexError } from '../core/errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { Module, type AnyModule } from './module.js';

function index(op: string, i: number, length: number): number {
  const j = i < 0 ? i + length : i;
  if (!Number.isInteger(i) || j < 0 || j >= length) throw new IndexError(`index ${i} is out of range for ${length} modules`, op);
  return j;
}

/** Sequential(a, b, c) or Sequential({ name: module, ... }): forward feeds each child's output to the next. */
export class Sequential extends Module {
  constructor(...modules: AnyModule[] | [Record<string, AnyModule>]) {
    super();
    const first = modules[0];
    if (modules.length === 1 && first !== undefined && !(first instanceof Module)) {
      for (const [name, m] of Object.entries(first)) this.registerModule(name, m);
    } else {
      (modules as AnyModule[]).forEach((m, i) => {
        if (!(m instanceof Module)) throw new ArgumentError(`argument ${i} is not a Module`, 'Sequential');
        this.registerModule(String(i), m);
      });
    }
  }

  forward(x: Tensor): Tensor {
    let y = x;
    for (const m of this.children()) y = m.call(y);
    return y;
  }

  get length(): number {
    return this.children().length;
  }

  /** The i-th child (negative counts from the end). */
  at(i: number): AnyModule {
    const c = this.children();
    return c[index('Sequential.at', i, c.length)]!;
  }

  append(m: AnyModule): this {
    this.registerModule(String(this.length), m);
    return this;
  }

  [Symbol.iterator](): Iterator<AnyModule> {
    return this.children()[Symbol.iterator]();
  }
}

/** A list of submodules; it has no forward of its own (iterate it in yours). */
export class ModuleList<M extends AnyModule = AnyModule> extends Module<never[], never> {
  constructor(modules: Iterable<M> = []) {
    super();
    for (const m of modules) this.append(m);
  }

  forward(): never {
    throw new ArgumentError('ModuleList has no forward; iterate over it in your module\'s forward', 'ModuleList');
  }

  get length(): number {
    return this.children().length;
  }

  at(i: number): M {
    const c = this.children() as M[];
    return c[index('ModuleList.at', i, c.length)]!;
  }

  append(m: M): this {
    if (!(m instanceof Module)) throw new ArgumentError('can only append a Module', 'ModuleList');
    this.registerModule(String(this.length), m);
    return this;
  }

  extend(modules: Iterable<M>): this {
    for (const m of modules) this.append(m);
    return this;
  }

  [Symbol.iterator](): Iterator<M> {
    return (this.children() as M[])[Symbol.iterator]();
  }
}
