// The layering rule (docs/architecture.md, "Layering"), checked over src/'s import graph
// (scripts/lib/import-graph.ts; a folder is the first path segment under src/, '(entry)' the
// files directly in src/). Imports point down this order, lowest first:
//
//   core < ir, trust < backend < tensor < autograd < ops < nn, optim, data, io < checkpoint
//        < compiler < api < advisor, serve < (entry)
//
// Each folder imports only folders below it (never one beside it), so there is no import cycle
// across folders. The rules the issue names are checked on their own too, so a failure says
// which one broke: core/ imports nothing, ir/ only core/, backend/ never compiler/, nothing in
// src/ imports outside it (examples/, bench/, test/), and no folder cycle.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { folderCycles, folderEdges, folderOf, importEdges } from '../scripts/lib/import-graph.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const edges = importEdges(ROOT);

/** The layers of src/, lowest first; a folder imports only folders of lower layers. */
const LAYERS: readonly (readonly string[])[] = [
  ['core'],
  ['ir', 'trust'],
  ['backend'],
  ['tensor'],
  ['autograd'],
  ['ops'],
  ['nn', 'optim', 'data', 'io'],
  ['checkpoint'],
  ['compiler'],
  ['api'],
  ['advisor', 'serve'],
  ['(entry)'],
];

/** The imports from folder `from` into other folders, as 'file -> file'. */
function importsOutOf(from: string, allowed: (to: string) => boolean): string[] {
  return edges.filter((e) => folderOf(e.from) === from && folderOf(e.to) !== from && !allowed(folderOf(e.to))).map((e) => `${e.from} -> ${e.to}`);
}

test('the import graph is read: hundreds of imports across the folders of src/', () => {
  assert.ok(edges.length > 1000, `${edges.length} imports`);
  assert.ok(folderEdges(edges).get('ops -> core')! > 10);
});

test('core/ imports no other folder of src/', () => {
  assert.deepEqual(importsOutOf('core', () => false), []);
});

test('ir/ imports only core/', () => {
  assert.deepEqual(importsOutOf('ir', (to) => to === 'core'), []);
});

test('trust/ imports only core/', () => {
  assert.deepEqual(importsOutOf('trust', (to) => to === 'core'), []);
});

test('backend/ never imports compiler/', () => {
  assert.deepEqual(importsOutOf('backend', (to) => to !== 'compiler'), []);
});

test('nothing in src/ imports from outside src/ (examples/, bench/, test/)', () => {
  const out = edges.filter((e) => !e.to.startsWith('src/'));
  assert.deepEqual(out.map((e) => `${e.from} -> ${e.to}`), []);
});

test('no import cycle across folders', () => {
  assert.deepEqual(folderCycles(edges), []);
});

test('every folder imports only folders of lower layers (the order at the top of this file)', () => {
  const layer = new Map(LAYERS.flatMap((fs, i) => fs.map((f) => [f, i] as const)));
  const folders = new Set(edges.flatMap((e) => [folderOf(e.from), folderOf(e.to)]));
  assert.deepEqual([...folders].filter((f) => !layer.has(f)).sort(), [], 'a folder with no layer: add it to LAYERS (and to docs/architecture.md)');
  const upward = edges.filter((e) => folderOf(e.from) !== folderOf(e.to) && layer.get(folderOf(e.from))! <= layer.get(folderOf(e.to))!);
  assert.deepEqual(upward.map((e) => `${e.from} -> ${e.to}`), [], 'imports into a folder of the same or a higher layer');
});
