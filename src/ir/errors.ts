// The IR's error: a program that breaks its schema.

import { KilnError } from '../core/errors.js';

/**
 * A graph, program or loop kernel that does not follow kiln's schema (decoded from a cache
 * entry or an artifact, or handed to a renderer): rejected before anything runs or is rendered.
 */
export class InvalidProgramError extends KilnError {
  override name = 'InvalidProgramError';
}
