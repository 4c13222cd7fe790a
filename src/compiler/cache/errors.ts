import { KilnError } from '../../core/errors.js';

/** An artifact or cache bundle that cannot be used here: corrupt, or built for another kiln or machine (the message says what differs). */
export class ArtifactError extends KilnError {
  override name = 'ArtifactError';
}

/** A file whose code kiln will not run: unsigned, signed by a key nobody trusted, or altered after signing (the message says which, and how to sign or trust it). */
export class UntrustedFileError extends ArtifactError {
  override name = 'UntrustedFileError';
}

