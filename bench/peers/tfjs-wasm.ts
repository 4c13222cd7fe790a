// TensorFlow.js with its WebAssembly backend (XNNPACK kernels, SIMD; in Node it loads the
// non-threaded binary: tfjs-backend-wasm only uses threads where a page is cross-origin
// isolated). Weights are copied into tfjs's own dense-layer layout ([in, out]); linear layers
// use tf.fused.matMul (bias and ReLU fused, the fastest path tfjs offers). Training steps
// use tf.train.sgd(...).minimize, with gradients registered from tfjs-core's ES module
// files (bench/lib/tfjs.ts explains why: tfjs-core's Node entry registers none, and the
// @tensorflow/tfjs union package that normally loads them is not installed).

import { createRequire } from 'node:module';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-wasm';
import { GELU_C, LN_EPS, W7_SHAPE, causalMask, param, transpose2d, type HostTensor, type Peer, type PeerCase, type PeerSetup } from './common.js';

type Vars = Map<string, tf.Tensor>;

const t2 = (h: HostTensor): tf.Tensor => tf.tensor(h.data, h.shape, h.data instanceof Int32Array ? 'int32' : 'float32');

/** Weights [in, out] and biases as tfjs tensors (variables when training). */
function loadParams(c: PeerCase, trainable: boolean): Vars {
  const v: Vars = new Map();
  for (const [name, h] of c.params) {
    // Linear weights ([out, in], 2-D, not embedding tables) go to tfjs's [in, out]
    const isLinear = name.endsWith('.weight') && h.shape.length === 2 && !name.startsWith('tables.');
    const t = t2(isLinear ? transpose2d(h) : h);
    v.set(name, trainable ? tf.variable(t, true, `${c.id}/${name}`) : t);
  }
  return v;
}

const get = (v: Vars, name: string): tf.Tensor => {
  const t = v.get(name);
  if (!t) throw new Error(`tfjs: no parameter ${name}`);
  return t;
};

function linear(v: Vars, x: tf.Tensor, prefix: string, relu = false): tf.Tensor {
  const shape = x.shape;
  const x2 = tf.reshape(x, [-1, shape[shape.length - 1]!]) as tf.Tensor2D;
  const y = tf.fused.matMul({ a: x2, b: get(v, `${prefix}.weight`) as tf.Tensor2D, bias: get(v, `${prefix}.bias`), activation: relu ? 'relu' : 'linear' });
  return shape.length === 2 ? y : tf.reshape(y, [...shape.slice(0, -1), y.shape[1]!]);
}

function layerNorm(v: Vars, x: tf.Tensor, prefix: string): tf.Tensor {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, LN_EPS))), get(v, `${prefix}.weight`)), get(v, `${prefix}.bias`));
}

/** GELU, tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) */
function gelu(x: tf.Tensor): tf.Tensor {
  return tf.mul(tf.mul(x, 0.5), tf.add(tf.tanh(tf.mul(tf.add(x, tf.mul(tf.mul(tf.mul(x, x), x), 0.044715)), GELU_C)), 1));
}

function mlp(v: Vars, x: tf.Tensor, prefixes: string[], reluAfterLast: boolean): tf.Tensor {
  let h = x;
  prefixes.forEach((p, i) => (h = linear(v, h, p, i + 1 < prefixes.length || reluAfterLast)));
  return h;
}

function decoder(v: Vars, x: tf.Tensor, mask: tf.Tensor): tf.Tensor {
  const { batch: B, seq: T, dim: C, heads: H, layers } = W7_SHAPE;
  const hd = C / H;
  let h = x;
  for (let l = 0; l < layers; l++) {
    const p = `blocks.${l}`;
    const [q, k, vv] = tf.split(linear(v, layerNorm(v, h, `${p}.ln1`), `${p}.attn.qkv`), 3, -1).map((u) => tf.transpose(tf.reshape(u, [B, T, H, hd]), [0, 2, 1, 3])) as [tf.Tensor, tf.Tensor, tf.Tensor];
    const scores = tf.add(tf.mul(tf.matMul(q as tf.Tensor3D, k as tf.Tensor3D, false, true), 1 / Math.sqrt(hd)), mask);
    const att = tf.reshape(tf.transpose(tf.matMul(tf.softmax(scores) as tf.Tensor3D, vv as tf.Tensor3D), [0, 2, 1, 3]), [B, T, C]);
    h = tf.add(h, linear(v, att, `${p}.attn.proj`));
    h = tf.add(h, linear(v, gelu(linear(v, layerNorm(v, h, `${p}.ln2`), `${p}.fc1`)), `${p}.fc2`));
  }
  return layerNorm(v, h, 'lnF');
}

