// Blocked matmul for the JS backend (Goto-style): B is packed into NR-wide column panels
// (up to NC columns at a time), A into MR-tall row slivers (MC rows at a time), both as
// float64 in one fixed-size scratch array, then an MR x NR register-blocked micro-kernel
// runs over them. Scalar JS on one thread: about 5 GFLOP/s on one Zen 5 core, against
// ~1.4 for a plain i-k-j loop and ~0.8 for tfjs-backend-cpu.
//
// What mattered for speed (measured with V8 in Node 20; each a few to ~20 percent):
// - the scratch array is a constant captured by the generated kernels' closures, so
//   TurboFan embeds its base address and length: a load is a compare with an immediate
//   and a move, not a map check, two base-pointer loads and a length load;
// - `(i + c) | 0` index math in the kernel: int32 adds without overflow checks;
// - full tiles store straight into C; only edge tiles (m % MR, n % NR) go through a small
//   float64 tile and a bounds-checked copy;
// - packing walks whichever of each operand's strides is 1 (x·Wᵀ reads W rows).
// The ceiling of this approach is spilling: V8 keeps 16 doubles in registers.

import type { TypedArray } from '../../core/dtype.js';

export interface MatmulOperands {
  a: TypedArray; aOff: number; sam: number; sak: number;
  b: TypedArray; bOff: number; sbk: number; sbn: number;
  c: TypedArray; cOff: number; scm: number; scn: number;
  m: number; n: number; k: number;
}

/** c[cOff + r*scm + j*scn] (=|+=) sum_kk P[pa + kk*MR + r] * P[pb + kk*NR + j] for r < MR, j < NR */
type Micro = (pa: number, pb: number, kc: number, c: TypedArray, cOff: number, scm: number, scn: number) => void;

interface Engine {
  /** micro-kernels per output array type, so each store site stays monomorphic */
  kernels(c: TypedArray): { set: Micro; add: Micro };
  /** writes an edge tile into `tile` (row-major MR x NR) */
  edge: Micro;
  tile: Float64Array;
  packB(o: MatmulOperands, k0: number, kc: number, j0: number, nc: number): void;
  packA(o: MatmulOperands, i0: number, mc: number, k0: number, kc: number, at: number): void;
}

/** Called once per finished block of C (rows i0..i0+mc, cols j0..j0+nc) while it is in cache. */
export type BlockDone = (i0: number, mc: number, j0: number, nc: number) => void;

/** Cache blocking of the engine: k depth, rows of A and columns of B packed at a time. */
export interface MatmulTiles {
  readonly kc: number;
  readonly mc: number;
  readonly nc: number;
}

/**
 * C = A·B for one (non-batched) problem with arbitrary strides, blocked by `tiles` (default
 * kc 256, mc 64, nc 1024; max-autotune may pick others per kernel). `onBlock` (compiled programs' fused epilogues) runs on each block of C right
 * after its last k step.
 */
export type Matmul2d = ((o: MatmulOperands, onBlock?: BlockDone, tiles?: MatmulTiles) => void) & {
  /** builds the engine and its float32 micro-kernels now (ahead of the first matmul, while idle) */
  prepare(): void;
};

/**
 * Builds the matmul engine: one packing scratch array and one set of micro-kernels per thread,
 * shared by every kernel whatever its tiles (the scratch grows to the largest blocking seen).
 * One engine, not one per autotuned kernel: each engine's micro-kernels are fresh closures
 * that V8 must tier up on their own (a first call of W2 spent ~200 ms in unoptimized
 * micro-kernels of five engines), and each held megabytes of scratch.
 * Self-contained (no outside references) so that worker threads can rebuild it from this
 * function's source text.
 */
