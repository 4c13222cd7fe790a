// The denoiser workload of `kilnjs advise --example denoiser`: procedural images (gradients
// and textured shapes), Gaussian noise, a DnCNN-style residual conv net, and one Adam step on
// a fixed batch. examples/denoiser.ts trains it and writes the images.

import * as kiln from '../../api/kiln.js';
import type { Workload } from '../workload.js';
import { disposeTraining } from './lib/dispose.js';
import { Rng } from './lib/rng.js';

const { nn, optim } = kiln;

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

export const DENOISER_BATCH = 16;

/**
 * One Adam training step of the default denoiser (4 conv layers of width 16, grayscale
 * 32x32, MSE of the denoised batch) on one fixed batch of 16 noisy images (sigma 0.15).
 */
export const workload: Workload = {
  name: 'denoiser',
  kind: 'training',
  description: `denoiser: DnCNN-style denoiser (4 3x3 convs, width 16), one Adam step (MSE) on ${DENOISER_BATCH} noisy 32x32 images`,
  setup({ seed }) {
    const clean = makeImages({ count: DENOISER_BATCH, size: 32, channels: 1, seed });
    const noisy = kiln.keep(kiln.scope(() => kiln.add(clean, gaussianNoise(clean.shape, 0.15, seed + 1))));
    kiln.manualSeed(seed);
    const model = new Denoiser(1, 16, 4);
    const opt = new optim.Adam(model.parameters(), { lr: 2e-3 });
    const inputs = [noisy, clean];
    const step = (forward: (x: kiln.Tensor) => kiln.Tensor, noisy: kiln.Tensor, clean: kiln.Tensor): kiln.Tensor => {
      opt.zeroGrad();
      const loss = kiln.mseLoss(forward(noisy), clean);
      loss.backward();
      opt.step();
      return loss;
    };
    return {
      inputs,
      fn: (noisy: kiln.Tensor, clean: kiln.Tensor): kiln.Tensor => step((x) => model.call(x), noisy, clean),
      trainLoop: { module: model, step },
      params: model.parameters(),
      dispose: () => disposeTraining(model, opt, inputs),
    };
  },
};
