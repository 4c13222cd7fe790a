// Typed errors of the native backend.

import { KilnError } from '../../core/errors.js';

/** The C compiler rejected generated code (a kiln bug): the exact command and its stderr. */
export class NativeCompileError extends KilnError {
  override name = 'NativeCompileError';
  constructor(
    readonly command: string,
    readonly stderr: string,
  ) {
    super(`the C compiler failed on generated code:\n  ${command}\n${stderr.trim().split('\n').slice(0, 40).map((l) => `  | ${l}`).join('\n')}`, 'native backend',
      'this is a kiln bug; please report it with the source above (KILN_LOGS=output_code prints it). Meanwhile compile with backend: \'js\'');
  }
}

/** No usable C compiler (or no koffi): the native backend cannot run here. */
export class NativeUnavailableError extends KilnError {
  override name = 'NativeUnavailableError';
  constructor(readonly reason: string) {
    super(`the native backend is unavailable: ${reason}`, 'native backend',
      'install a C compiler (gcc or clang) or point KILN_CC at one; or compile with backend: \'js\'');
  }
}
