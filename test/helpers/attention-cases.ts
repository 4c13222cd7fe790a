// Fused attention (src/compiler/schedule/fuse-attention.ts) checked on one kernel backend: each case
// compiled, the program has the one attention kernel where the chain fuses (and the three
// kernels, with the reason, where it must not), no fusion fallback; outputs against a float64
// reference of softmax(f(q·kᵀ))·v from the same inputs, NaN / Inf where eager has them.
// Causal and masked, odd and unequal sequence lengths, several key blocks, W7's layout (heads
// split from one qkv buffer), NaN and Inf inputs, fully masked rows.

import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { prng } from './prng.js';

type T = kiln.Tensor;

interface Inputs { q: T; k: T; v: T; mask?: T }

export interface AttentionCase {
  readonly name: string;
  /** the compiled function (and its eager run) */
  readonly fn: (x: Inputs) => T;
  /** batch..., lq, lk, depth, width */
  readonly batch: number[];
  readonly lq: number;
  readonly lk: number;
  readonly depth: number;
  readonly width: number;
  readonly causal: boolean;
  /** an additive mask [lq, lk] (-Infinity entries), or a bool mask (true: keep) */
  readonly mask?: 'additive' | 'bool';
  /** extra values planted in the inputs */
  readonly plant?: (q: Float32Array, k: Float32Array, v: Float32Array, mask: Float32Array | null) => void;
  /** the number of kernels of the compiled program */
  readonly kernels: number;
  /** false: the chain must stay three kernels (the decision says why) */
  readonly fused: boolean;
  /** relative tolerance against float64 (default 2e-6: float32 rounding of O(1) scores) */
  readonly tol?: number;
}

const sdpa = (c: Pick<AttentionCase, 'causal'>) => ({ q, k, v, mask }: Inputs) => kiln.scaledDotProductAttention(q, k, v, { isCausal: c.causal, attnMask: mask ?? null });

export const ATTENTION_CASES: AttentionCase[] = [
  { name: 'causal, odd sequence 17, depth 8 -> width 12', fn: sdpa({ causal: true }), batch: [2, 3], lq: 17, lk: 17, depth: 8, width: 12, causal: true, kernels: 1, fused: true },
  { name: 'no mask, 33 queries x 70 keys (two key blocks, an edge), depth 40, width 24', fn: sdpa({ causal: false }), batch: [2], lq: 33, lk: 70, depth: 40, width: 24, causal: false, kernels: 1, fused: true },
  { name: 'causal with fewer queries than keys (5 x 9)', fn: sdpa({ causal: true }), batch: [3], lq: 5, lk: 9, depth: 16, width: 16, causal: true, kernels: 1, fused: true },
  { name: 'causal, 130 tokens (three key blocks), 4 heads of 64', fn: sdpa({ causal: true }), batch: [1, 4], lq: 130, lk: 130, depth: 64, width: 64, causal: true, kernels: 1, fused: true },
  {
    name: 'additive mask with fully masked rows (NaN rows, as eager)', fn: sdpa({ causal: false }), batch: [2], lq: 9, lk: 11, depth: 8, width: 8, causal: false, mask: 'additive', kernels: 1, fused: true,
    plant: (_q, _k, _v, mask) => {
      for (let j = 0; j < 11; j++) mask![2 * 11 + j] = -Infinity; // row 2 sees nothing
      mask![5 * 11 + 3] = -Infinity;
    },
  },
  {
    // the first key block adds nothing (masked), the next has scores near -150: the rescale of
    // the empty block must be 0, not exp(0 - -150) = Inf times nothing (NaN)
    name: 'first key block fully masked, then scores near -150', fn: sdpa({ causal: false }), batch: [2], lq: 4, lk: 70, depth: 8, width: 8, causal: false, mask: 'additive', kernels: 1, fused: true,
    tol: 5e-5, // float32 scores near 150 are rounded to ~1e-5: exp of them to that relative error
    plant: (_q, _k, _v, mask) => {
      for (let i = 0; i < 4; i++) for (let j = 0; j < 70; j++) mask![i * 70 + j] = j < 64 ? -Infinity : -150 + j / 10;
    },
  },
  { name: 'bool mask, causal on top', fn: sdpa({ causal: true }), batch: [2], lq: 12, lk: 12, depth: 8, width: 8, causal: true, mask: 'bool', kernels: 1, fused: true },
  {
    name: 'NaN in a query row and +Inf in a key', fn: sdpa({ causal: true }), batch: [2], lq: 10, lk: 10, depth: 4, width: 6, causal: true, kernels: 1, fused: true,
    plant: (q, k) => {
      q[3 * 4 + 1] = NaN; // batch 0, row 3
      k[10 * 4 + 6 * 4 + 2] = Infinity; // batch 1, key 6
    },
  },
  {
    name: "W7's layout: heads split from one qkv buffer, merged back",
    fn: ({ q }) => {
      // q holds qkv [1, T, 3 * H * D]: split, heads [1, H, T, D], attention, merge
      const [b, t, c3] = q.shape as [number, number, number];
      const c = c3 / 3, h = 3, d = c / h;
      const [qq, kk, vv] = q.split(c, -1).map((u) => u.reshape([b, t, h, d]).permute([0, 2, 1, 3])) as [T, T, T];
      return kiln.scaledDotProductAttention(qq, kk, vv, { isCausal: true }).permute([0, 2, 1, 3]).reshape([b, t, c]);
    },
    batch: [1], lq: 19, lk: 19, depth: 3 * 3 * 8, width: 0, causal: true, kernels: 2, fused: true,
  },
  {
    name: 'probabilities also returned: not fused (the reason is recorded)',
    fn: ({ q, k, v }) => {
      const p = kiln.softmax(q.matmul(k.transpose(-1, -2)).mul(0.5), -1);
      return kiln.cat([p.matmul(v), p], -1);
    },
    batch: [2], lq: 6, lk: 6, depth: 4, width: 6, causal: false, kernels: 0, fused: false,
  },
];

