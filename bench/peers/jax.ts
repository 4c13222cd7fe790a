// jax-js (@jax-js/jax) on its WebAssembly backend, every workload wrapped in jit(): jax-js
// traces the function once and fuses its elementwise work into generated wasm kernels.
// Threads: jax-js runs kernels on a pool of Web Workers over shared memory when a global
// `Worker` exists; Node 20 has none, so unless the caller installs bench/peers/worker-shim.ts
// first, it is single-threaded. describe() reports which it ran as (from the shim's message
// counter, not from what was asked for).
//
// jax-js arrays are reference counted and every function consumes its arguments: each use
// but the last takes `.ref`. Parameters are a pytree argument of the jitted function (not
// closure constants); training steps return the updated parameters, which replace the old.

import type * as Jax from '@jax-js/jax';
import { LN_EPS, W7_SHAPE, causalMask, param, transpose2d, type HostTensor, type Peer, type PeerCase, type PeerSetup } from './common.js';
import { installWorkerShim, shimCounters } from './worker-shim.js';

type JaxModule = typeof Jax;
type A = Jax.Array;
type Params = Record<string, A>;

export function jaxPeer(opts: { workers: boolean }): Peer {
  const info: Record<string, unknown> = { library: '@jax-js/jax', device: 'wasm', jit: true, simd: 'f32x4 (jax-js generates SIMD wasm kernels)' };
  let jax: JaxModule;
  return {
    name: 'jax',
    describe: () => {
      const c = shimCounters();
      // a pool that received kernel messages is what "multi-threaded" means here
      info['ranAs'] = c.workers > 0 && c.messages > c.workers ? `${c.workers} workers (worker_threads shim; ${c.messages} messages)` : '1 thread (main thread)';
      return info;
    },
    async init() {
      if (opts.workers) info['workerShim'] = installWorkerShim();
      else info['workerShim'] = 'not installed (--jax-workers=false)';
      jax = await import('@jax-js/jax');
      const devices = await jax.init('wasm');
      if (!devices.includes('wasm')) throw new Error(`jax-js: no wasm device (got ${devices.join(', ')})`);
      jax.defaultDevice('wasm');
      info['version'] = '0.1.25';
    },
    async setup(c: PeerCase): Promise<PeerSetup> {
      return setupJax(jax, c);
    },
  };
}

