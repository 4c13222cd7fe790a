// The --backend choices every example accepts, and loading the Node-only ones.

/** kiln.compile backends an example can train with ('native' needs 'kilnjs/node', loaded below). */
export const EXAMPLE_BACKENDS = ['js', 'wasm', 'native', 'auto', 'eager'] as const;
export type ExampleBackend = (typeof EXAMPLE_BACKENDS)[number];

/** Registers the Node-only backends a choice may need (native; 'auto' may pick it). */
export async function loadBackend(backend: ExampleBackend | undefined): Promise<void> {
  if (backend === 'native' || backend === 'auto') await import('kilnjs/node');
}
