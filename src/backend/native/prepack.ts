// Prepacked matmul operands: a matmul kernel whose B is one matrix with static sizes (a Linear's
// weight, say) takes it already in the engine's panel layout (`pk`, render-c.ts), so a call skips
// packing B (at inference, ~15-20% of a 128-row matmul). A program says which of its buffers keep
// their content between calls (KernelArgs.stable: the input's storage, whose version moves with
// every in-place write); B is packed once it was seen unchanged on two consecutive launches (so a
// training step, whose weights change every call, keeps packing per call as before), kept while
// the storage lives and its version stays, and packed again when it moves.

import type { TypedArray } from '../../core/dtype.js';
import type { ContentVersion } from '../../ir/kernel-spec.js';
import type { PrepackB } from './render-c.js';
import type { KoffiLib } from './toolchain.js';

interface Packed {
  version: number;
  /** the packed panels (C memory), null until the second sighting of this version */
  ptr: bigint | null;
}

/** One kernel's packed B per storage it was launched with (programs sharing the kernel have their own). */
export type PackedOperands = WeakMap<ContentVersion, Packed>;

interface Runtime {
  alloc(bytes: number): bigint;
  free(p: bigint): void;
  size(engine: string): (n: number, k: number) => number;
  pack(engine: string): (p: bigint, b: TypedArray, sbk: number, sbn: number, k: number, n: number) => void;
}

const runtimes = new Map<KoffiLib, Runtime>();

function runtimeOf(lib: KoffiLib): Runtime {
  let rt = runtimes.get(lib);
  if (!rt) {
    const fns = new Map<string, (...a: unknown[]) => unknown>();
    const fn = (name: string, ret: string, params: string[]) => {
      let f = fns.get(name);
      if (!f) fns.set(name, (f = lib.func(name, ret, params)));
      return f;
    };
    const alloc = fn('kiln_packed_alloc', 'void *', ['int64_t']);
    const free = fn('kiln_packed_free', 'void', ['void *']);
    rt = {
      alloc: (bytes) => alloc(bytes) as bigint,
      free: (p) => void free(p),
      size: (e) => { const f = fn(`${e}_packed_size`, 'int64_t', ['int64_t', 'int64_t']); return (n, k) => Number(f(n, k)); },
      pack: (e) => { const f = fn(`${e}_pack`, 'void', ['void *', 'void *', 'int64_t', 'int64_t', 'int64_t', 'int64_t']); return (p, b, sbk, sbn, k, n) => void f(p, b, sbk, sbn, k, n); },
    };
    runtimes.set(lib, rt);
  }
  return rt;
}

/** Frees a packed copy once its entry (and so its storage) is gone. */
const released = new FinalizationRegistry<{ rt: Runtime; ptr: bigint }>(({ rt, ptr }) => rt.free(ptr));

/** Counters (tests): packs made, launches that used a packed B. */
export const prepackStats = { packs: 0, hits: 0 };

/**
 * The `pk` argument of a launch: B's packed panels when its content is stable and was seen
 * unchanged before, else null (the engine packs per call).
 */
export function packedB(lib: KoffiLib, p: PrepackB, packs: PackedOperands, tag: ContentVersion | undefined, b: TypedArray): bigint | null {
  if (!tag) return null;
  let e = packs.get(tag);
  if (!e || e.version !== tag.version) {
    if (e?.ptr) {
      // the storage was written: drop the stale copy now (not when the entry is collected)
      released.unregister(e);
      runtimeOf(lib).free(e.ptr);
    }
    packs.set(tag, { version: tag.version, ptr: null });
    return null;
  }
  if (e.ptr === null) {
    const rt = runtimeOf(lib);
    const bytes = rt.size(p.engine)(p.n, p.k) * (p.dtype === 'float32' ? 4 : 8);
    const ptr = rt.alloc(bytes);
    if (!ptr) return null;
    rt.pack(p.engine)(ptr, p.offset ? b.subarray(p.offset) : b, p.sbk, p.sbn, p.k, p.n);
    e.ptr = ptr;
    released.register(e, { rt, ptr }, e);
    prepackStats.packs++;
  }
  prepackStats.hits++;
  return e.ptr;
}
