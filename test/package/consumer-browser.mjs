// A page's script, bundled by esbuild from the installed package's browser entry ('kilnjs'):
// trains the README's example eagerly and compiled on js and wasm in the page and leaves the
// outcome in window.__result for the harness (scripts/package-check.ts) to read.

import * as kiln from 'kilnjs';
import { checkRun, trainReadmeExample } from './readme-example.mjs';

try {
  const eager = trainReadmeExample(kiln);
  const runs = { js: trainReadmeExample(kiln, { backend: 'js' }), wasm: trainReadmeExample(kiln, { backend: 'wasm' }) };
  const problems = [checkRun('eager', eager), ...Object.entries(runs).map(([name, run]) => checkRun(name, run, eager))].filter((p) => p !== null);
  if (!(kiln.wasmStats().kernels > 0)) problems.push('wasm: no wasm kernels were built');
  window.__result = { ok: problems.length === 0, problems, first: eager.losses[0], last: eager.losses.at(-1), wasmKernels: kiln.wasmStats().kernels };
} catch (e) {
  window.__result = { ok: false, problems: [String((e && e.stack) || e)] };
}
