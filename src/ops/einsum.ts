// torch.einsum: an equation over labelled dims, computed with kiln's ops. Repeated labels in one
// operand take a diagonal (a masked sum); then operands are contracted left to right, each pair
// as one batched matmul ([batch, left, k] x [batch, k, right]), after summing out labels no
// later operand or the output needs. Size-1 dims broadcast against their label's size, and
// '...' stands for the same broadcast dims in every operand.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import { numel } from '../core/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import { expectTensor } from './dispatch.js';
import * as m from './math.js';
import { arange } from './creation.js';
import { matmul } from './linalg.js';
import { expand, permute, reshape } from './movement.js';
import { sum } from './reduce.js';
import { publicOp } from '../core/user-op.js';

/** An operand with one label per dim (ellipsis dims get labels '0', '1', ... from the right). */
interface Labelled {
  t: Tensor;
  labels: string[];
}

const LETTER = /^[a-zA-Z]$/;

function parseTerm(term: string, op: string): { labels: string[]; ellipsis: number } {
  const labels: string[] = [];
  let ellipsis = -1;
  for (let i = 0; i < term.length; i++) {
    if (term.startsWith('...', i)) {
      if (ellipsis >= 0) throw new ArgumentError(`'${term}' has more than one '...'`, op);
      ellipsis = labels.length;
      i += 2;
    } else if (LETTER.test(term[i]!)) labels.push(term[i]!);
    else throw new ArgumentError(`invalid subscript '${term[i]}' in '${term}'`, op, "subscripts are letters a-z, A-Z and '...'");
  }
  return { labels, ellipsis };
}

export const einsum = publicOp('einsum', function einsum(equation: string, ...operands: Tensor[]): Tensor {
  const op = 'einsum';
  if (typeof equation !== 'string') throw new ArgumentError(`equation must be a string, got ${typeof equation}`, op);
  // torch also takes the operands as one list
  const ts = operands.length === 1 && Array.isArray(operands[0]) ? (operands[0] as unknown as Tensor[]) : operands;
  ts.forEach((t, i) => expectTensor(op, t, `operands[${i}]`));
  const eq = equation.replace(/\s+/g, '');
  const arrow = eq.indexOf('->');
  const lhs = arrow >= 0 ? eq.slice(0, arrow) : eq;
  const terms = lhs.split(',');
  if (terms.length !== ts.length) throw new ArgumentError(`'${equation}' has ${terms.length} operand terms, got ${ts.length} operands`, op);

  const parsed = terms.map((t) => parseTerm(t, op));
  const ellipsisRank = Math.max(0, ...parsed.map((p, i) => (p.ellipsis >= 0 ? ts[i]!.ndim - p.labels.length : 0)));
  const ell = Array.from({ length: ellipsisRank }, (_, i) => String(i));
  const inputs: Labelled[] = parsed.map((p, i) => {
    const t = ts[i]!;
    const own = p.ellipsis >= 0 ? t.ndim - p.labels.length : 0;
    if (own < 0 || (p.ellipsis < 0 && t.ndim !== p.labels.length)) {
      throw new ShapeError(`term '${terms[i]}' has ${p.labels.length} subscripts for operand ${i} of shape ${fmtShape(t.shape)}`, op);
    }
    const labels = p.ellipsis >= 0 ? [...p.labels.slice(0, p.ellipsis), ...ell.slice(ellipsisRank - own), ...p.labels.slice(p.ellipsis)] : p.labels;
    return { t, labels };
  });

  // each label's size (size-1 dims broadcast)
  const size = new Map<string, number>();
  inputs.forEach(({ t, labels }, i) => labels.forEach((l, d) => {
    const s = t.shape[d]!, had = size.get(l);
    if (had === undefined || had === 1) size.set(l, s);
    else if (s !== had && s !== 1) throw new ShapeError(`subscript ${LETTER.test(l) ? l : "'...'"} has size ${s} in operand ${i} ${fmtShape(t.shape)}, which does not broadcast with size ${had}`, op);
  }));

  let output: string[];
  if (arrow >= 0) {
    const p = parseTerm(eq.slice(arrow + 2), op);
    output = p.ellipsis >= 0 ? [...p.labels.slice(0, p.ellipsis), ...ell, ...p.labels.slice(p.ellipsis)] : p.labels;
    for (const l of output) {
      if (!size.has(l)) throw new ArgumentError(`output subscript ${l} does not appear in the inputs of '${equation}'`, op);
    }
    if (new Set(output).size !== output.length) throw new ArgumentError(`output subscripts of '${equation}' repeat a label`, op);
  } else {
    // implicit output: '...', then the labels that appear once, in ASCII order (as torch)
    const count = new Map<string, number>();
    for (const { labels } of inputs) for (const l of labels) count.set(l, (count.get(l) ?? 0) + 1);
    output = [...ell, ...[...count].filter(([l, c]) => c === 1 && LETTER.test(l)).map(([l]) => l).sort()];
  }

  let acc = takeDiagonals(inputs[0]!);
  for (let i = 1; i < inputs.length; i++) {
    const later = new Set([...output, ...inputs.slice(i + 1).flatMap((x) => x.labels)]);
    acc = contract(acc, takeDiagonals(inputs[i]!), later, size);
  }
  acc = sumOut(acc, new Set(output));
  const bcast = broadcastTo(acc, size);
  return permute(bcast.t, output.map((l) => bcast.labels.indexOf(l)));
});

