// The README's example (a 2-64-3 MLP trained with Adam on 128 random points), eagerly or with
// the README's compiled step, as a consumer of the installed package writes it: plain
// JavaScript, so that node runs it without tsx and esbuild bundles it for a page. `kiln` is
// the 'kilnjs' module (passed in: Node and the page import it their own way).

/** Trains `steps` steps; `backend` null means eager. Returns each step's loss and the compiler's counters. */
export function trainReadmeExample(kiln, { backend = null, steps = 100 } = {}) {
  kiln.compiler.reset();
  kiln.manualSeed(0);
  const model = new kiln.nn.Sequential(new kiln.nn.Linear(2, 64), new kiln.nn.ReLU(), new kiln.nn.Linear(64, 3));
  const opt = new kiln.optim.Adam(model.parameters(), { lr: 1e-2 });
  const x = kiln.randn([128, 2]);
  const y = kiln.randint(0, 3, [128]);
  const eagerStep = (x, y) => {
    opt.zeroGrad();
    const loss = kiln.crossEntropy(model.forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  const step = backend === null ? eagerStep : kiln.compile(eagerStep, { backend });
  const losses = [];
  for (let i = 0; i < steps; i++) losses.push(kiln.scope(() => step(x, y).item()));
  const s = kiln.stats();
  return { losses, stats: { compiles: s.compiles, cacheHits: s.cacheHits, graphBreaks: s.graphBreaks.length, eagerFallbacks: s.eagerFallbacks, fusionFallbacks: s.fusionFallbacks } };
}

/**
 * Why a run is wrong, or null: the loss must fall (the mean of the last 10 steps at most 90%
 * of the first step's), and a compiled run must have compiled one program and replayed it
 * for every step after the first two (the first trace creates Adam's state, which makes it
 * one-shot: the second call traces again), with no fallback, following the eager losses
 * (`eager`, same seed) within float32 noise.
 */
export function checkRun(name, run, eager = null) {
  const { losses, stats } = run;
  if (!losses.every(Number.isFinite)) return `${name}: a loss is not finite`;
  const first = losses[0], last = losses.slice(-10).reduce((a, b) => a + b, 0) / 10;
  if (!(last <= 0.9 * first)) return `${name}: the loss did not fall (${first.toFixed(4)} -> ${last.toFixed(4)})`;
  if (eager === null) return null;
  if (stats.compiles !== 1 || stats.cacheHits !== losses.length - 2) return `${name}: expected 1 compile and ${losses.length - 2} replays, got ${JSON.stringify(stats)}`;
  if (stats.graphBreaks || stats.eagerFallbacks || stats.fusionFallbacks) return `${name}: the compiled path fell back: ${JSON.stringify(stats)}`;
  const worst = Math.max(...losses.map((l, i) => Math.abs(l - eager.losses[i]) / Math.abs(eager.losses[i])));
  if (!(worst < 1e-3)) return `${name}: compiled losses differ from eager by up to ${worst.toExponential(2)} (relative)`;
  return null;
}
