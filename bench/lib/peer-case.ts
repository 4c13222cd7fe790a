// Copies a kiln workload instance's parameters (by module name) and inputs into plain
// typed arrays for the peers (bench/peers/common.ts).

import type * as kiln from 'kilnjs';
import type { HostTensor, PeerCase } from '../peers/common.js';
import type { Instance, Workload } from '../workloads/types.js';

function host(t: kiln.Tensor): HostTensor {
  const d = t.dataSync();
  const data = t.dtype === 'int32' ? Int32Array.from(d as ArrayLike<number>) : Float32Array.from(d as ArrayLike<number>);
  return { shape: [...t.shape], data };
}

export function peerCase(w: Workload, inst: Instance): PeerCase {
  const params = new Map<string, HostTensor>();
  for (const p of inst.params) {
    if (!p.name) throw new Error(`${w.id}: a parameter has no module name`);
    params.set(p.name, host(p));
  }
  return { id: w.id, kind: w.kind, params, inputs: inst.inputs.map(host) };
}