function setupJax(jax: JaxModule, c: PeerCase): PeerSetup {
  const { numpy: np, nn, jit, tree, valueAndGrad } = jax;
  // jax-js's DataArray is typed over ArrayBuffer-backed arrays; ours are
  type Data = Parameters<typeof np.array>[0];
  const arr = (h: HostTensor): A => np.array(h.data as unknown as Data).reshape(h.shape);
  // Linear weights go to [in, out] (x @ W), as a JAX user writes them
  const params: Params = {};
  for (const [name, h] of c.params) {
    const isLinear = name.endsWith('.weight') && h.shape.length === 2 && !name.startsWith('tables.');
    params[name] = arr(isLinear ? transpose2d(h) : h);
  }
  const inputs = c.inputs.map(arr);

  // each helper consumes x (and takes refs of parameters, which live on)
  const P = (p: Params, n: string): A => {
    const a = p[n];
    if (!a) throw new Error(`jax: no parameter ${n}`);
    return a.ref;
  };
  const linear = (p: Params, x: A, pre: string): A => np.matmul(x, P(p, `${pre}.weight`)).add(P(p, `${pre}.bias`));
  const layerNorm = (p: Params, x: A, pre: string): A => {
    const mu = np.mean(x.ref, -1, { keepdims: true });
    const xc = x.sub(mu);
    const v = np.mean(xc.ref.mul(xc.ref), -1, { keepdims: true });
    return xc.div(np.sqrt(v.add(LN_EPS))).mul(P(p, `${pre}.weight`)).add(P(p, `${pre}.bias`));
  };
  const gelu = (x: A): A => nn.gelu(x, { approximate: true });
  const mlp = (p: Params, x: A, pres: string[], reluLast: boolean): A => {
    let h = x;
    pres.forEach((pre, i) => {
      h = linear(p, h, pre);
      if (i + 1 < pres.length || reluLast) h = nn.relu(h);
    });
    return h;
  };

  let fn: (p: Params, ...xs: A[]) => A;
  let training: ((p: Params, ...xs: A[]) => A) | null = null;
  const extra: A[] = [];
  switch (c.id) {
    case 'W1':
      fn = (p, x) => mlp(p, x!, ['0', '2', '4'], false);
      break;
    case 'W3':
      fn = (p, x) => x!.ref.add(linear(p, gelu(linear(p, layerNorm(p, x!, 'norm'), 'fc1')), 'fc2'));
      break;
    case 'W4':
      fn = (_p, x) => np.tanh(x!.ref.mul(1.5).add(0.3)).mul(nn.sigmoid(x!.ref)).sub(x!.mul(0.1));
      break;
    case 'W5':
      fn = (_p, a, b) => np.matmul(a!, b!);
      break;
    case 'W7': {
      const { batch: B, seq: T, dim: C, heads: H, layers } = W7_SHAPE;
      const hd = C / H;
      extra.push(np.array(causalMask(T) as unknown as Data).reshape([T, T]));
      fn = (p, x, mask) => {
        let h = x!;
        for (let l = 0; l < layers; l++) {
          const pre = `blocks.${l}`;
          const qkv = linear(p, layerNorm(p, h.ref, `${pre}.ln1`), `${pre}.attn.qkv`);
          const [q, k, v] = np.split(qkv, 3, -1).map((u) => u.reshape([B, T, H, hd]).transpose([0, 2, 1, 3])) as [A, A, A];
          const scores = np.matmul(q, k.transpose([0, 1, 3, 2])).mul(1 / Math.sqrt(hd)).add(mask!.ref);
          const att = np.matmul(nn.softmax(scores, -1), v).transpose([0, 2, 1, 3]).reshape([B, T, C]);
          h = h.add(linear(p, att, `${pre}.attn.proj`));
          h = h.ref.add(linear(p, gelu(linear(p, layerNorm(p, h, `${pre}.ln2`), `${pre}.fc1`)), `${pre}.fc2`));
        }
        mask!.dispose();
        return layerNorm(p, h, 'lnF');
      };
      break;
    }
    case 'W2': {
      const classes = param(c, '4.bias').shape[0]!;
      const y = inputs.pop()!;
      inputs.push(nn.oneHot(y.astype(np.int32), classes));
      training = (p, x, onehot) => {
        const logits = mlp(p, x!, ['0', '2', '4'], false);
        return np.mean(np.sum(nn.logSoftmax(logits, -1).mul(onehot!), -1)).neg();
      };
      fn = training;
      break;
    }
    case 'W6': {
      const tri: number[] = [];
      for (let i = 0; i < 27; i++) for (let j = i + 1; j < 27; j++) tri.push(i * 27 + j);
      extra.push(np.array(Int32Array.from(tri) as unknown as Data));
      training = (p, dense, labels, ...rest) => {
        const triIdx = rest.pop()!;
        const b = mlp(p, dense!, ['bottom.0', 'bottom.2', 'bottom.4'], true);
        const embs = rest.map((id, i) => np.take(P(p, `tables.${i}.weight`), id.reshape([-1]), 0));
        const z = np.stack([b.ref, ...embs], 1);
        const zz = np.matmul(z.ref, z.transpose([0, 2, 1]));
        const pairs = np.take(zz.reshape([zz.shape[0]!, -1]), triIdx, 1);
        const logits = mlp(p, np.concatenate([b, pairs], 1), ['top.0', 'top.2', 'top.4'], false);
        // BCE with logits, mean: softplus(z) - y*z
        return np.mean(nn.softplus(logits.ref).sub(labels!.mul(logits)));
      };
      fn = training;
      break;
    }
    default:
      return { unavailable: `no jax-js implementation of ${c.id}` };
  }

  let state = params;
  const args = (): A[] => [...inputs, ...extra].map((a) => a.ref);
  let run: () => Promise<A>;
  if (training) {
    const lossFn = training;
    const step = jit((p: Params, ...xs: A[]): [A, Params] => {
      const [loss, grads] = valueAndGrad((q: Params) => lossFn(q, ...xs))(tree.ref(p));
      const next = tree.map((w: A, g: A) => w.sub(g.mul(0.01)), p, grads) as Params;
      return [loss, next];
    });
    run = async () => {
      const [loss, next] = step(state, ...args());
      state = next;
      await jax.blockUntilReady(state);
      return loss;
    };
  } else {
    const f = jit(fn);
    run = async () => {
      const y = f(tree.ref(state), ...args());
      await y.blockUntilReady();
      return y;
    };
  }
  return {
    call: async () => (await run()).dispose(),
    async check() {
      const y = await run();
      return Float32Array.from((await y.data()) as Float32Array);
    },
    dispose() {
      tree.dispose(state);
      for (const a of [...inputs, ...extra]) a.dispose();
    },
  };
}
