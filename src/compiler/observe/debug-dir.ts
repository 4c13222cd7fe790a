// KILN_DEBUG_DIR=dir writes every stage's text for every compiled graph (Node only).

type Fs = { mkdirSync(p: string, o: { recursive: boolean }): void; writeFileSync(p: string, d: string): void };

function nodeFs(): Fs | null {
  const proc = (globalThis as { process?: { getBuiltinModule?: (m: string) => unknown; env?: Record<string, string | undefined> } }).process;
  return (proc?.getBuiltinModule?.('node:fs') as Fs | undefined) ?? null;
}

let dir: string | undefined = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.KILN_DEBUG_DIR;

export function setDebugDir(path: string | undefined): void {
  dir = path;
}

export function debugDump(fnName: string, graphName: string, files: Record<string, string>): void {
  if (!dir) return;
  const fs = nodeFs();
  if (!fs) return;
  const safe = (s: string) => s.replace(/[^\w.#-]/g, '_');
  const target = `${dir}/${safe(fnName)}/${safe(graphName)}`;
  fs.mkdirSync(target, { recursive: true });
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(`${target}/${name}`, text + '\n');
}
