// The launch protocol both worker pools share (the JS pool, ./threads.ts, and the wasm pool,
// ../wasm/threads.ts): one Int32Array over a SharedArrayBuffer, laid out as CTL below, through
// which the caller and the workers split one kernel's outer loop into chunks. The caller
// resets the control and posts a ChunkMsg to each worker; every thread, the caller included,
// claims chunks until none is left (claimChunks); the caller then waits for the done count and
// reruns any chunk that failed, so the real error surfaces on its thread with its message.

/** Kernels with less work (elements or multiply-adds) run on the calling thread: posting to the pool costs ~50 µs. */
export const PARALLEL_WORK = 1 << 17;

/** Slots of the control array (Int32 indices) and the claim counter's bit split. */
export const CTL = {
  /** epoch << IDX_BITS | the next chunk to claim */
  NEXT: 0,
  /** chunks finished (the last one wakes the caller) */
  DONE: 1,
  /** how many chunks failed; their numbers are listed from FAILED */
  FAILS: 2,
  FAILED: 4,
  IDX_BITS: 12,
} as const;
/** Most chunks one launch can have (chunk numbers fit in IDX_BITS). */
export const MAX_CHUNKS = (1 << CTL.IDX_BITS) - 1;
/** Control slots the protocol uses; a pool may keep its own slots after these. */
export const CTL_SLOTS = CTL.FAILED + MAX_CHUNKS + 1;
/** Launch numbers wrap within the bits above the chunk number. */
const EPOCH_MASK = (1 << (32 - CTL.IDX_BITS)) - 1;

/** What a worker needs to find its chunks: [c * size, min(extent, (c + 1) * size)) for c < chunks. */
export interface ChunkMsg {
  readonly epoch: number;
  readonly chunks: number;
  readonly size: number;
  readonly extent: number;
}

export type ClaimChunks = <F>(ctl: Int32Array, m: ChunkMsg, get: () => F, run: (fn: F, lo: number, hi: number) => void) => number;

/**
 * claimChunks over a control layout. Workers get this factory as source text and call it with
 * CTL (claimChunksSource): names outside a function's text do not survive toString (a bundler
 * may rename module constants), so the layout comes in as an argument, read once into locals.
 */
function makeClaimChunks(layout: typeof CTL): ClaimChunks {
  const { NEXT, DONE, FAILS, FAILED, IDX_BITS } = layout;
  const IDX_MASK = (1 << IDX_BITS) - 1;
  return function claim<F>(ctl: Int32Array, m: ChunkMsg, get: () => F, run: (fn: F, lo: number, hi: number) => void): number {
    let fn: F | undefined;
    let n = 0;
    for (;;) {
      const v = Atomics.load(ctl, NEXT);
      if (v >>> IDX_BITS !== m.epoch || (v & IDX_MASK) >= m.chunks) return n;
      if (Atomics.compareExchange(ctl, NEXT, v, v + 1) !== v) continue;
      const c = v & IDX_MASK, lo = c * m.size, hi = Math.min(m.extent, lo + m.size);
      try {
        if (fn === undefined) fn = get();
        run(fn, lo, hi);
      } catch {
        Atomics.store(ctl, FAILED + Atomics.add(ctl, FAILS, 1), c);
      }
      n++;
      // only the last chunk wakes the caller (a notify per chunk would be a syscall each)
      if (Atomics.add(ctl, DONE, 1) + 1 === m.chunks) Atomics.notify(ctl, DONE);
    }
  };
}

/**
 * Claims and runs chunks of launch `m` until none is left (workers and the caller alike);
 * returns how many this thread ran. ctl[NEXT] holds the launch's epoch and the next chunk: a
 * worker that reads a launch's message late, after the caller has moved on, sees another epoch
 * and claims nothing, so it cannot run an old kernel over a new launch's chunks. A failed chunk
 * is listed (from ctl[FAILED]) for the caller to rerun.
 */
export const claimChunks: ClaimChunks = makeClaimChunks(CTL);

/** Source text of `claimChunks` for a worker (an expression: `const claimChunks = ${...};`). */
export function claimChunksSource(): string {
  return `(${makeClaimChunks.toString()})(${JSON.stringify(CTL)})`;
}

/** The caller's side of the protocol over one control array. */
export class ChunkControl {
  readonly ctl: Int32Array;
  private epoch = 0;

  /** `extraSlots`: the pool's own slots, from CTL_SLOTS on */
  constructor(extraSlots = 0) {
    this.ctl = new Int32Array(new SharedArrayBuffer(4 * (CTL_SLOTS + extraSlots)));
  }

  /** Opens a launch of `chunks` chunks of `size` over [0, extent): the message to post to the workers. */
  open(chunks: number, size: number, extent: number): ChunkMsg {
    // the previous launch's chunks are all done (its caller waited), so no thread touches these now
    this.epoch = (this.epoch + 1) & EPOCH_MASK;
    Atomics.store(this.ctl, CTL.DONE, 0);
    Atomics.store(this.ctl, CTL.FAILS, 0);
    Atomics.store(this.ctl, CTL.NEXT, this.epoch << CTL.IDX_BITS);
    return { epoch: this.epoch, chunks, size, extent };
  }

  /**
   * The caller's part of launch `m` (after posting it): claims chunks with `local`, waits until
   * every chunk is done (blocking where `canWait`, spinning otherwise: a browser's main thread
   * may not block), then reruns failed chunks with `local`. Returns the chunks the caller claimed.
   */
  finish(m: ChunkMsg, local: (lo: number, hi: number) => void, canWait: boolean): number {
    const ctl = this.ctl;
    const mine = claimChunks(ctl, m, () => local, (f, lo, hi) => f(lo, hi));
    for (let v = Atomics.load(ctl, CTL.DONE); v !== m.chunks; v = Atomics.load(ctl, CTL.DONE)) {
      if (canWait) Atomics.wait(ctl, CTL.DONE, v, 1000);
    }
    const failed = Atomics.load(ctl, CTL.FAILS);
    for (let i = 0; i < failed; i++) {
      const c = Atomics.load(ctl, CTL.FAILED + i);
      local(c * m.size, Math.min(m.extent, (c + 1) * m.size));
    }
    return mine;
  }
}