export function createMatmul(): Matmul2d {
  const MR = 4;
  const NR = 4;
  const DEFAULT = { kc: 256, mc: 64, nc: 1024 };
  // float64s of scratch to start with: every blocking max-autotune tries fits, so the engine
  // (and its tiered-up micro-kernels) is built once; pages a run never touches cost nothing
  const MIN_SCRATCH = 1 << 20;

  function microSource(accumulate: boolean): string {
    const acc: string[] = [];
    for (let r = 0; r < MR; r++) for (let j = 0; j < NR; j++) acc.push(`c${r}_${j} = 0`);
    const body: string[] = [];
    for (let j = 0; j < NR; j++) body.push(`const b${j} = p[${j === 0 ? 'pb' : `(pb + ${j}) | 0`}];`);
    for (let r = 0; r < MR; r++) {
      body.push(`const a${r} = p[${r === 0 ? 'pa' : `(pa + ${r}) | 0`}];`);
      for (let j = 0; j < NR; j++) body.push(`c${r}_${j} += a${r} * b${j};`);
    }
    const store: string[] = [];
    for (let r = 0; r < MR; r++) {
      store.push(`q = cOff + ${r} * scm;`);
      for (let j = 0; j < NR; j++) store.push(accumulate ? `c[q] += c${r}_${j}; q += scn;` : `c[q] = c${r}_${j}; q += scn;`);
    }
    return `const p = P;
  return function micro(pa, pb, kc, c, cOff, scm, scn) {
    let ${acc.join(', ')};
    for (let kk = 0; kk < kc; kk++) {
      ${body.join('\n    ')}
      pa = (pa + ${MR}) | 0;
      pb = (pb + ${NR}) | 0;
    }
    let q = 0;
    ${store.join('\n  ')}
  };`;
  }

  const makeMicro = (P: Float64Array, accumulate: boolean): Micro => new Function('P', microSource(accumulate))(P) as Micro;


  function makeEngine(scratch: number): Engine {
    const P = new Float64Array(scratch);
    const byType = new Map<unknown, { set: Micro; add: Micro }>();
    return {
      kernels(c) {
        let k = byType.get(c.constructor);
        if (!k) {
          k = { set: makeMicro(P, false), add: makeMicro(P, true) };
          byType.set(c.constructor, k);
        }
        return k;
      },
      edge: makeMicro(P, false),
      tile: new Float64Array(MR * NR),

      // B[k0:k0+kc, j0:j0+nc] -> panels of NR columns (panel-major, then k, then j), zero-padded
      packB(o, k0, kc, j0, nc) {
        const { b, sbk, sbn } = o;
        let p = 0;
        for (let jp = 0; jp < nc; jp += NR) {
          const base = o.bOff + k0 * sbk + (j0 + jp) * sbn;
          const w = Math.min(NR, nc - jp);
          if (w === NR && sbk === 1) {
            // B is a transposed view (x·Wᵀ): walk each column of B (a row of W) contiguously
            for (let jj = 0; jj < NR; jj++) {
              const col = base + jj * sbn;
              for (let kk = 0; kk < kc; kk++) P[p + kk * NR + jj] = b[col + kk]!;
            }
            p += kc * NR;
          } else if (w === NR) {
            for (let kk = 0, row = base; kk < kc; kk++, row += sbk) {
              for (let jj = 0, q = row; jj < NR; jj++, q += sbn) P[p++] = b[q]!;
            }
          } else {
            for (let kk = 0, row = base; kk < kc; kk++, row += sbk) {
              for (let jj = 0; jj < NR; jj++) P[p++] = jj < w ? b[row + jj * sbn]! : 0;
            }
          }
        }
      },

      // A[i0:i0+mc, k0:k0+kc] -> slivers of MR rows (sliver-major, then k, then r), zero-padded
      // after B's panels (kc x nc) in the scratch array
      packA(o, i0, mc, k0, kc, at) {
        const { a, sam, sak } = o;
        let p = at;
        for (let ii = 0; ii < mc; ii += MR) {
          const base = o.aOff + (i0 + ii) * sam + k0 * sak;
          const h = Math.min(MR, mc - ii);
          if (h === MR && sak === 1) {
            // row-major A: walk each row contiguously
            for (let r = 0; r < MR; r++) {
              const row = base + r * sam;
              for (let kk = 0; kk < kc; kk++) P[p + kk * MR + r] = a[row + kk]!;
            }
            p += kc * MR;
          } else if (h === MR) {
            for (let kk = 0, col = base; kk < kc; kk++, col += sak) {
              for (let r = 0, q = col; r < MR; r++, q += sam) P[p++] = a[q]!;
            }
          } else {
            for (let kk = 0, col = base; kk < kc; kk++, col += sak) {
              for (let r = 0; r < MR; r++) P[p++] = r < h ? a[col + r * sam]! : 0;
            }
          }
        }
      },
    };
  }

  let engine: Engine | null = null;
  let engineScratch = 0;

  function matmul2d(o: MatmulOperands, onBlock?: BlockDone, tiles?: MatmulTiles): void {
    const { c, m, n, k, scm, scn } = o;
    if (m === 0 || n === 0) return;
    if (k === 0) {
      for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) c[o.cOff + i * scm + j * scn] = 0;
      onBlock?.(0, m, 0, n);
      return;
    }
    const { kc: KC, mc: MC, nc: NC } = tiles ?? DEFAULT;
    const A_AT = KC * NC; // A's block follows B's panels in the scratch array
    const scratch = A_AT + KC * MC;
    if (!engine || engineScratch < scratch) {
      engineScratch = Math.max(scratch, MIN_SCRATCH);
      engine = makeEngine(engineScratch);
    }
    const E = engine;
    const K = E.kernels(c);
    const tile = E.tile;
    for (let j0 = 0; j0 < n; j0 += NC) {
      const nc = Math.min(NC, n - j0);
      for (let k0 = 0; k0 < k; k0 += KC) {
        const kc = Math.min(KC, k - k0);
        const first = k0 === 0;
        const micro = first ? K.set : K.add;
        E.packB(o, k0, kc, j0, nc);
        for (let i0 = 0; i0 < m; i0 += MC) {
          const mc = Math.min(MC, m - i0);
          E.packA(o, i0, mc, k0, kc, A_AT);
          for (let jp = 0; jp < nc; jp += NR) {
            const pb = (jp / NR) * kc * NR;
            const cols = Math.min(NR, nc - jp);
            for (let ii = 0; ii < mc; ii += MR) {
              const pa = A_AT + (ii / MR) * kc * MR;
              const rows = Math.min(MR, mc - ii);
              const cOff = o.cOff + (i0 + ii) * scm + (j0 + jp) * scn;
              if (rows === MR && cols === NR) {
                micro(pa, pb, kc, c, cOff, scm, scn);
              } else {
                E.edge(pa, pb, kc, tile, 0, NR, 1);
                for (let r = 0; r < rows; r++) {
                  for (let j = 0; j < cols; j++) {
                    const q = cOff + r * scm + j * scn;
                    c[q] = first ? tile[r * NR + j]! : c[q]! + tile[r * NR + j]!;
                  }
                }
              }
            }
          }
          if (onBlock && k0 + kc >= k) onBlock(i0, mc, j0, nc);
        }
      }
    }
  }
  function prepare(): void {
    if (!engine) {
      engineScratch = MIN_SCRATCH;
      engine = makeEngine(engineScratch);
    }
    engine.kernels(new Float32Array(0));
  }
  return Object.assign(matmul2d, { prepare });
}

/** This thread's engine (eager and compiled kernels share it); see createMatmul. */
export const matmul2d: Matmul2d = createMatmul();