/** the W6 model of bench/workloads/w6.ts */
function dlrm(v: Vars, dense: tf.Tensor, ids: tf.Tensor[], tri: tf.Tensor): tf.Tensor {
  const b = mlp(v, dense, ['bottom.0', 'bottom.2', 'bottom.4'], true);
  const embs = ids.map((id, i) => tf.gather(get(v, `tables.${i}.weight`), tf.reshape(id, [-1])));
  const z = tf.stack([b, ...embs], 1) as tf.Tensor3D;
  const zz = tf.matMul(z, z, false, true);
  const pairs = tf.gather(tf.reshape(zz, [zz.shape[0], -1]), tri, 1);
  return mlp(v, tf.concat([b, pairs], 1), ['top.0', 'top.2', 'top.4'], false);
}

function upperTriangle(n: number): Int32Array {
  const idx: number[] = [];
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) idx.push(i * n + j);
  return Int32Array.from(idx);
}

export function tfjsWasmPeer(): Peer {
  const info: Record<string, unknown> = { library: '@tensorflow/tfjs-backend-wasm' };
  return {
    name: 'tfjs-wasm',
    describe: () => info,
    async init() {
      createRequire(import.meta.url)('@tensorflow/tfjs-core/dist/register_all_gradients.js');
      tf.enableProdMode();
      if (!(await tf.setBackend('wasm'))) throw new Error('tfjs: the wasm backend did not initialize');
      await tf.ready();
      const wasm = await import('@tensorflow/tfjs-backend-wasm');
      Object.assign(info, {
        version: wasm.version_wasm,
        tfjsCore: tf.version_core,
        simd: tf.env().getBool('WASM_HAS_SIMD_SUPPORT'),
        threads: tf.env().getBool('WASM_HAS_MULTITHREAD_SUPPORT') ? 'multi' : 1,
        gradients: 'tfjs-core dist/register_all_gradients.js (no union package)',
      });
    },
    async setup(c: PeerCase): Promise<PeerSetup> {
      const training = c.kind === 'training';
      const v = loadParams(c, training);
      const inputs = c.inputs.map(t2);
      const extra: tf.Tensor[] = [];
      let fn: () => tf.Tensor;
      switch (c.id) {
        case 'W1':
          fn = () => mlp(v, inputs[0]!, ['0', '2', '4'], false);
          break;
        case 'W3':
          fn = () => tf.add(inputs[0]!, linear(v, gelu(linear(v, layerNorm(v, inputs[0]!, 'norm'), 'fc1')), 'fc2'));
          break;
        case 'W4': {
          const x = inputs[0]!;
          fn = () => tf.sub(tf.mul(tf.tanh(tf.add(tf.mul(x, 1.5), 0.3)), tf.sigmoid(x)), tf.mul(x, 0.1));
          break;
        }
        case 'W5':
          fn = () => tf.matMul(inputs[0] as tf.Tensor2D, inputs[1] as tf.Tensor2D);
          break;
        case 'W7': {
          const mask = tf.tensor(causalMask(W7_SHAPE.seq), [W7_SHAPE.seq, W7_SHAPE.seq]);
          extra.push(mask);
          fn = () => decoder(v, inputs[0]!, mask);
          break;
        }
        case 'W2': {
          const classes = param(c, '4.bias').shape[0]!;
          const onehot = tf.oneHot(inputs[1]! as tf.Tensor1D, classes);
          extra.push(onehot);
          const opt = tf.train.sgd(0.01);
          fn = () => opt.minimize(() => tf.losses.softmaxCrossEntropy(onehot, mlp(v, inputs[0]!, ['0', '2', '4'], false)) as tf.Scalar, true)!;
          break;
        }
        case 'W6': {
          const tri = tf.tensor1d(upperTriangle(27), 'int32');
          extra.push(tri);
          const opt = tf.train.sgd(0.01);
          const [dense, labels, ...ids] = inputs as [tf.Tensor, tf.Tensor, ...tf.Tensor[]];
          fn = () => opt.minimize(() => tf.losses.sigmoidCrossEntropy(labels, dlrm(v, dense, ids, tri)) as tf.Scalar, true)!;
          break;
        }
        default:
          return { unavailable: `no tfjs implementation of ${c.id}` };
      }
      // the wasm backend computes synchronously: when fn returns, the work is done
      return {
        call: () => tf.dispose(tf.tidy(fn)),
        async check() {
          const y = tf.tidy(fn);
          const d = Float32Array.from(await y.data() as Float32Array);
          tf.dispose(y);
          return d;
        },
        dispose() {
          tf.dispose([...v.values(), ...inputs, ...extra]);
        },
      };
    },
  };
}
