// tfjs-core with its pure-JS CPU backend, as a peer in kiln's benchmarks.
//
// tfjs-core's Node entry (CommonJS) registers no gradient functions; those live in
// tfjs-core's ES-module files (dist/register_all_gradients.js), normally pulled in by the
// @tensorflow/tfjs union package. Loading that file with require (tsx compiles it) fills
// the registry that the CommonJS engine uses, because tfjs keeps its kernel and gradient
// registries and its engine on the global object.

import { createRequire } from 'node:module';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';

export { tf };

let ready = false;

export interface TfjsInfo {
  tfjsCore: string;
  backend: string;
  prodMode: boolean;
}

/** Selects the 'cpu' backend, enables prod mode (fewer checks, no Node hint), registers gradients. */
export async function setupTfjsCpu(opts: { gradients?: boolean } = {}): Promise<TfjsInfo> {
  if (!ready) {
    tf.enableProdMode();
    if (opts.gradients ?? true) {
      const require = createRequire(import.meta.url);
      require('@tensorflow/tfjs-core/dist/register_all_gradients.js');
    }
    const ok = await tf.setBackend('cpu');
    if (!ok) throw new Error('tfjs: the cpu backend did not initialize');
    await tf.ready();
    ready = true;
  }
  if (tf.getBackend() !== 'cpu') throw new Error(`tfjs backend is ${tf.getBackend()}, expected cpu`);
  return { tfjsCore: tf.version_core, backend: tf.getBackend(), prodMode: tf.env().getBool('PROD') };
}
