// Enum-like string arguments (reductions, modes, padding, approximations, nonlinearity names):
// checked at the public entry point, so a misspelt or misplaced value is a typed error that
// lists the valid ones instead of silently meaning the default.

import { ArgumentError } from './errors.js';

/** Throws an ArgumentError naming `op` and `name` unless `value` is one of `allowed`. */
export function checkEnum<T extends string>(op: string, name: string, value: unknown, allowed: readonly T[]): asserts value is T {
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return;
  const list = allowed.map((v) => `'${v}'`).join(', ');
  const got = typeof value === 'string' ? `'${value}'` : value === null ? 'null' : typeof value === 'object' ? `an object ${safeJson(value)}` : `${typeof value} ${String(value)}`;
  throw new ArgumentError(`${name} must be one of ${list}, got ${got}`, op, `pass ${name} as one of ${list}`);
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
