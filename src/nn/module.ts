// nn.Module: the base of every layer. A module owns named parameters, buffers and
// submodules; it can list them with torch's dotted names, switch train/eval, and save
// or load its state as a flat { name: Tensor } record (torch's state_dict layout).
//
// Each named slot lives in an ordinary field of the same name (this.weight, this['0']);
// the module only remembers the slot's kind and registration order. So a reassigned
// field is always what traversal sees, and fields holding a Parameter or a Module are
// discovered without registration (at the next traversal, in field order).

import '../ops/tensor-methods.js';
import { ArgumentError, StateDictError, fmtShape } from '../core/errors.js';
import { shapesEqual } from '../core/shape.js';
import { Tensor } from '../tensor/tensor.js';
import { keep } from '../core/scope.js';
import { noGrad } from '../autograd/grad-mode.js';
import { assign } from '../ops/inplace.js';
import { Parameter, isParameter } from './parameter.js';

type Kind = 'parameter' | 'buffer' | 'module';

export type AnyModule = Module<any[], any>;

export interface LoadStateDictOptions {
  /** require the keys to match exactly (default true); mis-shaped keys always throw */
  strict?: boolean;
}

export interface LoadStateDictResult {
  missingKeys: string[];
  unexpectedKeys: string[];
}

/** A forward pre-hook: sees the module and its arguments; returning an array (or one value) replaces them. */
export type ForwardPreHook = (module: AnyModule, args: any[]) => unknown;
/** A forward hook: sees the module, the arguments and the output; returning a value replaces the output. */
export type ForwardHook = (module: AnyModule, args: any[], output: any) => unknown;

/** What registerForwardHook returns: remove() unregisters the hook (torch's RemovableHandle). */
export class RemovableHandle {
  constructor(readonly remove: () => void) {}
}

export abstract class Module<In extends unknown[] = [Tensor], Out = Tensor> {
  /** true in training mode (dropout active, batch norm uses batch statistics) */
  training = true;
  readonly #slots = new Map<string, Kind>();
  readonly #nonPersistent = new Set<string>();
  readonly #preHooks = new Map<number, ForwardPreHook>();
  readonly #hooks = new Map<number, ForwardHook>();
  #hooksVersion = 0;

  abstract forward(...args: In): Out;

  /**
   * Runs forward (torch's module(x)), with the forward pre-hooks before it and the forward
   * hooks after it. A compiled module runs them while tracing; replays do not run their
   * JavaScript, and adding or removing a hook (hooksVersion) makes the next call retrace.
   */
  call(...args: In): Out {
    if (this.#preHooks.size === 0 && this.#hooks.size === 0) return this.forward(...args);
    let a: unknown[] = args;
    for (const hook of [...this.#preHooks.values()]) {
      const r = hook(this, a);
      if (r !== undefined) a = Array.isArray(r) ? r : [r];
    }
    let out: unknown = this.forward(...(a as In));
    for (const hook of [...this.#hooks.values()]) {
      const r = hook(this, a, out);
      if (r !== undefined) out = r;
    }
    return out as Out;
  }

  /** torch's register_forward_pre_hook: hook(module, args) runs before forward. */
  registerForwardPreHook(hook: ForwardPreHook): RemovableHandle {
    return this.#addHook(this.#preHooks as Map<number, unknown>, hook, 'registerForwardPreHook');
  }

  /** torch's register_forward_hook: hook(module, args, output) runs after forward. */
  registerForwardHook(hook: ForwardHook): RemovableHandle {
    return this.#addHook(this.#hooks as Map<number, unknown>, hook, 'registerForwardHook');
  }

  /** Counts hook registrations and removals (compiled code guards on it). */
  get hooksVersion(): number {
    return this.#hooksVersion;
  }

  #addHook(map: Map<number, unknown>, hook: unknown, op: string): RemovableHandle {
    if (typeof hook !== 'function') throw new ArgumentError(`hook must be a function, got ${describe(hook)}`, op);
    const id = nextHookId++;
    map.set(id, hook);
    this.#hooksVersion++;
    return new RemovableHandle(() => {
      if (map.delete(id)) this.#hooksVersion++;
    });
  }

  // ---- registration ----

  /** Adds a parameter slot (a plain tensor is made a Parameter; null keeps the slot empty). */
  registerParameter(name: string, t: Tensor): Tensor;
  registerParameter(name: string, t: Tensor | null): Tensor | null;
  registerParameter(name: string, t: Tensor | null): Tensor | null {
    this.#checkSlotName('registerParameter', name, 'parameter');
    const p = t === null ? null : isParameter(t) ? t : Parameter(t);
    this.#slots.set(name, 'parameter');
    this.#fields[name] = p;
    if (p && p.name === undefined) p.name = name;
    return p;
  }

  /** Adds a buffer: state that is not trained (running statistics). Kept from kiln.scope. */
  registerBuffer(name: string, t: Tensor, opts?: { persistent?: boolean }): Tensor;
  registerBuffer(name: string, t: Tensor | null, opts?: { persistent?: boolean }): Tensor | null;
  registerBuffer(name: string, t: Tensor | null, opts: { persistent?: boolean } = {}): Tensor | null {
    this.#checkSlotName('registerBuffer', name, 'buffer');
    if (t !== null) {
      t.assertAlive('registerBuffer');
      keep(t);
      if (t.name === undefined) t.name = name;
    }
    this.#slots.set(name, 'buffer');
    if (opts.persistent === false) this.#nonPersistent.add(name);
    else this.#nonPersistent.delete(name);
    this.#fields[name] = t;
    return t;
  }

  /** Adds a submodule under `name` (Sequential uses '0', '1', ...). */
  registerModule<M extends AnyModule | null>(name: string, m: M): M {
    this.#checkSlotName('registerModule', name, 'module');
    this.#slots.set(name, 'module');
    this.#fields[name] = m;
    if (m) m.namedParameters(name); // name its parameters now (a parent renames them again)
    return m;
  }

  get #fields(): Record<string, unknown> {
    return this as unknown as Record<string, unknown>;
  }

  #checkSlotName(op: string, name: string, kind: Kind): void {
    if (typeof name !== 'string' || name === '' || name.includes('.')) {
      throw new ArgumentError(`name must be a non-empty string without '.', got ${JSON.stringify(name)}`, op);
    }
    const had = this.#slots.get(name);
    if (had !== undefined && had !== kind) {
      throw new ArgumentError(`'${name}' is already a ${had} of ${this.typeName}`, op, 'use another name');
    }
    const v = this.#fields[name];
    if (had === undefined && v !== undefined && v !== null && !(v instanceof Tensor) && !(v instanceof Module)) {
      throw new ArgumentError(`'${name}' is already a property of ${this.typeName}`, op, 'use another name');
    }
  }

