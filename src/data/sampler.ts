// Samplers (torch.utils.data): the order in which a DataLoader reads samples. RandomSampler
// draws each epoch's permutation from a Generator and remembers the generator's state at the
// epoch's start, so a DataLoader can resume an epoch where a checkpoint left it.

import { ArgumentError } from '../core/errors.js';
import { defaultGenerator, Generator, type GeneratorState } from '../core/random.js';

/** A permutation of 0 .. n-1 (Fisher-Yates over the generator's uniforms). */
export function permutation(n: number, generator: Generator): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  const u = generator.uniforms(n);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(u[i]! * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

export interface Sampler extends Iterable<number> {
  readonly length: number;
}

/** Where a sampler's randomness stands: the generator's state at the start of the latest epoch (null: none), and now. */
export interface SamplerState {
  epochStart: GeneratorState | null;
  generator: GeneratorState | null;
}

/** A sampler whose epochs can be replayed from a checkpoint. */
export interface ResumableSampler extends Sampler {
  stateDict(): SamplerState;
  /** restores the generator; with epochStart, the next epoch replays that epoch from its start */
  loadStateDict(state: SamplerState): void;
}

export class SequentialSampler implements ResumableSampler {
  constructor(readonly length: number) {}
  *[Symbol.iterator](): Iterator<number> {
    for (let i = 0; i < this.length; i++) yield i;
  }
  stateDict(): SamplerState {
    return { epochStart: null, generator: null };
  }
  loadStateDict(): void {}
}

export interface RandomSamplerOptions {
  /** draw with replacement (default false) */
  replacement?: boolean;
  /** samples per epoch (default: the dataset's length) */
  numSamples?: number;
  /** default: each epoch seeds a generator of its own from the global generator, as torch does */
  generator?: Generator;
}

export class RandomSampler implements ResumableSampler {
  readonly replacement: boolean;
  readonly length: number;
  readonly generator: Generator | null;
  #epoch: GeneratorState | null = null;
  #resume: GeneratorState | null = null;

  constructor(readonly dataLength: number, opts: RandomSamplerOptions = {}) {
    this.replacement = opts.replacement ?? false;
    this.length = opts.numSamples ?? dataLength;
    if (!Number.isInteger(this.length) || this.length < 0) throw new ArgumentError(`numSamples must be a non-negative integer, got ${opts.numSamples}`, 'RandomSampler');
    if (!this.replacement && opts.numSamples !== undefined && opts.numSamples !== dataLength) {
      throw new ArgumentError('numSamples other than the dataset length needs replacement: true', 'RandomSampler');
    }
    if (opts.generator !== undefined && !(opts.generator instanceof Generator)) throw new ArgumentError('generator must be a kiln.Generator', 'RandomSampler');
    this.generator = opts.generator ?? null;
  }

  /** This epoch's generator: the caller's, or one seeded from the global stream (48 random bits). */
  #epochGenerator(): Generator {
    if (this.#resume) {
      const g = this.generator ?? new Generator();
      g.setState(this.#resume);
      this.#resume = null;
      return g;
    }
    if (this.generator) return this.generator;
    const u = defaultGenerator.uniforms(2); // 24-bit values: two make a 48-bit seed
    return new Generator().manualSeed(Math.floor(u[0]! * 2 ** 24) * 2 ** 24 + Math.floor(u[1]! * 2 ** 24));
  }

  *[Symbol.iterator](): Iterator<number> {
    const g = this.#epochGenerator();
    this.#epoch = g.getState();
    if (this.replacement) {
      const u = g.uniforms(this.length);
      for (let i = 0; i < this.length; i++) yield Math.floor(u[i]! * this.dataLength);
    } else yield* permutation(this.dataLength, g);
  }

  stateDict(): SamplerState {
    return { epochStart: this.#epoch, generator: this.generator?.getState() ?? null };
  }

  loadStateDict(state: SamplerState): void {
    for (const g of [state.epochStart, state.generator]) if (g !== null) new Generator().setState(g); // check both first
    if (state.generator && this.generator) this.generator.setState(state.generator);
    this.#resume = state.epochStart;
    this.#epoch = null;
  }
}
