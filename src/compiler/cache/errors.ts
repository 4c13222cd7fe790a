import { KilnError } from '../../core/errors.js';

/** An artifact or cache bundle that cannot be used here: corrupt, or built for another kiln or machine (the message says what differs). */
export class ArtifactError extends KilnError {
  override name = 'ArtifactError';
}