  /** Finds fields holding a Parameter or a Module that were assigned without registration. */
  #discover(): void {
    for (const key of Object.keys(this)) {
      if (this.#slots.has(key)) continue;
      const v = this.#fields[key];
      if (isParameter(v)) {
        this.#slots.set(key, 'parameter');
        if (v.name === undefined) v.name = key;
      } else if (v instanceof Module) this.#slots.set(key, 'module');
      else if (Array.isArray(v) && v.some((x) => x instanceof Module || isParameter(x))) {
        // a plain array is invisible to traversal: its parameters would never be trained or saved
        throw new ArgumentError(
          `field '${key}' of ${this.typeName} is an array of modules or parameters, which a Module does not track`,
          'Module',
          `use this.${key} = new nn.ModuleList([...]) (or register each one)`,
        );
      }
    }
  }

  /** This module's own non-empty slots of one kind, in registration order. */
  #own(kind: 'parameter' | 'buffer'): [string, Tensor][];
  #own(kind: 'module'): [string, AnyModule][];
  #own(kind: Kind): [string, unknown][] {
    this.#discover();
    const out: [string, unknown][] = [];
    for (const [name, k] of this.#slots) {
      if (k !== kind) continue;
      const v = this.#fields[name];
      if (v === null || v === undefined) continue;
      if (kind === 'module' ? !(v instanceof Module) : !(v instanceof Tensor)) {
        throw new ArgumentError(`${kind} '${name}' of ${this.typeName} was replaced by a ${describe(v)}`, 'Module', `assign a ${kind === 'module' ? 'Module' : 'Tensor'} or null`);
      }
      if (kind === 'parameter' && !isParameter(v)) {
        throw new ArgumentError(`parameter '${name}' of ${this.typeName} was replaced by a plain tensor`, 'Module', 'wrap it: nn.Parameter(t)');
      }
      out.push([name, v]);
    }
    return out;
  }

  // ---- traversal ----

  namedChildren(): [string, AnyModule][] {
    return this.#own('module');
  }

  children(): AnyModule[] {
    return this.namedChildren().map(([, m]) => m);
  }

  /** Every module of the tree, this one first (name ''), each once, depth first. */
  namedModules(prefix = ''): [string, AnyModule][] {
    const out: [string, AnyModule][] = [];
    const seen = new Set<AnyModule>();
    const walk = (m: AnyModule, name: string) => {
      if (seen.has(m)) return;
      seen.add(m);
      out.push([name, m]);
      for (const [n, c] of m.namedChildren()) walk(c, name ? `${name}.${n}` : n);
    };
    walk(this, prefix);
    return out;
  }

  modules(): AnyModule[] {
    return this.namedModules().map(([, m]) => m);
  }

  /** Parameters with dotted names ('0.weight', 'layers.1.bias'); shared ones listed once. */
  namedParameters(prefix = '', recurse = true): [string, Tensor][] {
    return this.#namedMembers('parameter', prefix, recurse);
  }

  parameters(recurse = true): Tensor[] {
    return this.namedParameters('', recurse).map(([, p]) => p);
  }

  namedBuffers(prefix = '', recurse = true): [string, Tensor][] {
    return this.#namedMembers('buffer', prefix, recurse);
  }

  buffers(recurse = true): Tensor[] {
    return this.namedBuffers('', recurse).map(([, b]) => b);
  }

  #namedMembers(kind: 'parameter' | 'buffer', prefix: string, recurse: boolean): [string, Tensor][] {
    const out: [string, Tensor][] = [];
    const seen = new Set<Tensor>();
    const mods: [string, AnyModule][] = recurse ? this.namedModules(prefix) : [[prefix, this]];
    for (const [mName, m] of mods) {
      for (const [n, t] of m.#own(kind)) {
        if (seen.has(t)) continue;
        seen.add(t);
        const full = mName ? `${mName}.${n}` : n;
        // the name seen from the highest ancestor wins: it is the one users and errors see
        if (t.name === undefined || full.endsWith(`.${t.name}`)) t.name = full;
        out.push([full, t]);
      }
    }
    return out;
  }

  /** The submodule at a dotted path ('' is this module). */
  getSubmodule(target: string): AnyModule {
    if (target === '') return this;
    let m: AnyModule = this;
    for (const part of target.split('.')) {
      const next = m.namedChildren().find(([n]) => n === part);
      if (!next) throw new ArgumentError(`${m.typeName} has no submodule '${part}' (in '${target}')`, 'getSubmodule', `children: ${m.namedChildren().map(([n]) => n).join(', ') || 'none'}`);
      m = next[1];
    }
    return m;
  }

  /** Calls fn on every submodule, then on this one (torch's apply, for custom inits). */
  apply(fn: (m: AnyModule) => void): this {
    for (const c of this.children()) c.apply(fn);
    fn(this);
    return this;
  }

  // ---- modes and gradients ----

  /** Sets training mode on this module and every submodule. */
  train(mode = true): this {
    this.training = mode;
    for (const c of this.children()) c.train(mode);
    return this;
  }

  eval(): this {
    return this.train(false);
  }

  /** Turns gradient tracking of every parameter on or off (freezing). */
  requiresGrad_(requiresGrad = true): this {
    for (const p of this.parameters()) p.requiresGrad = requiresGrad;
    return this;
  }

  /** Drops every parameter's gradient (setToNone, torch's default) or zeros it in place. */
  zeroGrad(setToNone = true): void {
    for (const p of this.parameters()) {
      if (setToNone) {
        // assigned even when already null: a compiled step then knows the grad is cleared
        p.grad?.dispose();
        p.grad = null;
      } else if (p.grad) {
        const g = p.grad;
        noGrad(() => assign(g, 0));
      }
    }
  }

  // ---- state dict ----

  /**
   * Parameters and persistent buffers under torch's key names, in torch's order (own
   * parameters, own buffers, then each child). The values are the live tensors, not
   * copies: read or save them, do not dispose them.
   */
  stateDict(prefix = ''): Record<string, Tensor> {
    const out: Record<string, Tensor> = {};
    this.#saveTo(out, prefix);
    return out;
  }

  #saveTo(out: Record<string, Tensor>, prefix: string): void {
    for (const [n, p] of this.#own('parameter')) out[prefix + n] = p;
    for (const [n, b] of this.#own('buffer')) if (!this.#nonPersistent.has(n)) out[prefix + n] = b;
    for (const [n, c] of this.#own('module')) c.#saveTo(out, `${prefix}${n}.`);
  }

  /**
   * Copies `sd` into this module's tensors in place (so optimizers and compiled
   * programs that hold them see the new values). Checks everything before writing
   * anything: a mismatch throws a StateDictError and leaves the module unchanged.
   */
  loadStateDict(sd: Record<string, Tensor>, opts: LoadStateDictOptions = {}): LoadStateDictResult {
    const strict = opts.strict ?? true;
    const own = this.stateDict();
    const missingKeys = Object.keys(own).filter((k) => !Object.hasOwn(sd, k));
    const unexpectedKeys = Object.keys(sd).filter((k) => !Object.hasOwn(own, k));
    const bad: string[] = [];
    let transposed = false;
    for (const [k, dst] of Object.entries(own)) {
      if (!Object.hasOwn(sd, k)) continue;
      const src = sd[k];
      if (!(src instanceof Tensor)) bad.push(`${k}: expected a tensor ${fmtShape(dst.shape)}, got ${describe(src)}`);
      else if (src.isDisposed) bad.push(`${k}: the tensor was disposed`);
      else if (!shapesEqual(src.shape, dst.shape)) {
        bad.push(`${k}: expected ${fmtShape(dst.shape)}, got ${fmtShape(src.shape)}`);
        if (src.ndim === 2 && src.shape[0] === dst.shape[1] && src.shape[1] === dst.shape[0]) transposed = true;
      }
    }
    const keyProblems = strict && (missingKeys.length > 0 || unexpectedKeys.length > 0);
    if (bad.length > 0 || keyProblems) {
      const lines = [`state dict does not match ${this.typeName}:`];
      if (missingKeys.length) lines.push(`  missing keys (${missingKeys.length}): ${missingKeys.join(', ')}`);
      if (unexpectedKeys.length) lines.push(`  unexpected keys (${unexpectedKeys.length}): ${unexpectedKeys.join(', ')}`);
      if (bad.length) lines.push(`  mis-shaped keys (${bad.length}):`, ...bad.map((b) => `    ${b}`));
      throw new StateDictError(lines.join('\n'), 'loadStateDict', loadHint(missingKeys, unexpectedKeys, bad.length > 0, transposed, keyProblems));
    }
    noGrad(() => {
      for (const [k, dst] of Object.entries(own)) if (Object.hasOwn(sd, k)) assign(dst, sd[k]!);
    });
    return { missingKeys, unexpectedKeys };
  }

  // ---- printing ----

  /** The class name shown by toString (override when the JS name is not the torch one). */
  get typeName(): string {
    return this.constructor.name;
  }

  /** One-line description of this module's own settings, as torch's extra_repr. */
  extraRepr(): string {
    return '';
  }

  /** The module tree as torch prints it. */
  toString(): string {
    const extra = this.extraRepr();
    const extraLines = extra ? extra.split('\n') : [];
    const childLines = this.namedChildren().map(([n, c]) => `(${n}): ${c.toString().split('\n').join('\n  ')}`);
    const lines = [...extraLines, ...childLines];
    let s = `${this.typeName}(`;
    if (lines.length === 1 && childLines.length === 0) s += extraLines[0];
    else if (lines.length) s += `\n  ${lines.join('\n  ')}\n`;
    return `${s})`;
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }
}

let nextHookId = 0;

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v !== 'object') return typeof v;
  return (v as object).constructor?.name ?? 'object';
}

