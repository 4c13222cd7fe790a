// Guards: the facts a compiled entry assumed. A call whose guards all hold replays the
// entry; the first failing guard is the recompile reason, worded like torch's.

import { isGradEnabled } from '../../autograd/grad-mode.js';
import { fmtShape } from '../../core/errors.js';
import { Tensor } from '../../tensor/tensor.js';
import type { Graph } from './graph.js';

export interface Guard {
  readonly text: string;
  /** null when it holds, else why not; shape guards record their size facts in `call` */
  check(args: readonly unknown[], call: GuardCall): string | null;
}

/** What checking one call's guards gathers besides the verdict. */
export interface GuardCall {
  /** values of the size symbols seen so far (dims sharing a symbol must agree) */
  readonly symSizes: number[];
  /** the size change behind a failed shape guard (automatic dynamic reads it) */
  change: SizeChange | null;
}

const newCall = (): GuardCall => ({ symSizes: [], change: null });

/** Reads an argument by path ('x', 'batch[1]', 'opts.lr'). */
export type ArgReader = (args: readonly unknown[]) => unknown;

export interface ArgLeaf {
  readonly path: string;
  readonly read: ArgReader;
  readonly value: unknown;
}

/** Walks args (arrays and plain objects) and lists every leaf with its path. */
export function argLeaves(args: readonly unknown[], names: readonly string[]): ArgLeaf[] {
  const out: ArgLeaf[] = [];
  const walk = (v: unknown, path: string, read: ArgReader, depth: number) => {
    if (depth < 6 && Array.isArray(v)) {
      out.push({ path, read, value: { arrayLength: v.length } });
      v.forEach((x, i) => walk(x, `${path}[${i}]`, (a) => (read(a) as unknown[] | undefined)?.[i], depth + 1));
    } else if (depth < 6 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
      const keys = Object.keys(v);
      out.push({ path, read, value: { keys: keys.join(',') } });
      for (const k of keys) walk((v as Record<string, unknown>)[k], `${path}.${k}`, (a) => (read(a) as Record<string, unknown> | undefined)?.[k], depth + 1);
    } else out.push({ path, read, value: v });
  };
  args.forEach((a, i) => walk(a, names[i] ?? `arg${i}`, (xs) => xs[i], 0));
  return out;
}

/** Dynamic dims of one tensor argument: dim -> its symbol and range (see dynamic.ts). */
export type DynDims = ReadonlyMap<number, { readonly sym: number; readonly name: string; readonly min: number; readonly max: number }>;

/** A tensor argument's dim that differs from the size the entry was traced at. */
export interface SizeChange { readonly path: string; readonly dim: number; readonly expected: number; readonly got: number }

