// Evaluation metrics of the example workloads (and examples/).

/**
 * Exact ROC AUC: the probability that a random positive scores above a random negative
 * (ties count one half), by sorting the scores and summing the positives' average ranks
 * (Mann-Whitney U). Labels are 0/1; NaN when one class is absent.
 */
export function auc(scores: ArrayLike<number>, labels: ArrayLike<number>): number {
  const n = scores.length;
  if (labels.length !== n) throw new Error(`auc: ${n} scores but ${labels.length} labels`);
  const order = Int32Array.from({ length: n }, (_, i) => i).sort((a, b) => scores[a]! - scores[b]!);
  let rankSumPos = 0, pos = 0;
  for (let i = 0; i < n; ) {
    let j = i + 1;
    while (j < n && scores[order[j]!] === scores[order[i]!]) j++;
    const avgRank = (i + 1 + j) / 2; // ranks i+1..j share their mean
    for (let k = i; k < j; k++) {
      if (labels[order[k]!]) {
        rankSumPos += avgRank;
        pos++;
      }
    }
    i = j;
  }
  const neg = n - pos;
  if (pos === 0 || neg === 0) return NaN;
  return (rankSumPos - (pos * (pos + 1)) / 2) / (pos * neg);
}

/** Peak signal-to-noise ratio in dB of `x` against `ref`, for values in [0, peak]. */
export function psnr(x: ArrayLike<number>, ref: ArrayLike<number>, peak = 1): number {
  if (x.length !== ref.length) throw new Error(`psnr: ${x.length} vs ${ref.length} values`);
  let se = 0;
  for (let i = 0; i < x.length; i++) {
    const d = x[i]! - ref[i]!;
    se += d * d;
  }
  const mse = se / x.length;
  return 10 * Math.log10((peak * peak) / mse);
}
