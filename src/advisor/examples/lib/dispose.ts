// Freeing what a training workload's setup made, shared by the advisor's example workloads.

import * as kiln from '../../../api/kiln.js';

/** Frees what a training setup made: parameters, buffers, grads, optimizer state, inputs. */
export function disposeTraining(model: kiln.nn.AnyModule, opt: kiln.optim.Optimizer, inputs: readonly kiln.Tensor[]): void {
  const all = new Set<kiln.Tensor>([...inputs, ...model.parameters(), ...model.buffers()]);
  for (const p of model.parameters()) if (p.grad) all.add(p.grad);
  for (const g of opt.paramGroups) all.add(g.lrTensor);
  for (const st of opt.state.values()) for (const t of Object.values(st)) all.add(t);
  for (const t of all) if (!t.isDisposed) t.dispose();
}