function tensorGuards(label: string, read: ArgReader, t: Tensor, path?: string, dyn?: DynDims): Guard[] {
  const shape = [...t.shape], strides = [...t.strides], offset = t.offset, dtype = t.dtype, backend = t.backendName, rg = t.requiresGrad;
  const shapeText = dyn ? `[${shape.map((s, d) => dyn.get(d)?.name ?? String(s)).join(', ')}]` : fmtShape(shape);
  const ranges = dyn ? [...dyn.values()].map((r) => `${r.min} <= ${r.name}${r.max < Number.MAX_SAFE_INTEGER ? ` <= ${r.max}` : ''}`) : [];
  return [{
    text: dyn
      ? `${label}: ${dtype}${shapeText} contiguous (${[...new Set(ranges)].join(', ')}) on ${backend}${rg ? ', requiresGrad' : ''}`
      : `${label}: ${dtype}${fmtShape(shape)} strides ${fmtShape(strides)}${offset ? ` offset ${offset}` : ''} on ${backend}${rg ? ', requiresGrad' : ''}`,
    check: (args, call) => {
      const v = read(args);
      if (!(v instanceof Tensor)) return `${label} is no longer a tensor`;
      if (v.isDisposed) return `${label} was disposed`;
      if (v.ndim !== shape.length) return `${label} rank changed: expected ${shape.length}, got ${v.ndim}`;
      for (let d = 0; d < shape.length; d++) {
        const sd = dyn?.get(d);
        const got = v.shape[d]!;
        if (sd) {
          // 0 and 1 were never assumed: the trace took this dim as a general size
          if (got < sd.min || got > sd.max) return `${label} dim ${d} = ${got} is outside the range the dynamic trace assumed for ${sd.name} (${sd.min}..${sd.max < Number.MAX_SAFE_INTEGER ? sd.max : 'inf'})${got <= 1 ? '; sizes 0 and 1 are specialized (0/1 specialization)' : ''}`;
          const prev = call.symSizes[sd.sym];
          if (prev === undefined) call.symSizes[sd.sym] = got;
          else if (prev !== got) return `${label} dim ${d} = ${got} but ${sd.name} = ${prev} from another dim (the trace assumed they are equal)`;
          continue;
        }
        if (got !== shape[d]) {
          if (path !== undefined) call.change = { path, dim: d, expected: shape[d]!, got };
          return `${label} dim ${d} changed: expected ${shape[d]}, got ${got}`;
        }
      }
      if (v.dtype !== dtype) return `${label} dtype changed: expected ${dtype}, got ${v.dtype}`;
      if (dyn) {
        if (!v.isContiguous || v.offset !== 0) return `${label} is not contiguous (the dynamic trace assumed a contiguous layout)`;
      } else for (let d = 0; d < strides.length; d++) if (v.strides[d] !== strides[d] && shape[d] !== 1) return `${label} strides changed: expected ${fmtShape(strides)}, got ${fmtShape(v.strides)}`;
      if (!dyn && v.offset !== offset) return `${label} storage offset changed: expected ${offset}, got ${v.offset}`;
      if (v.backendName !== backend) return `${label} backend changed: expected ${backend}, got ${v.backendName}`;
      if (v.requiresGrad !== rg) return `${label} requiresGrad changed: expected ${rg}, got ${v.requiresGrad}`;
      return null;
    },
  }];
}

/** Guards on the arguments, captured tensors, grad mode and module training flags. */
export function buildGuards(args: readonly unknown[], names: readonly string[], graph: Graph, modules: readonly { training: boolean; readonly hooksVersion?: number; constructor: { name: string } }[], dynamic?: ReadonlyMap<string, DynDims>): Guard[] {
  const guards: Guard[] = [];
  for (const leaf of argLeaves(args, names)) {
    const v = leaf.value;
    if (v instanceof Tensor) {
      guards.push(...tensorGuards(`arg ${leaf.path}`, leaf.read, v, leaf.path, dynamic?.get(leaf.path)));
    } else if (typeof v === 'object' && v !== null && ('arrayLength' in v || 'keys' in v)) {
      const want = JSON.stringify(v);
      guards.push({
        text: `arg ${leaf.path} structure ${want}`,
        check: (a) => {
          const x = leaf.read(a);
          const got = Array.isArray(x) ? JSON.stringify({ arrayLength: x.length }) : x && typeof x === 'object' ? JSON.stringify({ keys: Object.keys(x).join(',') }) : String(x);
          return got === want ? null : `arg ${leaf.path} structure changed: expected ${want}, got ${got}`;
        },
      });
    } else if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean' || v === undefined || v === null) {
      guards.push({
        text: `arg ${leaf.path} == ${JSON.stringify(v) ?? 'undefined'}`,
        check: (a) => {
          const x = leaf.read(a);
          return Object.is(x, v) ? null : `arg ${leaf.path} changed: expected ${JSON.stringify(v) ?? 'undefined'}, got ${JSON.stringify(x) ?? 'undefined'}`;
        },
      });
    } else {
      guards.push({
        text: `arg ${leaf.path} is the same object`,
        check: (a) => (leaf.read(a) === v ? null : `arg ${leaf.path} is a different object`),
      });
    }
  }
  const readers = new Map(argLeaves(args, names).map((l) => [l.path, l.read]));
  for (const n of graph.inputNodes) {
    const src = n.source!;
    if (src.kind === 'arg' && src.grad) {
      // an argument's .grad the function accumulates into: it must still be there, alike
      const read = readers.get(src.path)!;
      guards.push(...tensorGuards(`arg ${src.path}.grad`, (a) => (read(a) as Tensor | undefined)?.grad, (read(args) as Tensor).grad!));
    }
    if (src.kind === 'ref') guards.push(...tensorGuards(`captured ${src.label}`, () => src.tensor, src.tensor));
    if (src.kind === 'grad') {
      const g = src.leaf.grad!;
      guards.push(...tensorGuards(`captured ${src.label}`, () => src.leaf.grad, g));
    }
  }
  const grad = isGradEnabled();
  guards.push({ text: `grad mode ${grad ? 'enabled' : 'disabled'}`, check: () => (isGradEnabled() === grad ? null : `grad mode changed: expected ${grad ? 'enabled' : 'disabled'}, got ${grad ? 'disabled' : 'enabled'}`) });
  modules.forEach((m, i) => {
    const t = m.training;
    guards.push({ text: `module ${i} (${m.constructor.name}).training == ${t}`, check: () => (m.training === t ? null : `module ${m.constructor.name} training flag changed: expected ${t}, got ${m.training}`) });
    // forward hooks run while tracing only: one added or removed must retrace
    const h = m.hooksVersion;
    if (h !== undefined) guards.push({ text: `module ${i} (${m.constructor.name}).hooksVersion == ${h}`, check: () => (m.hooksVersion === h ? null : `module ${m.constructor.name} forward hooks changed`) });
  });
  return guards;
}

