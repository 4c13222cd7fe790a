// Runs the cases of scripts/torch-fixtures-layers.py's files (test/fixtures/torch-layers/): each
// case holds a module's torch state dict, inputs, outputs and the gradients of
// loss = sum_k sum(output_k * w_k). checkCase builds kiln's module, loads the state dict
// (strict: torch's keys), and compares outputs and every gradient eagerly, then runs the same
// forward + backward compiled (fullgraph) twice (trace and replay) and compares again, asserting
// the fused program ran: no graph breaks, no fusion fallbacks, no eager fallbacks.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as kiln from 'kilnjs';
import { loadSafetensors } from 'kilnjs/node';
import { assertClose } from './torch-compare.js';

type Tensor = kiln.Tensor;

export const LAYER_FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'torch-layers');
export const NO_FIXTURES = 'no fixtures: run /usr/bin/python3 scripts/torch-fixtures-layers.py test/fixtures/torch-layers 0';

export interface FixtureFile {
  meta: { rtol: number; cases: Record<string, { outputs: number; description: string; options?: Record<string, unknown> }>; [k: string]: unknown };
  tensors: Record<string, Tensor>;
  /** tensors of `case` under `part` ('param', 'input', 'output', 'grad'), prefix stripped */
  part(key: string, part: string): Record<string, Tensor>;
}

export function haveFixture(name: string): boolean {
  return existsSync(join(LAYER_FIXTURES, `${name}.safetensors`)) && existsSync(join(LAYER_FIXTURES, `${name}.json`));
}

export async function loadFixtureFile(name: string): Promise<FixtureFile> {
  const meta = JSON.parse(readFileSync(join(LAYER_FIXTURES, `${name}.json`), 'utf8')) as FixtureFile['meta'];
  const tensors = await loadSafetensors(join(LAYER_FIXTURES, `${name}.safetensors`));
  return {
    meta,
    tensors,
    part(key, part) {
      const prefix = `${key}.${part}.`;
      const out: Record<string, Tensor> = {};
      for (const [k, t] of Object.entries(tensors)) if (k.startsWith(prefix)) out[k.slice(prefix.length)] = t;
      return out;
    },
  };
}

export interface LayerCase {
  /** kiln's module for this case (its state dict is loaded from the fixture), or null for a function */
  build?(): kiln.nn.AnyModule;
  /** the outputs, in the fixture's order; `inputs` are the fixture's inputs (w0, w1... excluded) */
  run(module: kiln.nn.AnyModule | null, inputs: Record<string, Tensor>): Tensor[];
}

/** Checks one case eagerly and compiled (see the header). */
export function checkCase(f: FixtureFile, key: string, c: LayerCase, rtol = f.meta.rtol): void {
  const params = f.part(key, 'param'), inputsAll = f.part(key, 'input'), outputs = f.part(key, 'output'), grads = f.part(key, 'grad');
  const n = f.meta.cases[key]!.outputs;
  const module = c.build ? c.build() : null;
  if (module) {
    module.loadStateDict(params);
    module.train();
  } else assert.equal(Object.keys(params).length, 0, `${key}: a case with parameters needs a module`);
  // inputs with a gradient in the fixture become leaves that require grad (copies: the fixture stays intact)
  const inputs: Record<string, Tensor> = {};
  for (const [k, t] of Object.entries(inputsAll)) {
    if (/^w\d+$/.test(k)) continue;
    inputs[k] = kiln.keep(t.clone());
    if (k in grads) inputs[k]!.requiresGrad = true;
  }
  const weights = Array.from({ length: n }, (_, i) => inputsAll[`w${i}`]!);
  const leaves = [...(module ? module.parameters() : []), ...Object.values(inputs).filter((t) => t.requiresGrad)];
  const step = (): Tensor[] => {
    for (const t of leaves) {
      t.grad?.dispose();
      t.grad = null;
    }
    const outs = c.run(module, inputs);
    assert.equal(outs.length, n, `${key}: ${outs.length} outputs, the fixture has ${n}`);
    let loss = kiln.sum(kiln.mul(outs[0]!, weights[0]!));
    for (let i = 1; i < n; i++) loss = kiln.add(loss, kiln.sum(kiln.mul(outs[i]!, weights[i]!)));
    loss.backward();
    return outs;
  };
  const check = (outs: Tensor[], how: string) => {
    outs.forEach((o, i) => assertClose(o, outputs[String(i)]!, rtol, `${key} (${how}): output ${i}`));
    const named = new Map<string, Tensor>([...(module ? module.namedParameters() : []), ...Object.entries(inputs)]);
    for (const [name, g] of Object.entries(grads)) {
      const t = named.get(name);
      assert.ok(t, `${key}: the fixture has a gradient for '${name}', which kiln's case lacks`);
      assert.ok(t.grad, `${key} (${how}): '${name}' got no gradient`);
      assertClose(t.grad, g, rtol, `${key} (${how}): grad of ${name}`);
    }
  };
  kiln.scope(() => check(step(), 'eager'));
  kiln.compiler.reset();
  const compiled = kiln.compile(step, { fullgraph: true, name: key });
  kiln.scope(() => void compiled());
  kiln.scope(() => check(compiled() as Tensor[], 'compiled'));
  const s = kiln.stats();
  assert.equal(s.graphBreaks.length, 0, `${key}: graph breaks`);
  assert.equal(s.fusionFallbacks, 0, `${key}: fusion fallbacks`);
  assert.equal(s.eagerFallbacks, 0, `${key}: eager fallbacks`);
  assert.ok(s.cacheHits >= 1, `${key}: the second compiled call replayed (cache hits ${s.cacheHits})`);
  for (const t of [...Object.values(inputs), ...leaves]) t.grad?.dispose();
  for (const t of Object.values(inputs)) t.dispose();
}
