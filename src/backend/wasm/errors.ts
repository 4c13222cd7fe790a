// Typed errors of the wasm backend.

import { KilnError } from '../../core/errors.js';

/** The engine rejected a generated module (a kiln bug): which kernels, and the engine's message. */
export class WasmCompileError extends KilnError {
  override name = 'WasmCompileError';
  constructor(
    readonly kernelNames: readonly string[],
    readonly engineMessage: string,
  ) {
    super(`WebAssembly rejected the module generated for kernels ${kernelNames.join(', ')}: ${engineMessage}`, 'wasm backend',
      "this is a kiln bug; please report it with the loop IR (KILN_LOGS=output_code prints it). Meanwhile compile with backend: 'js'");
  }
}

/** WebAssembly (or its SIMD) is unavailable here. */
export class WasmUnavailableError extends KilnError {
  override name = 'WasmUnavailableError';
  constructor(readonly reason: string) {
    super(`the wasm backend is unavailable: ${reason}`, 'wasm backend', "use a runtime with WebAssembly SIMD (Node >= 16, current browsers), or compile with backend: 'js'");
  }
}
