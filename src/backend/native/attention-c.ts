// The native backend's attention kernel (loop-ir.ts AttentionKernel, made by
// src/compiler/schedule/fuse-attention.ts): flash-attention style, per task = one batch entry and a block
// of ROWS query rows (tasks split across OpenMP threads). For each block of KEYS_BLOCK keys:
// kᵀ's block packed contiguous, the rows' dot products with it vectorized across the keys, the
// kernel's score statements (scale, mask) on each, then the online softmax per row (running
// max m, shift g(m), l = sum exp(s - g(m)) in double as eager's sum, o = sum exp(s - g(m)) v:
// both rescaled by exp(g(m_old) - g(m_new)) when the max moves) and o += p v vectorized across
// the value width. Last, the epilogue with acc = o / l. NaN and infinities: the max is
// NaN-propagating (kiln_maxf); a row whose max is still -inf has nothing accumulated, so its
// rescale is 0 (not exp of -inf - -inf); a fully masked row ends 0 / 0 = NaN, as eager's
// softmax does.

import type { Affine, AttentionKernel, Store } from '../../ir/loop-ir.js';
import { affinesOf, CEmitter, CTYPE, expr, PARALLEL_WORK, stmts, stores } from './render-c.js';

/** keys per block; query rows per task: all of a batch entry's (up to MAX_ROWS) when there are enough entries to keep the threads busy, else ROWS */
const KEYS_BLOCK = 64;
const ROWS = 32;
const MAX_ROWS = 128;
const ENOUGH_TASKS = 8;

/** An affine's index with the batch vars at this task's entry and (i, j) free: `base + ci*i + cj*j`. */
function baseOf(em: CEmitter, a: Affine, nb: number): string {
  return [em.off(a), ...Array.from({ length: nb }, (_, d) => (a.c[d] ? `${a.c[d]} * v${d}` : '')).filter(Boolean)].join(' + ');
}

