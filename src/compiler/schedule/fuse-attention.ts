// Pass: attention as one kernel. Lowering turns softmax(f(q·kᵀ))·v (scaled dot-product
// attention, causal or masked: kiln.scaledDotProductAttention and hand-written forms alike)
// into three kernels: the score matmul (its raw product stored), the softmax row kernel (max,
// then sum of exp(s - g(max)) online, then p = exp(s - g(max)) / sum stored) and the matmul of
// p by v. When the score and p buffers are read by nothing else, this pass replaces the three
// with one AttentionKernel (loop-ir.ts): scores, softmax and p·v per block of query rows, so the
// [.., rows, keys] scores and probabilities never reach memory. Every match and every near miss
// (with why) is recorded as a fusion decision. Static float programs on kernel backends that
// render the kernel (Backend.attentionKernels); others keep the three kernels.

import type { Affine, AttentionKernel, LExpr, MatmulKernel, RowKernel, Stmt } from '../../ir/loop-ir.js';
import { ATTENTION_MAX_DEPTH, ATTENTION_MAX_WIDTH, exprLoads, kernelLoads, kernelStores, someLeaf } from '../../ir/loop-ir.js';
import { affKey } from '../../ir/affine.js';
import type { Lowered, Step } from './lowered.js';

/** The same index over loops of these extents (a var of extent 1 is always 0: its coefficient does not matter). */
const sameAffine = (a: Affine, b: Affine, extents: readonly number[]): boolean =>
  a.o === b.o && a.c.length === b.c.length && a.c.every((x, i) => x === b.c[i] || extents[i] === 1) && !a.cSym && !b.cSym && !a.oSym && !b.oSym;

/** An expression with its temporaries replaced by their definitions (`defs`), as canonical text. */
function canonical(e: LExpr, defs: ReadonlyMap<number, LExpr>): string {
  switch (e.k) {
    case 'tmp': {
      const d = defs.get(e.id);
      return d ? canonical(d, defs) : `t${e.id}`;
    }
    case 'load': return `L${e.buf}[${affKey(e.at)}]:${e.dtype}`;
    case 'const': return `C${Object.is(e.v, -0) ? '-0' : String(e.v)}`;
    case 'red': return `R${e.id}`;
    case 'acc': return 'A';
    case 'cast': return `cast<${e.dtype}>(${canonical(e.a, defs)})`;
    case 'op': return `${e.op}<${e.dtype}>(${e.a.map((x) => canonical(x, defs)).join(',')})`;
  }
}

const defsOf = (...bodies: (readonly Stmt[])[]): Map<number, LExpr> => new Map(bodies.flatMap((b) => b.map((s) => [s.id, s.e] as const)));

/** The value with every load of `buf` at `at` replaced by the accumulator; null if `buf` is read elsewhere. */
function withAcc(e: LExpr, buf: number, at: Affine, extents: readonly number[]): LExpr | null {
  if (e.k === 'load' && e.buf === buf) return sameAffine(e.at, at, extents) ? { k: 'acc' } : null;
  if (e.k === 'op') {
    const a = e.a.map((x) => withAcc(x, buf, at, extents));
    return a.every((x) => x !== null) ? { ...e, a: a as LExpr[] } : null;
  }
  if (e.k === 'cast') {
    const a = withAcc(e.a, buf, at, extents);
    return a && { ...e, a };
  }
  return e;
}

interface Match { readonly at: [number, number, number]; readonly kernel: AttentionKernel; readonly nodes: number[] }

