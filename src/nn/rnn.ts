// nn.RNN, nn.LSTM and nn.GRU with torch's parameters (weight_ih_l{k}[_reverse], weight_hh_l{k},
// bias_ih_l{k}, bias_hh_l{k}, LSTM's weight_hr_l{k} with projSize), gate order (LSTM i, f, g, o;
// GRU r, z, n), init U(±1/sqrt(hiddenSize)) and input layouts ([L, N, H], batchFirst [N, L, H],
// unbatched [L, H]). The input projection of every time step is one matmul; the recurrence is
// unrolled over the sequence, so a compiled call traces one graph per sequence length.

import { ArgumentError, ShapeError, fmtShape } from '../core/errors.js';
import { checkEnum } from '../core/enum-arg.js';
import type { Tensor } from '../tensor/tensor.js';
import { zeros } from '../ops/creation.js';
import { dropout, linear } from '../ops/functional.js';
import * as m from '../ops/math.js';
import { cat, chunk, select, squeeze, stack, transpose, unsqueeze } from '../ops/movement.js';
import { Module } from './module.js';
import { uniform_ } from './init.js';
import { checkSize } from './linear.js';

export interface RNNBaseOptions {
  numLayers?: number;
  /** default true */
  bias?: boolean;
  /** inputs and outputs are [N, L, H] (default false: [L, N, H]) */
  batchFirst?: boolean;
  /** dropout on the outputs of every layer but the last, in training */
  dropout?: number;
  bidirectional?: boolean;
  dtype?: 'float32' | 'float64';
}

export interface RNNOptions extends RNNBaseOptions {
  nonlinearity?: 'tanh' | 'relu';
}

export interface LSTMOptions extends RNNBaseOptions {
  /** project h to this size with weight_hr_l{k} (torch's proj_size; 0: none) */
  projSize?: number;
}

type Mode = 'RNN_TANH' | 'RNN_RELU' | 'LSTM' | 'GRU';
const GATES: Record<Mode, number> = { RNN_TANH: 1, RNN_RELU: 1, LSTM: 4, GRU: 3 };

/** One layer and direction's parameters. */
interface Cell {
  wIh: Tensor;
  wHh: Tensor;
  bIh: Tensor | null;
  bHh: Tensor | null;
  wHr: Tensor | null;
}

abstract class RNNBase<In extends [Tensor, unknown?], Out> extends Module<In, Out> {
  readonly mode: Mode;
  readonly inputSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly bias: boolean;
  readonly batchFirst: boolean;
  readonly dropout: number;
  readonly bidirectional: boolean;
  readonly projSize: number;
  readonly #cells: Cell[][] = [];

  protected constructor(mode: Mode, inputSize: number, hiddenSize: number, opts: RNNBaseOptions & { projSize?: number }) {
    super();
    const op = this.typeName;
    checkSize(op, 'inputSize', inputSize);
    checkSize(op, 'hiddenSize', hiddenSize, false);
    const numLayers = opts.numLayers ?? 1;
    checkSize(op, 'numLayers', numLayers, false);
    const p = opts.dropout ?? 0;
    if (!(p >= 0 && p <= 1)) throw new ArgumentError(`dropout must be in [0, 1], got ${p}`, op);
    const proj = opts.projSize ?? 0;
    checkSize(op, 'projSize', proj);
    if (proj >= hiddenSize && proj !== 0) throw new ArgumentError(`projSize ${proj} must be smaller than hiddenSize ${hiddenSize}`, op);
    this.mode = mode;
    this.inputSize = inputSize;
    this.hiddenSize = hiddenSize;
    this.numLayers = numLayers;
    this.bias = opts.bias ?? true;
    this.batchFirst = opts.batchFirst ?? false;
    this.dropout = p;
    this.bidirectional = opts.bidirectional ?? false;
    this.projSize = proj;
    const dtype = opts.dtype ?? 'float32';
    const g = GATES[mode] * hiddenSize;
    const out = proj || hiddenSize;
    const dirs = this.bidirectional ? 2 : 1;
    for (let layer = 0; layer < numLayers; layer++) {
      const layerIn = layer === 0 ? inputSize : out * dirs;
      const row: Cell[] = [];
      for (let d = 0; d < dirs; d++) {
        const sfx = `_l${layer}${d === 1 ? '_reverse' : ''}`;
        row.push({
          wIh: this.registerParameter(`weight_ih${sfx}`, zeros([g, layerIn], { dtype })),
          wHh: this.registerParameter(`weight_hh${sfx}`, zeros([g, out], { dtype })),
          bIh: this.bias ? this.registerParameter(`bias_ih${sfx}`, zeros([g], { dtype })) : null,
          bHh: this.bias ? this.registerParameter(`bias_hh${sfx}`, zeros([g], { dtype })) : null,
          wHr: proj ? this.registerParameter(`weight_hr${sfx}`, zeros([proj, hiddenSize], { dtype })) : null,
        });
      }
      this.#cells.push(row);
    }
    this.resetParameters();
  }

