// The length in lines of every function in a folder's .ts files (declarations, expressions,
// arrows, methods, accessors), parsed with @babel/parser. Used by test/structure.test.ts to keep
// the compiler's functions readable in one sitting (issue 20: no function in compiler/ over ~150 lines).

import { parse } from '@babel/parser';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface FunctionLength {
  /** file:line of the function, relative to the root it was measured from */
  readonly at: string;
  /** its name (the variable, property or method it is bound to), or '(anonymous)' */
  readonly name: string;
  readonly lines: number;
}

interface Node {
  readonly type: string;
  readonly loc: { readonly start: { readonly line: number }; readonly end: { readonly line: number } };
  readonly [key: string]: unknown;
}

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && typeof (v as Node).type === 'string';
const FUNCTION = /^(FunctionDeclaration|FunctionExpression|ArrowFunctionExpression|ObjectMethod|ClassMethod|ClassPrivateMethod)$/;

function nameOf(n: Node): string | undefined {
  const id = (n.id ?? n.key) as { name?: string } | undefined;
  return id?.name;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

/** Every function under `dir` (relative paths are reported from `root`). */
export function functionLengths(root: string, dir: string): FunctionLength[] {
  const out: FunctionLength[] = [];
  for (const file of tsFiles(join(root, dir))) {
    const ast = parse(readFileSync(file, 'utf8'), { sourceType: 'module', plugins: ['typescript'] });
    const at = relative(root, file);
    // the name a function is bound to: its own, else the declarator or property holding it
    const walk = (n: Node, bound: string | undefined): void => {
      let name = bound;
      if (FUNCTION.test(n.type)) {
        name = nameOf(n) ?? bound;
        out.push({ at: `${at}:${n.loc.start.line}`, name: name ?? '(anonymous)', lines: n.loc.end.line - n.loc.start.line + 1 });
      }
      const holds = n.type === 'VariableDeclarator' || n.type === 'ClassProperty' || n.type === 'ObjectProperty' ? nameOf(n) ?? name : name;
      for (const [key, v] of Object.entries(n)) {
        if (key === 'loc' || key === 'leadingComments' || key === 'trailingComments') continue;
        if (Array.isArray(v)) for (const c of v) { if (isNode(c)) walk(c, holds); }
        else if (isNode(v)) walk(v, holds);
      }
    };
    walk(ast.program as unknown as Node, undefined);
  }
  return out;
}
