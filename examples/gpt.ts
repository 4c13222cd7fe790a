// The W7 benchmark configuration of the GPT decoder (src/advisor/examples/lib/gpt.ts, the model
// of the char-gpt example): the decoder without the embeddings and the head, x[B,T,768] in,
// ln_f(blocks(x)) out (../bench/workloads/w7.ts). createW7Model / runW7 build and run it.
//
//   npx tsx examples/gpt.ts [--compile]     (W7 inference, eager or compiled, timed)

import { pathToFileURL } from 'node:url';
import * as kiln from 'kilnjs';
import { GPT } from '../src/advisor/examples/lib/gpt.js';

export { GPT, type GptConfig } from '../src/advisor/examples/lib/gpt.js';

// ---- W7 ------------------------------------------------------------------------------------

/** W7 (../../shared/WORKLOADS.md): d 768, 12 heads, 2 layers (CPU shapes), batch 1, sequence 128. */
export const W7 = { dim: 768, heads: 12, layers: 2, batch: 1, seq: 128 } as const;

/**
 * The W7 decoder: GPT without token/position embeddings and head (state-dict keys h.* and
 * ln_f.*), in eval mode with frozen parameters. Seeded with kiln.manualSeed(seed) when given.
 */
export function createW7Model(opts: { layers?: number; seed?: number } = {}): GPT {
  if (opts.seed !== undefined) kiln.manualSeed(opts.seed);
  const model = new GPT({ vocabSize: 0, blockSize: 0, nEmbd: W7.dim, nHead: W7.heads, nLayer: opts.layers ?? W7.layers, embeddings: false });
  model.requiresGrad_(false);
  model.eval();
  return model;
}

/**
 * One W7 inference call: ln_f(blocks(x)) for x [B,T,768], under noGrad and a scope (the
 * result is returned; free it when done). `run` may be a compiled version of the model.
 */
export function runW7(model: GPT | ((x: kiln.Tensor) => kiln.Tensor), x: kiln.Tensor): kiln.Tensor {
  const f = typeof model === 'function' ? model : (t: kiln.Tensor) => model.hidden(t);
  return kiln.noGrad(() => kiln.scope(() => f(x)));
}

function main(): void {
  const compile = process.argv.includes('--compile');
  const model = createW7Model({ seed: 0 });
  const x = kiln.keep(kiln.randn([W7.batch, W7.seq, W7.dim]));
  const fn = compile ? kiln.compile((t: kiln.Tensor) => model.hidden(t), { name: 'w7' }) : (t: kiln.Tensor) => model.hidden(t);
  console.log(`W7: ${W7.layers} layers, d ${W7.dim}, ${W7.heads} heads, x[${x.shape.join(',')}], ${(model.numParameters() / 1e6).toFixed(1)}M parameters${compile ? ', compiled' : ''}`);
  const times: number[] = [];
  for (let i = 0; i < 6; i++) {
    const t0 = performance.now();
    const y = runW7(fn, x);
    times.push(performance.now() - t0);
    if (i === 0) console.log(kiln.scope(() => `output [${y.shape.join(',')}], mean ${y.mean().item().toFixed(6)}, std ${y.std().item().toFixed(4)}`));
    y.dispose();
  }
  const steady = times.slice(1).sort((a, b) => a - b);
  console.log(`first call ${times[0]!.toFixed(0)} ms, median of the next ${steady.length}: ${steady[steady.length >> 1]!.toFixed(0)} ms`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