/** Why S, R, O (consecutive readers) are not an attention, or the fused kernel. */
function matchAt(l: Lowered, steps: readonly Step[], si: number, ri: number, oi: number, name: string): Match | string {
  const S = (steps[si] as Extract<Step, { kind: 'kernel' }>).kernel as MatmulKernel;
  const R = (steps[ri] as Extract<Step, { kind: 'kernel' }>).kernel as RowKernel;
  const O = (steps[oi] as Extract<Step, { kind: 'kernel' }>).kernel as MatmulKernel;
  const nb = S.batch.length;
  if (S.sizes || R.sizes || O.sizes) return 'a dynamic program (sizes at run time)';
  if (S.dtype !== 'float32' && S.dtype !== 'float64') return `${S.dtype} scores`;
  if (S.body.length || S.stores.length !== 1 || S.stores[0]!.value.k !== 'acc' || S.stores[0]!.dtype !== S.dtype) return `${S.name} stores more than its raw product`;
  const sBuf = S.stores[0]!.buf, sAt = S.stores[0]!.at;
  // the row kernel: max, then the online softmax sum, one probability store per element
  const [rMax, rSum] = R.reductions;
  if (R.reductions.length !== 2 || rMax!.op !== 'max' || rMax!.online || rSum!.op !== 'sum' || rSum!.online?.kind !== 'softmax') return `${R.name} is not a softmax (max, then sum of exp online)`;
  if (R.outerStores.length || R.rowStores.length !== 1) return `${R.name} stores more than the probabilities`;
  if (R.inner.length !== 1 || R.outer.length !== nb + 1 || R.inner[0] !== S.n || R.outer[nb] !== S.m || S.batch.some((b, d) => R.outer[d] !== b)) return `${R.name}'s rows are not ${S.name}'s rows`;
  const extents = [...S.batch, S.m, S.n];
  const score = withAcc(rMax!.value, sBuf, sAt, extents);
  const scoreBody = rMax!.body.map((st) => ({ st, e: withAcc(st.e, sBuf, sAt, extents) }));
  if (!score || scoreBody.some((x) => !x.e)) return `${R.name} reads ${S.name}'s scores at another index`;
  if (!exprLoads(rMax!.value).some((x) => x.buf === sBuf) && !rMax!.body.some((st) => exprLoads(st.e).some((x) => x.buf === sBuf))) return `${R.name}'s max does not read the scores`;
  const shift = rSum!.online.shift;
  if (someLeaf(shift, (x) => x.k === 'load' || x.k === 'tmp' || x.k === 'acc' || (x.k === 'red' && x.id !== rMax!.id))) return 'the softmax shift is not a function of the max alone';
  // p = exp(s - g(max)) / sum, with s the max's value (compared as trees, temporaries inlined)
  const p = R.rowStores[0]!;
  const maxDefs = defsOf(rMax!.body);
  const rowDefs = defsOf(R.outerBody, R.rowBody);
  const want = `div<${S.dtype}>(exp<${S.dtype}>(sub<${S.dtype}>(${canonical(rMax!.value, maxDefs)},${canonical(shift, rowDefs)})),R${rSum!.id})`;
  if (canonical(p.value, rowDefs) !== want || p.dtype !== S.dtype) return `${R.name}'s stored value is not exp(s - shift) / sum`;
  // p · v
  const pBuf = p.buf;
  if (O.a.buf !== pBuf || O.dtype !== S.dtype || O.k !== S.n || O.m !== S.m || O.batch.length !== nb || O.batch.some((b, d) => b !== S.batch[d])) return `${O.name} is not probabilities · v over the same rows`;
  if (!sameAffine(O.a.base, { c: p.at.c.slice(0, nb), o: p.at.o }, S.batch) || (S.m > 1 && O.a.sRow !== p.at.c[nb]) || (S.n > 1 && O.a.sCol !== p.at.c[nb + 1])) return `${O.name} reads the probabilities at another index`;
  if (O.n > ATTENTION_MAX_WIDTH || S.k > ATTENTION_MAX_DEPTH) return `depth ${S.k} / value width ${O.n} above ${ATTENTION_MAX_DEPTH} / ${ATTENTION_MAX_WIDTH}`;
  // the scores and probabilities feed nothing else, and nothing between writes what the fused kernel reads
  const scratch = (b: number) => l.buffers[b]!.kind === 'scratch' && !l.outputs.some((o) => o.buf === b);
  if (!scratch(sBuf) || !scratch(pBuf)) return 'the scores or probabilities are a program output';
  const readers = (b: number) => steps.filter((s) => (s.kind === 'kernel' ? kernelLoads(s.kernel).has(b) : s.inputs.some((v) => v.buf === b))).length;
  if (readers(sBuf) !== 1 || readers(pBuf) !== 1) return 'the scores or probabilities have other readers';
  const reads = new Set([...kernelLoads(S), ...kernelLoads(R), ...kernelLoads(O)]);
  for (let i = si + 1; i < oi; i++) {
    if (i === ri) continue;
    const s = steps[i]!;
    const writes = s.kind === 'kernel' ? kernelStores(s.kernel).map((x) => x.buf) : [s.out.buf];
    if (writes.some((b) => reads.has(b))) return `step ${i} between them writes what they read`;
  }
  const kernel: AttentionKernel = {
    kind: 'attention', name, dtype: S.dtype, batch: S.batch, rows: S.m, keys: S.n, depth: S.k, width: O.n,
    query: S.a, key: S.b, value: O.b,
    score: { body: scoreBody.map((x) => ({ id: x.st.id, e: x.e! })), value: score },
    maxId: rMax!.id, shift, body: O.body, stores: O.stores,
  };
  const nodes = [...new Set([S.stores[0]!.node, rMax!.node, rSum!.node, p.node, ...O.stores.map((x) => x.node)])];
  return { at: [si, ri, oi], kernel, nodes };
}

