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
import { Args } from './lib/args.js';
import { EXAMPLE_BACKENDS, loadBackend, type ExampleBackend } from './lib/backends.js';
import { psnr } from './lib/metrics.js';
import { imageGrid, writePng } from './lib/png.js';
import { Rng } from './lib/rng.js';
import { EpochBatches } from './lib/batches.js';
import type { Workload } from '../src/advisor/workload.js';
import { disposeTraining } from './lib/dispose.js';
import { printMemoryAndCompiler } from './lib/run-report.js';
import { WARMUP_STEPS, rateSuffix, runTrainingLoop, type TrainingLoopResult } from './lib/training-loop.js';

const { nn, optim } = kiln;

// ---------------------------------------------------------------------------------------
// procedural images

export interface MakeImagesOptions {
  count?: number;
  /** height and width (default 32) */
  size?: number;
  /** 1 (grayscale, the default) or 3 (RGB) */
  channels?: 1 | 3;
  seed?: number;
}

/**
 * `count` images [count, channels, size, size] float32 in [0, 1], drawn from their own
 * seeded generator (kiln's generator is untouched): a linear gradient background with one
 * to three shapes on it (circles and rectangles, each filled with a flat color or with a
 * stripe texture of random period and orientation). The tensor is kept.
 */
export function makeImages(opts: MakeImagesOptions = {}): kiln.Tensor {
  const count = opts.count ?? 256, size = opts.size ?? 32, channels = opts.channels ?? 1;
  const rng = new Rng(opts.seed ?? 1);
  const plane = size * size;
  const data = new Float32Array(count * channels * plane);
  const color = () => Array.from({ length: channels }, () => 0.1 + 0.8 * rng.uniform());
  for (let n = 0; n < count; n++) {
    const img = data.subarray(n * channels * plane, (n + 1) * channels * plane);
    // background: a linear gradient in a random direction
    const base = color(), theta = 2 * Math.PI * rng.uniform();
    const slope = Array.from({ length: channels }, () => (rng.uniform() - 0.5) * 0.6);
    const gx = Math.cos(theta) / size, gy = Math.sin(theta) / size;
    for (let c = 0; c < channels; c++) {
      for (let y = 0; y < size; y++) {
        for (let x = 0; x < size; x++) img[c * plane + y * size + x] = base[c]! + slope[c]! * ((x - size / 2) * gx + (y - size / 2) * gy) * 2;
      }
    }
    // shapes
    const shapes = 1 + rng.int(3);
    for (let s = 0; s < shapes; s++) {
      const circle = rng.uniform() < 0.5;
      const cx = rng.uniform() * size, cy = rng.uniform() * size;
      const r = size * (0.12 + 0.25 * rng.uniform());
      const hw = size * (0.1 + 0.25 * rng.uniform()), hh = size * (0.1 + 0.25 * rng.uniform());
      const fill = color();
      const striped = rng.uniform() < 0.4;
      const fill2 = color(), period = 3 + 6 * rng.uniform(), phi = Math.PI * rng.uniform(), phase = 2 * Math.PI * rng.uniform();
      for (let y = 0; y < size; y++) {
        for (let x = 0; x < size; x++) {
          const px = x + 0.5, py = y + 0.5;
          const inside = circle ? (px - cx) ** 2 + (py - cy) ** 2 <= r * r : Math.abs(px - cx) <= hw && Math.abs(py - cy) <= hh;
          if (!inside) continue;
          // stripes: a smooth blend between two colors along a random direction
          const t = striped ? 0.5 + 0.5 * Math.sin((2 * Math.PI * (px * Math.cos(phi) + py * Math.sin(phi))) / period + phase) : 0;
          for (let c = 0; c < channels; c++) img[c * plane + y * size + x] = fill[c]! * (1 - t) + fill2[c]! * t;
        }
      }
    }
    for (let i = 0; i < img.length; i++) img[i] = Math.min(1, Math.max(0, img[i]!));
  }
  return kiln.keep(kiln.tensor(data, [count, channels, size, size]));
}

/** Gaussian noise of std `sigma` shaped like `shape`, from a seeded generator of our own. */
export function gaussianNoise(shape: readonly number[], sigma: number, seed: number): kiln.Tensor {
  const rng = new Rng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  return kiln.tensor(Float32Array.from({ length: n }, () => sigma * rng.normal()), shape);
}

// ---------------------------------------------------------------------------------------
// the model

/**
 * depth 3x3 convolutions ('same' padding), ReLU between them: channels -> width -> ... ->
 * width -> channels, predicting the noise; forward returns noisy - predicted noise.
 */
export class Denoiser extends nn.Module {
  readonly net: kiln.nn.Sequential;

  constructor(readonly channels = 1, readonly width = 16, readonly depth = 4) {
    super();
    if (depth < 2) throw new Error(`depth must be at least 2, got ${depth}`);
    const layers: kiln.nn.AnyModule[] = [];
    for (let i = 0; i < depth; i++) {
      const cin = i === 0 ? channels : width, cout = i === depth - 1 ? channels : width;
      layers.push(new nn.Conv2d(cin, cout, 3, { padding: 'same' }));
      if (i < depth - 1) layers.push(new nn.ReLU());
    }
    this.net = new nn.Sequential(...layers);
  }

  /** The predicted noise of noisy [N, channels, H, W]. */
  predictNoise(noisy: kiln.Tensor): kiln.Tensor {
    return this.net.call(noisy);
  }

  /** The denoised image: noisy - predicted noise. */
  forward(noisy: kiln.Tensor): kiln.Tensor {
    return kiln.sub(noisy, this.predictNoise(noisy));
  }
}

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

// ---------------------------------------------------------------------------------------
// the advisor's workload (`npx kiln advise --example denoiser`)

export const DENOISER_BATCH = 16;

/**
 * One Adam training step of the default denoiser (4 conv layers of width 16, grayscale
 * 32x32, MSE of the denoised batch) on one fixed batch of 16 noisy images (sigma 0.15).
 */
export const workload: Workload = {
  name: 'denoiser',
  kind: 'training',
  description: `examples/denoiser.ts: DnCNN-style denoiser (4 3x3 convs, width 16), one Adam step (MSE) on ${DENOISER_BATCH} noisy 32x32 images`,
  setup({ seed }) {
    const clean = makeImages({ count: DENOISER_BATCH, size: 32, channels: 1, seed });
    const noisy = kiln.keep(kiln.scope(() => kiln.add(clean, gaussianNoise(clean.shape, 0.15, seed + 1))));
    kiln.manualSeed(seed);
    const model = new Denoiser(1, 16, 4);
    const opt = new optim.Adam(model.parameters(), { lr: 2e-3 });
    const inputs = [noisy, clean];
    return {
      inputs,
      fn: (noisy: kiln.Tensor, clean: kiln.Tensor): kiln.Tensor => {
        opt.zeroGrad();
        const loss = kiln.mseLoss(model.call(noisy), clean);
        loss.backward();
        opt.step();
        return loss;
      },
      params: model.parameters(),
      dispose: () => disposeTraining(model, opt, inputs),
    };
  },
};

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