/**
 * Guards on the configuration modules keep in plain properties (a scale, eps, a flag, a mode
 * string, kernel sizes): replay does not run forward(), so a trace read them once; as Dynamo
 * guards module attributes, a change recompiles with the attribute named instead of replaying
 * the stale value. Own enumerable numbers, strings, booleans and number arrays, per module.
 */
export function moduleAttributeGuards(modules: readonly (readonly [string, object])[]): Guard[] {
  const guards: Guard[] = [];
  for (const [path, m] of modules) {
    const attrs = Object.entries(m).filter(([k, v]) => k !== 'training' && isPlainConfig(v)).map(([k, v]) => [k, Array.isArray(v) ? [...v] : v] as const);
    if (attrs.length === 0) continue;
    const label = `module ${path || '(root)'} (${m.constructor.name})`;
    const shown = attrs.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ');
    guards.push({
      text: `${label} attributes ${shown}`,
      check: () => {
        const o = m as Record<string, unknown>;
        for (const [k, v] of attrs) {
          const now = o[k];
          const same = Array.isArray(v) ? Array.isArray(now) && now.length === v.length && v.every((x, i) => Object.is(x, now[i])) : Object.is(now, v);
          if (!same) return `${label}.${k} changed: expected ${JSON.stringify(v)}, got ${JSON.stringify(now)} (the trace read it; replay would reuse the old value)`;
        }
        return null;
      },
    });
  }
  return guards;
}

function isPlainConfig(v: unknown): boolean {
  return typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean' || (Array.isArray(v) && v.length <= 16 && v.every((x) => typeof x === 'number'));
}

/** The first failing guard's reason, or null when every guard holds. */
export function checkGuards(guards: readonly Guard[], args: readonly unknown[]): string | null {
  const call = newCall();
  for (const g of guards) {
    const r = g.check(args, call);
    if (r) return r;
  }
  return null;
}

/** Every size change the guards see in this call (all tensors, not only the first failing one). */
export function allSizeChanges(guards: readonly Guard[], args: readonly unknown[]): SizeChange[] {
  const out: SizeChange[] = [];
  for (const g of guards) {
    const call = newCall();
    g.check(args, call);
    if (call.change) out.push(call.change);
  }
  return out;
}

/** Parameter names of a function, for readable guard and recompile messages. */
export function paramNames(fn: (...a: never[]) => unknown): string[] {
  const src = Function.prototype.toString.call(fn);
  // `x => ...` first: otherwise the first parenthesis may belong to the body
  const m = /^\s*(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(src) ?? /^[^(]*\(([^)]*)\)/.exec(src);
  if (!m) return [];
  return m[1]!.split(',').map((p) => p.trim().replace(/[=:].*$/, '').replace(/^\.\.\./, '').trim()).filter((p) => /^[A-Za-z_$][\w$]*$/.test(p));
}