/** float64 softmax(scale·q·kᵀ + mask)·v per batch entry. */
function reference(c: AttentionCase, q: Float32Array, k: Float32Array, v: Float32Array, mask: Float32Array | null, boolMask: Uint8Array | null): Float64Array {
  const nb = c.batch.reduce((a, b) => a * b, 1), { lq, lk, depth: d, width: w } = c;
  const scale = 1 / Math.sqrt(d);
  const out = new Float64Array(nb * lq * w);
  for (let b = 0; b < nb; b++) {
    for (let i = 0; i < lq; i++) {
      const s = new Float64Array(lk);
      for (let j = 0; j < lk; j++) {
        let acc = 0;
        for (let p = 0; p < d; p++) acc += q[(b * lq + i) * d + p]! * k[(b * lk + j) * d + p]!;
        let x = acc * scale;
        if (c.causal && j > i) x = -Infinity;
        if (mask) x += mask[i * lk + j]!;
        if (boolMask && !boolMask[i * lk + j]) x = -Infinity;
        s[j] = x;
      }
      let mx = -Infinity;
      for (const x of s) mx = Number.isNaN(x) || Number.isNaN(mx) ? NaN : Math.max(mx, x);
      const g = Number.isFinite(mx) || Number.isNaN(mx) ? mx : 0;
      let sum = 0;
      const e = s.map((x) => Math.exp(x - g));
      for (const x of e) sum += x;
      for (let cc = 0; cc < w; cc++) {
        let o = 0;
        for (let j = 0; j < lk; j++) o += (e[j]! / sum) * v[(b * lk + j) * w + cc]!;
        out[(b * lq + i) * w + cc] = o;
      }
    }
  }
  return out;
}

function fusionText(r: kiln.ExplainResult): string {
  return r.graphs.map((g) => g.fusion ?? '').join('\n');
}

