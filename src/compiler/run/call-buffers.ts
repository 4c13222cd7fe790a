// One call's buffer table, shared by the fused and the dynamic program: the backend buffer of
// each lowered buffer, and the storages this call's tensors hold (its inputs', and the outputs it
// made). Outputs become tensors over those storages; an output buffer no storage holds (a
// constant) is lent as a borrowed view, copy-free.

import type { Backend, BackendBuffer } from '../../backend/backend.js';
import type { BufferView } from '../../ir/lowered.js';
import { Storage } from '../../tensor/storage.js';
import { Tensor } from '../../tensor/tensor.js';

export class CallBuffers {
  readonly bufs: BackendBuffer[];
  private readonly storages = new Map<number, Storage>();

  /** `slots` buffers, the program's input buffers bound to the inputs' storages. */
  constructor(slots: number, inputBuffers: readonly number[], inputs: readonly Tensor[]) {
    this.bufs = new Array<BackendBuffer>(slots);
    inputBuffers.forEach((b, i) => this.hold(b, inputs[i]!.storage));
  }

  /** Buffer `id` is the storage `s` (an input's, or an output made for this call). */
  hold(id: number, s: Storage): void {
    this.bufs[id] = s.buf;
    this.storages.set(id, s);
  }

  /** The call's results: tensors over the storages of `views`' buffers, on `backend`. */
  tensors(views: readonly BufferView[], backend: Backend): Tensor[] {
    return views.map((o) => {
      let s = this.storages.get(o.buf);
      if (!s) this.storages.set(o.buf, (s = new Storage(backend, this.bufs[o.buf]!, false)));
      return new Tensor(s, o.shape, o.strides, o.offset, o.dtype);
    });
  }
}
