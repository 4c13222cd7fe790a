// DataLoader (torch.utils.data.DataLoader, single process): batches of a dataset in sampler
// order, collated. Each batch is made inside a kiln.scope, so only the batch's tensors outlive
// the fetch (dispose them, or run each step in a scope). stateDict() / loadStateDict() resume
// a run mid-epoch: the sampler's generator state at the epoch's start (and now) and the batches
// already yielded, so a resumed run sees the same batches as an uninterrupted one.

import { ArgumentError, StateDictError } from '../core/errors.js';
import { Generator } from '../core/random.js';
import { isTensor } from '../tensor/tensor.js';
import { scope } from '../core/scope.js';
import { defaultCollate } from './collate.js';
import type { BatchedDataset, Dataset } from './dataset.js';
import { RandomSampler, SequentialSampler, type ResumableSampler, type Sampler, type SamplerState } from './sampler.js';

export interface DataLoaderOptions<T, B = T> {
  /** samples per batch (default 1) */
  batchSize?: number;
  /** a new random order every epoch (default false) */
  shuffle?: boolean;
  /** the order of samples (exclusive with shuffle) */
  sampler?: Sampler;
  /** drop the last batch when it is smaller than batchSize (default false) */
  dropLast?: boolean;
  /** makes a batch from a list of samples (default defaultCollate) */
  collateFn?: (samples: T[]) => B;
  /** the shuffle's generator (default: one per epoch, seeded from the global generator) */
  generator?: Generator;
}

/** The JSON state of a DataLoader: batches yielded in the epoch in progress, and its sampler's randomness. */
export interface DataLoaderState {
  batchesYielded: number;
  sampler: SamplerState;
}

export class DataLoader<T = unknown, B = T> implements Iterable<B> {
  readonly dataset: Dataset<T>;
  readonly batchSize: number;
  readonly dropLast: boolean;
  readonly sampler: Sampler;
  readonly collateFn: (samples: T[]) => B;
  #yielded = 0;
  #skip = 0;

  constructor(dataset: Dataset<T>, opts: DataLoaderOptions<T, B> = {}) {
    const op = 'DataLoader';
    if (!dataset || !Number.isInteger(dataset.length) || typeof dataset.getItem !== 'function') {
      throw new ArgumentError('dataset must have an integer length and getItem(index)', op, 'use data.TensorDataset, or implement { length, getItem }');
    }
    const batchSize = opts.batchSize ?? 1;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new ArgumentError(`batchSize must be a positive integer, got ${batchSize}`, op);
    if (opts.shuffle && opts.sampler) throw new ArgumentError('shuffle and sampler are exclusive', op, 'give the sampler its own randomness');
    if (opts.collateFn !== undefined && typeof opts.collateFn !== 'function') throw new ArgumentError('collateFn must be a function', op);
    this.dataset = dataset;
    this.batchSize = batchSize;
    this.dropLast = opts.dropLast ?? false;
    this.sampler = opts.sampler ?? (opts.shuffle ? new RandomSampler(dataset.length, { generator: opts.generator }) : new SequentialSampler(dataset.length));
    this.collateFn = opts.collateFn ?? (defaultCollate as (samples: T[]) => B);
  }

  /** Batches per epoch (torch's len(loader)). */
  get length(): number {
    const n = this.sampler.length;
    return this.dropLast ? Math.floor(n / this.batchSize) : Math.ceil(n / this.batchSize);
  }

  *[Symbol.iterator](): Iterator<B> {
    const skip = this.#skip;
    this.#skip = 0;
    this.#yielded = 0;
    let indices: number[] = [];
    let batch = 0;
    for (const i of this.sampler) {
      indices.push(i);
      if (indices.length < this.batchSize) continue;
      const take = indices;
      indices = [];
      if (batch++ < skip) {
        this.#yielded++;
        continue;
      }
      yield this.#fetch(take);
    }
    if (indices.length > 0 && !this.dropLast && batch++ >= skip) yield this.#fetch(indices);
    this.#yielded = 0; // the epoch ran to its end: a checkpoint now starts the next one
  }

  #fetch(indices: number[]): B {
    const batch = scope(() => {
      const d = this.dataset as Partial<BatchedDataset<T>>;
      // a dataset's getBatch is its defaultCollate of the samples, read at once
      if (this.collateFn === (defaultCollate as unknown) && typeof d.getBatch === 'function') return d.getBatch(indices) as unknown as B;
      return this.collateFn(indices.map((i) => this.dataset.getItem(i)));
    }, isTensor);
    this.#yielded++;
    return batch;
  }

  /** Where the current epoch stands (JSON): resume it with loadStateDict on a loader built the same way. */
  stateDict(): DataLoaderState {
    const s = this.sampler as Partial<ResumableSampler>;
    if (typeof s.stateDict !== 'function') throw new StateDictError('this sampler cannot report its state', 'DataLoader.stateDict', 'use the built-in samplers (shuffle or not), or give yours stateDict / loadStateDict');
    const sampler = s.stateDict();
    // an epoch is in progress while batches of it were yielded and it has not run to its end
    return { batchesYielded: this.#yielded, sampler: { ...sampler, epochStart: this.#yielded > 0 ? sampler.epochStart : null } };
  }

  /** Throws unless `state` is a DataLoader state this loader can resume from (changes nothing). */
  checkStateDict(state: unknown): void {
    const op = 'DataLoader.loadStateDict';
    const st = state as Partial<DataLoaderState> | null;
    if (!st || !Number.isInteger(st.batchesYielded) || st.batchesYielded! < 0) throw new StateDictError(`batchesYielded must be a non-negative integer, got ${JSON.stringify(st?.batchesYielded)}`, op);
    if (typeof (this.sampler as Partial<ResumableSampler>).loadStateDict !== 'function') throw new StateDictError('this sampler cannot resume an epoch', op);
    const sm = st.sampler;
    if (!sm || typeof sm !== 'object') throw new StateDictError('the state has no sampler state', op);
    for (const g of [sm.epochStart, sm.generator]) if (g !== null) new Generator().setState(g!);
  }

  /** The next iteration replays the saved epoch's order and skips the batches already yielded. */
  loadStateDict(state: DataLoaderState): void {
    this.checkStateDict(state);
    (this.sampler as ResumableSampler).loadStateDict(state.sampler);
    this.#skip = state.batchesYielded;
    this.#yielded = state.batchesYielded;
  }
}
