// Composite scalar ops are defined once (src/ir/composites.ts) and every renderer knows only
// primitives: no renderer source names a composite, each composite expands to primitives only,
// wasm's f32x4 loops still vectorize the expansions, and every composite, expanded and rendered
// on the JS kernels (eager and compiled), wasm (f32x4, scalar float32, scalar float64) and
// native C, equals a float64 reference on fresh random inputs and extreme values.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as kiln from 'kilnjs';
import { nativeUnavailableReason } from 'kilnjs/node';
import { COMPOSITE_OPS, expandComposite, isComposite, type CompositeOp } from '../src/ir/composites.js';
import { UNARY_OPS, type ScalarOp } from '../src/ir/scalar-expr.js';
import { renderKernel } from '../src/backend/wasm/render.js';
import { ModuleContext } from '../src/backend/wasm/module-context.js';
import type { LoopKernel } from '../src/ir/loop-ir.js';
import { assertCompiledRan } from './helpers/compiled-ran.js';
import { API, EXTREMES, REFERENCE } from './helpers/composites.js';

const BACKEND_DIR = fileURLToPath(new URL('../src/backend', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? sourceFiles(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : []));
}

/** Source without its comments (a composite may be named in prose, never in code). */
const code = (src: string): string => src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');

test('composites: no renderer names a composite op (each is defined once, in src/ir/composites.ts)', () => {
  const names = new RegExp(`\\b(${COMPOSITE_OPS.join('|')})\\b`, 'g');
  const files = sourceFiles(BACKEND_DIR);
  assert.ok(files.length > 50, `${files.length} backend source files`);
  const found = files.flatMap((f) => [...code(readFileSync(f, 'utf8')).matchAll(names)].map((m) => `${f.slice(BACKEND_DIR.length + 1)}: ${m[0]}`));
  assert.deepEqual(found, [], 'a renderer defines a composite again: render its expansion (expandComposite) instead');
});

test('composites: each is a unary scalar op whose expansion uses primitives only', () => {
  for (const op of COMPOSITE_OPS) {
    assert.ok((UNARY_OPS as readonly string[]).includes(op), `${op} is a unary op`);
    assert.ok(isComposite(op));
    const used: ScalarOp[] = [];
    const leaves = expandComposite(op, 'x', { op: (o, ...a) => (used.push(o), `${o}(${a.join(', ')})`), c: String });
    assert.ok(used.length > 0 && leaves.includes('x'), `${op} = ${leaves}`);
    assert.deepEqual(used.filter(isComposite), [], `${op} expands to ${leaves}`);
  }
  assert.ok(!isComposite('exp') && !isComposite('tanh') && !isComposite('erf') && !isComposite('log1p'));
});

/** One pointwise kernel storing op(x) of a contiguous float32 x. */
const kernelOf = (op: CompositeOp): LoopKernel => ({
  kind: 'pointwise', name: 'k', shape: [64], body: [],
  stores: [{ buf: 1, at: { c: [1], o: 0 }, dtype: 'float32', node: 0, value: { k: 'op', op, a: [{ k: 'load', buf: 0, at: { c: [1], o: 0 }, dtype: 'float32' }], dtype: 'float32' } }],
});

test('composites: wasm f32x4 loops vectorize the expansions (Math.* calls only for a primitive without an f32x4 form)', () => {
  for (const op of COMPOSITE_OPS) {
    const mc = new ModuleContext(false);
    const called: string[] = [];
    const mathFn = mc.mathFn.bind(mc);
    mc.mathFn = (name) => (called.push(name), mathFn(name));
    const r = renderKernel(mc, kernelOf(op), 'k0');
    assert.match(r.notes.join('\n'), /inner loop f32x4/, `${op}: ${r.notes.join(' ')}`);
    // softplus needs log1p, which runs lane by lane: the whole composite does, in double
    assert.deepEqual([...new Set(called)].sort(), op === 'softplus' ? ['exp', 'log1p'] : [], `${op} calls Math.*`);
  }
});

// ---- numbers ----

const all = (x: kiln.Tensor): kiln.Tensor[] => COMPOSITE_OPS.map((op) => API[op](x));

/** 997 fresh random values (normal, times 6) followed by the extremes, float32 or float64. */
function inputs(dtype: 'float32' | 'float64'): kiln.Tensor {
  const r = kiln.randn([997]).mul(6).dataSync() as ArrayLike<number>;
  return kiln.tensor([...Array.from(r), ...EXTREMES], { dtype });
}

/** got vs the reference at the input's values: NaN where it is NaN, equal infinities, else within tol. */
function checkAgainstReference(what: string, x: kiln.Tensor, outs: readonly kiln.Tensor[], tol: number): void {
  const xs = Array.from(x.dataSync() as ArrayLike<number>);
  COMPOSITE_OPS.forEach((op, i) => {
    const got = outs[i]!.dataSync() as ArrayLike<number>;
    xs.forEach((v, j) => {
      const want = REFERENCE[op](v), g = got[j]!;
      const ok = Number.isNaN(want) ? Number.isNaN(g) : !Number.isFinite(want) ? g === want : Math.abs(g - want) <= tol * (1 + Math.abs(want));
      if (!ok) assert.fail(`${what}: ${op}(${v}) is ${g}, expected ${want}`);
    });
  });
}

test('composites: on the JS kernels (eager and compiled) equal float64', () => {
  kiln.manualSeed(31);
  kiln.scope(() => {
    const js = new kiln.JsBackend();
    for (const dtype of ['float32', 'float64'] as const) {
      const tol = dtype === 'float32' ? 2e-6 : 1e-12;
      const x = kiln.toBackend(inputs(dtype), js);
      checkAgainstReference(`js eager ${dtype}`, x, all(x), tol);
      kiln.compiler.reset();
      const f = kiln.compile(all, { backend: 'js', fullgraph: true });
      for (const call of ['trace', 'replay']) checkAgainstReference(`js compiled ${dtype} (${call})`, x, f(x), tol);
      assertCompiledRan(`js ${dtype}`);
    }
  });
});

/** Compiled on `backend`: contiguous float32 (wasm: f32x4), transposed float32 (scalar float32), float64. */
function checkCompiled(backend: string): void {
  kiln.manualSeed(32);
  kiln.scope(() => {
    const cases: [string, kiln.Tensor, (x: kiln.Tensor) => kiln.Tensor[], number][] = [
      ['float32', inputs('float32'), all, 2e-6],
      // rows of 2 read down a transpose: strided loads (no f32x4 loop)
      ['float32 transposed', inputs('float32').reshape([2, 513]), (x) => all(x.transpose(0, 1)), 2e-6],
      ['float64', inputs('float64'), all, 1e-12],
    ];
    for (const [what, x, f, tol] of cases) {
      kiln.compiler.reset();
      const compiled = kiln.compile(f, { backend, fullgraph: true });
      const flat = what.includes('transposed') ? x.transpose(0, 1).contiguous() : x;
      for (const call of ['trace', 'replay']) checkAgainstReference(`${backend} ${what} (${call})`, flat, compiled(x).map((o) => o.contiguous()), tol);
      assertCompiledRan(`${backend} ${what}`);
    }
  });
}

test('composites: compiled on wasm (f32x4, scalar float32, float64) equal float64', () => {
  const before = kiln.wasmStats().kernels;
  checkCompiled('wasm');
  assert.ok(kiln.wasmStats().kernels > before, 'wasm kernels ran');
});

const noNative = nativeUnavailableReason();
test('composites: compiled on native C equal float64', { skip: noNative ? `native backend unavailable: ${noNative}` : false }, () => {
  checkCompiled('native');
});
