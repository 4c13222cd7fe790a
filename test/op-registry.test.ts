// The op registry (src/ops/registry.ts) against the op definitions: every primitive an op module
// of src/ops/ exports is registered under its name, so a graph holding it can be stored and read
// back (a primitive missing from the registry would silently never be cached).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import 'kilnjs'; // sets the default backend, which the probe below reads among dispatch.ts's exports
import { isRegisteredPrim, primByName } from '../src/ops/registry.js';
import type { PrimDef } from '../src/ops/dispatch.js';

const OPS = fileURLToPath(new URL('../src/ops/', import.meta.url));

function isPrim(v: unknown): v is PrimDef<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as PrimDef<unknown>).name === 'string' && typeof (v as PrimDef<unknown>).meta === 'function';
}

test('every primitive exported by an op module of src/ops/ is in the op registry', async () => {
  const exported: string[] = [];
  for (const file of readdirSync(OPS).filter((f) => f.endsWith('.ts')).sort()) {
    const mod = (await import(pathToFileURL(OPS + file).href)) as Record<string, unknown>;
    for (const [key, v] of Object.entries(mod)) {
      // a prim, or a table of prims (reduce.ts's REDUCE_PRIMS)
      const prims = isPrim(v) ? [v] : typeof v === 'object' && v !== null && Object.values(v).length && Object.values(v).every(isPrim) ? Object.values(v) : [];
      for (const p of prims) {
        exported.push(`${file}:${key}:${p.name}`);
        assert.ok(isRegisteredPrim(p), `${file} exports ${key} (primitive '${p.name}'), which the op registry does not hold: add it to src/ops/registry.ts`);
      }
    }
  }
  assert.ok(exported.length > 20, exported.join(', '));
  assert.ok(primByName('add') && primByName('sum') && primByName('matmul'));
});
