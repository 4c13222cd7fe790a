// Registers the native backend with kiln.compile (imported by 'kilnjs/node').

import { registerKernelBackend } from '../registry.js';
import { log } from '../../core/logs.js';
import { ArgumentError } from '../../core/errors.js';
import { JsBackend } from '../js/index.js';
import { NativeBackend, nativeBackend, nativeUnavailableReason } from './index.js';
import { nativeCodeFiles } from './code-files.js';

registerKernelBackend('native', (eager) => {
  if (eager instanceof NativeBackend) return eager;
  if (!(eager instanceof JsBackend)) {
    throw new ArgumentError(`backend 'native' runs over JS buffers, but the default backend is '${eager.name}'`, 'kiln.compile', "compile with the default backend's own kernels, or make the JS backend the default");
  }
  const b = nativeBackend();
  b.log = (msg) => log('perf', `native: ${msg}`);
  return b;
}, {
  available: nativeUnavailableReason,
  rank: 30,
  codeFiles: nativeCodeFiles,
  summary: 'native: C from the loop IR, compiled at run time with vectorized math and OpenMP threads (fastest steady state on CPU; first compile of a program costs ~0.1-1 s, cached on disk)',
});
