// A consumer of the installed package, run with plain `node` (no TypeScript loader): imports
// 'kilnjs' and 'kilnjs/node', trains the README's example eagerly and compiled on each backend
// named on the command line (default: js wasm native), checks the losses fall and the compiled
// runs follow eager, and prints one JSON line. Exit status 1 with the reasons otherwise.
//
//   node consumer-node.mjs [js] [wasm] [native]

import * as kiln from 'kilnjs';
import * as kilnNode from 'kilnjs/node';
import { checkRun, trainReadmeExample } from './readme-example.mjs';

const backends = process.argv.slice(2).length ? process.argv.slice(2) : ['js', 'wasm', 'native'];
const eager = trainReadmeExample(kiln);
const problems = [checkRun('eager', eager)];
const result = { eager: { first: eager.losses[0], last: eager.losses.at(-1) } };
for (const backend of backends) {
  const run = trainReadmeExample(kiln, { backend });
  problems.push(checkRun(backend, run, eager));
  result[backend] = { first: run.losses[0], last: run.losses.at(-1), ...run.stats };
}
// the kernels really ran where they were asked to
if (backends.includes('wasm') && !(kiln.wasmStats().kernels > 0)) problems.push('wasm: no wasm kernels were built');
if (backends.includes('native') && !(kilnNode.nativeStats().kernels > 0)) problems.push('native: no native kernels were built');
result.kernels = { wasm: kiln.wasmStats().kernels, native: kilnNode.nativeStats().kernels };
console.log(JSON.stringify(result));
const bad = problems.filter((p) => p !== null);
if (bad.length) {
  console.error(bad.join('\n'));
  process.exitCode = 1;
}
// the kernel worker pools must not keep the process alive
process.exit();
