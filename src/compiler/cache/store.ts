// The persistent compile cache's interface. 'kilnjs' stays browser-safe: the disk store lives in
// disk-store.ts and is registered by the Node entry ('kilnjs/node'), as the native backend is.
// Without a registered store (a browser) every lookup misses and nothing is written.

/** What an entry holds: JSON metadata and binary blobs (typed-array data) it refers to by index. */
export interface CachePayload {
  readonly meta: unknown;
  readonly blobs: readonly Uint8Array[];
  /**
   * SCHEMA_VERSION (validate.ts) when kiln decoded this payload and it passed the schema: `put`
   * stores it under the tier's seal; `get` returns it only from a tier this user's seal covers
   * (an entry from a fleet's store, a bundle or another user is checked when it is read)
   */
  readonly checked?: string;
}

/** 'program': lowered program + generated code for one graph; 'warm': a whole traced entry (tracing skipped). */
export type EntryKind = 'program' | 'warm';

export interface CacheStore {
  /** where the entries live (for messages) */
  readonly location: string;
  /** kiln version, platform and source fingerprint: part of every key */
  readonly fingerprint: string;
  /** sha256 (hex) of strings and bytes, in order: keys cover constants exactly, not by a short hash */
  digest(parts: readonly (string | Uint8Array)[]): string;
  /** the verified payload, or null (missing; corrupt or foreign entries are logged, counted and deleted) */
  get(kind: EntryKind, key: string): CachePayload | null;
  /** writes atomically (temporary file + rename); the folder is kept under its cap (least recently used entries go) */
  put(kind: EntryKind, key: string, payload: CachePayload): void;
}

let factory: (() => CacheStore | null) | null = null;
let current: { dir: string | undefined; store: CacheStore | null } | null = null;

/** Registers the disk store (the Node entry does this). `make` returns null when the cache is off. */
export function registerCacheStore(make: () => CacheStore | null): void {
  factory = make;
  current = null;
}

const env = (k: string): string | undefined => (typeof process !== 'undefined' ? process.env?.[k] : undefined);

/** Whether the cache is switched off by the environment (KILN_CACHE=0 / false / off). */
export function cacheDisabledByEnv(): boolean {
  const v = env('KILN_CACHE')?.trim().toLowerCase();
  return v === '0' || v === 'false' || v === 'off' || v === 'no';
}

/** The store for compile options (`cache: false` or KILN_CACHE=0 turn it off), or null. */
export function cacheStore(opts: { cache?: boolean } = {}): CacheStore | null {
  if (opts.cache === false || !factory || cacheDisabledByEnv()) return null;
  // the folder may change between calls (tests set KILN_CACHE_DIR): one store per folder
  const dir = env('KILN_CACHE_DIR') ?? env('XDG_CACHE_HOME');
  if (!current || current.dir !== dir) current = { dir, store: factory() };
  return current.store;
}