/** Runs every case on `backend`; `fuses`: whether that backend renders attention kernels. */
export function checkAttentionCases(backend: string, fuses: boolean, seed: number): void {
  const rand = prng(seed);
  for (const c of ATTENTION_CASES) {
    kiln.compiler.reset();
    const w7 = c.width === 0;
    const nb = c.batch.reduce((a, b) => a * b, 1);
    const fill = (n: number, f = () => rand() * 2 - 1) => Float32Array.from({ length: n }, f);
    // W7's layout: one [1, T, 3C] buffer, C = heads x head dim (3 x 8)
    const qd = w7 ? fill(c.lq * c.depth) : fill(nb * c.lq * c.depth);
    const kd = fill(nb * c.lk * c.depth), vd = fill(nb * c.lk * c.width);
    const maskD = c.mask === 'additive' ? fill(c.lq * c.lk, () => rand() - 0.5) : null;
    const boolD = c.mask === 'bool' ? Uint8Array.from({ length: c.lq * c.lk }, () => (rand() < 0.7 ? 1 : 0)) : null;
    c.plant?.(qd, kd, vd, maskD);
    const inputs: Inputs = w7
      ? { q: kiln.tensor(qd).reshape([1, c.lq, c.depth]), k: kiln.zeros([1]), v: kiln.zeros([1]) }
      : { q: kiln.tensor(qd).reshape([...c.batch, c.lq, c.depth]), k: kiln.tensor(kd).reshape([...c.batch, c.lk, c.depth]), v: kiln.tensor(vd).reshape([...c.batch, c.lk, c.width]) };
    if (maskD) inputs.mask = kiln.tensor(maskD).reshape([c.lq, c.lk]);
    if (boolD) inputs.mask = kiln.tensor(boolD, { dtype: 'bool' }).reshape([c.lq, c.lk]);
    const fn = (q: T, k: T, v: T, mask?: T) => c.fn({ q, k, v, mask });
    const args = [inputs.q, inputs.k, inputs.v, ...(inputs.mask ? [inputs.mask] : [])];
    kiln.noGrad(() => kiln.scope(() => {
      const eager = Array.from(fn(...(args as [T, T, T, T?])).dataSync());
      const ex = kiln.explain(fn, { backend, fullgraph: true, print: false })(...(args as [T, T, T, T?]));
      const fusion = fusionText(ex);
      const fusedHere = fuses && c.fused;
      assert.equal(/attention: .* as one kernel/.test(fusion), fusedHere, `${c.name} on ${backend}: fused as expected\n${fusion}`);
      if (fuses && !c.fused) assert.match(fusion, /attention not fused into one kernel .*: /, `${c.name}: the reason is recorded`);
      if (fusedHere) assert.equal(ex.graphs[0]!.kernels, c.kernels, `${c.name} on ${backend}: kernel count\n${ex.graphs[0]!.program}`);
      assert.equal(kiln.stats().fusionFallbacks, 0, `${c.name}: no fusion fallback`);
      const compiled = kiln.compile(fn, { backend, fullgraph: true });
      for (const call of ['trace', 'replay']) {
        const got = compiled(...(args as [T, T, T, T?])).dataSync();
        assert.equal(got.length, eager.length);
        if (!c.fused || w7) {
          // checked against eager (the reference below is for plain q, k, v layouts)
          got.forEach((g, i) => assert.ok(Math.abs(g - eager[i]!) <= 1e-5 * (1 + Math.abs(eager[i]!)) || (Number.isNaN(g) && Number.isNaN(eager[i]!)), `${c.name} (${call}) [${i}]: ${g} vs eager ${eager[i]}`));
          continue;
        }
        const ref = reference(c, qd, kd, vd, maskD, boolD);
        let scale = 1e-3;
        for (const x of ref) if (Number.isFinite(x)) scale = Math.max(scale, Math.abs(x));
        got.forEach((g, i) => {
          const e = eager[i]!, r = ref[i]!;
          if (Number.isNaN(e) || !Number.isFinite(r)) assert.ok(Object.is(g, e) || (Number.isNaN(g) && Number.isNaN(e)), `${c.name} (${call}) [${i}]: ${g}, eager ${e}, float64 ${r}`);
          else assert.ok(Math.abs(g - r) <= (c.tol ?? 2e-6) * scale + 1e-6 * Math.abs(r), `${c.name} (${call}) [${i}]: ${g} vs float64 ${r} (eager ${e})`);
        });
      }
      assert.equal(kiln.stats().fusionFallbacks, 0);
      assert.equal(kiln.stats().eagerFallbacks, 0);
    }));
    for (const t of args) t.dispose();
  }
}