/** Merges repeated labels of one operand: x[.., i, .., i, ..] -> its diagonal. */
function takeDiagonals(x: Labelled): Labelled {
  let { t, labels } = x;
  for (;;) {
    const j = labels.findIndex((l, k) => labels.indexOf(l) !== k);
    if (j < 0) return { t, labels };
    const i = labels.indexOf(labels[j]!);
    const n = t.shape[i]!;
    if (t.shape[j] !== n) throw new ShapeError(`subscript ${labels[i]} labels dims of sizes ${t.shape[i]} and ${t.shape[j]} in one operand`, 'einsum');
    const rowsAt = reshape(arange(n), t.shape.map((_, d) => (d === i ? n : 1)));
    const colsAt = reshape(arange(n), t.shape.map((_, d) => (d === j ? n : 1)));
    t = sum(m.where(m.eq(rowsAt, colsAt), t, 0), j);
    labels = labels.filter((_, d) => d !== j);
  }
}

/** Sums out the labels not in `keep`. */
function sumOut(x: Labelled, keep: ReadonlySet<string>): Labelled {
  const dims = x.labels.map((l, d) => (keep.has(l) ? -1 : d)).filter((d) => d >= 0);
  if (dims.length === 0) return x;
  return { t: sum(x.t, dims), labels: x.labels.filter((l) => keep.has(l)) };
}

/** Size-1 dims expanded to their label's size. */
function broadcastTo(x: Labelled, size: ReadonlyMap<string, number>): Labelled {
  const shape = x.labels.map((l) => size.get(l)!);
  return shape.every((s, d) => s === x.t.shape[d]) ? x : { t: expand(x.t, shape), labels: x.labels };
}

/** One pairwise contraction as a batched matmul; `later`: labels needed after this step. */
function contract(a0: Labelled, b0: Labelled, later: ReadonlySet<string>, size: ReadonlyMap<string, number>): Labelled {
  const inB = new Set(b0.labels), inA = new Set(a0.labels);
  // a label only one side has, and nothing later needs, is summed out first
  const a = broadcastTo(sumOut(a0, new Set([...later, ...inB])), size);
  const b = broadcastTo(sumOut(b0, new Set([...later, ...inA])), size);
  const batch = a.labels.filter((l) => inB.has(l) && later.has(l));
  const k = a.labels.filter((l) => inB.has(l) && !later.has(l));
  const left = a.labels.filter((l) => !inB.has(l));
  const right = b.labels.filter((l) => !inA.has(l));
  const n = (ls: readonly string[]) => numel(ls.map((l) => size.get(l)!));
  const order = (x: Labelled, ls: readonly string[]) => permute(x.t, ls.map((l) => x.labels.indexOf(l)));
  const am = reshape(order(a, [...batch, ...left, ...k]), [n(batch), n(left), n(k)]);
  const bm = reshape(order(b, [...batch, ...k, ...right]), [n(batch), n(k), n(right)]);
  const labels = [...batch, ...left, ...right];
  return { t: reshape(matmul(am, bm), labels.map((l) => size.get(l)!)), labels };
}
