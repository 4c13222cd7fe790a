// Random op programs for property tests of the compiler (shared by the js, wasm, native and
// webgpu tests): a pool of tensors, a list of ops that pick operands from it (invalid
// combinations skipped); and the property itself, compiled equals eager, for the sync backends.

import assert from 'node:assert/strict';
import { assertCompiledRan } from './compiled-ran.js';
import fc from 'fast-check';
import * as kiln from 'kilnjs';

export type T = kiln.Tensor;
const UNARY: ((x: T) => T)[] = [
  (x) => x.neg(), (x) => x.abs(), (x) => x.tanh(), (x) => x.sigmoid(), (x) => x.relu(), (x) => x.sin(),
  (x) => x.gelu('tanh'), (x) => x.silu(), (x) => x.softplus(), (x) => x.mul(x), (x) => x.abs().add(1).log(),
  (x) => x.abs().add(0.5).sqrt(), (x) => x.tanh().exp(), (x) => x.clamp(-0.5, 0.7),
];
const BINARY: ((a: T, b: T) => T)[] = [
  (a, b) => a.add(b), (a, b) => a.sub(b), (a, b) => a.mul(b), (a, b) => a.maximum(b), (a, b) => a.minimum(b),
  (a, b) => a.div(b.abs().add(1)), (a, b) => kiln.where(a.gt(b), a, b.mul(0.5)),
];
const REDUCE: ((x: T, d: number, k: boolean) => T)[] = [
  (x, d, k) => x.sum(d, k), (x, d, k) => x.amax(d, k), (x, d, k) => x.amin(d, k), (x, d, k) => x.mean(d, k),
  (x, d) => x.softmax(d), (x, d) => x.logSoftmax(d), (x, d, k) => x.logsumexp(d, k), (x, d, k) => x.argmax(d, k).float(),
];

export type Op =
  | { k: 'unary'; f: number; a: number }
  | { k: 'binary'; f: number; a: number; b: number }
  | { k: 'reduce'; f: number; a: number; dim: number; keep: boolean }
  | { k: 'transpose'; a: number }
  | { k: 'slice'; a: number; dim: number; start: number }
  | { k: 'matmul'; a: number }
  | { k: 'reshape'; a: number };

export const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant('unary' as const), f: fc.nat(UNARY.length - 1), a: fc.nat(20) }),
  fc.record({ k: fc.constant('binary' as const), f: fc.nat(BINARY.length - 1), a: fc.nat(20), b: fc.nat(20) }),
  fc.record({ k: fc.constant('reduce' as const), f: fc.nat(REDUCE.length - 1), a: fc.nat(20), dim: fc.integer({ min: -3, max: 2 }), keep: fc.boolean() }),
  fc.record({ k: fc.constant('transpose' as const), a: fc.nat(20) }),
  fc.record({ k: fc.constant('slice' as const), a: fc.nat(20), dim: fc.nat(2), start: fc.nat(2) }),
  fc.record({ k: fc.constant('matmul' as const), a: fc.nat(20) }),
  fc.record({ k: fc.constant('reshape' as const), a: fc.nat(20) }),
);

export function program(ops: readonly Op[], nOut: number) {
  return (...inputs: T[]): T[] => {
    const pool = [...inputs];
    const w = inputs[inputs.length - 1]!;
    const pick = (i: number) => pool[i % pool.length]!;
    for (const op of ops) {
      try {
        let r: T;
        switch (op.k) {
          case 'unary': r = UNARY[op.f]!(pick(op.a)); break;
          case 'binary': r = BINARY[op.f]!(pick(op.a), pick(op.b)); break;
          case 'reduce': { const x = pick(op.a); if (x.ndim === 0) continue; r = REDUCE[op.f]!(x, op.dim % x.ndim, op.keep); break; }
          case 'transpose': { const x = pick(op.a); if (x.ndim < 2) continue; r = x.transpose(-1, -2); break; }
          case 'slice': { const x = pick(op.a); if (x.ndim === 0) continue; const d = op.dim % x.ndim; r = x.slice(d, Math.min(op.start, x.shape[d]! - 1)); break; }
          case 'matmul': { const x = pick(op.a); if (x.ndim === 0 || x.shape[x.ndim - 1] !== w.shape[0]) continue; r = x.matmul(w); break; }
          case 'reshape': r = pick(op.a).reshape(-1); break;
        }
        pool.push(r);
      } catch (e) {
        if (!(e instanceof kiln.KilnError)) throw e;
      }
    }
    return pool.slice(-nOut);
  };
}

export const shapeArb = fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 2, max: 5 }));

/** A random graph: input sizes [a, b, c], its ops, how many outputs, the seed of its inputs. */
export type Graph = [[number, number, number], Op[], number, number];
export const graphArb: fc.Arbitrary<Graph> = fc.tuple(shapeArb, fc.array(opArb, { minLength: 1, maxLength: 14 }), fc.integer({ min: 1, max: 3 }), fc.nat(1000));

/**
 * Compiles graph `g` with `opts` and checks its outputs on trace and replay against eager
 * (|compiled - eager| <= 1e-5 * max |eager| + 1e-6, NaNs matching). `check` false: one call,
 * unchecked (a trace inside nativeBatch). Failure messages name the backend and the ops.
 */
export function checkGraph([[a, b, c], ops, nOut, seed]: Graph, opts: kiln.CompileOptions, check = true): void {
  kiln.scope(() => {
    kiln.compiler.reset();
    kiln.manualSeed(seed);
    const inputs = [kiln.randn([a, b, c]), kiln.randn([b, c]), kiln.randn([1, c]), kiln.randn([c, c])];
    const fn = program(ops, nOut);
    const eager = fn(...inputs);
    const compiled = kiln.compile(fn, opts);
    const on = opts.backend ? `${opts.backend} ` : '';
    for (const call of check ? ['trace', 'replay'] : ['trace']) {
      const got = compiled(...inputs);
      if (!check) continue;
      assert.equal(got.length, eager.length);
      got.forEach((g, i) => {
        const e = eager[i]!;
        assert.deepEqual(g.shape, e.shape, `${call} output ${i} shape`);
        const x = g.dataSync(), y = e.dataSync();
        let scale = 1e-3;
        for (let k = 0; k < y.length; k++) scale = Math.max(scale, Math.abs(y[k]!));
        for (let k = 0; k < y.length; k++) {
          const bad = !(Math.abs(x[k]! - y[k]!) <= 1e-5 * scale + 1e-6) && !(Number.isNaN(x[k]!) && Number.isNaN(y[k]!)) && x[k] !== y[k];
          if (bad) assert.fail(`${on}${call} output ${i}[${k}]: compiled ${x[k]} vs eager ${y[k]} (ops ${JSON.stringify(ops)})`);
        }
      });
    }
    if (check) assertCompiledRan(`${on}graph ${JSON.stringify(ops)}`);
  });
}