  /** torch's init: every parameter U(-1/sqrt(hiddenSize), 1/sqrt(hiddenSize)). */
  resetParameters(): void {
    const b = 1 / Math.sqrt(this.hiddenSize);
    for (const p of this.parameters()) uniform_(p, -b, b);
  }

  /** [D * numLayers, N, size] zeros or the caller's state, checked. */
  protected initialState(op: string, given: Tensor | null | undefined, name: string, n: number, size: number, unbatched: boolean, like: Tensor): Tensor {
    const layers = this.numLayers * (this.bidirectional ? 2 : 1);
    if (given === null || given === undefined) return zeros([layers, n, size], { dtype: like.dtype });
    const want = unbatched ? [layers, size] : [layers, n, size];
    if (given.ndim !== want.length || given.shape.some((s, i) => s !== want[i])) {
      throw new ShapeError(`${name} ${fmtShape(given.shape)} must be ${fmtShape(want)}`, op, unbatched ? 'unbatched input takes an unbatched state' : undefined);
    }
    return unbatched ? unsqueeze(given, 1) : given;
  }

  /** Runs every layer and direction; `states` are [D * numLayers, N, *] per state (h, and c for LSTM). */
  protected run(x: Tensor, states: Tensor[]): { output: Tensor; finals: Tensor[] } {
    const dirs = this.bidirectional ? 2 : 1;
    const finals: Tensor[][] = states.map(() => []);
    let input = x; // [L, N, in]
    for (let layer = 0; layer < this.numLayers; layer++) {
      const outs: Tensor[] = [];
      for (let d = 0; d < dirs; d++) {
        const idx = layer * dirs + d;
        const cell = this.#cells[layer]![d]!;
        const { output, last } = this.direction(input, cell, states.map((s) => select(s, 0, idx)), d === 1);
        outs.push(output);
        last.forEach((t, k) => finals[k]!.push(t));
      }
      input = dirs === 1 ? outs[0]! : cat(outs, 2);
      if (this.dropout > 0 && this.training && layer < this.numLayers - 1) input = dropout(input, this.dropout, true);
    }
    return { output: input, finals: finals.map((f) => stack(f, 0)) };
  }

  private direction(x: Tensor, cell: Cell, state: Tensor[], reverse: boolean): { output: Tensor; last: Tensor[] } {
    const len = x.shape[0]!;
    const xProj = linear(x, cell.wIh, cell.bIh); // every step's input projection: [L, N, G*H]
    const outs = new Array<Tensor>(len);
    let s = state;
    for (let k = 0; k < len; k++) {
      const t = reverse ? len - 1 - k : k;
      s = this.step(select(xProj, 0, t), s, cell);
      outs[t] = s[0]!;
    }
    return { output: stack(outs, 0), last: s };
  }

  /** One time step: new states from the projected input gi [N, G*H] and the states. */
  private step(gi: Tensor, state: Tensor[], cell: Cell): Tensor[] {
    const h = state[0]!;
    const gh = linear(h, cell.wHh, cell.bHh);
    switch (this.mode) {
      case 'RNN_TANH': return [m.tanh(m.add(gi, gh))];
      case 'RNN_RELU': return [m.relu(m.add(gi, gh))];
      case 'LSTM': {
        const [i, f, g, o] = chunk(m.add(gi, gh), 4, 1) as [Tensor, Tensor, Tensor, Tensor];
        const c = m.add(m.mul(m.sigmoid(f), state[1]!), m.mul(m.sigmoid(i), m.tanh(g)));
        let hNew = m.mul(m.sigmoid(o), m.tanh(c));
        if (cell.wHr) hNew = linear(hNew, cell.wHr);
        return [hNew, c];
      }
      case 'GRU': {
        const [ir, iz, iN] = chunk(gi, 3, 1) as [Tensor, Tensor, Tensor];
        const [hr, hz, hN] = chunk(gh, 3, 1) as [Tensor, Tensor, Tensor];
        const r = m.sigmoid(m.add(ir, hr));
        const z = m.sigmoid(m.add(iz, hz));
        const n = m.tanh(m.add(iN, m.mul(r, hN)));
        return [m.add(n, m.mul(z, m.sub(h, n)))]; // (1 - z) n + z h
      }
    }
  }

