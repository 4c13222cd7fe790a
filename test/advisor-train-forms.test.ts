// The advisor's training forms (src/advisor/train-forms.ts): kiln.compile(model) in an ordinary
// loop beside the whole-step compile. The measured run on the mlp example is in advisor.test.ts;
// here the recommendation rule, a workload without a trainLoop, and a malformed one.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as kiln from 'kilnjs';
import { checkInstance, WorkloadError, type LoadedWorkload } from '../src/advisor/workload.js';
import { measureTrainingForms, recommendForm, MODULE_FORM_MAX_RATIO, type TrainingForms } from '../src/advisor/train-forms.js';
import { adoptionCode } from '../src/advisor/verdict.js';

const clean: TrainingForms['moduleCompiler'] = { interpretedReplays: 0, interpretedReasons: [], eagerFallbacks: 0, fusionFallbacks: 0, aotCompiles: 1 };

test('recommendForm: the compiled module within the margin of the whole step, else the whole step; never a module that did not run compiled or differs', () => {
  assert.equal(recommendForm({ moduleVsWholeStep: 1.05, moduleLossRelErr: 1e-7, moduleCompiler: clean }, 1e-3).recommended, 'compiled module');
  assert.equal(recommendForm({ moduleVsWholeStep: MODULE_FORM_MAX_RATIO, moduleLossRelErr: 0, moduleCompiler: clean }, 1e-3).recommended, 'compiled module');
  const slow = recommendForm({ moduleVsWholeStep: 1.6, moduleLossRelErr: 1e-7, moduleCompiler: clean }, 1e-3);
  assert.equal(slow.recommended, 'whole step');
  assert.match(slow.why, /1\.60x faster/);
  const replayed = recommendForm({ moduleVsWholeStep: 1.0, moduleLossRelErr: 0, moduleCompiler: { ...clean, interpretedReplays: 3, interpretedReasons: ['lowering refused'] } }, 1e-3);
  assert.equal(replayed.recommended, 'whole step');
  assert.match(replayed.why, /3 node-by-node replays \(lowering refused\)/);
  assert.equal(recommendForm({ moduleVsWholeStep: 1.0, moduleLossRelErr: 0, moduleCompiler: { ...clean, fusionFallbacks: 1 } }, 1e-3).recommended, 'whole step');
  const wrong = recommendForm({ moduleVsWholeStep: 0.9, moduleLossRelErr: 0.2, moduleCompiler: clean }, 1e-3);
  assert.equal(wrong.recommended, 'whole step');
  assert.match(wrong.why, /differ from eager/);
  assert.equal(recommendForm({ moduleVsWholeStep: 0.9, moduleLossRelErr: NaN, moduleCompiler: clean }, 1e-3).recommended, 'whole step');
});

function linearWorkload(withLoop: boolean): LoadedWorkload {
  return {
    source: 'test',
    workload: {
      name: 'linear',
      kind: 'training',
      setup({ seed }) {
        kiln.manualSeed(seed);
        const model = new kiln.nn.Linear(8, 4);
        const opt = new kiln.optim.SGD(model.parameters(), { lr: 0.1 });
        const x = kiln.keep(kiln.randn([16, 8])), y = kiln.keep(kiln.randn([16, 4]));
        const step = (forward: (x: kiln.Tensor) => kiln.Tensor, x: kiln.Tensor, y: kiln.Tensor) => {
          opt.zeroGrad();
          const loss = kiln.mseLoss(forward(x), y);
          loss.backward();
          opt.step();
          return loss;
        };
        return {
          inputs: [x, y],
          fn: (x: kiln.Tensor, y: kiln.Tensor) => step((x) => model.call(x), x, y),
          ...(withLoop ? { trainLoop: { module: model, step } } : {}),
          params: model.parameters(),
          dispose: () => [x, y, ...model.parameters()].forEach((t) => t.dispose()),
        };
      },
    },
  };
}

test('a workload with a trainLoop: both forms run compiled and equal eager; one without is "not measured" with what to add', async () => {
  const f = await measureTrainingForms(linearWorkload(true), { backend: 'js', seed: 3, calls: 4, warmup: 2, tolerance: 1e-3 });
  assert.equal(f.status, 'ok', f.reason ?? '');
  assert.equal(f.moduleCompiler.interpretedReplays + f.moduleCompiler.eagerFallbacks + f.moduleCompiler.fusionFallbacks, 0);
  assert.equal(f.moduleCompiler.aotCompiles, 1, 'one forward/backward pair, replayed on every later step');
  assert.ok(f.moduleLossRelErr <= 1e-5, `losses vs eager: ${f.moduleLossRelErr}`);
  assert.deepEqual({ recommended: f.recommended, why: f.why }, recommendForm(f, 1e-3));

  const none = await measureTrainingForms(linearWorkload(false), { backend: 'js', seed: 3, calls: 2, warmup: 1, tolerance: 1e-3 });
  assert.equal(none.status, 'not measured');
  assert.match(none.reason!, /no trainLoop \(\{ module, step\(forward, \.\.\.inputs\) \}\)/);
});

test('a malformed trainLoop is a WorkloadError naming the field', () => {
  const inst = { inputs: [], fn: () => kiln.zeros([1]) };
  assert.throws(() => checkInstance({ ...inst, trainLoop: { module: {}, step: () => {} } }, 'w'), (e: unknown) => e instanceof WorkloadError && /'trainLoop' must be \{ module: an nn\.Module/.test((e as Error).message));
  assert.throws(() => checkInstance({ ...inst, trainLoop: { module: new kiln.nn.Linear(2, 2) } }, 'w'), WorkloadError);
});

test('the code to adopt follows the measured form: the compiled model in the unchanged loop, or the whole step; imports and warm-up kept', () => {
  const i = { backend: 'native', policy: null, kind: 'training' as const };
  const module = adoptionCode({ ...i, trainingForm: { recommended: 'compiled module', why: 'because' } }, 'compile with warm-up and the persistent cache');
  assert.match(module, /^import \* as kiln from 'kilnjs';\nimport 'kilnjs\/node';.*\nconst compiledModel = kiln\.compile\(model, \{ backend: 'native' \}\);\nawait compiledModel\.warmup/s);
  assert.match(module, /loss\.backward\(\);\n  opt\.step\(\);/);
  assert.doesNotMatch(module, /compile\(step/);
  const whole = adoptionCode({ ...i, trainingForm: { recommended: 'whole step', why: 'because' } }, 'compile');
  assert.equal(whole, adoptionCode(i, 'compile'), 'the whole step is what an unmeasured training workload gets');
  assert.match(whole, /const compiled = kiln\.compile\(step, \{ backend: 'native', captures: model \}\);/);
});
