// The optimizer base. The contract every optimizer keeps, so that the compiler can trace
// step() once and replay it without running its JavaScript again:
//  - updates are in place on parameters and state (assign / copy_), under noGrad;
//  - the learning rate is read only as the group's lrTensor (see param-group.ts);
//  - per-parameter state (momentum, moments, step counts) is tensors, created with
//    zeros on the first step and kept; counters advance in place on the tensor;
//  - step() never reads a tensor value into JS (no item(), no dataSync()).
// Other hyperparameters (momentum, betas, weight decay) are JS numbers: a compiled
// step bakes them in.

import '../ops/tensor-methods.js';
import { ArgumentError, StateDictError, fmtShape } from '../core/errors.js';
import { shapesEqual } from '../core/shape.js';
import { Tensor, isTensor } from '../tensor/tensor.js';
import { keep, scope } from '../core/scope.js';
import { enableGrad, noGrad } from '../autograd/grad-mode.js';
import { assign } from '../ops/inplace.js';
import { copy } from '../ops/pointwise.js';
import { ParamGroup } from './param-group.js';

/** A group as passed to the constructor: its parameters and hyperparameter overrides. */
export type ParamGroupInit<H> = { params: Iterable<Tensor>; lr?: number } & Partial<H>;

export type ParamsArg<H> = Iterable<Tensor> | readonly ParamGroupInit<H>[];

/** A group: lr (tensor-backed) and params, plus the optimizer's hyperparameters as fields. */
export type Group<H> = ParamGroup & ([H] extends [never] ? unknown : H);

/** torch's optimizer state_dict layout: state by parameter index, groups with param indices. */
export interface OptimizerStateDict<H> {
  state: Record<number, Record<string, Tensor>>;
  paramGroups: (H & { lr: number; params: number[] })[];
}

export abstract class Optimizer<H extends object = object> {
  readonly paramGroups: Group<H>[] = [];
  /** per-parameter state tensors (kept), created on the first step */
  readonly state = new Map<Tensor, Record<string, Tensor>>();
  readonly defaults: H & { lr: number };

  constructor(params: ParamsArg<H>, defaults: H & { lr: number }) {
    this.defaults = defaults;
    const list = [...(params as Iterable<Tensor | ParamGroupInit<H>>)];
    if (list.length === 0) throw new ArgumentError('got an empty parameter list', this.constructor.name, 'pass model.parameters()');
    if (list.every((x) => x instanceof Tensor)) this.addParamGroup({ params: list as Tensor[] } as unknown as ParamGroupInit<H>);
    else if (list.every((x) => !(x instanceof Tensor) && typeof x === 'object' && x !== null && 'params' in x)) {
      for (const g of list as ParamGroupInit<H>[]) this.addParamGroup(g);
    } else throw new ArgumentError('params must be tensors, or groups { params, ...options }, not a mix', this.constructor.name);
  }

  /** Checks a group's hyperparameters (called for every group). */
  protected abstract validate(h: H): void;

  /** Updates the parameters of one group (under noGrad, inside a scope). */
  protected abstract updateGroup(group: Group<H>): void;

  addParamGroup(init: ParamGroupInit<H>): void {
    const op = this.constructor.name;
    const params = [...init.params];
    const seen = new Set(this.paramGroups.flatMap((g) => g.params));
    for (const [i, p] of params.entries()) {
      if (!(p instanceof Tensor)) throw new ArgumentError(`parameter ${i} is not a Tensor`, op);
      p.assertAlive(op);
      if (!p.isLeaf) throw new ArgumentError(`can't optimize a non-leaf tensor${p.name ? ` ('${p.name}')` : ''}`, op, 'optimize the parameters themselves (nn.Parameter), not values computed from them');
      if (seen.has(p)) throw new ArgumentError(`parameter ${p.name ? `'${p.name}'` : i} appears in more than one group (or twice)`, op);
      seen.add(p);
    }
    const { params: _p, lr, ...rest } = init as ParamGroupInit<H> & Record<string, unknown>;
    const hyper = { ...this.defaults, ...rest } as H & { lr: number };
    delete (hyper as Partial<{ lr: number }>).lr;
    this.validate(hyper);
    const group = Object.assign(new ParamGroup(params, lr ?? this.defaults.lr), hyper) as Group<H>;
    this.paramGroups.push(group);
  }

