// The C matmul engine of the native backend (BLIS-style): B packed into panels of NR columns,
// A into slivers of MR rows, an MR x NR register-blocked micro-kernel (GCC vector types, so
// the same text is AVX-512, AVX2 or SSE code depending on -march), and the fused epilogue
// run on each finished block of C while it is in cache.
//
// Threads: each call splits C into a tm x tn grid of tile ranges (one per OpenMP thread,
// chosen for the least padded work plus packing); every thread packs its own A and B panels,
// so there is no barrier between k blocks (a shared packed B costs a barrier per kc block
// and measured no faster on 2 cores). Cache blocking: kc (depth of a packed panel), mc (rows
// of a packed A block), nc (columns of a packed B panel), from the kernel's `tiles`
// (max-autotune candidates) or the defaults.

import type { DType } from '../../core/dtype.js';

/** Which C types a matmul engine instance works on. */
export interface EngineKey {
  readonly t: 'f32' | 'f64';
  readonly a: DType;
  readonly b: DType;
  readonly c: DType | 'acc';
}

const STORAGE: Record<DType, string> = { float32: 'float', float64: 'double', int32: 'int32_t', bool: 'uint8_t' };

export const engineName = (e: EngineKey) => `kiln_mm_${e.t}_${e.a}_${e.b}_${e.c}`;

/**
 * Micro-kernel shape per instruction set, in the unit's header: KILN_MR rows x KILN_NVEC
 * vectors. AVX-512 (32 registers): 12 x 2 vectors (24 accumulators; 14 x 2 ran 1024^3 as
 * fast, W1's 128 rows 5% slower: 140 padded rows against 132); AVX2 (16 registers): 6 x 2
 * (12 accumulators); SSE: 4 x 2. -DKILN_MR=.. overrides.
 */
export const MATMUL_HEADER = String.raw`#if defined(__AVX512F__)
#define KILN_VBYTES 64
#ifndef KILN_MR
#define KILN_MR 12
#endif
#elif defined(__AVX__)
#define KILN_VBYTES 32
#ifndef KILN_MR
#define KILN_MR 6
#endif
#else
#define KILN_VBYTES 16
#ifndef KILN_MR
#define KILN_MR 4
#endif
#endif
#ifndef KILN_NVEC
#define KILN_NVEC 2
#endif
typedef float kiln_vf __attribute__((vector_size(KILN_VBYTES)));
typedef double kiln_vd __attribute__((vector_size(KILN_VBYTES)));
typedef int32_t kiln_vfi __attribute__((vector_size(KILN_VBYTES)));
typedef int64_t kiln_vdi __attribute__((vector_size(KILN_VBYTES)));
static inline int kiln_threads_max(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
`;

/** Most rows / vectors the generated micro-kernel text unrolls (KILN_MR, KILN_NVEC pick how many are used). */
const MAX_ROWS = 16;
const MAX_VECS = 4;

/**
 * In-register transpose of r[0..nv-1] (nv vectors of nv lanes): butterfly stages that swap
 * off-diagonal blocks of d x d lanes, d = nv/2 .. 1, each a two-input shuffle per vector.
 */
function transposeStages(nv: number, mask: string): string {
  const out: string[] = [];
  for (let d = nv >> 1; d >= 1; d >>= 1) {
    const lo = Array.from({ length: nv }, (_, l) => ((l & d) === 0 ? l : nv + l - d));
    const hi = Array.from({ length: nv }, (_, l) => ((l & d) === 0 ? l + d : nv + l));
    for (let i = 0; i < nv; i++) {
      if (i & d) continue;
      out.push(`{ const __typeof__(r[0]) x = r[${i}], y = r[${i + d}]; r[${i}] = __builtin_shuffle(x, y, (${mask}){${lo.join(',')}}); r[${i + d}] = __builtin_shuffle(x, y, (${mask}){${hi.join(',')}}); }`);
    }
  }
  return out.join('\n');
}

/** The transpose for every vector width the header can pick (lanes = bytes / element size). */
function transposeFor(elem: 4 | 8, mask: string): string {
  return [64, 32, 16].map((bytes, i) => `${i === 0 ? '#if' : '#elif'} KILN_VBYTES == ${bytes}\n${transposeStages(bytes / elem, mask)}`).join('\n') + '\n#endif';
}

