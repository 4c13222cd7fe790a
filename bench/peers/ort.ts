// onnxruntime-node (native CPU kernels, MLAS) on the inference workloads, from graphs built
// by bench/onnx/graphs.ts with kiln's weights. intraOpNumThreads = the thread count kiln
// uses (its default 0 ran like one thread on this machine: ../shared/FACTS.md);
// sequential execution (the graphs are chains). Inputs are bound once; a call is
// session.run() on them (output tensors are allocated by ORT per call, as kiln's are).

import * as ort from 'onnxruntime-node';
import { buildOnnxModel } from '../onnx/graphs.js';
import type { Peer, PeerCase, PeerSetup } from './common.js';

export function ortPeer(threads: number): Peer {
  const info: Record<string, unknown> = { library: 'onnxruntime-node', threads, spinning: false, executionMode: 'sequential', simd: 'native (MLAS kernels picked for the CPU)', graphOptimizationLevel: 'all' };
  return {
    name: 'ort',
    describe: () => info,
    async init() {
      info['version'] = ort.env.versions?.node ?? 'unknown';
    },
    async setup(c: PeerCase): Promise<PeerSetup> {
      if (c.kind === 'training') return { unavailable: 'onnxruntime-node runs inference only' };
      const bytes = buildOnnxModel(c);
      if (!bytes) return { unavailable: `no ONNX graph for ${c.id}` };
      const session = await ort.InferenceSession.create(bytes, {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
        // ORT's pool spins after each run by default; in a round-robin the spinning threads take
        // the cores from whichever variant runs next (kiln W1 native: 3.6 ms alone, 5.2-6.3 ms
        // beside spinning ORT). Without spinning, neither side runs on the other's time.
        extra: { session: { intra_op: { allow_spinning: '0' } } },
      });
      const feeds: Record<string, ort.Tensor> = {};
      session.inputNames.forEach((n, i) => {
        const t = c.inputs[i]!;
        feeds[n] = new ort.Tensor('float32', t.data as Float32Array, t.shape);
      });
      const run = async (): Promise<ort.Tensor> => (await session.run(feeds))['y']!;
      return {
        call: run,
        async check() {
          const y = await run();
          return Float32Array.from(y.data as Float32Array);
        },
        dispose() {
          void session.release();
        },
        note: `ONNX graph of ${bytes.length >> 20} MiB (opset 20), built by bench/onnx/graphs.ts`,
      };
    },
  };
}
