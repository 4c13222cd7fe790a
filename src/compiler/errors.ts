import { KilnError } from '../core/errors.js';

/** A graph break under fullgraph: true, or a capture that cannot proceed. */
export class GraphBreakError extends KilnError {
  override name = 'GraphBreakError';
  constructor(message: string, hint?: string, readonly location?: string) {
    super(location ? `${message} at ${location}` : message, 'compile', hint);
  }
}

/** Raised under the failOnRecompile stance, or past the recompile limit when asked to throw. */
export class RecompileError extends KilnError {
  override name = 'RecompileError';
}
