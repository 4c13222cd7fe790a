// The wasm backend's side of the persistent compile cache and artifacts (src/compiler/cache):
// a program's kernels are stored as the bytes of the module(s) they were compiled into, plus
// each kernel's calling convention (RenderedKernel). A hit hands the bytes back (importCode);
// preparing those kernels then skips rendering the module, and modules with the same bytes are
// compiled once per process (index.ts keeps them by their bytes). Browser-safe: base64 by hand.

import type { LoopKernel } from '../../ir/loop-ir.js';
import type { Sym } from '../../ir/symbolic.js';
import { kernelBuffers, kernelPrepack, type RenderedKernel } from './render.js';

const FORMAT = 'kiln-wasm-code-1';

/** The exported code of a program: each module once, and per loop kernel its module and entry. */
export interface WasmCode {
  readonly format: string;
  /** base64 module bytes */
  readonly modules: string[];
  /** per spec (null: not a loop kernel, or unknown to this process) */
  readonly kernels: ({ module: number; r: StoredRendered } | null)[];
}

interface StoredRendered {
  name: string;
  bufs: number[];
  scratchBytes: number;
  auxBytes: number;
  auxSym?: Sym;
  notes: string[];
  codeBytes: number;
}

/** A kernel's place in a module: what flush() produced for it, or what importCode restored. */
export interface ModuleEntry {
  readonly bytes: Uint8Array;
  readonly r: RenderedKernel;
}

/** Modules each compiled kernel came from (by kernel key; set by flush). */
const byKey = new Map<string, ModuleEntry>();
/** Entries restored by importCode, by loop-kernel object (consumed by prepare). */
const imported = new WeakMap<LoopKernel, ModuleEntry>();

export function rememberModule(key: string, entry: ModuleEntry): void {
  byKey.set(key, entry);
}

/** The restored module entry of a kernel about to be prepared (null: render it). */
export function importedEntry(k: LoopKernel): ModuleEntry | null {
  return imported.get(k) ?? null;
}

/** Every kernel's module (by kernel key), for the cache; null where a kernel is unknown. */
export function exportWasmCode(kernels: readonly (LoopKernel | null)[], keyOf: (k: LoopKernel) => string): WasmCode {
  const modules: string[] = [];
  const index = new Map<Uint8Array, number>();
  const out = kernels.map((k) => {
    if (!k) return null;
    const e = imported.get(k) ?? byKey.get(keyOf(k));
    if (!e) return null;
    let m = index.get(e.bytes);
    if (m === undefined) {
      index.set(e.bytes, (m = modules.length));
      modules.push(toBase64(e.bytes));
    }
    const r: StoredRendered = { name: e.r.name, bufs: [...e.r.bufs], scratchBytes: e.r.scratchBytes, auxBytes: e.r.auxBytes, notes: [...e.r.notes], codeBytes: e.r.codeBytes };
    if (e.r.auxSym !== undefined) r.auxSym = e.r.auxSym;
    return { module: m, r };
  });
  return { format: FORMAT, modules, kernels: out };
}

/**
 * Restores exportWasmCode data for the same kernels (before they are prepared). Returns false
 * when the data is not usable (another format, another program); then kernels are rendered.
 */
export function importWasmCode(kernels: readonly (LoopKernel | null)[], code: unknown): boolean {
  const c = code as Partial<WasmCode> | null;
  if (!c || c.format !== FORMAT || !Array.isArray(c.modules) || !Array.isArray(c.kernels) || c.kernels.length !== kernels.length) return false;
  let bytes: Uint8Array[];
  try {
    bytes = c.modules.map((m) => {
      if (typeof m !== 'string') throw new Error('module is not a string');
      return fromBase64(m);
    });
  } catch {
    return false;
  }
  let n = 0;
  kernels.forEach((k, i) => {
    const e = c.kernels![i];
    if (!k || !e || !Number.isInteger(e.module) || !bytes[e.module] || !validRendered(e.r)) return;
    // the calling convention is the kernel's own (its buffers, in order, a prepacked B), not whatever the entry says
    const bufs = [...kernelBuffers(k).keys()].sort((a, b) => a - b);
    if (e.r.bufs.length !== bufs.length || e.r.bufs.some((b, j) => b !== bufs[j])) return;
    const prepack = kernelPrepack(k);
    const { name, scratchBytes, auxBytes, auxSym, notes, codeBytes } = e.r;
    imported.set(k, { bytes: bytes[e.module]!, r: { name, bufs, scratchBytes, auxBytes, notes, codeBytes, ...(auxSym !== undefined ? { auxSym } : {}), ...(prepack ? { prepack } : {}) } });
    n++;
  });
  return n > 0;
}

function validRendered(r: unknown): r is StoredRendered {
  const x = r as Partial<StoredRendered> | null;
  const bytes = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= 2 ** 32;
  return !!x && typeof x.name === 'string' && /^k\d{1,6}$/.test(x.name) && Array.isArray(x.bufs) && x.bufs.every(Number.isInteger) && bytes(x.scratchBytes) && bytes(x.auxBytes) && Array.isArray(x.notes) && x.notes.every((t) => typeof t === 'string') && bytes(x.codeBytes);
}

/** Forgets a restored entry (its module did not compile): the kernel is rendered instead. */
export function dropImported(k: LoopKernel): void {
  imported.delete(k);
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** character code -> 6-bit value (255: not base64) */
const UNB64 = new Uint8Array(128).fill(255);
for (let i = 0; i < 64; i++) UNB64[B64.charCodeAt(i)] = i;
UNB64['='.charCodeAt(0)] = 0;

function toBase64(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i += 3) {
    const n = (b[i]! << 16) | ((b[i + 1] ?? 0) << 8) | (b[i + 2] ?? 0);
    s += B64[(n >> 18) & 63]! + B64[(n >> 12) & 63]! + (i + 1 < b.length ? B64[(n >> 6) & 63]! : '=') + (i + 2 < b.length ? B64[n & 63]! : '=');
  }
  return s;
}

function fromBase64(s: string): Uint8Array {
  if (s.length % 4 !== 0) throw new Error('not base64');
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  const out = new Uint8Array((s.length / 4) * 3 - pad);
  const v = (i: number) => {
    const c = s.charCodeAt(i);
    const x = c < 128 ? UNB64[c]! : 255;
    if (x === 255) throw new Error('not base64');
    return x;
  };
  let o = 0;
  for (let i = 0; i < s.length; i += 4) {
    const n = (v(i) << 18) | (v(i + 1) << 12) | (v(i + 2) << 6) | v(i + 3);
    if (o < out.length) out[o++] = (n >> 16) & 255;
    if (o < out.length) out[o++] = (n >> 8) & 255;
    if (o < out.length) out[o++] = n & 255;
  }
  return out;
}
