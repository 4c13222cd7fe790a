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

/**
 * A graph, program or loop kernel that does not follow kiln's schema (decoded from a cache
 * entry or an artifact, or handed to a renderer): rejected before anything runs or is rendered.
 */
export class InvalidProgramError extends KilnError {
  override name = 'InvalidProgramError';
}