function loadHint(missing: string[], unexpected: string[], misShaped: boolean, transposed: boolean, keyProblems: boolean): string {
  const hints: string[] = [];
  if (keyProblems) {
    const extra = commonPrefix(unexpected, missing);
    const lacking = commonPrefix(missing, unexpected);
    if (extra) hints.push(`the state dict's keys carry an extra prefix '${extra}': strip it from every key`);
    else if (lacking) hints.push(`the state dict lacks the prefix '${lacking}': it was saved from a submodule; load it with model.getSubmodule('${lacking.slice(0, -1)}').loadStateDict(sd)`);
    else hints.push('keys must equal this module\'s stateDict() names; pass { strict: false } to load a partial state dict');
  }
  if (transposed) hints.push('a [in, out] vs [out, in] swap looks transposed: kiln, like torch, stores Linear weights as [out, in] (transpose the tensor before loading)');
  else if (misShaped) hints.push('the tensors come from a model built with other sizes: construct the module with the sizes of the checkpoint (features, channels, vocabulary); mis-shaped keys fail even with strict: false');
  return hints.join('; ');
}

/** A prefix P (ending in '.') with every key of `longer` equal to P + some key of `shorter`. */
function commonPrefix(longer: string[], shorter: string[]): string | undefined {
  if (longer.length === 0 || shorter.length === 0) return undefined;
  const set = new Set(shorter);
  let prefix: string | undefined;
  for (const k of longer) {
    const match = shorter.find((s) => k.endsWith(`.${s}`) && set.has(s));
    if (!match) return undefined;
    const p = k.slice(0, k.length - match.length);
    if (prefix !== undefined && p !== prefix) return undefined;
    prefix = p;
  }
  return prefix;
}
