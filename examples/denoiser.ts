// A small residual convolutional denoiser (DnCNN-style: the network predicts the noise,
// the output is the noisy image minus that prediction) trained to remove Gaussian noise
// from procedurally generated images (gradients, circles and rectangles, stripe textures).
// Reports PSNR before (noisy vs clean) and after (denoised vs clean) on held-out images,
// and writes before/after PNGs.
//
//   npx tsx examples/denoiser.ts [--steps N] [--compile] [--backend js|wasm|native|auto|eager] [--out DIR] [--rgb]

import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as kiln from 'kilnjs';
import { Denoiser, gaussianNoise, makeImages } from '../src/advisor/examples/denoiser.js';
import { psnr } from '../src/advisor/examples/lib/metrics.js';
import { Args } from './lib/args.js';
import { EXAMPLE_BACKENDS, loadBackend, type ExampleBackend } from './lib/backends.js';
import { imageGrid, writePng } from './lib/png.js';
import { EpochBatches } from './lib/batches.js';
import { printMemoryAndCompiler } from './lib/run-report.js';
import { WARMUP_STEPS, rateSuffix, runTrainingLoop, type TrainingLoopResult } from './lib/training-loop.js';

// the images and the model are the advisor's denoiser workload (`kilnjs advise --example denoiser`)
export { Denoiser, gaussianNoise, makeImages, type MakeImagesOptions } from '../src/advisor/examples/denoiser.js';

const { optim } = kiln;

// ---------------------------------------------------------------------------------------
// training

export type { Memory } from './lib/training-loop.js';

export interface TrainDenoiserOptions {
  steps?: number;
  batch?: number;
  lr?: number;
  /** noise std (images are in [0, 1]) */
  sigma?: number;
  size?: number;
  channels?: 1 | 3;
  /** conv channels and number of conv layers */
  width?: number;
  depth?: number;
  trainImages?: number;
  testImages?: number;
  /** seed of the model's weights and of the training noise (kiln.manualSeed) */
  seed?: number;
  compile?: boolean;
  /** kiln.compile's backend option (native and auto after importing 'kilnjs/node') */
  backend?: ExampleBackend;
  fullgraph?: boolean;
  /** evaluate held-out PSNR every this many steps; 0 = only at the end */
  evalEvery?: number;
  print?: (line: string) => void;
}

/** losses (MSE of the denoised batch), evals, steps, steps/s and memory: see TrainingLoopResult */
export interface TrainDenoiserResult extends TrainingLoopResult<{ psnr: number }> {
  /** mean PSNR (dB) of the noisy held-out images against the clean ones (both clamped to [0, 1]) */
  psnrNoisy: number;
  /** mean PSNR (dB) of the denoised held-out images (clamped to [0, 1]) against the clean ones */
  psnrDenoised: number;
  model: Denoiser;
  /** the held-out images: clean, noisy and denoised, [count, channels, size, size] each */
  test: { clean: Float32Array; noisy: Float32Array; denoised: Float32Array; count: number; channels: number; size: number };
}

/** Mean over images of the PSNR of x against ref, both clamped to [0, 1]. */
export function meanPsnr(x: Float32Array, ref: Float32Array, count: number): number {
  const per = x.length / count, clamp = (v: number) => Math.min(1, Math.max(0, v));
  let total = 0;
  for (let i = 0; i < count; i++) {
    total += psnr(x.subarray(i * per, (i + 1) * per).map(clamp), ref.subarray(i * per, (i + 1) * per));
  }
  return total / count;
}