  /** Drops every gradient (setToNone, torch's default) or zeros it in place. */
  zeroGrad(setToNone = true): void {
    for (const g of this.paramGroups) {
      for (const p of g.params) {
        if (setToNone) {
          // assigned even when already null: a compiled step then knows the grad is cleared
          p.grad?.dispose();
          p.grad = null;
        } else if (p.grad) {
          const grad = p.grad;
          noGrad(() => assign(grad, 0));
        }
      }
    }
  }

  /**
   * One update of every parameter that has a gradient. With a closure (which should
   * zero the grads, compute the loss and call backward), runs it first and returns its loss.
   */
  step(closure?: () => Tensor): Tensor | undefined {
    const loss = closure ? enableGrad(closure) : undefined;
    noGrad(() =>
      scope(() => {
        for (const g of this.paramGroups) this.updateGroup(g);
      }, isTensor),
    );
    return loss;
  }

  /** The state of p, created (zeros, kept) on first use. */
  protected stateFor(p: Tensor, init: () => Record<string, Tensor>): Record<string, Tensor> {
    let s = this.state.get(p);
    if (!s) {
      s = init();
      for (const [k, t] of Object.entries(s)) {
        keep(t);
        t.name = `${p.name ?? 'param'}.${k}`;
      }
      this.state.set(p, s);
    }
    return s;
  }

  // ---- state dict ----

  /** torch's layout; the state values are the live tensors (save them, do not dispose them). */
  stateDict(): OptimizerStateDict<H> {
    const state: Record<number, Record<string, Tensor>> = {};
    const paramGroups: OptimizerStateDict<H>['paramGroups'] = [];
    let index = 0;
    for (const g of this.paramGroups) {
      const ids: number[] = [];
      for (const p of g.params) {
        const s = this.state.get(p);
        if (s) state[index] = { ...s };
        ids.push(index++);
      }
      paramGroups.push({ ...this.hyperparameters(g), lr: g.lr, params: ids });
    }
    return { state, paramGroups };
  }

  /**
   * Checks that `sd` fits this optimizer (groups, parameter counts, hyperparameters, state
   * shapes) without changing anything; returns the parameter of each state index.
   */
  checkStateDict(sd: OptimizerStateDict<H>): Tensor[] {
    const op = 'Optimizer.loadStateDict';
    if (!sd || !Array.isArray(sd.paramGroups) || typeof sd.state !== 'object' || sd.state === null) {
      throw new StateDictError('an optimizer state dict is { state, paramGroups }', op);
    }
    if (sd.paramGroups.length !== this.paramGroups.length) {
      throw new StateDictError(`the state dict has ${sd.paramGroups.length} parameter groups, this optimizer ${this.paramGroups.length}`, op);
    }
    const byIndex: Tensor[] = [];
    sd.paramGroups.forEach((sg, i) => {
      const g = this.paramGroups[i]!;
      if (!Array.isArray(sg.params) || sg.params.length !== g.params.length || !sg.params.every((id) => Number.isInteger(id) && id >= 0)) {
        throw new StateDictError(`group ${i} has ${Array.isArray(sg.params) ? sg.params.length : 'no'} parameters in the state dict, ${g.params.length} here`, op, 'build the optimizer over the same parameters, in the same order');
      }
      sg.params.forEach((id, j) => (byIndex[id] = g.params[j]!));
      const { params: _p, lr, ...hyper } = sg;
      if (typeof lr !== 'number' || !(lr >= 0) || !Number.isFinite(lr)) throw new StateDictError(`group ${i}: lr ${JSON.stringify(lr)} is not a finite number >= 0`, op);
      // only this optimizer's hyperparameters, each of its default's kind (a state dict may come from a file)
      const own = this.hyperparameters(g) as Record<string, unknown>;
      for (const [k, v] of Object.entries(hyper)) {
        if (!Object.hasOwn(own, k)) throw new StateDictError(`group ${i}: '${k}' is not a hyperparameter of ${this.constructor.name}`, op, `its hyperparameters: lr, ${Object.keys(own).join(', ')}`);
        if (kindOf(v) !== kindOf(own[k])) throw new StateDictError(`group ${i}: '${k}' is ${JSON.stringify(v)}, expected a ${kindOf(own[k])}`, op);
      }
      this.validate({ ...own, ...hyper } as H);
    });
    for (const [id, entries] of Object.entries(sd.state)) {
      const p = byIndex[Number(id)];
      if (!p) throw new StateDictError(`state for parameter ${id}, which no group lists`, op);
      for (const [k, t] of Object.entries(entries)) {
        if (!(t instanceof Tensor) || t.isDisposed) throw new StateDictError(`state '${k}' of parameter ${id} is not a live tensor`, op);
        if (t.ndim !== 0 && !shapesEqual(t.shape, p.shape)) {
          throw new StateDictError(`state '${k}' of parameter ${id}${p.name ? ` ('${p.name}')` : ''} is ${fmtShape(t.shape)}, the parameter ${fmtShape(p.shape)}`, op);
        }
      }
    }
    return byIndex;
  }

