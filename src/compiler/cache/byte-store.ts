// The bottom layer of the persistent compile cache: bytes by name. A byte store knows nothing
// of entries: entry-store.ts encodes and verifies them (container.ts) above any byte store, so
// the disk (disk-store.ts) and a remote store (redis-store.ts) carry the same checks.

export interface ByteStore {
  /** where the bytes live (for messages) */
  readonly location: string;
  /** the bytes stored under `name`, or null (absent, or the store cannot be reached: never throws) */
  read(name: string): Uint8Array | null;
  /**
   * stores `bytes` under `name` so that a reader never sees half of them; false when it could
   * not (logged, never thrown). A remote store may return true once the write is queued.
   */
  write(name: string, bytes: Uint8Array): boolean;
  /** removes `name` (a rejected entry); never throws */
  remove(name: string): void;
}