export function engineSignature(e: EngineKey): string {
  const T = e.t === 'f32' ? 'float' : 'double';
  const TC = e.c === 'acc' ? T : STORAGE[e.c];
  return `void ${engineName(e)}(const ${STORAGE[e.a]} *a, int64_t sam, int64_t sak, const ${STORAGE[e.b]} *b, int64_t sbk, int64_t sbn, const ${T} *bp, ${TC} *c, int64_t scm, int64_t scn, int64_t m, int64_t n, int64_t k, int64_t KC, int64_t MC, int64_t NC, int par, void (*epi)(void *, int64_t, int64_t, int64_t, int64_t), void *ctx)`;
}

/** The engine for one combination of operand types (see the file comment). */
export function matmulEngine(e: EngineKey, exported = false): string {
  const T = e.t === 'f32' ? 'float' : 'double';
  const V = e.t === 'f32' ? 'kiln_vf' : 'kiln_vd';
  const NV = `(KILN_VBYTES / ${e.t === 'f32' ? 4 : 8})`;
  const TA = STORAGE[e.a], TB = STORAGE[e.b];
  const TC = e.c === 'acc' ? T : STORAGE[e.c];
  const name = engineName(e);
  const native = e.c === 'acc' || e.c === (e.t === 'f32' ? 'float32' : 'float64');
  // B's storage type is the engine's (no conversion while packing): vector loads apply
  const sameType = e.b === (e.t === 'f32' ? 'float32' : 'float64');
  const toC = (x: string) => (native ? x : e.c === 'int32' ? `kiln_i32d(${x})` : e.c === 'bool' ? `kiln_u8d(${x})` : `(${TC})(${x})`);
  const rows = Array.from({ length: MAX_ROWS }, (_, r) => r);
  const vecs = Array.from({ length: MAX_VECS }, (_, v) => v);
  // a line per (row, vector) present in this build
  const each = (f: (r: number, v: number) => string) => rows.map((r) => {
    const body = vecs.map((v) => (v < 2 ? f(r, v) : `\n#if KILN_NVEC > ${v}\n${f(r, v)}\n#endif\n`)).join(' ');
    return r < 4 ? body : `#if KILN_MR > ${r}\n${body}\n#endif`;
  }).join('\n');
  const eachVec = (f: (v: number) => string) => vecs.map((v) => (v < 2 ? f(v) : `\n#if KILN_NVEC > ${v}\n${f(v)}\n#endif\n`)).join(' ');
  return `
#define ${name}_NR (KILN_NVEC * ${NV})
/* C[rows x cols] (+)= A sliver (kc x MR, packed) * B panel (kc x NR, packed) */
static void ${name}_micro(int64_t kc, const ${T} *restrict pa, const ${T} *restrict pb, ${TC} *restrict c, int64_t scm, int64_t scn, int64_t rows, int64_t cols, int first) {
  const int64_t NR = ${name}_NR;
${each((r, v) => `${V} c${r}_${v} = {0};`)}
  if (!first) for (int64_t r = 0; r < rows; r++) __builtin_prefetch(c + r * scm, 1, 3), __builtin_prefetch(c + r * scm + (NR - 1) * scn, 1, 3);
  #pragma GCC unroll 4
  for (int64_t p = 0; p < kc; p++) {
    __builtin_prefetch(pa + 8 * KILN_MR, 0, 3);
${eachVec((v) => `const ${V} b${v} = *(const ${V} *)(pb + ${v} * ${NV});`)}
${rows.map((r) => {
    const body = `{ const ${T} a = pa[${r}]; ${eachVec((v) => `c${r}_${v} += a * b${v};`)} }`;
    return r < 4 ? body : `#if KILN_MR > ${r}\n${body}\n#endif`;
  }).join('\n')}
    pa += KILN_MR;
    pb += NR;
  }
  ${native ? `if (rows == KILN_MR && cols == NR && scn == 1) {
${rows.map((r) => {
    const body = `{ ${T} *q = c + ${r} * scm; ${eachVec((v) => `{ ${V} x = c${r}_${v}; if (!first) { ${V} y; memcpy(&y, q + ${v} * ${NV}, sizeof y); x += y; } memcpy(q + ${v} * ${NV}, &x, sizeof x); }`)} }`;
    return r < 4 ? body : `#if KILN_MR > ${r}\n${body}\n#endif`;
  }).join('\n')}
    return;
  }` : ''}
  ${T} tile[KILN_MR][${name}_NR];
${each((r, v) => `memcpy(tile[${r}] + ${v} * ${NV}, &c${r}_${v}, sizeof c${r}_${v});`)}
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < cols; j++) {
      ${TC} *q = c + r * scm + j * scn;
      *q = first ? ${toC('tile[r][j]')} : ${toC(`(${T})*q + tile[r][j]`)};
    }
}

/* B[k0.., j0..] (kc x nc) -> panels of NR columns (kc x NR each, zero padded) */
static void ${name}_packB(${T} *restrict p, const ${TB} *restrict b, int64_t sbk, int64_t sbn, int64_t kc, int64_t nc) {
  const int64_t NR = ${name}_NR;
  for (int64_t jp = 0; jp < nc; jp += NR, p += kc * NR) {
    const int64_t w = nc - jp < NR ? nc - jp : NR;
    const ${TB} *base = b + jp * sbn;
    if (w == NR && sbn == 1) {
      for (int64_t kk = 0; kk < kc; kk++) for (int64_t jj = 0; jj < NR; jj++) p[kk * NR + jj] = (${T})base[kk * sbk + jj];
    } else if (w == NR && sbk == 1) {
      /* B transposed (x @ W^T: rows of W are contiguous in k): NV x NV blocks transposed in registers */
      int64_t kk = 0;
      ${sameType ? `for (; kk + ${NV} <= kc; kk += ${NV}) {
        for (int64_t g = 0; g < KILN_NVEC; g++) {
          ${V} r[${NV}];
          for (int64_t t = 0; t < ${NV}; t++) memcpy(&r[t], base + (g * ${NV} + t) * sbn + kk, sizeof r[t]);
${transposeFor(e.t === 'f32' ? 4 : 8, e.t === 'f32' ? 'kiln_vfi' : 'kiln_vdi')}
          for (int64_t t = 0; t < ${NV}; t++) memcpy(p + (kk + t) * NR + g * ${NV}, &r[t], sizeof r[t]);
        }
      }` : ''}
      for (int64_t jj = 0; jj < NR; jj++) for (int64_t q = kk; q < kc; q++) p[q * NR + jj] = (${T})base[q + jj * sbn];
    } else if (w == NR) {
      for (int64_t jj = 0; jj < NR; jj++) for (int64_t kk = 0; kk < kc; kk++) p[kk * NR + jj] = (${T})base[kk * sbk + jj * sbn];
    } else {
      /* the edge panel: zeros past column w, the columns along their contiguous direction */
      for (int64_t kk = 0; kk < kc; kk++) for (int64_t jj = w; jj < NR; jj++) p[kk * NR + jj] = 0;
      if (sbk == 1) { for (int64_t jj = 0; jj < w; jj++) for (int64_t kk = 0; kk < kc; kk++) p[kk * NR + jj] = (${T})base[kk + jj * sbn]; }
      else for (int64_t kk = 0; kk < kc; kk++) for (int64_t jj = 0; jj < w; jj++) p[kk * NR + jj] = (${T})base[kk * sbk + jj * sbn];
    }
  }
}

/* A[i0.., k0..] (mc x kc) -> slivers of MR rows (kc x MR each, zero padded) */
static void ${name}_packA(${T} *restrict p, const ${TA} *restrict a, int64_t sam, int64_t sak, int64_t mc, int64_t kc) {
  const int64_t MR = KILN_MR;
  for (int64_t ii = 0; ii < mc; ii += MR, p += kc * MR) {
    const int64_t h = mc - ii < MR ? mc - ii : MR;
    const ${TA} *base = a + ii * sam;
    if (h == MR && sak == 1) {
      for (int64_t r = 0; r < MR; r++) for (int64_t kk = 0; kk < kc; kk++) p[kk * MR + r] = (${T})base[r * sam + kk];
    } else if (h == MR) {
      for (int64_t kk = 0; kk < kc; kk++) for (int64_t r = 0; r < MR; r++) p[kk * MR + r] = (${T})base[r * sam + kk * sak];
    } else {
      for (int64_t kk = 0; kk < kc; kk++) for (int64_t r = 0; r < MR; r++) p[kk * MR + r] = r < h ? (${T})base[r * sam + kk * sak] : 0;
    }
  }
}

/* B (k x n) as the engine's panels of NR columns over all of k (zero padded): bp of the engine, ${name}_packed_size(n, k) elements */
${exported ? '' : 'static '}int64_t ${name}_packed_size(int64_t n, int64_t k) { return (n + ${name}_NR - 1) / ${name}_NR * ${name}_NR * (k > 0 ? k : 1); }
${exported ? '' : 'static '}void ${name}_pack(${T} *p, const ${TB} *b, int64_t sbk, int64_t sbn, int64_t k, int64_t n) {
  if (k <= 0 || n <= 0) return;
  #pragma omp parallel for schedule(static) if ((double)n * k >= ${1 << 20})
  for (int64_t jp = 0; jp < n; jp += ${name}_NR) ${name}_packB(p + jp * k, b + jp * sbn, sbk, sbn, k, n - jp < ${name}_NR ? n - jp : ${name}_NR);
}

${exported ? '' : 'static '}${engineSignature(e)} {
  const int64_t NR = ${name}_NR, MR = KILN_MR;
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; i++) for (int64_t j = 0; j < n; j++) c[i * scm + j * scn] = 0;
    if (epi) epi(ctx, 0, m, 0, n);
    return;
  }
  MC = MC < MR ? MR : MC / MR * MR;
  NC = NC < NR ? NR : NC / NR * NR;
  if (KC > k) KC = k;
  /* equal k blocks (784 = 4 x 196, not 3 x 256 + 16: a thin last block costs a pass over C) */
  { const int64_t nk = (k + KC - 1) / KC; KC = (k + nk - 1) / nk; }
  const int64_t mt = (m + MR - 1) / MR, nt = (n + NR - 1) / NR;
  int nth = par ? kiln_threads_max() : 1;
  if (nth > mt * nt) nth = (int)(mt * nt);
  #pragma omp parallel num_threads(nth) if (nth > 1)
  {
    int T = 1, id = 0;
#ifdef _OPENMP
    T = omp_get_num_threads(); id = omp_get_thread_num();
#endif
    /* the tm x tn grid of tile ranges with the least padded work + packing (each thread packs
       its rows of A once per nc block, and its columns of B) */
    int64_t tm = 1, tn = T; double best = -1;
    for (int64_t d = 1; d <= T; d++) {
      if (T % d) continue;
      const int64_t rm = (mt + d - 1) / d * MR, rn = (nt + T / d - 1) / (T / d) * NR;
      const double cost = (double)rm * rn * k + 4.0 * k * ((double)rm * ((rn + NC - 1) / NC) + rn);
      if (best < 0 || cost < best) best = cost, tm = d, tn = T / d;
    }
    const int64_t im = id / tn, in = id % tn;
    const int64_t iLo = mt * im / tm * MR, iHi = mt * (im + 1) / tm * MR < m ? mt * (im + 1) / tm * MR : m;
    const int64_t jLo = nt * in / tn * NR, jHi = nt * (in + 1) / tn * NR < n ? nt * (in + 1) / tn * NR : n;
    int64_t nC = NC < jHi - jLo ? NC : (jHi - jLo + NR - 1) / NR * NR;
    int64_t mC = MC < iHi - iLo ? MC : (iHi - iLo + MR - 1) / MR * MR;
    /* B prepacked (bp: panels of NR columns over all of k, ${name}_pack) or packed here per (nc, kc) block */
    ${T} *PB = bp ? 0 : (${T} *)kiln_scratch(0, (size_t)KC * (nC > 0 ? nC : 1) * sizeof(${T}));
    ${T} *PA = (${T} *)kiln_scratch(1, (size_t)KC * (mC > 0 ? mC : 1) * sizeof(${T}));
    for (int64_t j0 = jLo; j0 < jHi; j0 += NC) {
      const int64_t nc = jHi - j0 < NC ? jHi - j0 : NC;
      for (int64_t k0 = 0; k0 < k; k0 += KC) {
        const int64_t kc = k - k0 < KC ? k - k0 : KC;
        const int first = k0 == 0, last = k0 + kc >= k;
        if (!bp) ${name}_packB(PB, b + k0 * sbk + j0 * sbn, sbk, sbn, kc, nc);
        const ${T} *pB = bp ? bp + j0 * k + k0 * NR : PB;
        const int64_t panel = bp ? k * NR : kc * NR;
        for (int64_t i0 = iLo; i0 < iHi; i0 += MC) {
          const int64_t mc = iHi - i0 < MC ? iHi - i0 : MC;
          ${name}_packA(PA, a + i0 * sam + k0 * sak, sam, sak, mc, kc);
          for (int64_t jp = 0; jp < nc; jp += NR) {
            const int64_t cols = nc - jp < NR ? nc - jp : NR;
            for (int64_t ii = 0; ii < mc; ii += MR) {
              const int64_t rws = mc - ii < MR ? mc - ii : MR;
              ${name}_micro(kc, PA + ii * kc, pB + jp / NR * panel, c + (i0 + ii) * scm + (j0 + jp) * scn, scm, scn, rws, cols, first);
            }
          }
          if (last && epi) epi(ctx, i0, mc, j0, nc);
        }
      }
    }
  }
}
`;
}