export function renderAttention(k: AttentionKernel, em: CEmitter): void {
  const nb = k.batch.length, iVar = nb, jVar = nb + 1;
  const T = CTYPE[k.dtype === 'float32' ? 'f32' : 'f64'];
  const t = k.dtype === 'float32' ? 'f32' : 'f64';
  const maxf = t === 'f32' ? 'kiln_maxf' : 'kiln_maxd';
  const exp = t === 'f32' ? 'expf' : 'exp';
  const isNegInf = t === 'f32' ? (x: string) => `(kiln_bf(${x}) == 0xff800000u)` : (x: string) => `(kiln_bd(${x}) == 0xfff0000000000000ull)`;
  const q = k.query, kk = k.key, v = k.value;
  const scoreAffs = affinesOf(k.score.body, [], [k.score.value]);
  const epiAffs = affinesOf(k.body, k.stores as Store[]);
  const par = k.batch.reduce((a, b) => a * b, 1) * k.rows * k.keys * (k.depth + k.width) >= PARALLEL_WORK;
  // [lo, hi): flattened (batch entry, row) pairs; tasks of R rows never cross a batch entry (kᵀ
  // is packed once per task and key block: whole entries amortize it best)
  const entries = k.batch.reduce((a, b) => a * b, 1);
  const R = entries >= ENOUGH_TASKS && k.rows <= MAX_ROWS ? k.rows : Math.min(ROWS, k.rows);
  em.emit(`const int64_t nBlk = ${Math.ceil(k.rows / R)};`);
  em.emit(`const int64_t tLo = lo / ${k.rows}, tHi = (hi + ${k.rows - 1}) / ${k.rows};`);
  if (par) em.emit('#pragma omp parallel for schedule(static)');
  em.emit('for (int64_t task = tLo * nBlk; task < tHi * nBlk; task++) {');
  em.emit('const int64_t te = task / nBlk;');
  em.emit(`int64_t iA = (task % nBlk) * ${R}, iB = iA + ${R} < ${k.rows} ? iA + ${R} : ${k.rows};`);
  em.emit(`if (te * ${k.rows} + iA < lo) iA = lo - te * ${k.rows};`);
  em.emit(`if (te * ${k.rows} + iB > hi) iB = hi - te * ${k.rows};`);
  em.emit('if (iA >= iB) continue;');
  em.emit('int64_t q_ = te;');
  for (let d = nb - 1; d >= 0; d--) em.emit(`const int64_t v${d} = q_ % ${k.batch[d]}; q_ /= ${k.batch[d]};`);
  em.emit('(void)q_;');
  em.emit(`const ${T} *Q = b${q.buf} + ${baseOf(em, q.base, nb)};`);
  em.emit(`const ${T} *K = b${kk.buf} + ${baseOf(em, kk.base, nb)};`);
  em.emit(`const ${T} *V = b${v.buf} + ${baseOf(em, v.base, nb)};`);
  scoreAffs.forEach((a, i) => em.emit(`const int64_t sB${i} = ${baseOf(em, a, nb)};`));
  epiAffs.forEach((a, i) => em.emit(`const int64_t eB${i} = ${baseOf(em, a, nb)};`));
  const VT = t === 'f32' ? 'kiln_vf' : 'kiln_vd';
  const NVL = `((int64_t)(KILN_VBYTES / sizeof(${T})))`;
  em.emit(`${T} m[${R}], o[${R}][${k.width}], s[${R}][${KEYS_BLOCK}] __attribute__((aligned(64))), kt[${k.depth}][${KEYS_BLOCK}] __attribute__((aligned(64)));`);
  em.emit(`double l[${R}];`);
  em.emit(`for (int64_t r = 0; r < ${R}; r++) { m[r] = -INFINITY; l[r] = 0; for (int64_t c = 0; c < ${k.width}; c++) o[r][c] = 0; }`);
  em.emit(`for (int64_t j0 = 0; j0 < ${k.keys}; j0 += ${KEYS_BLOCK}) {`);
  em.emit(`const int64_t bc = ${k.keys} - j0 < ${KEYS_BLOCK} ? ${k.keys} - j0 : ${KEYS_BLOCK};`);
  // kᵀ's block, contiguous along the keys (zeros past the last key)
  em.emit(`for (int64_t jj = 0; jj < ${KEYS_BLOCK}; jj++) { const ${T} *kr = K + (j0 + jj) * ${kk.sCol}; for (int64_t d = 0; d < ${k.depth}; d++) kt[d][jj] = jj < bc ? kr[d * ${kk.sRow}] : 0; }`);
  // q·k for two rows at a time (the second repeats the first on an odd last row), the key
  // block in vector accumulators
  em.emit(`${T} dots[2][${KEYS_BLOCK}] __attribute__((aligned(64)));`);
  em.emit('for (int64_t i2 = iA; i2 < iB; i2 += 2) {');
  em.emit('const int64_t iN = i2 + 1 < iB ? i2 + 1 : i2;');
  em.emit('{');
  em.emit(`${VT} a0[${KEYS_BLOCK} / ${NVL}], a1[${KEYS_BLOCK} / ${NVL}];`);
  em.emit(`for (int64_t v = 0; v < ${KEYS_BLOCK} / ${NVL}; v++) a0[v] = a1[v] = (${VT}){0};`);
  em.emit(`const ${T} *q0 = Q + i2 * ${q.sRow}, *q1 = Q + iN * ${q.sRow};`);
  em.emit(`for (int64_t d = 0; d < ${k.depth}; d++) {`);
  em.emit(`const ${T} x0 = q0[d * ${q.sCol}], x1 = q1[d * ${q.sCol}];`);
  em.emit('#pragma GCC unroll 16');
  em.emit(`for (int64_t v = 0; v < ${KEYS_BLOCK} / ${NVL}; v++) { const ${VT} b = *(const ${VT} *)&kt[d][v * ${NVL}]; a0[v] += x0 * b; a1[v] += x1 * b; }`);
  em.emit('}');
  em.emit('memcpy(dots[0], a0, sizeof a0); memcpy(dots[1], a1, sizeof a1);');
  em.emit('}');
  em.emit('for (int64_t i = i2; i <= iN; i++) {');
  em.emit('const int64_t r = i - iA;');
  em.emit(`const ${T} *dot = dots[i - i2];`);
  // the scores (the kernel's statements, acc = the dot product) and their max
  em.emit(`${T} mb = m[r];`);
  em.emit('for (int64_t jj = 0; jj < bc; jj++) {');
  em.emit('const int64_t j = j0 + jj;');
  scoreAffs.forEach((a, idx) => {
    em.emit(`const int64_t pS${idx} = sB${idx} + ${a.c[iVar] ?? 0} * i + ${a.c[jVar] ?? 0} * j;`);
    em.setPtr(a, `pS${idx}`);
  });
  em.accVal = { s: 'dot[jj]', t };
  stmts(em, k.score.body);
  const sv = expr(k.score.value, em);
  em.emit(`const ${T} sc = ${sv.t === null ? `(${T})${sv.v}` : sv.t === t ? sv.s : `(${T})(${sv.s})`};`);
  em.emit('s[r][jj] = sc;');
  em.emit('}');
  // the max, vectorizable: NaN tracked by its bits (-ffast-math may not see NaN in compares)
  const bits = t === 'f32' ? { u: 'uint32_t', abs: '0x7fffffffu', inf: '0x7f800000u', get: 'kiln_bf' } : { u: 'uint64_t', abs: '0x7fffffffffffffffull', inf: '0x7ff0000000000000ull', get: 'kiln_bd' };
  em.emit(`{ ${T} mx = -INFINITY; int nan = 0;`);
  em.emit(`for (int64_t jj = 0; jj < bc; jj++) { const ${T} x = s[r][jj]; mx = x > mx ? x : mx; ${bits.u} u; memcpy(&u, &x, sizeof u); nan |= (u & ${bits.abs}) > ${bits.inf}; }`);
  em.emit(`mb = nan ? (${T})NAN : ${maxf}(mb, mx); }`);
  // the online softmax: rescale what the row has by exp(g(old max) - g(new max))
  em.redVal.set(k.maxId, { s: 'mo', t });
  em.emit(`const ${T} mo = m[r];`);
  const gOld = expr(k.shift, em);
  em.emit(`const ${T} go = ${gOld.t === null ? `(${T})${gOld.v}` : gOld.s};`);
  em.redVal.set(k.maxId, { s: 'mb', t });
  const gNew = expr(k.shift, em);
  em.emit(`const ${T} gn = ${gNew.t === null ? `(${T})${gNew.v}` : gNew.s};`);
  // (an unchanged max rescales by exp(0) = 1: no exp call, the usual case after the first blocks)
  em.emit(`const ${T} fac = ${isNegInf('mo')} ? (${T})0 : ${t === 'f32' ? 'kiln_bf(mo) == kiln_bf(mb)' : 'kiln_bd(mo) == kiln_bd(mb)'} ? (${T})1 : ${exp}(go - gn);`);
  em.emit('double sum = 0;');
  // exp(s - g): -inf (masked) lanes computed as exp(0) and zeroed, so the vector exp keeps off its slow path
  // (the argument is masked with integer ops, so the compiler cannot fold it back into exp(x))
  em.emit(`for (int64_t jj = 0; jj < bc; jj++) { const ${T} x = s[r][jj] - gn; ${bits.u} u; memcpy(&u, &x, sizeof u); const ${bits.u} keep = (${bits.u})0 - (${bits.u})(u != (${bits.inf} | ~${bits.abs})); u &= keep; ${T} xa; memcpy(&xa, &u, sizeof xa); const ${T} e = ${exp}(xa); ${bits.u} ue; memcpy(&ue, &e, sizeof ue); ue &= keep; memcpy(&s[r][jj], &ue, sizeof ue); }`);
  em.emit('for (int64_t jj = 0; jj < bc; jj++) sum += s[r][jj];');
  em.emit('l[r] = l[r] * fac + sum;');
  em.emit('m[r] = mb;');
  em.emit(`for (int64_t c = 0; c < ${k.width}; c++) o[r][c] *= fac;`);
  em.emit('}'); // rows of the pair
  // o += p · v for both rows of the pair: each v load feeds two rows, in vector accumulators
  // over chunks of the value width (an odd last row computes its own twice, stored once)
  const chunk = `(4 * ${NVL})`;
  em.emit('{');
  em.emit('const int64_t r0 = i2 - iA, r1 = iN - iA;');
  em.emit('int64_t c0 = 0;');
  if (v.sCol === 1) {
    em.emit(`for (; c0 + ${chunk} <= ${k.width}; c0 += ${chunk}) {`);
    em.emit(`${VT} a4[4], b4[4];`);
    em.emit(`for (int v = 0; v < 4; v++) { memcpy(&a4[v], &o[r0][c0 + v * ${NVL}], sizeof a4[v]); memcpy(&b4[v], &o[r1][c0 + v * ${NVL}], sizeof b4[v]); }`);
    em.emit('for (int64_t jj = 0; jj < bc; jj++) {');
    em.emit(`const ${T} p0 = s[r0][jj], p1 = s[r1][jj]; const ${T} *vr = V + (j0 + jj) * ${v.sRow} + c0;`);
    em.emit(`for (int v = 0; v < 4; v++) { ${VT} x; memcpy(&x, vr + v * ${NVL}, sizeof x); a4[v] += p0 * x; b4[v] += p1 * x; }`);
    em.emit('}');
    em.emit(`for (int v = 0; v < 4; v++) memcpy(&o[r0][c0 + v * ${NVL}], &a4[v], sizeof a4[v]);`);
    em.emit(`if (r1 != r0) for (int v = 0; v < 4; v++) memcpy(&o[r1][c0 + v * ${NVL}], &b4[v], sizeof b4[v]);`);
    em.emit('}');
  }
  em.emit('for (int64_t r = r0; r <= r1; r++)');
  em.emit(`for (int64_t jj = 0; jj < bc; jj++) { const ${T} p = s[r][jj]; const ${T} *vr = V + (j0 + jj) * ${v.sRow}; for (int64_t c = c0; c < ${k.width}; c++) o[r][c] += p * vr[c * ${v.sCol}]; }`);
  em.emit('}');
  em.emit('}'); // row pairs
  em.emit('}'); // key blocks
  // the epilogue: acc = o / l at (batch..., i, c)
  em.emit('for (int64_t i = iA; i < iB; i++) {');
  em.emit('const int64_t r = i - iA;');
  em.emit(`const ${T} li = (${T})l[r];`);
  em.emit(`for (int64_t c = 0; c < ${k.width}; c++) {`);
  epiAffs.forEach((a, idx) => {
    em.emit(`const int64_t pE${idx} = eB${idx} + ${a.c[iVar] ?? 0} * i + ${a.c[jVar] ?? 0} * c;`);
    em.setPtr(a, `pE${idx}`);
  });
  em.emit(`const ${T} acc = o[r][c] / li;`);
  em.accVal = { s: 'acc', t };
  stmts(em, k.body);
  stores(em, k.stores);
  em.emit('}');
  em.emit('}');
  em.emit('}'); // tasks
}
