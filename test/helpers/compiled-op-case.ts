// One op-table case compiled and checked against the float64 reference, on the first call
// (trace) and the second (replay). Shared by compile-ops (js), wasm and native tests, so every
// backend passes literally the same check.

import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { OP_TABLE, POINTWISE_OPS, Rng, asList, baseSeed, caseSeed, checkInputsUnchanged, checkOutputs, toND, withSeed, FLOAT32_TOL, type OpCase } from '../op-table.js';
import { assertCompiledRan } from './compiled-ran.js';
import { unravel } from './reference.js';

/** one base seed per test process; each case derives its own from it and its name */
const base = baseSeed();
/** ops whose values depend on random draws: compared with eager only in shape */
const RANDOM = /dropout/;
/** ops that read a tensor value on the host by design (a graph break is expected) */
export const READS_DATA = /oneHot.*infer|oneHot$|\(reads data\)/;

/**
 * Compiles case `c` with `opts` (fullgraph unless the case reads data) and calls it twice,
 * checking both outputs. `check` false: one call, unchecked (a trace inside nativeBatch).
 * Failure messages name the backend, e.g. `sum dim=1 (wasm replay)`.
 */
export function checkCompiledCase(c: OpCase, opts: kiln.CompileOptions, check = true): void {
  const seed = caseSeed(base, c.name);
  withSeed(base, seed, () => {
    kiln.scope(() => {
      kiln.compiler.reset();
      const rng = new Rng(seed, 'float32');
      const inputs = c.make(rng);
      const before = inputs.map(toND);
      const fn = (...xs: kiln.Tensor[]) => c.run(kiln, xs);
      const compiled = kiln.compile(fn, { ...opts, fullgraph: !READS_DATA.test(c.name) });
      const on = opts.backend ? `${opts.backend} ` : '';
      for (const call of check ? ['trace', 'replay'] : ['trace']) {
        const outs = asList(compiled(...inputs) as kiln.Tensor | readonly kiln.Tensor[]);
        if (!check) continue;
        if (RANDOM.test(c.name)) {
          const eager = asList(fn(...inputs));
          assert.deepEqual(outs.map((o) => o.shape), eager.map((o) => o.shape));
          continue;
        }
        checkOutputs(`${c.name} (${on}${call})`, outs, asList(c.reference(before)), c.outDType ?? 'float32', c.tol ?? FLOAT32_TOL);
        checkInputsUnchanged(`${c.name} (${on}${call})`, inputs, before);
      }
      if (check) assertCompiledRan(`${c.name} (${on.trim() || 'default'})`);
    });
  });
}

/**
 * Runs `check` on every op-table case and returns one line per failing case (all cases run,
 * so one report names every failure). `maxLines`: keep that many lines of each message,
 * joined with ' | ' (default: the whole message).
 */
export function opTableFailures(check: (c: OpCase) => void, maxLines?: number): string[] {
  const failures: string[] = [];
  for (const c of OP_TABLE) {
    try {
      check(c);
    } catch (e) {
      const msg = (e as Error).message;
      failures.push(`${c.name}: ${maxLines === undefined ? msg : msg.split('\n').slice(0, maxLines).join(' | ')}`);
    }
  }
  return failures;
}

// ---- the edge pass: special values through every pointwise case ----

/** Float32 values compiled code must treat exactly as eager does: zeros, subnormals, infinities, NaN, near-overflow. */
export const EDGE_VALUES: readonly number[] = [0, -0, 1e-40, -1e-40, Infinity, -Infinity, NaN, 3e38, -3e38, 1, -2.5, 0.5];

/**
 * The pointwise cases whose inputs are all float32, one per distinct function (a unary op's
 * layout variants share one `run`, so each function is checked once).
 */
export function edgeCases(): OpCase[] {
  const seen = new Set<OpCase['run']>();
  return OP_TABLE.filter((c) => {
    if (!POINTWISE_OPS.has(c.op) || seen.has(c.run)) return false;
    seen.add(c.run);
    return kiln.scope(() => c.make(new Rng(1, 'float32')).every((t) => t.dtype === 'float32'));
  });
}

/** The inputs of an n-input case: input i holds every edge value along dim i (size 1 elsewhere), so they meet in every combination. */
export function edgeInputs(n: number): kiln.Tensor[] {
  return Array.from({ length: n }, (_, i) => {
    const shape = n === 1 ? [EDGE_VALUES.length] : Array.from({ length: n }, (_, d) => (d === i ? EDGE_VALUES.length : 1));
    return kiln.tensor(Float32Array.from(EDGE_VALUES), shape, { dtype: 'float32' });
  });
}

/** true when `got` differs from `want` as eager computed it: NaN for NaN, the same infinity, the same signed zero, else within tol. */
function edgeMismatch(got: number, want: number, tol: { atol: number; rtol: number }): boolean {
  if (Number.isNaN(want) || Number.isNaN(got)) return Number.isNaN(want) !== Number.isNaN(got);
  if (!Number.isFinite(want) || !Number.isFinite(got)) return got !== want;
  if (got === 0 && want === 0) return !Object.is(got, want);
  return Math.abs(got - want) > tol.atol + tol.rtol * Math.abs(want);
}

/** One line per element of `got` (an n-input edge case's outputs) that differs from eager's `want`. */
export function edgeDifferences(label: string, n: number, got: readonly ArrayLike<number>[], want: readonly ArrayLike<number>[], tol: { atol: number; rtol: number }): string[] {
  const bad: string[] = [];
  got.forEach((g, k) => {
    const w = want[k]!;
    if (g.length !== w.length) return void bad.push(`${label}: ${g.length} elements, eager has ${w.length}`);
    for (let j = 0; j < w.length; j++) {
      if (!edgeMismatch(g[j]!, w[j]!, tol)) continue;
      const at = n === 1 ? [j] : unravel(j, Array<number>(n).fill(EDGE_VALUES.length));
      bad.push(`${label} at (${at.map((i) => fmt(EDGE_VALUES[i]!)).join(', ')}): compiled ${fmt(g[j]!)}, eager ${fmt(w[j]!)}`);
    }
  });
  return bad;
}

/**
 * Case `c` compiled with `opts` on the edge values (trace and replay) against the same function
 * run eagerly on the same inputs. `check` false: one call, unchecked (a trace inside nativeBatch).
 * Throws one message listing every differing element with the inputs that produced it.
 */
export function checkEdgeCase(c: OpCase, opts: kiln.CompileOptions, check = true): void {
  kiln.scope(() => {
    kiln.compiler.reset();
    const n = c.make(new Rng(1, 'float32')).length;
    const inputs = edgeInputs(n);
    const fn = (...xs: kiln.Tensor[]) => c.run(kiln, xs);
    const eager = asList(fn(...inputs)).map((t) => t.dataSync() as ArrayLike<number>);
    const compiled = kiln.compile(fn, { ...opts, fullgraph: true });
    const bad: string[] = [];
    for (const call of check ? ['trace', 'replay'] : ['trace']) {
      const outs = asList(compiled(...inputs) as kiln.Tensor | readonly kiln.Tensor[]);
      if (check) bad.push(...edgeDifferences(`${c.name} (${opts.backend ?? 'js'} ${call})`, n, outs.map((o) => o.dataSync() as ArrayLike<number>), eager, c.tol ?? FLOAT32_TOL));
    }
    if (check) assertCompiledRan(`${c.name} (${opts.backend ?? 'js'}, edge values)`);
    if (bad.length) throw new Error(bad.join('\n'));
  });
}

const fmt = (v: number) => (Object.is(v, -0) ? '-0' : String(v));
