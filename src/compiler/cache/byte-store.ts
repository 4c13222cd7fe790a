// The bottom layer of the persistent compile cache: bytes by name. A byte store knows nothing
// of entries: entry-store.ts encodes and verifies them (container.ts) above any byte store, so
// the disk (disk-store.ts) and a remote store (redis-store.ts) carry the same checks.
//
// A byte store is not trusted. What it returns is checked above it (the container's checksum,
// kind, key and kiln version; the entry's seal where the tier has one: this user's HMAC on the
// disk, the fleet's key in auth-bytes.ts for Redis; then the schema of what decodes), so a
// store only has to keep its contract: no method throws, none blocks without bound (the disk
// store never opens a FIFO for reading), a write is atomic per name (a reader sees the old
// bytes, the new ones or none), a store that must not be used (a folder another user can
// write) says so once and behaves as empty, and a store with a size cap keeps it itself, also
// in a process that writes once and exits.

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