/**
 * Replaces each score matmul -> softmax -> p·v chain of `l` by one attention kernel (see the file
 * comment), recording the decision (or why a chain was left as it is).
 */
export function fuseAttention(l: Lowered): void {
  const steps = l.steps;
  const kernelAt = (i: number) => (steps[i]?.kind === 'kernel' ? steps[i].kernel : null);
  const readerOf = (from: number, buf: number) => {
    for (let i = from + 1; i < steps.length; i++) {
      const s = steps[i]!;
      if (s.kind === 'kernel' ? kernelLoads(s.kernel).has(buf) : s.inputs.some((v) => v.buf === buf)) return i;
    }
    return -1;
  };
  const matches: Match[] = [];
  let n = 0;
  for (let si = 0; si < steps.length; si++) {
    const S = kernelAt(si);
    if (S?.kind !== 'matmul' || S.stores.length !== 1) continue;
    const ri = readerOf(si, S.stores[0]!.buf);
    const R = kernelAt(ri);
    if (R?.kind !== 'row' || R.rowStores.length !== 1 || !R.reductions.some((r) => r.online?.kind === 'softmax')) continue;
    const oi = readerOf(ri, R.rowStores[0]!.buf);
    const O = kernelAt(oi);
    if (O?.kind !== 'matmul') continue;
    const m = matchAt(l, steps, si, ri, oi, `${S.name.replace(/_matmul$/, '')}_attention`);
    const nodes = [S.stores[0]!.node, R.rowStores[0]!.node, ...O.stores.map((x) => x.node)];
    if (typeof m === 'string') {
      l.decisions.push({ decision: 'materialized', nodes, reason: `attention not fused into one kernel (${S.name}, ${R.name}, ${O.name}): ${m}` });
      continue;
    }
    matches.push(m);
    l.decisions.push({ decision: 'fused', nodes: m.nodes, reason: `attention: ${S.name} (scores), ${R.name} (softmax) and ${O.name} (·v) as one kernel ${m.kernel.name}: the scores and probabilities never reach memory` });
    n++;
    si = oi;
  }
  if (!n) return;
  const drop = new Set(matches.flatMap((m) => [m.at[0], m.at[1]]));
  const replace = new Map(matches.map((m) => [m.at[2], m.kernel] as const));
  const out = steps.flatMap((s, i): Step[] => (drop.has(i) ? [] : replace.has(i) ? [{ kind: 'kernel', kernel: replace.get(i)! }] : [s]));
  steps.length = 0;
  steps.push(...out);
}
