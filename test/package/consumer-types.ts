// A strict TypeScript consumer of the installed package (tsconfig.consumer.json: strict,
// noUncheckedIndexedAccess, the default lib, skipLibCheck false, @types/node): it must
// type-check against the shipped .d.ts only. It writes what a user writes: the README's
// example and compiled step, compile options, an advisor workload module, the --json report.

import { readFileSync } from 'node:fs';
import * as kiln from 'kilnjs';
import * as kilnNode from 'kilnjs/node';
import type { AdvisorReport, Verdict, Workload } from 'kilnjs/node';

kiln.manualSeed(0);
const model = new kiln.nn.Sequential(new kiln.nn.Linear(2, 64), new kiln.nn.ReLU(), new kiln.nn.Linear(64, 3));
const opt = new kiln.optim.Adam(model.parameters(), { lr: 1e-2 });
const x: kiln.Tensor = kiln.randn([128, 2]);
const y: kiln.Tensor = kiln.randint(0, 3, [128]);

const options: kiln.CompileOptions = { backend: 'native', fullgraph: true, dynamic: false };
const step = kiln.compile((x: kiln.Tensor, y: kiln.Tensor) => {
  opt.zeroGrad();
  const loss = kiln.crossEntropy(model.forward(x), y);
  loss.backward();
  opt.step();
  return loss;
}, options);
const loss: number = kiln.scope(() => step(x, y).item());
const stats: kiln.CompilerStats = kiln.stats();
const first: number | undefined = model.parameters()[0]?.dataSync()[0];

export const workload: Workload = {
  name: 'readme',
  kind: 'training',
  shapes: ['x[128,2] float32, y[128] int32'],
  setup({ seed }) {
    kiln.manualSeed(seed);
    const net = new kiln.nn.Linear(2, 3);
    const sgd = new kiln.optim.SGD(net.parameters(), { lr: 0.1 });
    return {
      inputs: [kiln.randn([128, 2]), kiln.randint(0, 3, [128])],
      fn: (x: kiln.Tensor, y: kiln.Tensor) => {
        sgd.zeroGrad();
        const l = kiln.crossEntropy(net.call(x), y);
        l.backward();
        sgd.step();
        return l;
      },
      params: net.parameters(),
    };
  },
};

const report = JSON.parse(readFileSync('r.json', 'utf8')) as AdvisorReport;
const verdict: Verdict = report.verdict.verdict;
const weights: Promise<Record<string, kiln.Tensor>> = kilnNode.loadSafetensors('model.safetensors');
console.log(loss, stats.compiles, first, verdict, weights);
