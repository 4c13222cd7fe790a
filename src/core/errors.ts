// Typed errors. Every kiln error names the op, the shapes/dtypes involved, and a fix.

export class KilnError extends Error {
  override name = 'KilnError';
  /** the message without the op prefix and the hint */
  readonly detail: string;
  constructor(
    message: string,
    readonly op?: string,
    readonly hint?: string,
  ) {
    super(formatMessage(message, op, hint));
    this.detail = message;
  }
}

function formatMessage(message: string, op?: string, hint?: string): string {
  const head = op ? `${op}: ${message}` : message;
  return hint ? `${head}\n  hint: ${hint}` : head;
}

/** Shapes that cannot be broadcast, multiplied or reshaped together. */
export class ShapeError extends KilnError {
  override name = 'ShapeError';
}

/** A dim or index out of range. */
export class IndexError extends KilnError {
  override name = 'IndexError';
}

/** Dtypes that an op does not accept together. */
export class DTypeError extends KilnError {
  override name = 'DTypeError';
}

/** A synchronous read of memory that a backend can only read asynchronously (a GPU). */
export class SyncReadError extends KilnError {
  override name = 'SyncReadError';
}

/** Wrong argument types or values from a (plain JavaScript) caller. */
export class ArgumentError extends KilnError {
  override name = 'ArgumentError';
}

/** A tensor used after dispose(). */
export class DisposedError extends KilnError {
  override name = 'DisposedError';
}

/** Misuse of autograd: backward on a non-scalar, in-place on a leaf, and so on. */
export class AutogradError extends KilnError {
  override name = 'AutogradError';
}

/** A NaN or Inf produced by an op while the debug check is on. */
export class NumericsError extends KilnError {
  override name = 'NumericsError';
}

/** A state dict or file that does not match a module. */
export class StateDictError extends KilnError {
  override name = 'StateDictError';
}

export function fmtShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}