  /** Copies hyperparameters and state in place (existing state tensors keep their identity); checks everything first. */
  loadStateDict(sd: OptimizerStateDict<H>): void {
    const byIndex = this.checkStateDict(sd);
    noGrad(() => {
      sd.paramGroups.forEach((sg, i) => {
        const g = this.paramGroups[i]!;
        const { params: _p, lr, ...hyper } = sg;
        Object.assign(g, hyper);
        g.lr = lr;
        const loaded = hyper as unknown as Record<string, number> & { betas?: number[] };
        for (const [name, t] of g.scheduled) {
          const v = name === 'beta1' ? loaded.betas?.[0] : loaded[name];
          if (typeof v === 'number') assign(t, v);
        }
      });
      for (const [id, entries] of Object.entries(sd.state)) {
        const p = byIndex[Number(id)]!;
        const cur = this.state.get(p) ?? {};
        for (const [k, t] of Object.entries(entries)) {
          if (cur[k] && shapesEqual(cur[k]!.shape, t.shape)) assign(cur[k]!, t);
          else {
            cur[k]?.dispose();
            cur[k] = keep(copy(t));
          }
        }
        this.state.set(p, cur);
      }
    });
  }

  /** A group's hyperparameters other than lr and params (scheduled ones read from their tensors). */
  protected hyperparameters(g: Group<H>): H {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(this.defaults)) if (k !== 'lr') out[k] = (g as unknown as Record<string, unknown>)[k];
    for (const [name, t] of g.scheduled) {
      const v = t.item();
      if (name === 'beta1') out.betas = [v, (out.betas as number[])[1]];
      else out[name] = v;
    }
    return out as H;
  }

  toString(): string {
    const lines = [`${this.constructor.name} (`];
    this.paramGroups.forEach((g, i) => {
      lines.push(`Parameter Group ${i}`, `    lr: ${g.lr}`);
      for (const [k, v] of Object.entries(this.hyperparameters(g))) lines.push(`    ${k}: ${Array.isArray(v) ? `[${v.join(', ')}]` : v}`);
    });
    lines.push(')');
    return lines.join('\n');
  }
}

/** number, boolean, or an array of n numbers (betas): what a hyperparameter may be. */
function kindOf(v: unknown): string {
  if (Array.isArray(v)) return v.every((x) => typeof x === 'number') ? `list of ${v.length} numbers` : 'list';
  return typeof v;
}
