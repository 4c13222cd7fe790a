// Importing a user's module file (a workload for `kilnjs advise`, a model for `kilnjs serve`)
// from the built package: Node 20 runs JavaScript only, so a TypeScript file needs a loader in
// the process. The hint says how.

/** What to add to the error of a failed import of `path` by `kilnjs <command>` (empty when it is not about TypeScript). */
export function loaderHint(e: unknown, command: string, path: string): string {
  if ((e as { code?: string } | null)?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') return '';
  return ` (Node cannot import TypeScript by itself: run \`npx tsx node_modules/.bin/kilnjs ${command} ${path}\` with tsx installed, or write it as an .mjs file)`;
}
