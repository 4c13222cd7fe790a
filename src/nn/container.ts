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

/** A record of submodules by name (torch's ModuleDict), kept in insertion order; no forward of its own. */
export class ModuleDict<M extends AnyModule = AnyModule> extends Module<never[], never> {
  readonly #keys: string[] = [];

  constructor(modules: Record<string, M> | Iterable<readonly [string, M]> = {}) {
    super();
    this.update(modules);
  }

  forward(): never {
    throw new ArgumentError('ModuleDict has no forward; look modules up by name in your module\'s forward', 'ModuleDict');
  }

  get size(): number {
    return this.#keys.length;
  }

  has(key: string): boolean {
    return this.#keys.includes(key);
  }

  get(key: string): M {
    if (!this.has(key)) throw new IndexError(`no module named ${JSON.stringify(key)}`, 'ModuleDict.get', `keys: ${this.#keys.join(', ') || 'none'}`);
    return (this as unknown as Record<string, M>)[key]!;
  }

  /** Adds or replaces the module under `key`. */
  set(key: string, m: M): this {
    if (!(m instanceof Module)) throw new ArgumentError(`the value for ${JSON.stringify(key)} is not a Module`, 'ModuleDict.set');
    this.registerModule(key, m);
    if (!this.has(key)) this.#keys.push(key);
    return this;
  }

  /** Removes and returns the module under `key` (torch's pop). */
  delete(key: string): M {
    const m = this.get(key);
    this.registerModule(key, null);
    this.#keys.splice(this.#keys.indexOf(key), 1);
    return m;
  }

  update(modules: Record<string, M> | Iterable<readonly [string, M]>): this {
    const entries = Symbol.iterator in Object(modules) ? [...(modules as Iterable<readonly [string, M]>)] : Object.entries(modules as Record<string, M>);
    for (const [k, m] of entries) this.set(k, m);
    return this;
  }

  keys(): string[] {
    return [...this.#keys];
  }

  values(): M[] {
    return this.#keys.map((k) => this.get(k));
  }

  entries(): [string, M][] {
    return this.#keys.map((k) => [k, this.get(k)]);
  }

  [Symbol.iterator](): Iterator<[string, M]> {
    return this.entries()[Symbol.iterator]();
  }
}