export function trainDenoiser(opts: TrainDenoiserOptions = {}): TrainDenoiserResult {
  const steps = opts.steps ?? 300, batch = opts.batch ?? 16, sigma = opts.sigma ?? 0.15;
  const size = opts.size ?? 32, channels = opts.channels ?? 1, seed = opts.seed ?? 0;
  const evalEvery = opts.evalEvery ?? 50;
  const print = opts.print ?? (() => {});
  const train = makeImages({ count: opts.trainImages ?? 512, size, channels, seed: 1 });
  const testClean = makeImages({ count: opts.testImages ?? 64, size, channels, seed: 2 });
  const testNoisy = kiln.keep(kiln.scope(() => kiln.add(testClean, gaussianNoise(testClean.shape, sigma, 3))));
  const cleanPixels = testClean.dataSync() as Float32Array, noisyPixels = testNoisy.dataSync() as Float32Array;
  const nTest = testClean.shape[0]!;

  kiln.manualSeed(seed);
  const model = new Denoiser(channels, opts.width ?? 16, opts.depth ?? 4);
  const opt = new optim.Adam(model.parameters(), { lr: opts.lr ?? 2e-3 });
  const eagerStep = (noisy: kiln.Tensor, clean: kiln.Tensor): kiln.Tensor => {
    opt.zeroGrad();
    const loss = kiln.mseLoss(model.call(noisy), clean);
    loss.backward();
    opt.step();
    return loss;
  };
  const step = opts.compile ? kiln.compile(eagerStep, { name: 'denoiser_step', backend: opts.backend, fullgraph: opts.fullgraph }) : eagerStep;
  const denoise = (): Float32Array => kiln.scope(() => kiln.noGrad(() => model.call(testNoisy).dataSync() as Float32Array));

  // batches from our own generator; fresh noise each step from kiln's generator, seeded
  // above, so eager and compiled runs see the same batches
  const batches = new EpochBatches(train.shape[0]!, batch, seed + 1);
  const run = runTrainingLoop({
    steps,
    evalEvery,
    step: (s) => {
      const clean = train.indexSelect(0, batches.indices(s));
      const noisy = kiln.add(clean, kiln.mul(kiln.randn(clean.shape), sigma));
      return step(noisy, clean).item();
    },
    evaluate: () => ({ psnr: meanPsnr(denoise(), cleanPixels, nTest) }),
    onEvaluation: (e, rate) => print(`step ${String(e.step).padStart(5)}  loss ${e.loss.toExponential(3)}  test PSNR ${e.psnr.toFixed(2)} dB${rateSuffix(rate, 2)}`),
  });
  batches.dispose();
  const denoised = denoise();
  const result: TrainDenoiserResult = {
    psnrNoisy: meanPsnr(noisyPixels, cleanPixels, nTest),
    psnrDenoised: meanPsnr(denoised, cleanPixels, nTest),
    ...run,
    model,
    test: { clean: cleanPixels, noisy: noisyPixels, denoised, count: nTest, channels, size },
  };
  for (const t of [train, testClean, testNoisy]) t.dispose();
  return result;
}

/**
 * Writes noisy.png, denoised.png, clean.png (the first `count` held-out images side by side)
 * and comparison.png (three rows: clean, noisy, denoised) into outDir; returns the paths.
 */
export function writeDenoiserPngs(test: TrainDenoiserResult['test'], outDir: string, count = 8, scale = 4): string[] {
  mkdirSync(outDir, { recursive: true });
  const { size, channels } = test;
  const per = channels * size * size, k = Math.min(count, test.count);
  const tile = (a: Float32Array, i: number) => a.subarray(i * per, (i + 1) * per);
  const range = Array.from({ length: k }, (_, i) => i);
  const ch = channels as 1 | 3;
  const files: [string, ReturnType<typeof imageGrid>][] = [
    ['noisy.png', imageGrid([range.map((i) => tile(test.noisy, i))], size, size, ch, { scale })],
    ['denoised.png', imageGrid([range.map((i) => tile(test.denoised, i))], size, size, ch, { scale })],
    ['clean.png', imageGrid([range.map((i) => tile(test.clean, i))], size, size, ch, { scale })],
    ['comparison.png', imageGrid([test.clean, test.noisy, test.denoised].map((a) => range.map((i) => tile(a, i))), size, size, ch, { scale })],
  ];
  return files.map(([name, img]) => {
    const path = join(outDir, name);
    writePng(path, img);
    return path;
  });
}

const signed = (x: number, digits: number) => `${x >= 0 ? '+' : ''}${x.toFixed(digits)}`;

async function main(): Promise<void> {
  const args = new Args();
  const backend = args.choice('backend', EXAMPLE_BACKENDS);
  await loadBackend(backend);
  const compile = args.has('compile') || backend !== undefined;
  const steps = args.int('steps') ?? 300;
  const channels = args.has('rgb') ? 3 : 1;
  const outDir = args.string('out') ?? join(tmpdir(), 'kiln-denoiser');
  const sigma = 0.15;
  console.log(`denoiser: 32x32 ${channels === 1 ? 'grayscale' : 'RGB'} images, Gaussian noise sigma ${sigma}, ${steps} Adam steps, ${compile ? `compiled training step (backend ${backend ?? 'js'})` : 'eager'}`);
  const t0 = performance.now();
  const r = trainDenoiser({ steps, channels, sigma, compile, backend, print: (l) => console.log(l) });
  const secs = (performance.now() - t0) / 1000;
  console.log(String(r.model));
  printMemoryAndCompiler(r, compile);
  const files = writeDenoiserPngs(r.test, outDir);
  console.log(`wrote ${files.join(', ')}`);
  console.log(
    `result: ${compile ? `compiled (backend ${backend ?? 'js'})` : 'eager'}, ${r.steps} steps in ${secs.toFixed(1)} s: held-out PSNR ${r.psnrNoisy.toFixed(2)} dB noisy -> ${r.psnrDenoised.toFixed(2)} dB denoised ` +
      `(${signed(r.psnrDenoised - r.psnrNoisy, 2)} dB), ${r.stepsPerSec.toFixed(2)} steps/s after ${WARMUP_STEPS} warm-up steps (${r.warmupSeconds.toFixed(2)} s)`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