  /** The input as [L, N, in], and how to put outputs back into the caller's layout. */
  protected layout(x: Tensor): { seq: Tensor; unbatched: boolean; back: (t: Tensor) => Tensor } {
    const op = this.typeName;
    if (x.ndim !== 2 && x.ndim !== 3) throw new ShapeError(`expects input [L, N, ${this.inputSize}]${this.batchFirst ? ' (batchFirst: [N, L, H])' : ''} or unbatched [L, ${this.inputSize}], got ${fmtShape(x.shape)}`, op);
    if (x.shape[x.ndim - 1] !== this.inputSize) throw new ShapeError(`input ${fmtShape(x.shape)} must end in inputSize ${this.inputSize}`, op);
    if (x.ndim === 2) return { seq: unsqueeze(x, 1), unbatched: true, back: (t) => squeeze(t, 1) };
    if (this.batchFirst) return { seq: transpose(x, 0, 1), unbatched: false, back: (t) => transpose(t, 0, 1) };
    return { seq: x, unbatched: false, back: (t) => t };
  }

  /** forward of RNN and GRU: one state h. */
  protected withHidden(x: Tensor, h0: Tensor | null | undefined): [Tensor, Tensor] {
    const { seq, unbatched, back } = this.layout(x);
    const h = this.initialState(this.typeName, h0, 'h0', seq.shape[1]!, this.hiddenSize, unbatched, x);
    const { output, finals } = this.run(seq, [h]);
    return [back(output), unbatched ? squeeze(finals[0]!, 1) : finals[0]!];
  }

  override extraRepr(): string {
    let s = `${this.inputSize}, ${this.hiddenSize}`;
    if (this.projSize) s += `, proj_size=${this.projSize}`;
    if (this.numLayers !== 1) s += `, num_layers=${this.numLayers}`;
    if (!this.bias) s += ', bias=False';
    if (this.batchFirst) s += ', batch_first=True';
    if (this.dropout) s += `, dropout=${this.dropout}`;
    if (this.bidirectional) s += ', bidirectional=True';
    return s;
  }
}

/** Elman RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu). forward(x, h0?) returns [output, hN]. */
export class RNN extends RNNBase<[Tensor, (Tensor | null)?], [Tensor, Tensor]> {
  readonly nonlinearity: 'tanh' | 'relu';

  constructor(inputSize: number, hiddenSize: number, opts: RNNOptions = {}) {
    const nl = opts.nonlinearity ?? 'tanh';
    checkEnum('RNN', 'nonlinearity', nl, ['tanh', 'relu']);
    super(nl === 'tanh' ? 'RNN_TANH' : 'RNN_RELU', inputSize, hiddenSize, opts);
    this.nonlinearity = nl;
  }

  override forward(x: Tensor, h0?: Tensor | null): [Tensor, Tensor] {
    return this.withHidden(x, h0);
  }

  override extraRepr(): string {
    return super.extraRepr() + (this.nonlinearity === 'relu' ? ", nonlinearity='relu'" : '');
  }
}

export class GRU extends RNNBase<[Tensor, (Tensor | null)?], [Tensor, Tensor]> {
  constructor(inputSize: number, hiddenSize: number, opts: RNNBaseOptions = {}) {
    super('GRU', inputSize, hiddenSize, opts);
  }

  /** [output [L, N, D*H], hN [D*numLayers, N, H]] (batchFirst and unbatched layouts as the input). */
  override forward(x: Tensor, h0?: Tensor | null): [Tensor, Tensor] {
    return this.withHidden(x, h0);
  }
}

export class LSTM extends RNNBase<[Tensor, (readonly [Tensor, Tensor] | null)?], [Tensor, [Tensor, Tensor]]> {
  constructor(inputSize: number, hiddenSize: number, opts: LSTMOptions = {}) {
    super('LSTM', inputSize, hiddenSize, opts);
  }

  /** [output [L, N, D*Hout], [hN [D*numLayers, N, Hout], cN [D*numLayers, N, H]]] with Hout = projSize || hiddenSize. */
  override forward(x: Tensor, hx?: readonly [Tensor, Tensor] | null): [Tensor, [Tensor, Tensor]] {
    if (hx !== null && hx !== undefined && (!Array.isArray(hx) || hx.length !== 2)) {
      throw new ArgumentError('hx must be [h0, c0] (or omitted)', 'LSTM');
    }
    const { seq, unbatched, back } = this.layout(x);
    const n = seq.shape[1]!;
    const h = this.initialState('LSTM', hx?.[0], 'h0', n, this.projSize || this.hiddenSize, unbatched, x);
    const c = this.initialState('LSTM', hx?.[1], 'c0', n, this.hiddenSize, unbatched, x);
    const { output, finals } = this.run(seq, [h, c]);
    const fix = (t: Tensor) => (unbatched ? squeeze(t, 1) : t);
    return [back(output), [fix(finals[0]!), fix(finals[1]!)]];
  }
}
