// Mini-batches in a fresh random order each epoch, drawn from the examples' own generator
// (so eager and compiled runs with one seed see the same batches); the last partial batch
// of an epoch is dropped, so every batch has the same shape (one compiled graph).

import * as kiln from 'kilnjs';
import { Rng } from '../../src/advisor/examples/lib/rng.js';

export class EpochBatches {
  private readonly rng: Rng;
  private order: kiln.Tensor | null = null;
  readonly perEpoch: number;

  constructor(readonly n: number, readonly batch: number, seed: number) {
    this.rng = new Rng(seed);
    this.perEpoch = Math.floor(n / batch);
  }

  /** The int32 row indices of batch number `step` (a view, valid until the next epoch). */
  indices(step: number): kiln.Tensor {
    const b = step % this.perEpoch;
    if (b === 0 || !this.order) {
      this.order?.dispose();
      this.order = kiln.keep(kiln.tensor(this.rng.permutation(this.n), [this.n]));
    }
    return this.order.narrow(0, b * this.batch, this.batch);
  }

  dispose(): void {
    this.order?.dispose();
    this.order = null;
  }
}
