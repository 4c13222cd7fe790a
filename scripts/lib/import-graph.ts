// The import graph of src/: every relative static import, re-export and literal dynamic import of
// each .ts file, resolved to the file it names (the package's own names, 'kilnjs' and
// 'kilnjs/node', to the entry points), and the folder-level graph over it (a folder is the first
// path segment under src/; files directly in src/ are the '(entry)' folder). Used by
// test/dependencies.test.ts to check the layering rule of docs/architecture.md.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

export interface ImportEdge {
  /** importing file, relative to the repository root (src/...) */
  readonly from: string;
  /** imported file or path outside src/, relative to the repository root */
  readonly to: string;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"`;]*?from\s+['"](\.[^'"]+|kilnjs(?:\/node)?)['"]|import\(\s*['"](\.[^'"]+|kilnjs(?:\/node)?)['"]\s*\)|(?:^|\n)\s*import\s+['"](\.[^'"]+|kilnjs(?:\/node)?)['"]/g;
/** A comment line (`// ...`, or a doc comment's `* ...`): an import written there is an example, not an import. */
const COMMENT_LINE = /^\s*(?:\/\/|\/?\*).*$/gm;
/** The package's own names (package.json "exports"), as the entry points they resolve to. */
const SELF: Readonly<Record<string, string>> = { kilnjs: 'src/index.ts', 'kilnjs/node': 'src/node.ts' };

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

/** Every relative import (and import of the package by its own name) of every .ts file under `root`/src. */
export function importEdges(root: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const abs of tsFiles(join(root, 'src'))) {
    const from = relative(root, abs);
    for (const m of readFileSync(abs, 'utf8').replace(COMMENT_LINE, '').matchAll(IMPORT)) {
      const spec = m[1] ?? m[2] ?? m[3]!;
      const to = SELF[spec] ?? normalize(join(dirname(from), spec)).replace(/\.js$/, '.ts');
      edges.push({ from, to });
    }
  }
  return edges;
}

/** The folder a path belongs to: src/<folder>/..., '(entry)' for src/*.ts, else the path's first segment. */
export function folderOf(path: string): string {
  const parts = path.split('/');
  if (parts[0] !== 'src') return parts[0]!;
  return parts.length > 2 ? parts[1]! : '(entry)';
}

/** Import counts between different folders, as 'from -> to'. */
export function folderEdges(edges: readonly ImportEdge[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of edges) {
    const a = folderOf(e.from), b = folderOf(e.to);
    if (a !== b) out.set(`${a} -> ${b}`, (out.get(`${a} -> ${b}`) ?? 0) + 1);
  }
  return out;
}

/** Strongly connected components with more than one folder (import cycles across folders), each sorted. */
export function folderCycles(edges: readonly ImportEdge[]): string[][] {
  const adj = new Map<string, Set<string>>();
  for (const key of folderEdges(edges).keys()) {
    const [a, b] = key.split(' -> ') as [string, string];
    if (!adj.has(a)) adj.set(a, new Set());
    if (!adj.has(b)) adj.set(b, new Set());
    adj.get(a)!.add(b);
  }
  // Tarjan's algorithm
  let index = 0;
  const idx = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [], on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of adj.get(v)!) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of [...adj.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}
