// Typed errors. Every kiln error names the op, the shapes/dtypes involved, and a fix.

import { currentUserOp } from './user-op.js';

export class KilnError extends Error {
  override name = 'KilnError';
  /**
   * Whether errors of this class name the public op the user called when raised inside one
   * (see user-op.ts): errors about an op's inputs do; errors of a subsystem (the compiler, a
   * backend's toolchain) name the subsystem.
   */
  static readonly namesUserOp: boolean = false;
  /** the message without the op prefix and the hint */
  readonly detail: string;
  /** the op named in the message: the public op the user called, else the op that raised it */
  readonly op?: string;
  /** the op (usually a primitive) that raised the error, where it differs from `op` */
  readonly primitive?: string;
  constructor(
    message: string,
    op?: string,
    readonly hint?: string,
  ) {
    const user = (new.target as typeof KilnError).namesUserOp ? currentUserOp() : null;
    const inner = user !== null && op !== undefined && op !== user ? op : undefined;
    const shown = user ?? op;
    super(formatMessage(inner ? `${message} (in ${inner})` : message, shown, hint));
    this.detail = message;
    this.op = shown;
    this.primitive = inner;
  }
}

function formatMessage(message: string, op?: string, hint?: string): string {
  const head = op ? `${op}: ${message}` : message;
  return hint ? `${head}\n  hint: ${hint}` : head;
}

/** Shapes that cannot be broadcast, multiplied or reshaped together. */
export class ShapeError extends KilnError {
  override name = 'ShapeError';
  static override readonly namesUserOp = true;
}

/** A dim or index out of range. */
export class IndexError extends KilnError {
  override name = 'IndexError';
  static override readonly namesUserOp = true;
}

/** Dtypes that an op does not accept together. */
export class DTypeError extends KilnError {
  override name = 'DTypeError';
  static override readonly namesUserOp = true;
}

/** A synchronous read of memory that a backend can only read asynchronously (a GPU). */
export class SyncReadError extends KilnError {
  override name = 'SyncReadError';
}

/** Wrong argument types or values from a (plain JavaScript) caller. */
export class ArgumentError extends KilnError {
  override name = 'ArgumentError';
  static override readonly namesUserOp = true;
}

/** A tensor used after dispose(). */
export class DisposedError extends KilnError {
  override name = 'DisposedError';
  static override readonly namesUserOp = true;
}

/** Misuse of autograd: backward on a non-scalar, in-place on a leaf, and so on. */
export class AutogradError extends KilnError {
  override name = 'AutogradError';
  static override readonly namesUserOp = true;
}

/** A NaN or Inf produced by an op while the debug check is on. */
export class NumericsError extends KilnError {
  override name = 'NumericsError';
  static override readonly namesUserOp = true;
}

/** An allocation that cannot fit (a typed array, the wasm heap, a GPU buffer): the op, the dtype and size, the bytes. */
export class OutOfMemoryError extends KilnError {
  override name = 'OutOfMemoryError';
  static override readonly namesUserOp = true;
  constructor(message: string, op?: string, hint = 'free tensors (kiln.scope, t.dispose()), or use smaller shapes or batches') {
    super(message, op, hint);
  }
}

/** A state dict or file that does not match a module. */
export class StateDictError extends KilnError {
  override name = 'StateDictError';
}

export function fmtShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/** A byte count for people: 512 B, 1.5 KiB, 4.0 GiB, 4.0 TiB. */
export function fmtBytes(b: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) (b /= 1024), i++;
  return i === 0 ? `${b} B` : `${b.toFixed(1)} ${units[i]}`;
}
