// Renders loop-IR kernels into one wasm module (one exported function per kernel):
// `kernel(base_b..., lo, hi, scratch, aux)` with a base byte address per buffer it uses.

import type { LoopKernel } from '../../ir/loop-ir.js';
import { bufferDTypes, printKernel } from '../../ir/loop-ir.js';
import { checkKernel } from '../../ir/loop-ir-check.js';
import { FuncBuilder } from './encoder.js';
import { Gen } from './gen.js';
import { renderPointwise, renderRow } from './kernels.js';
import { prepackable, renderMatmul } from './matmul.js';
import { OUT, renderAttention, SCORES } from './attention.js';
import { ModuleContext } from './module-context.js';
import { T } from './opcodes.js';
import { SizeLocals } from './sizes.js';
import type { Sym } from '../../ir/symbolic.js';
import type { DType } from '../../core/dtype.js';

export interface RenderedKernel {
  /** export name in the module */
  readonly name: string;
  /** buffers passed as base addresses, in parameter order */
  readonly bufs: readonly number[];
  /** per-thread scratch bytes (matmul packing) and per-kernel aux bytes (a matmul accumulator) */
  readonly scratchBytes: number;
  readonly auxBytes: number;
  /** dynamic kernels: aux bytes as a polynomial in the sizes (evaluated per launch) */
  readonly auxSym?: Sym;
  /** how each loop was rendered (for describe / output_code) */
  readonly notes: readonly string[];
  /** function body size in bytes */
  codeBytes: number;
  /** a matmul taking its B prepacked: one more parameter after the buffers (prepack.ts) */
  readonly prepack?: { readonly buf: number; readonly offset: number; readonly sbk: number; readonly sbn: number; readonly k: number; readonly n: number; readonly dtype: 'float32' | 'float64' };
}

/** Every buffer a kernel reads or writes with its dtype (a dynamic kernel's sizes buffer too): its functions' base-address parameters are these, in order. */
export function kernelBuffers(k: LoopKernel): Map<number, DType> {
  const dts = bufferDTypes(k);
  // a dynamic kernel also takes its sizes buffer (float64 s0, s1, ...)
  if (k.sizes) dts.set(k.sizes.buf, 'float64');
  return dts;
}

/** How a kernel's function takes a prepacked B, derived from the kernel alone (a cached module is called by it too). */
export function kernelPrepack(k: LoopKernel): RenderedKernel['prepack'] {
  return k.kind === 'matmul' && prepackable(k, kernelBuffers(k)) ? { buf: k.b.buf, offset: k.b.base.o, sbk: k.b.sRow, sbn: k.b.sCol, k: k.k, n: k.n, dtype: k.dtype as 'float32' | 'float64' } : undefined;
}

/** Adds one kernel to the module as an exported function named `name` (kiln's own `k<i>`); the kernel is checked against the loop IR's schema first. */
export function renderKernel(mc: ModuleContext, k: LoopKernel, name: string): RenderedKernel {
  checkKernel(k, 'wasm kernel');
  const dts = kernelBuffers(k);
  const bufs = [...dts.keys()].sort((a, b) => a - b);
  const pre = kernelPrepack(k);
  const np = bufs.length + (pre ? 1 : 0);
  const fb = new FuncBuilder(name, { params: [...Array.from({ length: np }, () => T.i32), T.i32, T.i32, T.i32, T.i32], results: [] }, true);
  const lo = np, hi = lo + 1, scratch = lo + 2, aux = lo + 3;
  const base = new Map<number, number>(bufs.map((b, i) => [b, i]));
  base.set(-1, aux);
  // an attention kernel's row of scores and of output live in the thread's scratch
  const attOut = k.kind === 'attention' ? fb.local(T.i32) : -1;
  if (k.kind === 'attention') (base.set(SCORES, scratch), base.set(OUT, attOut));
  const g = new Gen(mc, fb, base);
  if (k.sizes) g.sizes = new SizeLocals(fb, base.get(k.sizes.buf)!, k.sizes);
  const notes: string[] = [];
  let scratchBytes = 0, auxBytes = 0;
  let auxSym: Sym | undefined;
  const p = { lo, hi, scratch, aux };
  if (k.kind === 'group') k.parts.forEach((part) => renderPointwise(g, part, p, false, notes));
  else if (k.kind === 'pointwise') renderPointwise(g, k, p, true, notes);
  else if (k.kind === 'row') renderRow(g, k, p, notes);
  else if (k.kind === 'attention') scratchBytes = renderAttention(g, k, { ...p, out: attOut }, notes);
  else ({ scratchBytes, auxBytes, auxSym } = renderMatmul(g, k, pre ? { ...p, pk: bufs.length } : p, dts, notes));
  // the sizes and their products are read first (the body told which it needs)
  if (g.sizes) {
    g.sizes.prependPrelude();
    notes.push(`${k.name}: dynamic, sizes ${Array.from({ length: k.sizes!.count }, (_, i) => `s${i}`).join(', ')} read at entry from buf${k.sizes!.buf}`);
  }
  mc.mod.func(fb);
  return { name, bufs, scratchBytes, auxBytes, auxSym, notes, codeBytes: fb.code.length, ...(pre ? { prepack: pre } : {}) };
}

/** A module of kernels: its bytes and each kernel's calling convention. */
export function renderModule(kernels: readonly LoopKernel[], shared: boolean): { bytes: Uint8Array; kernels: RenderedKernel[] } {
  return renderModuleSkipping(kernels, shared, (_k, e) => {
    throw e;
  }) as { bytes: Uint8Array; kernels: RenderedKernel[] };
}

/**
 * renderModule, leaving out the kernels this renderer cannot emit (null in their place; `skip`
 * is told why): a fixed kernel set (the eager kernels) still gets a module when one op has no
 * wasm form. A kernel that throws has added nothing to the module but helpers.
 */
export function renderModuleSkipping(kernels: readonly LoopKernel[], shared: boolean, skip: (k: LoopKernel, e: Error) => void): { bytes: Uint8Array; kernels: (RenderedKernel | null)[] } {
  const mc = new ModuleContext(shared);
  const out = kernels.map((k, i) => {
    try {
      return renderKernel(mc, k, `k${i}`);
    } catch (e) {
      skip(k, e as Error);
      return null;
    }
  });
  return { bytes: mc.mod.encode(), kernels: out };
}

/** Readable text of a kernel's wasm (KILN_LOGS=output_code): how its loops were rendered, sizes, the loop IR. */
export function describeKernel(k: LoopKernel, shared: boolean): string {
  const { bytes, kernels: [r] } = renderModule([k], shared);
  return [`;; wasm kernel ${k.name}: function ${r!.codeBytes} bytes (module ${bytes.length} bytes), params (${r!.bufs.map((b) => `buf${b}`).join(', ')}${r!.prepack ? ', pk' : ''}, lo, hi, scratch, aux)`,
    ...r!.notes.map((n) => `;;   ${n}`), ...printKernel(k).split('\n').map((l) => `;; ${l}`)].join('\n');
}
