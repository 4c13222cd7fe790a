// mulberry32: a small deterministic PRNG for test choices (which elements to perturb, op
// parameters derived from one fast-check integer), independent of kiln's own generator.

/** Uniform numbers in [0, 1) from `seed`. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
