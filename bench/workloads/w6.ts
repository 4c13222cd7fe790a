// W6: a DLRM-style training step, batch 512 (CPU shapes of WORKLOADS.md):
//   dense[512,13] -> bottom MLP 13->512->256->16 (ReLU after each layer)      -> b [512,16]
//   26 sparse features, one id per bag: idx_t[512,1] int32 -> EmbeddingBag(10000, 16, sum) -> e_t [512,16]
//   interaction: Z = stack([b, e_1..e_26], 1) [512,27,16]; Z·Zᵀ [512,27,27] (bmm);
//                the 351 pairs i<j picked from the flattened [512,729] with kiln.indexSelect
//                and a precomputed int32 index; concat with b -> [512,367]
//   top MLP 367->512->256->1 (ReLU between) -> logits [512,1]
//   binaryCrossEntropyWithLogits against random 0/1 labels, backward, SGD (lr 0.01)
// fn(dense, labels, idx_1, ..., idx_26) runs the whole step and returns the loss.
// size 'gpu' (WORKLOADS.md's GPU column): 100,000 rows per table, batch 2048, same structure.

import * as kiln from 'kilnjs';
import { mlp, upperTriangleIndex, W6_BATCH, W6_BOTTOM, W6_DENSE, W6_EMB, W6_ROWS, W6_TABLES, W6_TOP, W6_VECTORS } from '../../src/advisor/examples/lib/dlrm.js';
import { matmulFlops, mlpTrainStepFlops } from '../lib/flops.js';
import { DEFAULT_SEED, makeInstance, optimizerTensors, type Instance, type SetupOptions, type Workload, type WorkloadSize } from './types.js';

export { W6_BATCH, W6_BOTTOM, W6_DENSE, W6_EMB, W6_PAIRS, W6_ROWS, W6_TABLES, W6_TOP, W6_VECTORS } from '../../src/advisor/examples/lib/dlrm.js';
export const W6_LR = 0.01;
export const W6_BATCH_GPU = 2048;
export const W6_ROWS_GPU = 100_000;

/** Batch and rows per table of W6 at a size of WORKLOADS.md (the structure is the same). */
export interface W6Config {
  readonly batch: number;
  readonly rows: number;
}

export function w6Config(size: WorkloadSize = 'cpu'): W6Config {
  return size === 'gpu' ? { batch: W6_BATCH_GPU, rows: W6_ROWS_GPU } : { batch: W6_BATCH, rows: W6_ROWS };
}

/** The shapes string of a W6 instance. */
export function w6Shapes({ batch, rows }: W6Config): string {
  return `dense[${batch},${W6_DENSE}] labels[${batch},1] ${W6_TABLES}x ids[${batch},1] int32, tables ${W6_TABLES}x[${rows},${W6_EMB}]`;
}

export class Dlrm extends kiln.nn.Module<kiln.Tensor[], kiln.Tensor> {
  readonly bottom: kiln.nn.Sequential;
  readonly tables: kiln.nn.ModuleList<kiln.nn.EmbeddingBag>;
  readonly top: kiln.nn.Sequential;
  readonly triIndex: kiln.Tensor;

  constructor(rows = W6_ROWS) {
    super();
    this.bottom = mlp(W6_BOTTOM, true);
    this.tables = new kiln.nn.ModuleList(Array.from({ length: W6_TABLES }, () => new kiln.nn.EmbeddingBag(rows, W6_EMB, { mode: 'sum' })));
    this.top = mlp(W6_TOP, false);
    this.triIndex = this.registerBuffer('tri_index', upperTriangleIndex(W6_VECTORS), { persistent: false })!;
  }

  /** dense [B,13] float32, then one [B,1] int32 index tensor per table; returns logits [B,1]. */
  forward(dense: kiln.Tensor, ...ids: kiln.Tensor[]): kiln.Tensor {
    const b = this.bottom.call(dense); // [B,16]
    const embs = [...this.tables].map((t, i) => t.call(ids[i]!)); // 26 x [B,16]
    const z = kiln.stack([b, ...embs], 1); // [B,27,16]
    const zz = kiln.bmm(z, z.transpose(1, 2)); // [B,27,27]
    const pairs = kiln.indexSelect(zz.reshape([zz.shape[0]!, W6_VECTORS * W6_VECTORS]), 1, this.triIndex); // [B,351]
    return this.top.call(kiln.cat([b, pairs], 1)); // [B,1]
  }
}

/** Matmul-class FLOPs of one training step (embedding gathers and their scatter-adds are memory work). */
export function dlrmTrainStepFlops(batch: number): number {
  const interaction = 3 * batch * matmulFlops(W6_VECTORS, W6_VECTORS, W6_EMB); // forward bmm + two backward bmms
  return mlpTrainStepFlops(batch, W6_BOTTOM) + mlpTrainStepFlops(batch, W6_TOP, true) + interaction;
}

export const w6: Workload = {
  id: 'W6',
  title: 'DLRM training step (26x EmbeddingBag, MLPs, BCE, SGD), batch 512',
  kind: 'training',
  setup(opts: SetupOptions = {}): Instance {
    kiln.manualSeed(opts.seed ?? DEFAULT_SEED);
    const cfg = w6Config(opts.size);
    const model = new Dlrm(cfg.rows);
    const opt = new kiln.optim.SGD(model.parameters(), { lr: W6_LR });
    const dense = kiln.randn([cfg.batch, W6_DENSE]);
    const labels = kiln.scope(() => kiln.randint(0, 2, [cfg.batch, 1]).float());
    const ids = Array.from({ length: W6_TABLES }, () => kiln.randint(0, cfg.rows, [cfg.batch, 1]));
    return makeInstance({
      inputs: [dense, labels, ...ids],
      fn: (dense: kiln.Tensor, labels: kiln.Tensor, ...ids: kiln.Tensor[]) => {
        opt.zeroGrad();
        const loss = kiln.binaryCrossEntropyWithLogits(model.call(dense, ...ids), labels);
        loss.backward();
        opt.step();
        return loss;
      },
      shapes: w6Shapes(cfg),
      flops: dlrmTrainStepFlops(cfg.batch),
      params: model.parameters(),
      extra: () => [...optimizerTensors(opt), model.triIndex],
    });
  },
};

export default w6;
