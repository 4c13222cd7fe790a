// Which path answers (compiled or eager), the canary that watches the compiled one, and the
// rollback. A `fraction` of batches also runs eagerly after it is answered (a shadow run on
// the same padded inputs) and the outputs are compared within rtol/atol; a compiled batch that
// throws is answered eagerly and counts as a failure too. When `maxFailures` of the last
// `window` checks failed, the server switches itself to eager, logs why and exports it
// (metrics: kiln_serve_mode); an operator switches it back (POST /admin/mode), which starts a
// fresh window.

import type { RawTensor } from '../io/safetensors.js';
import type { Engine, EngineOutput, Mode } from './engine.js';

export interface CanaryOptions {
  /** fraction of batches shadowed eagerly (0 turns the canary off; 1 checks every batch) */
  readonly fraction: number;
  /** |compiled - eager| <= atol + rtol * |eager|, elementwise */
  readonly rtol: number;
  readonly atol: number;
  /** checks remembered */
  readonly window: number;
  /** failures within the window that switch the server to eager */
  readonly maxFailures: number;
}

export const DEFAULT_CANARY: CanaryOptions = { fraction: 0.01, rtol: 1e-4, atol: 1e-5, window: 100, maxFailures: 3 };

export interface CanaryEvents {
  check(outcome: 'match' | 'mismatch' | 'error', maxAbsError: number): void;
  /** automatic: the canary's rollback (else an operator) */
  mode(mode: Mode, reason: string, automatic: boolean): void;
}

export interface ModeState {
  readonly mode: Mode;
  readonly reason: string;
  readonly since: string;
  readonly canary: { readonly checks: number; readonly mismatches: number; readonly errors: number; readonly windowFailures: number; readonly lastFailure: string | null };
}

/** The largest difference, or a description of the first element outside tolerance (null: all within). */
export function compareOutputs(got: readonly EngineOutput[], want: readonly EngineOutput[], rtol: number, atol: number): { maxAbs: number; failure: string | null } {
  let maxAbs = 0;
  if (got.length !== want.length) return { maxAbs: Infinity, failure: `compiled returned ${got.length} outputs, eager ${want.length}` };
  for (let k = 0; k < got.length; k++) {
    const a = got[k]!.tensor, b = want[k]!.tensor;
    const name = want[k]!.name;
    if (a.dtype !== b.dtype || a.shape.join() !== b.shape.join()) return { maxAbs: Infinity, failure: `output ${name}: compiled ${a.dtype}[${a.shape.join(', ')}], eager ${b.dtype}[${b.shape.join(', ')}]` };
    let failure: string | null = null;
    for (let i = 0; i < a.data.length; i++) {
      const x = a.data[i]!, y = b.data[i]!;
      if (x === y || (Number.isNaN(x) && Number.isNaN(y))) continue;
      const d = Number.isNaN(x - y) ? Infinity : Math.abs(x - y); // NaN on one side only: as far apart as it gets
      if (d > maxAbs) maxAbs = d;
      const tol = Number.isFinite(y) ? atol + rtol * Math.abs(y) : 0;
      if (d > tol && failure === null) failure = `output ${name}[${i}]: compiled ${x}, eager ${y} (|diff| ${d.toExponential(2)} > ${atol} + ${rtol} x |eager|)`;
    }
    if (failure) return { maxAbs, failure };
  }
  return { maxAbs, failure: null };
}

export class ModeController {
  private current: Mode;
  private reason: string;
  private since = new Date();
  private outcomes: boolean[] = [];
  private credit = 0;
  private counts = { checks: 0, mismatches: 0, errors: 0 };
  private lastFailure: string | null = null;

  constructor(
    private readonly engine: Engine,
    private readonly opts: CanaryOptions,
    private readonly events: CanaryEvents,
    private readonly log: (level: 'info' | 'warn', msg: string) => void,
  ) {
    this.current = engine.modes[0]!;
    this.reason = 'start';
  }

  get mode(): Mode {
    return this.current;
  }

  state(): ModeState {
    return { mode: this.current, reason: this.reason, since: this.since.toISOString(), canary: { ...this.counts, windowFailures: this.outcomes.filter((f) => f).length, lastFailure: this.lastFailure } };
  }

  /** Switches paths (an operator, or the canary's rollback: `automatic`). */
  setMode(mode: Mode, reason: string, automatic = false): void {
    if (!this.engine.modes.includes(mode)) throw new Error(`${this.engine.name} has no ${mode} mode (it has ${this.engine.modes.join(', ')})`);
    const was = this.current;
    this.current = mode;
    this.reason = reason;
    this.since = new Date();
    this.outcomes = [];
    this.log(mode === 'eager' && was === 'compiled' ? 'warn' : 'info', `mode ${was} -> ${mode}: ${reason}`);
    this.events.mode(mode, reason, automatic);
  }

  /** Runs one batch on the current path (see the file comment). */
  async execute(inputs: RawTensor[]): Promise<readonly EngineOutput[]> {
    if (this.current === 'eager' || !this.engine.modes.includes('eager')) return this.engine.run(this.current, inputs);
    let out: readonly EngineOutput[];
    try {
      out = await this.engine.run('compiled', inputs);
    } catch (e) {
      this.counts.errors++;
      this.events.check('error', Infinity);
      this.record(`compiled batch threw ${(e as Error).name}: ${(e as Error).message.split('\n')[0]}`);
      return this.engine.run('eager', inputs);
    }
    this.credit += this.opts.fraction;
    if (this.credit >= 1) {
      this.credit -= 1;
      setImmediate(() => void this.shadow(inputs, out));
    }
    return out;
  }

  private async shadow(inputs: RawTensor[], compiled: readonly EngineOutput[]): Promise<void> {
    if (this.current !== 'compiled') return;
    this.counts.checks++;
    let eager: readonly EngineOutput[];
    try {
      eager = await this.engine.run('eager', inputs);
    } catch (e) {
      // the reference itself failed: nothing to say about the compiled path
      this.log('warn', `canary: the eager run threw ${(e as Error).message.split('\n')[0]}`);
      return;
    }
    const { maxAbs, failure } = compareOutputs(compiled, eager, this.opts.rtol, this.opts.atol);
    if (failure) this.counts.mismatches++;
    this.events.check(failure ? 'mismatch' : 'match', maxAbs);
    if (failure) this.record(`canary mismatch: ${failure}`);
    else this.push(false);
  }

  private push(failed: boolean): void {
    this.outcomes.push(failed);
    if (this.outcomes.length > this.opts.window) this.outcomes.shift();
  }

  private record(failure: string): void {
    this.lastFailure = failure;
    this.push(true);
    this.log('warn', failure);
    const failures = this.outcomes.filter((f) => f).length;
    if (this.current === 'compiled' && failures >= this.opts.maxFailures) {
      this.setMode('eager', `rolled back: ${failures} of the last ${this.outcomes.length} canary checks failed (last: ${failure})`, true);
    }
  }
}
